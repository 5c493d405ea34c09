"""Building the preflop table: exact counts of the canonical matchups by enumeration.

:mod:`acpc_lbr.preflop` is the table (the canonical numbering, the file, the
look-ups) and :mod:`acpc_lbr.equity` reads it; the counts themselves come from
equity's enumeration (:func:`acpc_lbr.equity.matchup_counts`,
:func:`acpc_lbr.equity.vector_counts`), so the builder sits above both.
Regenerate the shipped file (two processes, a progress bar on stderr)::

    python -m acpc_lbr.preflop_build --build [--workers 2] [--output PATH]

:func:`acpc_lbr.preflop.load_counts` runs that command when the file is missing.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TextIO

import numpy as np

from acpc_lbr.equity import HAND_CARDS, matchup_counts, vector_counts
from acpc_lbr.runtime.exit_codes import EXIT_OK, EXIT_USAGE
from acpc_lbr.preflop import DATA_PATH, NUM_BOARDS, NUM_CANONICAL_MATCHUPS, canonical_matchups, save_counts

# With fewer villains than this to compute for one hero hand, enumerating the
# boards of each matchup (~25 ms each) beats one pass over all hands (~1 s).
_PAIRWISE_BELOW = 40


# ---------------------------------------------------------------------------
# Exact counts by enumeration
# ---------------------------------------------------------------------------


def _hero_counts(hero: int, villains: np.ndarray, pairwise: bool) -> tuple[np.ndarray, np.ndarray]:
    """(wins, ties) int64 of hand ``hero`` against each hand of ``villains`` (worker task)."""
    hero_cards = [int(c) for c in HAND_CARDS[hero]]
    if pairwise:
        out = [matchup_counts(hero_cards, [int(c) for c in HAND_CARDS[v]]) for v in villains]
        counts = np.array(out, dtype=np.int64).reshape(-1, 3)
        return counts[:, 0], counts[:, 1]
    wins, ties, boards = vector_counts(hero_cards, [], [])
    if boards != NUM_BOARDS:  # pragma: no cover - a broken kernel, not an input error
        raise RuntimeError(f"expected {NUM_BOARDS} boards per matchup, got {boards}")
    return wins[villains], ties[villains]


class _ProgressBar:
    """A one-line textual progress bar (rewritten in place with carriage returns)."""

    def __init__(self, total: int, label: str, stream: TextIO | None) -> None:
        self.total, self.label, self.stream = total, label, stream
        self.start = time.perf_counter()
        self.done = 0
        self._draw()

    def advance(self, n: int = 1) -> None:
        self.done += n
        self._draw()

    def _draw(self) -> None:
        if self.stream is None:
            return
        elapsed = time.perf_counter() - self.start
        frac = self.done / self.total if self.total else 1.0
        eta = elapsed / frac - elapsed if frac > 0 else float("nan")
        bar = "#" * int(30 * frac)
        self.stream.write(
            f"\r{self.label} [{bar:<30}] {self.done}/{self.total}"
            f"  {elapsed:5.0f} s elapsed, ETA {eta:4.0f} s "
        )
        if self.done >= self.total:
            self.stream.write("\n")
        self.stream.flush()


def build_counts(
    ids: Iterable[int] | None = None,
    *,
    workers: int = 1,
    method: str = "auto",
    progress: TextIO | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact counts of canonical matchups by full enumeration of the boards.

    Matchups are grouped by their representative's hero hand.  A group is
    computed either with one pass of :func:`acpc_lbr.equity.equity_vector`'s
    kernel over every board and every villain hand ("vector", ~1 s per hero
    hand), or by enumerating each matchup's boards ("pairs", ~25 ms each);
    "auto" picks the cheaper per group.

    Args:
        ids: Canonical matchup numbers; None means all 47,008.
        workers: Processes to use (1: compute in this process).
        method: "auto", "vector" or "pairs".
        progress: Stream for a progress bar (e.g. ``sys.stderr``), or None.

    Returns:
        ``(wins, ties)``: uint32 arrays, one entry per requested id (in the
        given order): boards the representative's hero wins and ties.
    """
    if method not in ("auto", "vector", "pairs"):
        raise ValueError(f"unknown method {method!r}")
    reps = canonical_matchups()
    wanted = np.arange(len(reps)) if ids is None else np.asarray(list(ids), dtype=np.int64)
    if wanted.size and (wanted.min() < 0 or wanted.max() >= len(reps)):
        raise ValueError(f"canonical ids must be in 0..{len(reps) - 1}")
    wins = np.zeros(len(wanted), dtype=np.int64)
    ties = np.zeros(len(wanted), dtype=np.int64)
    heroes = reps[wanted, 0]
    tasks = []
    for hero in np.unique(heroes):
        slots = np.flatnonzero(heroes == hero)
        pairwise = method == "pairs" or (method == "auto" and len(slots) < _PAIRWISE_BELOW)
        tasks.append((int(hero), slots, pairwise))
    # Longest first, so the last tasks to finish are short ones.
    tasks.sort(key=lambda t: -(len(t[1]) if t[2] else 10 * _PAIRWISE_BELOW))
    bar = _ProgressBar(len(tasks), "preflop table: hero hands", progress)
    if workers <= 1:
        for hero, slots, pairwise in tasks:
            wins[slots], ties[slots] = _hero_counts(hero, reps[wanted[slots], 1], pairwise)
            bar.advance()
    else:
        from concurrent.futures import ProcessPoolExecutor, as_completed

        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures = {
                pool.submit(_hero_counts, hero, reps[wanted[slots], 1], pairwise): slots
                for hero, slots, pairwise in tasks
            }
            for future in as_completed(futures):
                slots = futures[future]
                wins[slots], ties[slots] = future.result()
                bar.advance()
    return wins.astype(np.uint32), ties.astype(np.uint32)


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m acpc_lbr.preflop_build --build``: recompute and write the counts."""
    parser = argparse.ArgumentParser(
        prog="python -m acpc_lbr.preflop_build",
        description="Build the exact preflop hand-vs-hand table (47,008 canonical matchups).",
    )
    parser.add_argument("--build", action="store_true", help="recompute every canonical matchup")
    parser.add_argument("--workers", type=int, default=2, help="processes (default 2)")
    parser.add_argument("--output", type=Path, default=DATA_PATH, help="the .npz to write")
    args = parser.parse_args(argv)
    if not args.build:
        parser.print_help()
        return EXIT_USAGE
    start = time.perf_counter()
    wins, ties = build_counts(workers=args.workers, progress=sys.stderr)
    save_counts(args.output, wins, ties)
    print(
        f"wrote {args.output} ({args.output.stat().st_size} bytes, "
        f"{NUM_CANONICAL_MATCHUPS} matchups) in {time.perf_counter() - start:.1f} s",
        file=sys.stderr,
    )
    return EXIT_OK


__all__ = ["build_counts", "main"]

if __name__ == "__main__":
    sys.exit(main())

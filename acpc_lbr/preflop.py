"""Exact hold'em preflop equities of every hand against every hand, from a shipped table.

Preflop, LBR needs ``e(h)`` of its hand against all 1326 opponent hands; by
enumeration that is 1,712,304 boards x ~1000 hands, about a second per call.
This module answers from an exact table instead.

Suit isomorphism: relabelling the four suits (24 permutations, applied to
both hands at once) changes no showdown, and swapping hero and villain turns
wins into losses.  The 1326 x 1225 ordered matchups of two disjoint hands fall
into 93,769 classes under the suit permutations, and 47,008 classes once a
matchup and its reverse are identified ("canonical matchups").  For each
canonical matchup the package ships the exact number of boards (out of
C(48, 5) = 1,712,304) that its first hand wins and ties, as uint32, in
``acpc_lbr/data/preflop_counts.npz`` (~0.3 MB).  The mapping from any pair of
hands to its canonical matchup is not shipped: it is recomputed with numpy on
first use (a few tens of milliseconds), and a SHA-256 of the canonical list
stored beside the counts guards against the two ever drifting apart.

Canonical form: the *key* of an ordered pair of hands ``(a, b)`` is the
smallest ``p(a) * 1326 + p(b)`` over the suit permutations ``p`` (hands in
colex order, see :data:`acpc_lbr.equity.HAND_CARDS`); the key of a matchup is
the smaller of the keys of ``(a, b)`` and ``(b, a)``; canonical matchups are
numbered in ascending key order, and the representative of a matchup is the
ordered pair ``(key // 1326, key % 1326)``.

Public API:

* :func:`preflop_equity_table` -- (1326, 1326) float64, ``e[a, b]`` = (wins +
  ties / 2) / 1,712,304 of hand ``a`` against hand ``b``; 0 where they share
  a card.  Built lazily from the shipped counts and cached (read-only).
* :func:`preflop_equity_vector` -- one row of it, for hero's two cards.
* :func:`preflop_counts_vector` -- the exact (wins, ties) board counts behind a row.
* :func:`canonical_matchups`, :func:`matchup_ids`, :func:`load_counts` -- the
  canonical numbering and the exact counts behind the table.
* :func:`build_counts` -- recompute counts by enumeration (all, or some ids).

Regenerate the shipped file (two processes, a progress bar on stderr)::

    python -m acpc_lbr.preflop --build [--workers 2] [--output PATH]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TextIO

import numpy as np

from acpc_lbr.equity import (
    HAND_CARDS,
    HAND_INDEX,
    NUM_HANDS,
    SUIT_MAPS,
    check_cards,
    hand_index,
    matchup_counts,
    vector_counts,
)
from acpc_lbr.runtime.exit_codes import EXIT_OK, EXIT_USAGE

#: Boards that complete a preflop matchup: C(48, 5).
NUM_BOARDS = 1_712_304
#: Canonical (unordered, suit-isomorphic) preflop matchups of two disjoint hands.
NUM_CANONICAL_MATCHUPS = 47_008
#: Version of the data file's layout.
FORMAT_VERSION = 1
#: The table shipped as package data.
DATA_PATH = Path(__file__).resolve().parent / "data" / "preflop_counts.npz"

# With fewer villains than this to compute for one hero hand, enumerating the
# boards of each matchup (~25 ms each) beats one pass over all hands (~1 s).
_PAIRWISE_BELOW = 40


# ---------------------------------------------------------------------------
# Canonical numbering (pure numpy; recomputed at load time)
# ---------------------------------------------------------------------------


def _hand_permutations() -> np.ndarray:
    """(24, 1326) int64: each suit permutation as a map of colex hand numbers."""
    return np.asarray(HAND_INDEX[SUIT_MAPS[:, HAND_CARDS[:, 0]], SUIT_MAPS[:, HAND_CARDS[:, 1]]])


def _disjoint() -> np.ndarray:
    """(1326, 1326) bool: True where the two hands share no card."""
    bits = (np.uint64(1) << HAND_CARDS[:, 0].astype(np.uint64)) | (
        np.uint64(1) << HAND_CARDS[:, 1].astype(np.uint64)
    )
    return np.asarray((bits[:, None] & bits[None, :]) == 0)


def _ordered_keys() -> np.ndarray:
    """(1326, 1326) int64 ordered-pair key (see the module docstring); -1 where hands collide.

    Computed per hero hand: one permutation maps hero to the smallest hand of its
    class (its representative); the villain, mapped the same way, is then
    minimised over the permutations that fix the representative.
    """
    perms = _hand_permutations()
    rep = perms.min(axis=0)  # (1326,) representative of each hand's class
    to_rep = perms.argmin(axis=0)  # a permutation taking each hand to it
    reps = np.unique(rep)
    # For each representative r: villain v -> min over the stabiliser of r of p(v).
    stab_min = np.empty((len(reps), NUM_HANDS), dtype=np.int64)
    for i, r in enumerate(reps):
        stab_min[i] = perms[perms[:, r] == r].min(axis=0)
    rep_row = np.searchsorted(reps, rep)
    mapped = perms[to_rep[:, None], np.arange(NUM_HANDS)[None, :]]  # p_a(b)
    keys: np.ndarray = rep[:, None] * NUM_HANDS + stab_min[rep_row[:, None], mapped]
    keys[~_disjoint()] = -1
    return keys


@lru_cache(maxsize=1)
def _numbering() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ids, flipped, canonical keys): see :func:`matchup_ids` and :func:`canonical_matchups`."""
    keys = _ordered_keys()
    matchup_key = np.minimum(keys, keys.T)
    valid = matchup_key >= 0
    present = np.zeros(NUM_HANDS * NUM_HANDS, dtype=bool)
    present[matchup_key[valid]] = True
    canonical = np.flatnonzero(present)
    number = np.cumsum(present, dtype=np.int64) - 1
    ids = np.where(valid, number[np.where(valid, matchup_key, 0)], -1).astype(np.int32)
    flipped = valid & (keys != matchup_key)
    for a in (ids, flipped, canonical):
        a.setflags(write=False)
    return ids, flipped, canonical


def matchup_ids() -> tuple[np.ndarray, np.ndarray]:
    """Canonical matchup of every ordered pair of hands.

    Returns:
        ``(ids, flipped)``: ``ids`` (1326, 1326) int32, the canonical matchup
        number (0..47007) of hand ``a`` against hand ``b``, -1 where they share
        a card; ``flipped`` (1326, 1326) bool, True where ``(a, b)`` is the
        representative pair reversed (``a`` plays the representative's second
        hand, so its wins are the stored losses).  Both read-only, cached.
    """
    ids, flipped, _ = _numbering()
    return ids, flipped


def canonical_matchups() -> np.ndarray:
    """Representative ordered pair of hands of each canonical matchup.

    Returns:
        (47008, 2) int64 colex hand numbers ``(hero, villain)``, in canonical
        id order; the stored counts are hero's wins and ties against villain.
    """
    _, _, canonical = _numbering()
    return np.stack([canonical // NUM_HANDS, canonical % NUM_HANDS], axis=1)


def canonical_checksum() -> str:
    """SHA-256 (hex) of the canonical keys as little-endian int64: the shipped file's guard."""
    _, _, canonical = _numbering()
    return hashlib.sha256(canonical.astype("<i8").tobytes()).hexdigest()


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


def save_counts(path: Path, wins: np.ndarray, ties: np.ndarray) -> None:
    """Write the full table of counts (47,008 entries each) as a compressed .npz."""
    if wins.shape != (NUM_CANONICAL_MATCHUPS,) or ties.shape != (NUM_CANONICAL_MATCHUPS,):
        raise ValueError("expected one count per canonical matchup")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez_compressed(
        tmp,
        wins=wins.astype("<u4"),
        ties=ties.astype("<u4"),
        num_boards=np.int64(NUM_BOARDS),
        format_version=np.int64(FORMAT_VERSION),
        canonical_sha256=np.str_(canonical_checksum()),
    )
    os.replace(tmp, path)


# ---------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------


def _cache_path() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "acpc-lbr" / "preflop_counts.npz"


def _read_counts(path: Path) -> tuple[np.ndarray, np.ndarray]:
    with np.load(path, allow_pickle=False) as data:
        if int(data["format_version"]) != FORMAT_VERSION or int(data["num_boards"]) != NUM_BOARDS:
            raise RuntimeError(f"{path}: unsupported preflop table format")
        if str(data["canonical_sha256"]) != canonical_checksum():
            raise RuntimeError(
                f"{path}: canonical matchup numbering differs from this code's; "
                "rebuild with `python -m acpc_lbr.preflop --build`"
            )
        wins = np.array(data["wins"], dtype=np.int64)
        ties = np.array(data["ties"], dtype=np.int64)
    if wins.shape != (NUM_CANONICAL_MATCHUPS,) or ties.shape != wins.shape:
        raise RuntimeError(f"{path}: expected {NUM_CANONICAL_MATCHUPS} counts")
    return wins, ties


@lru_cache(maxsize=1)
def load_counts() -> tuple[np.ndarray, np.ndarray]:
    """Exact (wins, ties) of every canonical matchup's representative, as int64 (47008,).

    Read from the shipped package data; if it is missing (a stripped install),
    from the user cache, building it there first (minutes, progress on stderr).
    """
    for path in (DATA_PATH, _cache_path()):
        if path.exists():
            return _read_counts(path)
    print(
        "acpc-lbr: preflop equity table not found; building it once "
        f"into {_cache_path()} (a few minutes)",
        file=sys.stderr,
    )
    wins, ties = build_counts(workers=os.cpu_count() or 1, progress=sys.stderr)
    save_counts(_cache_path(), wins, ties)
    return _read_counts(_cache_path())


@lru_cache(maxsize=1)
def preflop_equity_table() -> np.ndarray:
    """Exact preflop equity of every hand against every hand.

    Returns:
        (1326, 1326) float64, read-only, in colex hand order: ``e[a, b]`` =
        (wins + ties / 2) / 1,712,304 of hand ``a`` against hand ``b`` over
        every five-card board; 0 where the hands share a card.  Built from the
        shipped counts on first call (~0.1 s) and cached.
    """
    wins, ties = load_counts()
    ids, flipped = matchup_ids()
    losses = NUM_BOARDS - wins - ties
    # Same float expression as equity_vector, so both give identical bits.
    forward = (wins + 0.5 * ties) / NUM_BOARDS
    backward = (losses + 0.5 * ties) / NUM_BOARDS
    valid = ids >= 0
    safe = np.where(valid, ids, 0)
    table = np.where(flipped, backward[safe], forward[safe])
    table[~valid] = 0.0
    table.setflags(write=False)
    return table


def preflop_counts_vector(hero: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Exact board counts of hero's two cards against every hand, from the shipped table.

    Args:
        hero: Hero's two cards (indices 0..51).

    Returns:
        ``(wins, ties)``: int64 arrays of shape (1326,) in colex hand order,
        boards (out of 1,712,304) on which hero beats or ties each hand; 0
        for hands that share a card with hero.

    Raises:
        EquityInputError: on a bad or repeated card.
    """
    c1, c2 = check_cards(hero, "hero", (2,))
    row = hand_index(c1, c2)
    wins, ties = load_counts()
    ids, flipped = matchup_ids()
    valid = ids[row] >= 0
    safe = np.where(valid, ids[row], 0)
    hero_wins = np.where(flipped[row], NUM_BOARDS - wins[safe] - ties[safe], wins[safe])
    return np.where(valid, hero_wins, 0), np.where(valid, ties[safe], 0)


def preflop_equity_vector(hero: Sequence[int]) -> np.ndarray:
    """Exact preflop equity of hero's two cards against every hand.

    Args:
        hero: Hero's two cards (indices 0..51).

    Returns:
        float64 array of shape (1326,) (a fresh copy) in colex hand order; 0
        for hands that share a card with hero.

    Raises:
        EquityInputError: on a bad or repeated card.

    Pocket aces against kings of the two other suits (GNU poker-eval counts
    1,388,072 wins and 6,538 ties of 1,712,304 boards):

    >>> from protocol.cards import cards_from_text
    >>> row = preflop_equity_vector(cards_from_text("AsAh"))
    >>> round(float(row[hand_index(*cards_from_text("KdKc"))]), 6)
    0.812555
    """
    c1, c2 = check_cards(hero, "hero", (2,))
    return np.array(preflop_equity_table()[hand_index(c1, c2)])


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m acpc_lbr.preflop --build``: recompute and write the counts."""
    parser = argparse.ArgumentParser(
        prog="python -m acpc_lbr.preflop",
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


__all__ = [
    "DATA_PATH",
    "NUM_BOARDS",
    "NUM_CANONICAL_MATCHUPS",
    "build_counts",
    "canonical_checksum",
    "canonical_matchups",
    "load_counts",
    "matchup_counts",
    "matchup_ids",
    "preflop_counts_vector",
    "preflop_equity_table",
    "preflop_equity_vector",
    "save_counts",
]

if __name__ == "__main__":
    sys.exit(main())

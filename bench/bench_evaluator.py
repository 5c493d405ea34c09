"""Benchmark the hand evaluator and the equity vector (single thread).

Run from the repository root::

    .venv/bin/python bench/bench_evaluator.py [--hands 10000000] [--library-hands 200000]

Prints 7-card evaluations per second of ``acpc_lbr.evaluator.evaluate_batch``
(the public, validating front door, on random uint8 hands; the first call is
excluded) next to phevaluator's and eval7's, measured in the same run on a
smaller sample through their Python APIs (one call per hand, as a caller would
use them), and the ratios.  Then the time per call of ``equity_vector`` on
random flop, turn and river spots and preflop (a row of the exact preflop
table, :mod:`acpc_lbr.preflop`), ``equity`` preflop, the preflop table's load
time, and the warm start (import + first call in a fresh interpreter, numba
cache warm).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from acpc_lbr import evaluator
from acpc_lbr.equity import equity, equity_vector


def random_hands(rng: np.random.Generator, n: int, k: int = 7) -> np.ndarray:
    """``n`` uniformly random hands of ``k`` distinct cards, shape (n, k) uint8."""
    hands = rng.integers(0, 52, size=(n, k), dtype=np.uint8)
    while True:
        s = np.sort(hands, axis=1)
        bad = np.flatnonzero((np.diff(s, axis=1) == 0).any(axis=1))
        if bad.size == 0:
            return hands
        hands[bad] = rng.integers(0, 52, size=(bad.size, k), dtype=np.uint8)


def best_of(repeats: int, func) -> float:  # type: ignore[no-untyped-def]
    """Smallest wall time of ``repeats`` calls of ``func``."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        func()
        times.append(time.perf_counter() - t0)
    return min(times)


def bench_ours(hands: np.ndarray) -> float:
    """evaluate_batch evaluations per second (validation included)."""
    evaluator.evaluate_batch(hands[:10])  # compile / load from cache
    return len(hands) / best_of(3, lambda: evaluator.evaluate_batch(hands))


def bench_ours_per_call(hands: np.ndarray) -> float:
    """evaluate() evaluations per second, one Python call per hand (like the libraries)."""
    rows = hands.tolist()
    evaluator.evaluate(rows[0])
    return len(rows) / best_of(2, lambda: [evaluator.evaluate(r) for r in rows])


def bench_phevaluator(hands: np.ndarray) -> float | None:
    """phevaluator.evaluate_cards evaluations per second (one Python call per hand)."""
    try:
        from phevaluator import evaluate_cards
    except ImportError:
        return None
    rows = hands.tolist()
    seconds = best_of(2, lambda: [evaluate_cards(*r) for r in rows])
    return len(rows) / seconds


def bench_eval7(hands: np.ndarray) -> float | None:
    """eval7.evaluate evaluations per second (one Python call per hand, cards prebuilt)."""
    try:
        import eval7
    except ImportError:
        return None
    deck = [eval7.Card("23456789TJQKA"[c // 4] + "cdhs"[c % 4]) for c in range(52)]
    rows = [[deck[c] for c in r] for r in hands.tolist()]
    seconds = best_of(2, lambda: [eval7.evaluate(r) for r in rows])
    return len(rows) / seconds


def bench_equity_vector(rng: np.random.Generator, n_board: int, spots: int) -> float:
    """Median milliseconds per equity_vector call over random spots."""
    times = []
    for _ in range(spots):
        cards = rng.choice(52, 2 + n_board, replace=False).tolist()
        equity_vector(cards[:2], cards[2:])  # first call of a spot excluded (compile)
        t0 = time.perf_counter()
        equity_vector(cards[:2], cards[2:])
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def bench_preflop_equity(rng: np.random.Generator, spots: int) -> float:
    """Median milliseconds of a preflop hand-vs-hand equity (1,712,304 boards)."""
    times = []
    equity([51, 46], [40, 41])
    for _ in range(spots):
        cards = rng.choice(52, 4, replace=False).tolist()
        t0 = time.perf_counter()
        equity(cards[:2], cards[2:])
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def bench_preflop_vs_random() -> float:
    """Seconds of equity_vs_range preflop against all 1326 hands (one pass, 2.1M boards)."""
    from acpc_lbr.equity import HAND_CARDS, equity_vs_range  # lazy: numba kernels

    t0 = time.perf_counter()
    equity_vs_range([51, 46], HAND_CARDS, [])
    return time.perf_counter() - t0


def preflop_table_load() -> float:
    """Seconds of the first preflop equity_vector in a fresh interpreter (loads the table).

    Measured after the imports, so it is the load itself: read the shipped
    counts, rebuild the canonical numbering, expand to 1326 x 1326.
    """
    code = (
        "import time\n"
        "from acpc_lbr.equity import equity_vector\n"
        "t = time.perf_counter(); equity_vector([51, 46])\n"
        "print(time.perf_counter() - t)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, check=True, capture_output=True, text=True
    )
    return float(out.stdout.strip())


def start_times() -> tuple[float, float]:
    """(warm, cold) seconds to import the evaluator and equity modules and run each once.

    Each in a fresh interpreter; warm uses the numba cache next to the sources,
    cold an empty temporary cache (so it includes compiling every kernel used).
    """
    code = (
        "import time; t = time.perf_counter()\n"
        "from acpc_lbr.evaluator import evaluate\n"
        "from acpc_lbr.equity import equity_vector\n"
        "evaluate([0, 5, 10, 15, 20, 25, 30]); equity_vector([51, 46], [0, 5, 30, 33])\n"
        "print(time.perf_counter() - t)\n"
    )

    def run(env: dict[str, str]) -> float:
        out = subprocess.run(
            [sys.executable, "-c", code],
            cwd=REPO,
            check=True,
            capture_output=True,
            text=True,
            env=env,
        )
        return float(out.stdout.strip())

    run(dict(os.environ))  # make sure the cache is populated
    warm = run(dict(os.environ))
    with tempfile.TemporaryDirectory() as cache_dir:
        cold = run(dict(os.environ, NUMBA_CACHE_DIR=cache_dir))
    return warm, cold


def main(argv: list[str] | None = None) -> None:
    """Run every benchmark and print a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hands", type=int, default=10_000_000, help="hands for our evaluator")
    parser.add_argument(
        "--library-hands", type=int, default=200_000, help="hands for phevaluator and eval7"
    )
    parser.add_argument("--spots", type=int, default=50, help="random spots per street")
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    hands = random_hands(rng, args.hands)
    ours = bench_ours(hands)
    small = hands[: args.library_hands]
    ph = bench_phevaluator(small)
    e7 = bench_eval7(small)
    per_call = bench_ours_per_call(small)

    print(
        f"7-card hand evaluation, single thread ({args.hands:,} random hands for ours, "
        f"{len(small):,} for the libraries)"
    )
    print(f"{'evaluator':<44}{'M evals/s':>12}{'ours / it':>12}")
    print(f"{'acpc_lbr evaluate_batch (validating)':<44}{ours / 1e6:>12.1f}{1.0:>12.1f}")
    for name, rate in (
        ("acpc_lbr evaluate (per call)", per_call),
        ("phevaluator evaluate_cards (per call)", ph),
        ("eval7 evaluate (per call)", e7),
    ):
        if rate is None:
            print(f"{name:<44}{'n/a':>12}")
        else:
            print(f"{name:<44}{rate / 1e6:>12.2f}{ours / rate:>12.0f}")

    print()
    print(f"equity_vector, single thread (median of {args.spots} random spots)")
    print(f"{'street':<12}{'completions x hands':>22}{'ms / call':>12}")
    for name, n_board, work in (
        ("flop", 3, "1081 x 990"),
        ("turn", 4, "46 x 990"),
        ("river", 5, "1 x 990"),
        ("preflop", 0, "table row"),
    ):
        ms = bench_equity_vector(rng, n_board, args.spots)
        print(f"{name:<12}{work:>22}{ms:>12.3f}")
    print()
    print(
        f"equity() preflop, hand vs hand (1,712,304 boards): {bench_preflop_equity(rng, 5):.1f} ms"
    )
    print(
        f"equity_vs_range() preflop vs all 1326 hands ('random'): {bench_preflop_vs_random():.2f} s"
    )
    print(
        "preflop table load (fresh process: first equity_vector(hero) with no board): "
        f"{preflop_table_load():.2f} s"
    )
    warm, cold = start_times()
    print(
        f"start (fresh process: import + first evaluate + first equity_vector): "
        f"warm cache {warm:.2f} s, cold cache (compiling) {cold:.2f} s"
    )


if __name__ == "__main__":
    main()

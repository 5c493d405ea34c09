"""Candidate 95% intervals of a mean, side by side on matches sampled from exact Kuhn and Leduc laws.

Why the printed interval is the one it is (docs/results.md, "The intervals' miss
rates"): for each case and play of :mod:`bench.bench_honesty`, the same sampled
matches are given to

* ``normal``: mean ± 1.96·s/√n (printed before);
* ``t``: mean ± t(n − 1)·s/√n;
* ``hall``: Hall's (1992) skewness-removing transformation with the sample skewness g
  (:func:`acpc_lbr.stats.skew_corrected_interval` with its link to the mean set to 0);
* ``printed``: the same with the skewness estimate's link to the mean removed, as
  :meth:`acpc_lbr.stats.RunningMean.interval` prints it.

Each cell is miss / above / below, in % of the matches: the interval misses LBR's
exact value, lies wholly above it (the lower bound overstates; nominal 2.5%), or
wholly below it (nominal 2.5%). Per case, ``--matches`` matches of each play:

    .venv/bin/python bench/bench_intervals.py --only "kuhn equilibrium" --play duplicate --estimators raw \\
        --matches 100000
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_honesty import FCPA, honest_cases

from acpc_lbr.calibration import AIVAT, IO, RAW, FloatArray, match_laws, sample_match
from acpc_lbr.stats import Z95, skew_corrected_interval

COLUMNS = {"raw": RAW, "io": IO, "aivat": AIVAT}


def candidates(units: FloatArray) -> dict[str, tuple[FloatArray, FloatArray]]:
    """Each candidate's (low, high) per match (a row of units)."""
    from scipy.special import stdtrit

    n = units.shape[1]
    mean = units.mean(axis=1)
    s = units.std(axis=1, ddof=1)
    centred = units - mean[:, None]
    m2, m3, m4 = ((centred**k).mean(axis=1) for k in (2, 3, 4))
    with np.errstate(divide="ignore", invalid="ignore"):
        g = np.where(m2 > 0.0, m3 / m2**1.5, 0.0)
        b2 = np.where(m2 > 0.0, m4 / (m2 * m2), 3.0)
    half = s / math.sqrt(n)
    t = float(stdtrit(n - 1, 0.975))
    return {
        "normal": (mean - Z95 * half, mean + Z95 * half),
        "t": (mean - t * half, mean + t * half),
        "hall": skew_corrected_interval(mean, s, float(n), g, 3.0 + 1.5 * g * g),  # link b₂ − 3 − 1.5g² = 0
        "printed": skew_corrected_interval(mean, s, float(n), g, b2),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--matches", type=int, default=20_000, help="matches per case, play and deals")
    parser.add_argument("--deals", default="200")
    parser.add_argument("--play", choices=("hands", "duplicate", "both"), default="both")
    parser.add_argument("--estimators", default="raw,io,aivat")
    parser.add_argument("--only", default="", help="comma-separated case names (default: all)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    wanted = {name.strip() for name in args.only.split(",") if name.strip()}
    plays = (False, True) if args.play == "both" else (args.play == "duplicate",)
    names = ("normal", "t", "hall", "printed")
    print("| bot | play | deals | estimator | matches | " + " | ".join(names) + " |")
    print("|---|---|---|---|---|" + "---|" * len(names))
    for case, build in honest_cases().items():
        if wanted and case not in wanted:
            continue
        game, play, answers = build()
        laws = match_laws(game, play, FCPA, answers=answers)
        for deals in (int(d) for d in args.deals.split(",")):
            for duplicate in plays:
                for estimator in args.estimators.split(","):
                    above = dict.fromkeys(names, 0)
                    below = dict.fromkeys(names, 0)
                    done = 0
                    while done < args.matches:
                        size = min(args.matches - done, max(400_000 // deals, 1))
                        units = sample_match(laws, size, deals, duplicate, rng)[:, :, COLUMNS[estimator]]
                        for name, (low, high) in candidates(units).items():
                            above[name] += int((low > laws.value).sum())
                            below[name] += int((high < laws.value).sum())
                        done += size
                    m = args.matches
                    cells = [f"{100 * (above[k] + below[k]) / m:.2f} / {100 * above[k] / m:.2f} / "
                             f"{100 * below[k] / m:.2f}" for k in names]
                    play_name = "duplicate" if duplicate else "hands"
                    print(f"| {case} | {play_name} | {deals:,} | {estimator} | {m:,} | " + " | ".join(cells) + " |",
                          flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

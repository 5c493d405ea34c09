"""Scale-out on Dask: hands/s with 1 and 2 local workers in the same run, and the per-batch overhead.

Usage::

    .venv/bin/python bench/bench_scaleout.py [--hands 2000] [--batch-hands 250] [--runs 2]
        [--game nolimit --opponent call-raise --rounds 3-4]

Every figure comes from ``acpc-lbr evaluate`` run through the CLI, as users
run it: the driver, and per batch a dealer, the LBR agent and the opponent in
their own processes. Deals are counted as deals (a duplicate deal is played
twice, and counts once). The two worker counts alternate within each run, so
they share the machine's state.

The per-batch overhead is measured apart: a batch of one deal costs start-up
plus one deal; a batch of ``--batch-hands`` deals costs start-up plus that many
deals; the two give the start-up and the cost per deal, and from them the
batch size at which the overhead stays under 5% of a batch.
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

CLI = [sys.executable, "-m", "acpc_lbr.cli", "evaluate"]


def timed(args: list[str]) -> float:
    """Wall seconds of one ``acpc-lbr evaluate`` (exits non-zero -> SystemExit)."""
    start = time.perf_counter()
    done = subprocess.run([*CLI, *args, "--quiet"], capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"evaluate {' '.join(args)} exited {done.returncode}:\n{done.stderr[-1500:]}")
    return seconds


def main() -> int:
    """Run the benchmark and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hands", type=int, default=2000)
    parser.add_argument("--batch-hands", type=int, default=250)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--game", default="nolimit")
    parser.add_argument("--opponent", default="call-raise")
    parser.add_argument("--rounds", default=None)
    options = parser.parse_args()
    workload = ["--game", options.game, "--opponent", options.opponent]
    if options.rounds:
        workload += ["--rounds", options.rounds]
    print(f"load average at start: {os.getloadavg()[0]:.2f}; {os.cpu_count()} cores", flush=True)
    rates: dict[int, list[float]] = {1: [], 2: []}
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(options.runs):
            for workers in (1, 2):
                seconds = timed([*workload, "--hands", str(options.hands), "--batch-hands",
                                 str(options.batch_hands), "--workers", str(workers),
                                 "--seed", str(run + 1), "--out", str(Path(tmp) / f"{run}-{workers}")])
                rates[workers].append(options.hands / seconds)
                print(f"run {run + 1}, {workers} worker(s): {options.hands / seconds:.1f} deals/s "
                      f"({seconds:.1f} s, driver and cluster start included)", flush=True)
        one = statistics.median(timed([*workload, "--hands", "1", "--out", str(Path(tmp) / f"o{i}")])
                                for i in range(3))
        many = timed([*workload, "--hands", str(options.batch_hands), "--out", str(Path(tmp) / "b")])
    per_deal = max((many - one) / (options.batch_hands - 1), 1e-9)
    startup = max(one - per_deal, 0.0)
    size_5pct = 19 * startup / per_deal
    ratio = statistics.median(rates[2]) / statistics.median(rates[1])
    print(f"\n{options.game} vs {options.opponent}, {options.hands} deals in batches of "
          f"{options.batch_hands}, {options.runs} runs")
    print(f"  deals/s median: 1 worker {statistics.median(rates[1]):.1f}, "
          f"2 workers {statistics.median(rates[2]):.1f}; ratio {ratio:.2f}")
    print(f"  per-batch start-up {startup:.2f} s; per deal {per_deal * 1000:.1f} ms; overhead under "
          f"5% from about {size_5pct:.0f} deals per batch")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

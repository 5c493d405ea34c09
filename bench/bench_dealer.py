"""Dealer throughput: hands/s and dealer CPU per hand, 10,000 no-limit hands of always-call.

The dealer (``acpc-lbr dealer``) and two bots run as separate processes on
loopback, as in the reference timings (acpc.md §16: 1,600-1,900 hands/s for the
C dealer with its trace on, quiet machine). Time runs from the port line to
the dealer's exit; the dealer's CPU time comes from ``wait4``.

Usage::

    .venv/bin/python bench/bench_dealer.py [--hands 10000] [--runs 3] [-q]
        [--bots fast|agents] [--game nolimit] [--events]

``--bots fast`` (default) uses the minimal always-call client below, which
knows heads-up reverse-blinds hold'em only; ``--bots agents`` runs
``acpc-lbr play always-call``.

Measured 2026-11-24 04:40-04:52 UTC on the shared 2-vCPU machine while other
engineers worked (load average 0.6-2.6), 10,000 hands, ``--bots fast``, single
runs alternating the code before (1e1f2ea) and after the per-action trimming
and the faster ``rank_hand`` (e732012), each side on ``PYTHONPATH`` (the speed
of the machine itself changed between batches, so compare within a batch):

* ``-q``, quieter batch (10 runs each): before 1415 / 1885 / 2008 hands/s
  (min/median/max), dealer CPU 0.393 ms/hand median; after 1479 / 2045 / 2179,
  0.363 ms/hand;
* ``-q``, slower batch (3 runs each): before 1380 / 1400 / 1415, 0.568 ms/hand;
  after 1495 / 1542 / 1676, 0.514 ms/hand;
* trace on (3 runs each): before 1429 / 1477 / 1505, 0.557 ms/hand; after
  1447 / 1536 / 1660, 0.530 ms/hand.

Earlier figures (same day, load 1.7-3, before the changes above): trace on
1250 / 1271 / 1271 hands/s at 0.69 ms/hand; ``--game limit``, trace on: about
the same; ``--bots agents`` (``acpc-lbr play always-call``, 1 run): 764
hands/s (the bots, not the dealer, are then the limit); ``--events`` (the CLI
default, JSON event log on): within the noise of the run without it. CPU
figures include ~0.35 s of interpreter start-up and imports.

The C reference dealer: 1,600-1,900 hands/s with its trace on, on a quiet
machine, 0.3 ms CPU/hand (acpc.md §16). Before sending straight to the socket
and the single watchdog timer the same bench gave ~480 (trace) / ~650 (-q)
hands/s at 1.1-1.5 ms/hand. What remains (cProfile, -q): the two socket sends
per action (~19% of the dealer's busy time; the protocol needs one per seat),
Twisted's read and Deferred/coroutine dispatch per reply (~20%), the rules
(State.apply) and MATCHSTATE rendering (~15%), and the hand loop itself.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ACPC_LBR = Path(sys.executable).parent / "acpc-lbr"


def fast_always_call(port: int) -> None:
    """A minimal always-call client for heads-up reverse-blinds hold'em.

    With only calls, the turn follows from the betting string: the button
    (position 1) opens preflop, position 0 every later round.
    """
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.sendall(b"VERSION:2.0.0\r\n")
    reader = sock.makefile("rb")
    for raw in reader:
        line = raw.rstrip(b"\r\n")
        _, position, _, betting, _ = line.split(b":", 4)
        rounds = betting.split(b"/")
        done = len(rounds[-1])
        if len(rounds) == 4 and done == 2 or b"f" in betting:
            continue
        first = 1 if len(rounds) == 1 else 0
        if (first + done) % 2 == int(position):
            sock.sendall(line + b":c\r\n")


def run_once(hands: int, quiet: bool, bots: str, game: str, workdir: Path,
             events: bool = False) -> tuple[float, float]:
    """One match; returns (wall seconds, dealer CPU seconds)."""
    args = [str(ACPC_LBR), "dealer", "bench", game, str(hands), "42", "a", "b"]
    if not events:
        args.append("--no_events")
    if quiet:
        args.append("-q")
    with open(workdir / "dealer.err", "w") as err:
        dealer = subprocess.Popen(args, cwd=workdir, stdout=subprocess.PIPE, stderr=err, text=True)
        assert dealer.stdout is not None
        ports = dealer.stdout.readline().split()
        start = time.perf_counter()
        if bots == "fast":
            procs = [subprocess.Popen([sys.executable, __file__, "--bot", port]) for port in ports]
        else:
            procs = [subprocess.Popen([str(ACPC_LBR), "play", "always-call", "127.0.0.1", port,
                                       "--game", game], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL) for port in ports]
        _, status, usage = os.wait4(dealer.pid, 0)
        wall = time.perf_counter() - start
        dealer.returncode = os.waitstatus_to_exitcode(status)
        for proc in procs:
            proc.wait(timeout=60)
    if dealer.returncode != 0:
        raise SystemExit(f"dealer exited with {dealer.returncode}; see {workdir / 'dealer.err'}")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> int:
    """Run the benchmark and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hands", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("-q", dest="quiet", action="store_true", help="dealer without TO/FROM trace")
    parser.add_argument("--bots", choices=["fast", "agents"], default="fast")
    parser.add_argument("--game", default="nolimit")
    parser.add_argument("--events", action="store_true", help="let the dealer write MATCH.events.jsonl")
    parser.add_argument("--bot", default=None, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.bot is not None:
        fast_always_call(int(options.bot))
        return 0
    rates, cpus, action_rates = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(options.runs):
            wall, cpu = run_once(options.hands, options.quiet, options.bots, options.game, Path(tmp),
                                 options.events)
            # Actions per hand differ between bots (always-call: 8 in hold'em; the
            # reference's example players: 6.4), so the per-action rate is the
            # figure to set beside the reference's.
            actions = sum(len(re.findall(r"[fcr]", line.split(":")[2]))
                          for line in (Path(tmp) / "bench.log").read_text().splitlines()
                          if line.startswith("STATE:"))
            action_rates.append(actions / wall)
            rates.append(options.hands / wall)
            cpus.append(cpu / options.hands * 1000)
            print(f"run {run + 1}: {options.hands / wall:.0f} hands/s, dealer CPU {cpu:.2f} s "
                  f"({cpu / options.hands * 1000:.3f} ms/hand)", flush=True)
    mode = ("-q" if options.quiet else "trace on") + (", events" if options.events else "")
    print(f"{options.game}, {mode}, bots={options.bots}: hands/s min/median/max "
          f"{min(rates):.0f} / {statistics.median(rates):.0f} / {max(rates):.0f}; "
          f"dealer CPU ms/hand median {statistics.median(cpus):.3f}; "
          f"actions/s median {statistics.median(action_rates):.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

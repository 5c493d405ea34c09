"""How much the tournament driver costs over playing the same matches directly.

Three rows, each ratio taken in the same run, alternating:

* ``direct``: the same seatings, one after another, by the plainest launcher:
  ``acpc-lbr dealer`` with the entrants' processes started on its ports, wait
  for all of them; nothing scored;
* ``tournament -c1``: ``acpc-lbr tournament --concurrency 1`` on those matches
  (start-up, scoring, records and the results included);
* ``tournament -c2``: the same with ``--concurrency 2``.

Hands are counted as hands: every seating plays H hands, so a duplicate
match of H deals is 2H hands heads-up. The entrants are the C plain bot
(docs/examples/plain_bot.c, built here with cc) in its two strategies (its
random one draws raise sizes, so play is varied), twice; ``--bots mixed``
puts two built-in Python bots in place of two of them. The driver's memory is reported
as its peak RSS.

``--memory N`` instead measures whether the driver's memory grows with the
matches played: one event of 10N duplicate matches of two entrants, the
driver in this process, its memory read after N and after 10N finished
matches (Python's traced bytes, tracemalloc, and the process's RSS). The
seatings are stubbed: each copies the logs of one real duplicate match,
played once at the start by ``acpc-lbr dealer`` and the C plain bot (random
strategy, no-limit: many all-in hands, so the all-in scoring runs), so the
driver scores, records and keeps real matches without starting thousands of
processes. Real seatings add only processes that end with their match.

    python bench/bench_tournament.py [--hands 2000] [--matches 2] [--runs 3] [--bots c|mixed]
    python bench/bench_tournament.py --memory 200 [--hands 500]
"""

from __future__ import annotations

import argparse
import itertools
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GAME = "nolimit"


def build_bot(folder: Path) -> Path:
    binary = folder / "plain_bot"
    subprocess.run(["cc", "-O2", "-std=c99", "-o", str(binary), str(REPO / "docs/examples/plain_bot.c")], check=True)
    return binary


def entrants(bot: Path, kind: str) -> list[tuple[str, str, list[str]]]:
    """(name, tournament spec, argv template with {port}) of the four entrants.

    ``c``: four C bots (the plain bot's two strategies, twice); ``mixed``: two C
    bots and two built-in Python bots (whose start-up dominates short matches).
    """
    play = [sys.executable, "-m", "acpc_lbr.cli", "play"]
    c = [(f"c{strategy}{i}", f"{bot} {strategy} {{host}} {{port}}", [str(bot), strategy, "127.0.0.1", "{port}"])
         for i in (1, 2) for strategy in ("random", "threshold")]
    if kind == "c":
        return c
    return [*c[:2], ("callraise", "call-raise", [*play, "call-raise", "127.0.0.1", "{port}", "--game", GAME]),
            ("random", "random", [*play, "random", "127.0.0.1", "{port}", "--game", GAME])]


def direct(folder: Path, players: list[tuple[str, str, list[str]]], matches: int, hands: int) -> float:
    """Seconds to play every seating of every pairing with a bare launcher."""
    started = time.perf_counter()
    for k in range(matches):
        for pair in itertools.combinations(players, 2):
            for order in itertools.permutations(pair):
                seating(folder, order, hands, 100 + k)
    return time.perf_counter() - started


def seating(folder: Path, order: Sequence[tuple[str, str, list[str]]], hands: int, seed: int) -> None:
    """One seating by the bare launcher: ``acpc-lbr dealer`` (``m.log`` in ``folder``) and the bots."""
    names = [n for n, _, _ in order]
    dealer = subprocess.Popen(
        [sys.executable, "-m", "acpc_lbr.cli", "dealer", "m", GAME, str(hands), str(seed), *names, "-q"],
        cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert dealer.stdout is not None
    ports = dealer.stdout.readline().split()
    bots = [subprocess.Popen([w.replace("{port}", p.decode()) for w in argv], cwd=folder,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for (_, _, argv), p in zip(order, ports)]
    dealer.wait()
    for bot in bots:
        bot.wait()


def tournament(folder: Path, players: list[tuple[str, str, list[str]]], matches: int, hands: int,
               concurrency: int) -> float:
    out = folder / f"event-c{concurrency}-{time.monotonic_ns()}"
    argv = [sys.executable, "-m", "acpc_lbr.cli", "tournament", "--game", GAME, "-q",
            *[w for name, spec, _ in players for w in ("--entrant", f"{name}={spec}")],
            "--matches", str(matches), "--hands", str(hands), "--seed", "100",
            "--concurrency", str(concurrency), "--out", str(out), "--resamples", "1000"]
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"tournament failed: {done.stderr[-2000:]}")
    shutil.rmtree(out)
    return seconds


def memory(folder: Path, bot: Path, matches: int,
           hands: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """(traced bytes, RSS bytes, objects the garbage collector tracks) of this process after
    ``matches`` and after 10x ``matches`` finished matches."""
    import gc
    import os
    import tracemalloc

    # lazy: only --memory runs the driver in this process; the other rows start acpc-lbr commands
    from acpc_lbr.app.tournament.driver import OK, Driver, Progress, ThreadExecutor
    from acpc_lbr.app.tournament.event import build_event  # lazy: as above
    from acpc_lbr.app.tournament.seating import SeatingJob, SeatingReport  # lazy: as above
    from acpc_lbr.app.tournament.store import EventStore  # lazy: as above

    players = [(name, f"{bot} random {{host}} {{port}}", [str(bot), "random", "127.0.0.1", "{port}"])
               for name in ("ca", "cb")]
    real = folder / "real"
    real.mkdir()
    logs = []
    for number, order in enumerate(itertools.permutations(players)):
        (real / str(number)).mkdir()
        seating(real / str(number), order, hands, 100)
        logs.append((real / str(number) / "m.log").read_text())

    def copied(job: SeatingJob) -> SeatingReport:
        """A seating that plays nothing: the real match's log of the same seating order."""
        where = Path(job.folder)
        where.mkdir(parents=True)
        (where / "match.log").write_text(logs[int(where.parent.name[1:])])
        return SeatingReport(True, job.folder, (), 0.0, hands, {})

    event = build_event(GAME, [f"{name}={spec}" for name, spec, _ in players], matches=10 * matches,
                        hands=hands, seed=100, resamples=0)
    store = EventStore(folder / "event", event)
    store.open("")
    page = os.sysconf("SC_PAGE_SIZE")
    samples: list[tuple[int, int, int]] = []

    def watch(progress: Progress) -> None:
        if progress.done in (matches, 10 * matches):
            gc.collect()
            rss = int(Path("/proc/self/statm").read_text().split()[1]) * page
            samples.append((tracemalloc.get_traced_memory()[0], rss, len(gc.get_objects())))

    driver = Driver(event, store, ThreadExecutor(1, run=copied), 1)
    # CPython keeps up to 2,000 freed tuples of each small size for reuse, which tracemalloc
    # counts as held: fill those lists first, or they would look like growth.
    spare = [tuple(range(size)) for size in range(1, 20) for _ in range(2000)]
    del spare
    tracemalloc.start()
    try:
        driver.run(watch)
    finally:
        tracemalloc.stop()
    if driver.outcomes.count(OK) != 10 * matches:
        raise SystemExit(f"only {driver.outcomes.count(OK)} of {10 * matches} matches were scored")
    return samples[0], samples[1]


def report_memory(matches: int, hands: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        first, last = memory(folder, build_bot(folder), matches, hands)
    grown = last[0] - first[0]
    print(f"driver in process, stubbed seatings (a real {hands}-hand duplicate match's logs), one event of "
          f"{10 * matches} matches:")
    for done, (traced, rss, objects) in ((matches, first), (10 * matches, last)):
        print(f"  after {done:>6} matches: traced {traced / 1e6:8.2f} MB   RSS {rss / 1e6:8.1f} MB   "
              f"{objects:>9} objects (gc)")
    print(f"  ratio {last[0] / first[0]:.3f} traced, {last[1] / first[1]:.3f} RSS, {last[2] / first[2]:.4f} objects; "
          f"{grown / (9 * matches):+.0f} traced bytes and {(last[2] - first[2]) / (9 * matches):+.2f} objects "
          "per match played")
    print("  (traced bytes include the small objects CPython keeps freed for reuse, up to 2,000 of each "
          "kind: a bounded drift, not held data; the objects the garbage collector tracks leave those out)")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hands", type=int, default=2000)
    parser.add_argument("--matches", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--bots", choices=["c", "mixed"], default="c",
                        help="four C bots (default), or two C and two Python bots")
    parser.add_argument("--memory", type=int, default=0, metavar="N",
                        help="instead: the driver's memory after N and 10N matches (stubbed seatings)")
    args = parser.parse_args()
    if args.memory:
        return report_memory(args.memory, args.hands)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        bot = build_bot(folder)
        players = entrants(bot, args.bots)
        seatings = args.matches * 6 * 2
        total_hands = seatings * args.hands
        rows: dict[str, list[float]] = {"direct": [], "tournament -c1": [], "tournament -c2": []}
        for run in range(args.runs):
            rows["direct"].append(total_hands / direct(folder, players, args.matches, args.hands))
            rows["tournament -c1"].append(total_hands / tournament(folder, players, args.matches, args.hands, 1))
            rows["tournament -c2"].append(total_hands / tournament(folder, players, args.matches, args.hands, 2))
            print(f"run {run + 1}: " + ", ".join(f"{k} {v[-1]:.0f} hands/s" for k, v in rows.items()), flush=True)
    base = statistics.median(rows["direct"])
    c1 = statistics.median(rows["tournament -c1"])
    c2 = statistics.median(rows["tournament -c2"])
    print(f"\n{seatings} seatings of {args.hands} hands ({total_hands} hands) per row, medians of {args.runs} runs:")
    print(f"  direct          {base:8.0f} hands/s")
    print(f"  tournament -c1  {c1:8.0f} hands/s   {c1 / base:.2f}x direct")
    print(f"  tournament -c2  {c2:8.0f} hands/s   {c2 / c1:.2f}x -c1")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"  largest child's peak RSS (a dealer, a bot or a driver): {peak:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())

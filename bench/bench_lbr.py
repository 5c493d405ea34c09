"""LBR throughput: hands/s of LBR (fcpa) against always-call, and where the time goes.

Three set-ups:

* ``--mode cli``: ``acpc-lbr evaluate`` run as a user runs it (a separate
  process, start-up included), once with imaginary observations (the
  default) and once with ``--no-io``, in the same run: hands/s of each, the
  ratio (what IO costs), and the CPU time of each process (evaluate's and
  its mirrored seating's); then once more with ``--one-process`` (both
  seatings in one process, the layout before issue 8's last round) as the
  baseline of the same run. ``--separate-bot``
  runs the opponent as its own process (``--opponent-cmd "acpc-lbr play
  BOT ..."``) instead of inside evaluate's; ``--main-job`` runs the README's
  main job (``acpc-lbr evaluate`` with no options) instead. ``--repeat N``
  runs N pairs of IO and ``--no-io`` (no ``--one-process`` run) and gives
  IO's cost per pair and the median; ``--together`` runs each pair's two
  evaluations at the same time, so that other jobs on a shared machine slow
  both alike (each then has about half the cores: compare the two, not the
  hands/s with other figures).

* ``--mode processes`` (default): ``acpc-lbr dealer``, ``acpc-lbr play
  always-call`` and ``acpc-lbr play lbr --timing FILE`` as three processes on
  loopback, the way a user runs them; both cores can work. Time runs from the
  dealer's port line to its exit.
* ``--mode inprocess``: ``acpc-lbr evaluate``'s set-up (dealer, LBR agent and
  bot in one process and one reactor, duplicate seating); the process's CPU
  time per hand is reported too, which is robust against a busy machine.

The LBR agent's time split: *queries* (waiting for the range answers: the
dealer's relay and the opponent's look-ups), *protocol* (reading lines,
parsing answers, printing queries) and *compute* (equity, range updates and
decisions).

Usage::

    .venv/bin/python bench/bench_lbr.py [--hands 2000] [--mode processes|inprocess|cli]
        [--bets fcpa] [--rounds 3-4] [--opponent always-call] [--separate-bot] [--main-job]
        [--repeat N] [--together] [--baseline VENV]

``--baseline VENV`` (cli mode) runs ``acpc-lbr evaluate`` from another install of
the project (a virtual environment holding another revision: ``git worktree add
DIR REV``, ``python -m venv DIR/.venv``, ``DIR/.venv/bin/pip install -e DIR``),
alternating with this checkout's, ``--repeat`` times each, and prints the ratio
ours / baseline of each run and the median: a change's effect on LBR's speed,
measured in one run.

Figures (2026-11-24, shared 2-vCPU machine, other engineers' test runs in
parallel, load average 3-5, so wall times are pessimistic) are recorded in
docs/lbr.md ("Speed").
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def run_processes(args: argparse.Namespace) -> dict[str, Any]:
    """Dealer, bot and LBR as three processes; returns the figures."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    cli = [sys.executable, "-m", "acpc_lbr.cli"]
    with tempfile.TemporaryDirectory() as work:
        timing_path = Path(work) / "lbr.json"
        dealer = subprocess.Popen(
            [*cli, "dealer", "bench", "nolimit", str(args.hands), "1", "lbr", args.opponent,
             "-q", "--no_events", "--t_per_hand", "600000"],
            cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert dealer.stdout is not None
        ports = dealer.stdout.readline().split()
        started = time.perf_counter()
        lbr = subprocess.Popen(
            [*cli, "play", "lbr", "127.0.0.1", ports[0], "--game", "nolimit", "--bets", args.bets,
             "--rounds", args.rounds, "--timing", str(timing_path)], cwd=work, env=env)
        bot = subprocess.Popen(
            [*cli, "play", args.opponent, "127.0.0.1", ports[1], "--game", "nolimit", "--seed", "2"],
            cwd=work, env=env)
        output, _ = dealer.communicate(timeout=3600)
        wall = time.perf_counter() - started
        lbr.wait(timeout=60)
        bot.wait(timeout=60)
        timing = json.loads(timing_path.read_text())
    return {"mode": "processes", "hands": args.hands, "wall_seconds": wall,
            "hands_per_second": args.hands / wall, "score": output.strip().splitlines()[-1:],
            "lbr": timing}


def cli_command(args: argparse.Namespace, work: str, io: bool, one_process: bool = False,
                python: str | None = None) -> list[str]:
    """The ``acpc-lbr evaluate`` command line of a run (logs and JSON in ``work``), run by
    ``python`` (default: this interpreter; ``--baseline``: another install's)."""
    cli = [python or sys.executable, "-m", "acpc_lbr.cli"]
    command = [*cli, "evaluate", "--quiet", "--out", work, "--json", f"{work}/r.json"]
    if not args.main_job:
        deals = max(1, args.hands // 2)
        command += ["--bets", args.bets, "--rounds", args.rounds, "--hands", str(deals)]
        if args.separate_bot:
            play = f"{sys.executable} -m acpc_lbr.cli play {args.opponent}"
            command += ["--opponent-cmd", f"{play} {{host}} {{port}} --game nolimit --seed 2"]
        else:
            command += ["--opponent", args.opponent]
    if not io:
        command.append("--no-io")
    if one_process:
        command.append("--one-process")
    return command


def run_cli_once(args: argparse.Namespace, io: bool, one_process: bool = False,
                 python: str | None = None) -> dict[str, Any]:
    """One ``acpc-lbr evaluate`` (and its mirror's process); wall time from launch to exit, CPU from rusage.
    ``python``: another install's interpreter (``--baseline``), which imports its own sources."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    if python is not None:
        env.pop("PYTHONPATH")
    with tempfile.TemporaryDirectory() as work:
        command = cli_command(args, work, io, one_process, python)
        load = os.getloadavg()[0]
        started = time.perf_counter()
        process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)
        assert process.stdout is not None
        report = process.stdout.read()
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        document = json.loads(Path(f"{work}/r.json").read_text())
    hands = int(document["counts"].get("hands") or document["config"]["hands"] * 2)
    timings = document["timings"]
    return {"io": io, "one_process": one_process, "status": status, "wall_seconds": wall, "hands": hands,
            "hands_per_second": hands / wall, "cpu_seconds": usage.ru_utime + usage.ru_stime,
            "process_cpu_seconds": [timings.get("cpu_seconds", 0.0)]
            + ([timings["mirror_cpu_seconds"]] if "mirror_cpu_seconds" in timings else []),
            "evaluate_seconds": timings["wall_seconds"], "load_before": load,
            "load_after": os.getloadavg()[0], "report": report}


#: Where a sample of the evaluate process belongs: the first of these frames (function
#: name, file) found from the root of its stack names the part; later rows refine it.
PARTS = (
    ("LBR agent", "LbrAgent.lineReceived", "agents/lbr.py"),
    ("opponent bot", "AcpcClient.lineReceived", "agents/client.py"),
    ("dealer", "SeatProtocol.lineReceived", "dealer/seat.py"),
    ("end of run (results document)", "BotFactory._finish", "agents/client.py"),
)
DETAILS = (
    ("LBR agent", "LBR's computation (equity, ranges, decision)", ("LbrPlayer.decide", "LbrPlayer.observe")),
    ("LBR agent", "decoding answers", ("decode_answer",)),
    ("LBR agent", "following the hand (tracker)", ("AcpcClient._read_state",)),
    ("opponent bot", "answering queries (parse, strategy, check, encode)", ("StrategyBot.answer_query",)),
    ("opponent bot", "  of which encoding", ("encode_answer",)),
    ("opponent bot", "  of which reading the query", ("read_query",)),
    ("dealer", "results and IO after each hand", ("MatchResults.after_hand",)),
    ("dealer", "relaying agents' queries (read, check, forward)", ("QueryRelay.agent_query_received",)),
    ("dealer", "checking answers", ("decode_body", "check_rows")),
    ("dealer", "the match loop (deal, states, replies, logs)", ("Match.run",)),
)


def _frame_name(frame: str) -> tuple[str, str]:
    """(function, path) of a py-spy raw frame ``function (path:line)``."""
    name, _, where = frame.rpartition(" (")
    return name, where.rsplit(":", 1)[0]


def profile_summary(raw: str, rate: int) -> str:
    """Samples of one process (py-spy's raw format) split into whose work they were."""
    totals: dict[str, int] = {}
    details: dict[tuple[str, str], int] = {}
    reactor = 0
    count = 0
    for line in raw.splitlines():
        stack, _, number = line.rpartition(" ")
        if not number.isdigit():
            continue
        n = int(number)
        count += n
        frames = [_frame_name(f) for f in stack.split(";")]
        names = [name for name, _ in frames]
        loading = any("importlib" in where for _, where in frames) or any(
            "numba/" in where and ("dispatcher" in where or "caching" in where) for _, where in frames)
        if loading:  # once a process, wherever it happens (a lazy import, a kernel's first call)
            part = "start-up: imports, loading numba's cached kernels"
        elif "AsyncioSelectorReactor.run" not in names:
            part = "start-up and exit: set-up outside the reactor"
        else:
            part = "reactor turns outside the line handlers (polling, reads, queued writes, timers)"
            for label, function, path in PARTS:
                if any(name == function and where.endswith(path) for name, where in frames):
                    part = label
                    break
        totals[part] = totals.get(part, 0) + n
        for owner, label, functions in DETAILS:
            if owner == part and any(name.startswith(functions) for name in names):
                details[(owner, label)] = details.get((owner, label), 0) + n
        leaf = frames[-1][1]
        if any(key in leaf for key in ("twisted/", "asyncio/", "selectors.py")) or frames[-1][0].startswith(
                ("socket.", "send", "recv")):
            reactor += n
    if not count:
        return "profile: no samples"
    lines = [f"profile of the evaluate process ({count} samples at {rate}/s = {count / rate:.1f} s of CPU):"]
    for part, n in sorted(totals.items(), key=lambda kv: -kv[1]):
        lines.append(f"  {100 * n / count:5.1f}%  {part}")
        for (owner, label), m in details.items():
            if owner == part:
                lines.append(f"  {100 * m / count:5.1f}%      {label}")
    lines.append(f"  {100 * reactor / count:5.1f}%  across all parts: Twisted, asyncio and the sockets themselves")
    return "\n".join(lines)


def run_profile(args: argparse.Namespace, command: list[str], env: dict[str, str]) -> str:
    """``command`` under py-spy (a sampling profiler: the process runs at full speed); the summary."""
    import shutil

    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(spy).exists():
        return "profile: py-spy is not installed (pip install -e '.[dev]')"
    rate = 250
    with tempfile.TemporaryDirectory() as work:
        raw = Path(work) / "raw.txt"
        subprocess.run([spy, "record", "-r", str(rate), "-f", "raw", "-o", str(raw), "--", *command],
                       env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        return profile_summary(raw.read_text() if raw.exists() else "", rate)


def run_cli(args: argparse.Namespace) -> dict[str, Any]:
    """evaluate with IO (the default), with --no-io, and with IO in one process (--one-process,
    the layout before the mirror got a process of its own), in the same run; with ``--repeat N``,
    N pairs of IO and --no-io alternately (no --one-process run)."""
    if args.repeat > 1 or args.together:
        pairs = []
        for _ in range(args.repeat):
            if args.together:  # both at once: whatever else loads the machine loads both alike
                from concurrent.futures import ThreadPoolExecutor

                with ThreadPoolExecutor(2) as pool:
                    on, off = pool.map(lambda io: run_cli_once(args, io), (True, False))
                pair = {"io": on, "no_io": off}
            else:
                pair = {"io": run_cli_once(args, True), "no_io": run_cli_once(args, False)}
            pairs.append(pair)
        return {"mode": "cli", "pairs": pairs}
    on = run_cli_once(args, True)
    off = run_cli_once(args, False)
    one = run_cli_once(args, True, one_process=True)
    return {"mode": "cli", "io": on, "no_io": off, "one_process": one,
            "io_cost": 1.0 - on["hands_per_second"] / off["hands_per_second"],
            "speedup": on["hands_per_second"] / one["hands_per_second"]}


def run_baseline(args: argparse.Namespace) -> None:
    """``--baseline VENV``: this checkout's evaluate and another install's, alternating (which goes
    first alternates too), ``--repeat`` times each, IO on; the ratio ours / baseline of each run's
    hands/s and of its busier process's CPU, and their medians (a change measured in one run)."""
    import statistics

    python = str(Path(args.baseline) / "bin" / "python")
    speed, cpu = [], []
    for number in range(args.repeat):
        order = (None, python) if number % 2 == 0 else (python, None)
        runs = {("ours" if who is None else "baseline"): run_cli_once(args, True, python=who) for who in order}
        ours, base = runs["ours"], runs["baseline"]
        speed.append(ours["hands_per_second"] / base["hands_per_second"])
        cpu.append(max(base["process_cpu_seconds"]) / max(ours["process_cpu_seconds"]))
        print(_run_line(f"run {number + 1} ours", ours))
        print(_run_line(f"run {number + 1} baseline", base))
        print(f"run {number + 1}: ours / baseline {speed[-1]:.3f} in hands/s, {cpu[-1]:.3f} in CPU "
              "(baseline's CPU over ours: above 1 means ours uses less)\n")
    print(f"ours / baseline, median of {len(speed)} runs: {statistics.median(speed):.3f} in hands/s "
          f"(per run {', '.join(f'{r:.3f}' for r in speed)}), {statistics.median(cpu):.3f} in CPU "
          f"(per run {', '.join(f'{r:.3f}' for r in cpu)})")


def _run_line(key: str, run: dict[str, Any]) -> str:
    per = " + ".join(f"{c:.1f}" for c in run["process_cpu_seconds"])
    return (f"{key}: {run['hands']} hands in {run['wall_seconds']:.1f} s from launch to exit "
            f"({run['evaluate_seconds']:.1f} s of play) = {run['hands_per_second']:.0f} hands/s; "
            f"evaluate's CPU {run['cpu_seconds']:.1f} s (per process: {per}); load average "
            f"before {run['load_before']:.1f}, after {run['load_after']:.1f}")


def print_pairs(figures: dict[str, Any]) -> None:
    """``--repeat``: each pair's figures and IO's cost, in throughput and in CPU, and their medians."""
    import statistics

    costs, cpu_costs = [], []
    for number, pair in enumerate(figures["pairs"], 1):
        on, off = pair["io"], pair["no_io"]
        cost = 1.0 - on["hands_per_second"] / off["hands_per_second"]
        # The busier process sets the pace when both seatings run at once.
        cpu_cost = max(on["process_cpu_seconds"]) / max(off["process_cpu_seconds"]) - 1.0
        costs.append(cost)
        cpu_costs.append(cpu_cost)
        print(_run_line(f"pair {number} io", on))
        print(_run_line(f"pair {number} no_io", off))
        print(f"pair {number}: IO costs {100 * cost:.1f}% of the throughput, "
              f"{100 * cpu_cost:.1f}% of the busier process's CPU\n")
    print(f"IO costs {100 * statistics.median(costs):.1f}% of the throughput of --no-io (median of "
          f"{len(costs)} pairs: {', '.join(f'{100 * c:.1f}' for c in costs)}); "
          f"{100 * statistics.median(cpu_costs):.1f}% of the busier process's CPU")


def run_inprocess(args: argparse.Namespace) -> dict[str, Any]:
    """evaluate's set-up in this process; returns the figures."""
    from acpc_lbr.runtime.reactor import (
        install_asyncio_reactor,  # lazy: only the in-process mode needs it
    )

    install_asyncio_reactor()
    from twisted.internet import defer
    from twisted.internet import reactor as installed

    reactor: Any = installed  # zope interfaces are opaque to mypy

    # lazy: after the asyncio reactor is installed (these import twisted's reactor)
    from acpc_lbr.app.evaluate.evaluation import EvaluationConfig
    from acpc_lbr.app.evaluate.run import run_evaluation  # lazy: as above
    from acpc_lbr.lbr import ActiveRounds, BettingOptions  # lazy: as above
    from protocol.gamedef import load_game  # lazy: as above

    deals = max(1, args.hands // 2)
    with tempfile.TemporaryDirectory() as work:
        config = EvaluationConfig(
            game_arg="nolimit", game=load_game("nolimit"), opponent=args.opponent, opponent_cmd=None,
            bets=BettingOptions.parse(args.bets), rounds=ActiveRounds.parse(args.rounds),
            hands=deals, seed=1, out=Path(work))
        outcome: list[Any] = []
        cpu_before = resource.getrusage(resource.RUSAGE_SELF)

        async def go() -> None:
            try:
                outcome.append(await run_evaluation(config, reactor))
            finally:
                reactor.stop()

        reactor.callWhenRunning(lambda: defer.ensureDeferred(go()))
        reactor.run()
        cpu_after = resource.getrusage(resource.RUSAGE_SELF)
    evaluation = outcome[0]
    hands = 2 * deals
    cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)
    return {"mode": "inprocess", "hands": hands, "wall_seconds": evaluation.seconds,
            "hands_per_second": hands / evaluation.seconds, "cpu_seconds": cpu,
            "cpu_ms_per_hand": 1000 * cpu / hands,
            "duplicate_mbb": evaluation.mbb("duplicate"), "lbr": evaluation.timing.to_dict()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hands", type=int, default=2000)
    parser.add_argument("--mode", choices=["processes", "inprocess", "cli"], default="processes")
    parser.add_argument("--separate-bot", action="store_true", help="cli: the opponent in its own process")
    parser.add_argument("--main-job", action="store_true", help="cli: the README's main job (no options)")
    parser.add_argument("--profile", action="store_true",
                        help="cli: then run the IO evaluation once more under py-spy and say whose work "
                        "its CPU time was (dealer, LBR agent, bot, results, start-up)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="cli: N pairs of IO and --no-io runs, alternately; IO's cost per pair and the median")
    parser.add_argument("--together", action="store_true",
                        help="cli: run each pair's IO and --no-io evaluations at the same time (four processes "
                        "sharing the cores alike: a fairer comparison on a busy machine)")
    parser.add_argument("--baseline", metavar="VENV",
                        help="cli: also run evaluate from another install (a virtual environment holding "
                        "another revision), alternating with ours --repeat times; prints ours / baseline")
    parser.add_argument("--bets", default="fcpa")
    parser.add_argument("--rounds", default="3-4")
    parser.add_argument("--opponent", default="always-call")
    args = parser.parse_args()
    if args.baseline:
        run_baseline(args)
        return
    if args.mode == "cli":
        figures = run_cli(args)
        if "pairs" in figures:
            print_pairs(figures)
            return
        for key in ("io", "no_io", "one_process"):
            run = figures[key]
            print(run.pop("report").rstrip())
            print(_run_line(key, run) + "\n")
        print(f"IO costs {100 * figures['io_cost']:.0f}% of the throughput of the same run with --no-io")
        print(f"the mirror in its own process: {figures['speedup']:.2f}x the hands/s of --one-process "
              "(same run, IO on)")
        if args.profile:
            with tempfile.TemporaryDirectory() as work:
                env = dict(os.environ, PYTHONPATH=str(REPO))
                print("\n" + run_profile(args, cli_command(args, work, True), env))
        return
    figures = run_processes(args) if args.mode == "processes" else run_inprocess(args)
    lbr = figures["lbr"]
    print(json.dumps(figures, indent=2))
    print(f"{figures['mode']}: {figures['hands']} hands in {figures['wall_seconds']:.1f} s = "
          f"{figures['hands_per_second']:.0f} hands/s; LBR agent: queries {lbr['queries_seconds']:.1f} s, "
          f"protocol {lbr['protocol_seconds']:.1f} s, compute {lbr['compute_seconds']:.1f} s; "
          f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()

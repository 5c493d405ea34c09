"""Dealer throughput with varied play: hands/s and dealer CPU per hand, against the C reference.

The dealer and two bots run as separate processes on loopback. By default each
dealer runs as a user runs it: the events file on, the ``.log`` and the trace as
``-l`` and ``-q`` ask, busy polling at its default. Time runs from the dealer's
start (its ``exec``) to its exit, start-up included, and the time to its port
line is reported apart (``start-up``); the dealer's CPU time (user + system)
comes from ``wait4``, start-up and imports included. The
project's modules are byte-compiled first (``compileall``, as ``pip install``
does): with ``PYTHONDONTWRITEBYTECODE`` set, as on some machines, every start
of ours would otherwise compile them from source again (~0.05 s of CPU).

Usage::

    .venv/bin/python bench/bench_dealer.py [--hands 5000] [--runs 3] [-q] [-l]
        [--bots random|always-call|example] [--reference DIR] [--game nolimit]
        [--no-events] [--matches N] [--variants compiled,pure] [--baseline VENV] [--no-poll] [--send-states]
        [--costs] [--memory HANDS | --rss-hands HANDS] [--starts N] [--profile FILE] [--sample FILE]

Bots (the same bots play against both dealers):

* ``random`` (default): a small Python client with the reference example
  player's mix -- fold 0.06 when folding is legal, the rest split evenly
  between call and raise, the raise size uniform over the legal range -- so
  almost every MATCHSTATE line is new. It reads states with ``protocol/``.
* ``always-call``: a minimal always-call client; every hand repeats the same
  8 actions, so caches in the hot path are always hit. A secondary figure.
* ``example``: the reference's own ``example_player`` binary from ``--reference``.

``--reference DIR`` points at a built copy of the public reference server
(dmorrill10/project_acpc_server, ``make dealer example_player``; build it
outside this repository). Each run then plays the reference dealer and ours
on the same seed with the same bots, alternating, and the summary prints the
ratio ours / reference of each run and their median: above 1.0 means ours is
faster.

``--matches N`` also plays N matches at once in one process of ours (``--match``,
each with its own two bots) and prints its hands/s over one match's.
``--variants compiled,pure`` also plays ours on the pure-Python sources of the
compiled core, the protocol core and the dealer's hot path (``ACPC_LBR_PURE=1``;
"ours" then must run the compiled one) and prints the ratio compiled / pure of
each run. The header names the variant "ours" runs.
``--baseline VENV`` also plays the dealer of another install of the project
(a virtual environment holding another revision, e.g. ``git worktree add DIR
REV``, ``python -m venv DIR/.venv``, ``DIR/.venv/bin/pip install -e DIR``; then
``--baseline DIR/.venv``), alternating with ours, and prints the ratio ours /
baseline of each run: a change's effect measured in one run.
``--send-states`` also plays ours with each fixed way of sending the states of the seats
not to act (``--send_states on_turn``, one send per action, and ``--send_states at_once``,
as the reference; "ours" measures which is faster, its default) and prints the ratio of
each to ours and to the reference (with ``--busy-poll 0``, without polling too).
``--no-poll`` also plays ours with busy polling off (``--busy_poll 0``; see
docs/dealer.md) and prints the ratio on / off of each run; ``--no-events`` also
plays ours without the events file (``--no_events``) and prints what the file
costs: the dealer's CPU per hand with it over without it, per run, its share
of the throughput (1 - hands/s with it / hands/s without it, per run), and, where the
host's noise does not reach, the dealer's own work a hand in memory with it over
without it (``bench/bench_dealer_work.py --read-step --cpu``, three rounds).
``--memory HANDS`` (or ``--rss-hands HANDS``) plays ours once with 10,000 hands
and once with HANDS, and prints the peak RSS of each and their ratio (memory
flat in hands played: at most 1.2; ``--rss-hands 1000000`` takes minutes).
With ``--reference`` the summary also gives the median start-up to the port
line of ours and of the reference over the runs; ``--starts N`` also starts
each dealer N more times, alternating, each stopped at its port line, and
prints the median wall and CPU time to that line, with the floor under ours
(this Python importing Twisted's asyncio reactor and printing a line) (cheap: no hands are played;
``--runs 0 --starts 15`` measures only that).

``--costs`` also plays ours with the per-hand extras all off (``-q -l
--no_events``) and then with one of them on at a time (the ``.log``, the events
file, the trace), and prints the dealer CPU each one adds per hand.
``--profile FILE`` runs our dealer under cProfile timing CPU (not wall) time;
read it with ``python -m pstats FILE``. cProfile inflates code that makes many
small calls; ``--sample FILE`` instead samples the dealer's stack on a CPU-time
timer (``SIGPROF``, user and system time) and writes each function's share of
the samples, by itself and with what it calls, to FILE as text.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

import protocol  # which variant of the compiled core runs (this loads no rules)
from protocol import _variant
from protocol._variant import PURE_ENV

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


GAME_FILES = {"nolimit": "holdem.nolimit.2p.reverse_blinds.game",
              "limit": "holdem.limit.2p.reverse_blinds.game"}


def fast_random(port: int, game_name: str, seed: int) -> None:
    """The reference example player's mix, for any game, with the rules of ``protocol/``.

    Like a real bot it keeps the hand's state and applies only the actions
    that are new in each line (a line extends the previous one of its hand),
    so it costs the dealer's CPU neighbour little.
    """
    # lazy: only the bot processes (--bot) play; the driver never loads the rules
    from protocol.gamedef import load_game
    from protocol.rules import Action, State  # lazy: as above

    game = load_game(game_name)
    rng = random.Random(seed)
    token = re.compile(r"[fc]|r\d*")
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.sendall(b"VERSION:2.0.0\r\n")
    hand, seen, state = -1, "", State(game)
    for raw in sock.makefile("rb"):
        line = raw.rstrip(b"\r\n").decode()
        _, position, hand_id, betting, _ = line.split(":", 4)
        if int(hand_id) != hand:
            hand, seen, state = int(hand_id), "", State(game)
        for text in token.findall(betting[len(seen):]):
            state.apply(Action.RAISE if text == "r" else Action.FOLD if text == "f"
                        else Action.CALL if text == "c" else Action.raise_to(int(text[1:])))
        seen = betting
        if state.finished or state.current_player != int(position):
            continue
        sock.sendall(f"{line}:{example_mix_action(state, game.is_limit, rng)}\r\n".encode())


def example_mix_action(state: Any, is_limit: bool, rng: random.Random) -> str:
    """The reference example player's mix for the player to act in ``state``: fold 0.06
    when folding is legal, the rest split evenly between call and raise, the raise size
    uniform over the legal range. Returns the action's text."""
    from protocol.rules import Action, ActionType  # lazy: the driver never loads the rules

    weights = {ActionType.FOLD: 0.06 if state.can_fold() else 0.0, ActionType.CALL: 0.47,
               ActionType.RAISE: 0.47 if state.can_raise() else 0.0}
    kind = rng.choices(list(weights), weights=list(weights.values()))[0]
    if kind is ActionType.RAISE:
        bounds = state.raise_range()
        assert bounds is not None
        action = Action.RAISE if is_limit else Action.raise_to(rng.randint(*bounds))
    else:
        action = Action.FOLD if kind is ActionType.FOLD else Action.CALL
    return str(action.text())


def profile_dealer(out: Path, argv: list[str]) -> int:
    """Run ``acpc-lbr`` with ``argv`` under cProfile, timing CPU (not wall) time.

    A wall-clock profile charges the dealer for the time it is descheduled
    (a send that wakes a bot, other load on the machine); the process's CPU
    time does not.
    """
    import cProfile

    # lazy: only --profile-dealer runs the dealer in-process
    from acpc_lbr.cli import main as acpc_lbr

    profiler = cProfile.Profile(time.process_time)
    code = 0
    try:
        code = profiler.runcall(acpc_lbr, argv)
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    finally:
        profiler.dump_stats(str(out))
    return code


def sample_dealer(out: Path, argv: list[str], interval: float = 0.001) -> int:
    """Run ``acpc-lbr`` with ``argv``, sampling its Python stack on a CPU-time timer.

    Writes to ``out`` the share of samples in which each function is running
    ("self") and on the stack ("total"), highest first. The timer counts the
    process's user and system time, so system calls show in the function that
    makes them (``socket.send`` in the dealer's send, ``epoll`` in ``select``).
    """
    import collections
    import signal

    from acpc_lbr.cli import main as acpc_lbr  # lazy: only the sampled dealer process runs it

    own: collections.Counter[str] = collections.Counter()
    total: collections.Counter[str] = collections.Counter()

    def sample(signum: int, frame: object) -> None:
        seen = set()
        key = None
        while frame is not None:
            code = frame.f_code  # type: ignore[attr-defined]
            name = f"{code.co_name} ({Path(code.co_filename).name}:{code.co_firstlineno})"
            key = key or name
            if name not in seen:
                seen.add(name)
                total[name] += 1
            frame = frame.f_back  # type: ignore[attr-defined]
        if key is not None:
            own[key] += 1

    signal.signal(signal.SIGPROF, sample)
    signal.setitimer(signal.ITIMER_PROF, interval, interval)
    code = 0
    try:
        code = acpc_lbr(argv)
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0, 0)
        count = sum(own.values()) or 1
        lines = [f"{count} samples of the dealer's CPU time, every {interval * 1000:g} ms", "",
                 "self  function"]
        lines += [f"{n / count:5.1%} {name}" for name, n in own.most_common(60)]
        lines += ["", "total function (with what it calls)"]
        lines += [f"{n / count:5.1%} {name}" for name, n in total.most_common(80)]
        out.write_text("\n".join(lines) + "\n")
    return code


def start_bots(ports: list[str], bots: str, game: str, seed: int,
               reference: Path | None) -> list[subprocess.Popen[bytes]]:
    """One bot process per port."""
    procs = []
    for index, port in enumerate(ports):
        if bots == "example":
            assert reference is not None
            command = [str(reference / "example_player"), str(reference / GAME_FILES[game]),
                       "127.0.0.1", port]
        else:
            command = [sys.executable, __file__, "--bot", bots, "--bot-port", port,
                       "--game", game, "--bot-seed", str(seed * 10 + index)]
        procs.append(subprocess.Popen(command, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL))
    return procs


def dealer_flags(options: argparse.Namespace) -> list[str]:
    """The switches of the per-hand extras, as the options ask for them."""
    flags = []
    if options.quiet:
        flags.append("-q")
    if options.no_log:
        flags.append("-l")
    if options.no_events_only:
        flags.append("--no_events")
    if options.busy_poll is not None:
        flags += ["--busy_poll", str(options.busy_poll)]
    return flags


def dealer_args(dealer: str, options: argparse.Namespace, seed: int, names: list[str],
                flags: list[str] | None = None) -> list[str]:
    """The command line of one dealer process (see :func:`run_once`)."""
    hands = str(options.hands)
    if dealer == "reference":
        args = [str(options.reference / "dealer"), "bench",
                str(options.reference / GAME_FILES[options.game]), hands, str(seed), "a", "b"]
        args += [flag for flag in ("-q", "-l") if flag in dealer_flags(options)]
    else:
        program = options.baseline / "bin" / "acpc-lbr" if dealer == "baseline" else ACPC_LBR
        args = [str(program), "dealer"]
        if len(names) == 1:
            args += ["bench", options.game, hands, str(seed), "a", "b"]
        else:
            for i, name in enumerate(names):
                args += ["--match", f"{name} {options.game} {hands} {seed + 1000 * i} a b"]
        if options.profile is not None:
            args[:1] = [sys.executable, __file__, "--profile-dealer", str(options.profile.resolve())]
        elif options.sample is not None:
            args[:1] = [sys.executable, __file__, "--sample-dealer", str(options.sample.resolve())]
        args += dealer_flags(options) if flags is None else flags
    return args


#: The floor under our start-up: this Python with Twisted's asyncio reactor imported (no
#: reactor installed, no uvloop, nothing of ours), then a line as a port line.
FLOOR = [sys.executable, "-c", "import twisted.internet.asyncioreactor; print('0 0', flush=True)"]


def launch(dealer: str, args: list[str], workdir: Path, err: IO[str], port_lines: int = 1
           ) -> tuple[subprocess.Popen[str], list[list[str]], float, float]:
    """Start a dealer (``args``) in ``workdir`` and read its first ``port_lines`` lines: returns
    the process, each line split, the seconds to the last of them and the start's
    ``perf_counter``. ``ours-pure`` runs our dealer on the pure sources."""
    env = {**os.environ, PURE_ENV: "1"} if dealer == "ours-pure" else None
    start = time.perf_counter()
    process = subprocess.Popen(args, cwd=workdir, stdout=subprocess.PIPE, stderr=err, text=True, env=env)
    assert process.stdout is not None
    lines = [process.stdout.readline().split() for _ in range(port_lines)]
    return process, lines, time.perf_counter() - start, start


def start_once(dealer: str, options: argparse.Namespace, workdir: Path,
               flags: list[str] | None = None) -> tuple[float, float]:
    """Start one dealer and stop it at its port line; returns (wall s, CPU s) to that line.

    The CPU time (user + system, start-up and imports included) is read from
    ``/proc/PID/stat`` when the line arrives, in the kernel's clock ticks (10 ms
    on most hosts): a median over many starts reads finer than one start.
    """
    args = (FLOOR if dealer == "floor" else
            dealer_args(dealer, options, options.seed, ["bench"], flags))
    with open(workdir / "dealer.err", "w") as err:
        process, [ports], wall, _ = launch(dealer, args, workdir, err)
        # The fields after the command's name: utime and stime are the 12th and 13th.
        stat = Path(f"/proc/{process.pid}/stat").read_text().rpartition(")")[2].split()
        cpu = (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")
        process.kill()
        process.wait()
    if len(ports) != 2:
        raise SystemExit(f"{dealer} dealer printed no port line; see {workdir / 'dealer.err'}")
    return wall, cpu


def run_once(dealer: str, options: argparse.Namespace, seed: int, workdir: Path,
             flags: list[str] | None = None,
             matches: int = 1) -> tuple[float, float, float, int | None, float, int]:
    """One dealer process; returns (wall s, dealer user CPU s, dealer system CPU s, actions,
    start-up s, peak RSS in KiB).

    The wall time runs from the dealer's start to its exit; start-up is the part up to
    its port line. The actions are counted in the ``.log`` files: None when there are
    none (``-l``).

    Args:
        dealer: ``reference``, ``ours``, ``ours-pure`` (ours on the pure sources) or
            ``baseline`` (the install of ``--baseline``).
        flags: our dealer's switches (default: :func:`dealer_flags`).
        matches: matches played at once by our dealer (``--match``), each
            with its own bots and ``options.hands`` hands.
    """
    names = [f"bench{i}" if matches > 1 else "bench" for i in range(matches)]
    args = dealer_args(dealer, options, seed, names, flags)
    for name in names:
        (workdir / f"{name}.log").unlink(missing_ok=True)
    with open(workdir / "dealer.err", "w") as err:
        process, port_lines, startup, start = launch(dealer, args, workdir, err, matches)
        procs = [proc for i, ports in enumerate(port_lines)
                 for proc in start_bots(ports, options.bots, options.game, seed + 1000 * i,
                                        options.reference)]
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        for proc in procs:
            proc.wait(timeout=60)
    if process.returncode != 0:
        raise SystemExit(f"{dealer} dealer exited with {process.returncode}; "
                         f"see {workdir / 'dealer.err'}")
    # Actions per hand differ between bots (always-call: 8 in hold'em; the
    # example player's mix: about 6.4); the logs count them (none with -l).
    if "-l" in args:
        return wall, usage.ru_utime, usage.ru_stime, None, startup, usage.ru_maxrss
    actions = 0
    for name in names:
        log = workdir / f"{name}.log"
        actions += sum(len(re.findall(r"[fcr]", line.split(":")[2]))
                       for line in log.read_text().splitlines() if line.startswith("STATE:"))
    return wall, usage.ru_utime, usage.ru_stime, actions, startup, usage.ru_maxrss


def measure_memory(options: argparse.Namespace, workdir: Path) -> list[tuple[int, int]]:
    """Our dealer's peak RSS (KiB) after 10,000 hands and after ``options.memory`` hands."""
    result = []
    for hands in (10_000, options.memory):
        run = argparse.Namespace(**{**vars(options), "hands": hands})
        *_, rss = run_once("ours", run, options.seed, workdir)
        result.append((hands, rss))
    return result


def measure_starts(options: argparse.Namespace, workdir: Path) -> dict[str, list[tuple[float, float]]]:
    """``options.starts`` starts of ours (and of the reference and the baseline, when given),
    and of :data:`FLOOR`, alternating, each
    stopped at its port line: (wall s, CPU s) of each (:func:`start_once`)."""
    dealers = (["reference"] if options.reference is not None else []) + ["ours"]
    dealers += ["baseline"] if options.baseline is not None else []
    dealers.append("floor")
    starts: dict[str, list[tuple[float, float]]] = {dealer: [] for dealer in dealers}
    for _ in range(options.starts):
        for dealer in dealers:
            starts[dealer].append(start_once(dealer, options, workdir))
    return starts


def print_starts(starts: dict[str, list[tuple[float, float]]]) -> None:
    """The medians of :func:`measure_starts`."""
    for dealer, figures in starts.items():
        walls, cpus = zip(*figures)
        print(f"  start-up to the port line, {dealer:9} ({len(figures)} starts): wall median "
              f"{statistics.median(walls) * 1000:.1f} ms (min {min(walls) * 1000:.1f}), CPU median "
              f"{statistics.median(cpus) * 1000:.0f} ms")


def compile_project() -> None:
    """Byte-compile the packages the dealer imports, as an install does (see the module)."""
    import compileall

    root = Path(__file__).resolve().parents[1]
    for package in ("acpc_lbr", "dealer", "protocol"):  # with their subpackages (acpc_lbr/cli, runtime, ...)
        compileall.compile_dir(root / package, quiet=1)


def install_variant(venv: Path) -> str:
    """What another install runs, as its ``acpc-lbr --version`` says (compiled or pure, and why),
    said on stderr at once when it is not the compiled core: a baseline that runs the pure
    sources (an old or broken build) measures the compiler, not the change."""
    done = subprocess.run([str(venv / "bin" / "acpc-lbr"), "--version"], capture_output=True,
                          text=True, timeout=120, check=False)
    text = " ".join(done.stdout.split())
    variant = text.split(f"{_variant.LABEL}: ", 1)[-1] if f"{_variant.LABEL}: " in text else text
    variant = variant or f"unknown ({' '.join(done.stderr.split())[:160]})"
    if not variant.startswith("compiled"):
        print(f"bench_dealer: the baseline at {venv} does not run the compiled core: {variant}",
              file=sys.stderr, flush=True)
    return variant


def print_events_in_memory(cpu_ms_per_hand: float, rounds: int = 3) -> None:
    """The events file's cost where the host's noise does not reach it: the dealer's own
    work a hand in memory (``bench/bench_dealer_work.py --read-step --cpu``: no sockets, no
    other processes, the thread's CPU time), with and without the file, alternating; the
    difference is also given as a share of ``cpu_ms_per_hand``, the dealer's CPU a hand in
    the runs (sockets, system time and start-up included). The rows from the runs move by
    tens of percent from run to run on a shared virtual machine, in either direction."""
    import bench_dealer_work  # lazy: this script's folder; only --no-events needs it

    with_file, without = [], []
    for _ in range(rounds):
        for events, times in ((True, with_file), (False, without)):
            run = bench_dealer_work.in_subprocess(None, 3000, 1, 5, read_step=True, events=events, cpu=True)
            times.append(run["us_per_hand"])
    per_round = [a / b for a, b in zip(with_file, without)]
    extra_us = statistics.median(with_file) - statistics.median(without)
    print(f"  events file, the dealer's work a hand in memory (CPU, no sockets) with / without: "
          f"median {statistics.median(per_round):.3f} (per round "
          f"{', '.join(f'{r:.3f}' for r in per_round)}; {statistics.median(with_file):.1f} against "
          f"{statistics.median(without):.1f} µs): {extra_us:+.1f} µs a hand, "
          f"{extra_us / (cpu_ms_per_hand * 1000):+.1%} of the dealer's CPU a hand in the runs")


def main() -> int:
    """Run the benchmark and print the figures."""
    if sys.argv[1:2] == ["--profile-dealer"]:  # the dealer process of --profile
        return profile_dealer(Path(sys.argv[2]), sys.argv[3:])
    if sys.argv[1:2] == ["--sample-dealer"]:  # the dealer process of --sample
        return sample_dealer(Path(sys.argv[2]), sys.argv[3:])
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hands", type=int, default=5_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("-q", dest="quiet", action="store_true", help="dealers without the trace")
    parser.add_argument("-l", dest="no_log", action="store_true", help="dealers without the .log")
    parser.add_argument("--bots", choices=["random", "always-call", "example"], default="random")
    parser.add_argument("--reference", type=Path, default=None,
                        help="folder with the built reference dealer and example_player")
    parser.add_argument("--game", choices=sorted(GAME_FILES), default="nolimit")
    parser.add_argument("--seed", type=int, default=42, help="seed of run 1; run i uses seed+i-1")
    parser.add_argument("--events-off", dest="no_events_only", action="store_true",
                        help="our dealer without the events file in every row (--no_events)")
    parser.add_argument("--no-events", dest="no_events", action="store_true",
                        help="also play ours without the events file (--no_events) in each run "
                             "and print what the file costs")
    parser.add_argument("--memory", "--rss-hands", dest="memory", type=int, default=None, metavar="HANDS",
                        help="also play ours with 10,000 hands and with HANDS, once each, and "
                             "print the peak RSS of each")
    parser.add_argument("--starts", type=int, default=0, metavar="N",
                        help="also start each dealer N times more, alternating, each stopped at its "
                             "port line, and print the median start-up (wall and CPU)")
    parser.add_argument("--matches", type=int, default=1,
                        help="also run this many matches at once in one process of ours "
                             "and compare its hands/s with one match's")
    parser.add_argument("--variants", default=None,
                        help="compiled,pure: also play ours on the pure-Python sources")
    parser.add_argument("--baseline", type=Path, default=None, metavar="VENV",
                        help="also play the dealer installed in this virtual environment "
                             "(another revision) and print ours / baseline")
    parser.add_argument("--busy-poll", dest="busy_poll", type=int, default=None, metavar="USEC",
                        help="our dealer's --busy_poll (default: the dealer's default)")
    parser.add_argument("--no-poll", dest="no_poll", action="store_true",
                        help="also play ours with busy polling off (--busy_poll 0) in each run")
    parser.add_argument("--send-states", dest="send_states", action="store_true",
                        help="also play ours with --send_states on_turn and at_once in each run")
    parser.add_argument("--costs", action="store_true",
                        help="also run ours with nothing switched off but one per-hand extra "
                             "(.log, events, trace) at a time and report what each costs")
    parser.add_argument("--profile", type=Path, default=None,
                        help="run our dealer under cProfile and write its stats to this file "
                             "(read them with python -m pstats); slows it down")
    parser.add_argument("--sample", type=Path, default=None,
                        help="sample our dealer's stack on a CPU-time timer and write each "
                             "function's share to this file (text; lighter than --profile)")
    parser.add_argument("--bot", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--bot-port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--bot-seed", type=int, default=0, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.bot == "always-call":
        fast_always_call(options.bot_port)
        return 0
    if options.bot == "random":
        fast_random(options.bot_port, options.game, options.bot_seed)
        return 0
    if options.bots == "example" and options.reference is None:
        parser.error("--bots example needs --reference DIR")
    if options.variants and (options.variants != "compiled,pure" or not protocol.COMPILED):
        parser.error(f"--variants takes compiled,pure, and needs the compiled core "
                     f"(here: {protocol.variant()})")
    if options.baseline is not None and not (options.baseline / "bin" / "acpc-lbr").is_file():
        parser.error(f"--baseline {options.baseline}: no bin/acpc-lbr there (a virtual "
                     "environment with the project installed)")
    baseline_variant = None if options.baseline is None else install_variant(options.baseline)
    compile_project()
    # (label, dealer, flags of ours, matches at once): played in this order in each run.
    variants: list[tuple[str, str, list[str] | None, int]] = []
    if options.reference is not None:
        variants.append(("reference", "reference", None, 1))
    variants.append(("ours", "ours", None, 1))
    if options.matches > 1:
        variants.append((f"ours x{options.matches}", "ours", None, options.matches))
    if options.variants:
        variants.append(("pure", "ours-pure", None, 1))
    if options.baseline is not None:
        variants.append(("baseline", "baseline", None, 1))
    if options.no_poll:
        variants.append(("no poll", "ours", [*dealer_flags(options), "--busy_poll", "0"], 1))
    if options.no_events:
        variants.append(("no events", "ours", [*dealer_flags(options), "--no_events"], 1))
    if options.send_states:
        variants += [(way.replace("_", " "), "ours", [*dealer_flags(options), "--send_states", way], 1)
                     for way in ("on_turn", "at_once")]
    if options.costs:
        base = ["-q", "-l", "--no_events"]
        variants += [("all off", "ours", base, 1),
                     ("+ .log", "ours", ["-q", "--no_events"], 1),
                     ("+ events", "ours", ["-q", "-l"], 1),
                     ("+ trace", "ours", ["-l", "--no_events"], 1)]
    figures: dict[str, dict[str, list[float]]] = {
        label: {"rate": [], "cpu": [], "startup": []} for label, *_ in variants}
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(options.runs):
            seed = options.seed + run
            for label, dealer, flags, matches in variants:
                wall, user, system, actions, startup, _ = run_once(dealer, options, seed, Path(tmp),
                                                                   flags, matches)
                hands = options.hands * matches
                cpu = user + system
                figures[label]["rate"].append(hands / wall)
                figures[label]["cpu"].append(cpu / hands * 1000)
                figures[label]["startup"].append(startup)
                counted = ("actions/hand not counted (no .log)" if actions is None
                           else f"{actions / hands:.2f} actions/hand")
                print(f"run {run + 1} seed {seed} {label:10}: {hands / wall:6.0f} hands/s, "
                      f"dealer CPU {cpu:.2f} s ({cpu / hands * 1000:.3f} ms/hand: user "
                      f"{user / hands * 1000:.3f}, system {system / hands * 1000:.3f}), "
                      f"{counted}, start-up {startup * 1000:.0f} ms", flush=True)
        memory = measure_memory(options, Path(tmp)) if options.memory else None
        starts = measure_starts(options, Path(tmp)) if options.starts else None
    mode = " ".join(dealer_flags(options)) or "trace, .log and events on"
    mode += "" if options.no_events_only else " (events on)"
    print(f"\n{options.game}, {mode}, bots={options.bots}, {options.hands} hands x "
          f"{options.runs} runs; ours on the {_variant.LABEL}: {protocol.variant()}")
    if not options.runs:  # --runs 0 --starts N: the start-ups alone
        if starts is not None:
            print_starts(starts)
        return 0
    for label, *_ in variants:
        rates = figures[label]["rate"]
        print(f"  {label:10}: hands/s min/median/max {min(rates):.0f} / "
              f"{statistics.median(rates):.0f} / {max(rates):.0f}; dealer CPU ms/hand median "
              f"{statistics.median(figures[label]['cpu']):.3f}; start-up to the port line "
              f"median {statistics.median(figures[label]['startup']) * 1000:.0f} ms")

    def ratio(top: str, bottom: str) -> str:
        # Per run (the two ran one after the other), then the median: the
        # machine's load changes less within a run than across runs.
        per_run = [a / b for a, b in zip(figures[top]["rate"], figures[bottom]["rate"])]
        return (f"median {statistics.median(per_run):.2f} (per run "
                f"{', '.join(f'{r:.2f}' for r in per_run)})")

    if options.reference is not None:
        print(f"  ratio ours/reference, hands/s: {ratio('ours', 'reference')}")
        print(f"  start-up to the port line, median over the runs: ours "
              f"{statistics.median(figures['ours']['startup']) * 1000:.1f} ms, reference "
              f"{statistics.median(figures['reference']['startup']) * 1000:.1f} ms")
    if options.variants:
        print(f"  ours compiled / pure, hands/s: {ratio('ours', 'pure')}")
    if options.baseline is not None:
        print(f"  ours / baseline ({options.baseline}; {baseline_variant}), hands/s: "
              f"{ratio('ours', 'baseline')}")
    if options.no_poll:
        print(f"  busy polling on / off, hands/s: {ratio('ours', 'no poll')}")
        if options.reference is not None:
            print(f"  ratio ours without busy polling/reference, hands/s: "
                  f"{ratio('no poll', 'reference')}")
    if options.send_states:
        print(f"  every state at once / one send per action, hands/s: {ratio('at once', 'on turn')}")
        for way in ("on turn", "at once"):
            print(f"  ours (measured) / {way}, hands/s: {ratio('ours', way)}")
            if options.reference is not None:
                print(f"  ratio {way}/reference, hands/s: {ratio(way, 'reference')}")
    if options.no_events:
        per_run = [a / b for a, b in zip(figures["ours"]["cpu"], figures["no events"]["cpu"])]
        print(f"  events file, dealer CPU per hand with / without: median "
              f"{statistics.median(per_run):.3f} (per run {', '.join(f'{r:.3f}' for r in per_run)})")
        print(f"  events file, hands/s without / with: {ratio('no events', 'ours')}")
        costs = [1 - a / b for a, b in zip(figures["ours"]["rate"], figures["no events"]["rate"])]
        print(f"  events file's cost, share of the throughput without it: median "
              f"{statistics.median(costs):.1%} (per run {', '.join(f'{c:.1%}' for c in costs)})")
        print_events_in_memory(statistics.median(figures["ours"]["cpu"]))
    if memory is not None:
        (small, small_rss), (large, large_rss) = memory
        print(f"  peak RSS: {small_rss / 1024:.1f} MiB after {small} hands, {large_rss / 1024:.1f} MiB "
              f"after {large} hands: ratio {large_rss / small_rss:.2f}")
    if starts is not None:
        print_starts(starts)
    if options.matches > 1:
        print(f"  {options.matches} matches in one process / one match, hands/s: "
              f"{ratio(f'ours x{options.matches}', 'ours')}")
    if options.costs:
        base_cpu = statistics.median(figures["all off"]["cpu"])
        for label in ("+ .log", "+ events", "+ trace"):
            extra = statistics.median(figures[label]["cpu"]) - base_cpu
            print(f"  cost of {label[2:]:7}: {extra:+.3f} ms of dealer CPU per hand "
                  f"(median, against everything off)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A hostile bot beside an honest match in one dealer process (issue 33's judging).

Each case runs one ``acpc-lbr dealer`` with two matches: ``honest`` (two C
plain bots, docs/examples/plain_bot.c, ``--hands`` deals) and ``hostile`` (a
plain bot against an attacker, this file run as a bot). Two controls: the
same dealer with the attacker's *twin* (the same Python bot, playing politely:
every reply at once, no extra line), and the honest match alone. A dealer
serves its matches from one thread, so a second match that keeps playing
takes its share of it whatever its bots do: the twin is the control that
isolates the attack's own cost, and ``/alone`` is shown beside it. The three
alternate, ``--runs`` times each, and the table gives per case:

* ``slower``: the honest match's hands/s beside the twin over beside the
  attack (the median of the per-run ratios: above 1.10 fails the judging's
  "at most 10% slower"); ``/alone`` the same against the match alone;
  ``cpu``: the dealer's CPU seconds beside the attack over beside the twin
  (what the attack takes of the thread every match shares; steadier than
  wall time on a loaded machine);
* honest hands lost: deals missing from ``honest.log`` or no SCORE line;
* how the attack ended (the hostile match's end line on the dealer's stderr;
  "one line" when exactly one line reports it), the hostile match's events
  file, the dealer's stderr and the dealer's peak RSS (bounded or not);
* leftover processes: any process descended from this one still alive after
  the case (the bench kills and reports them).

The attacks (``--cases`` picks some):

* ``query_flood``: 20,000 refused ``QUERY`` lines before each action;
* ``query_under``: 50 refused queries before each action, at most 200 a
  hand: under both budgets, for the whole match;
* ``ignored_99``: 99 stale ``MATCHSTATE`` echoes before each real reply;
* ``ignored_under``: 40 such echoes before each reply, at most 200 a hand;
* ``garbage``: 60 lines of random printable junk (1 to 3,000 bytes) before
  each reply, at most 200 a hand;
* ``output_flood``: lines sent as fast as the socket takes them, whoever's
  turn it is;
* ``slow_query``: a queryable bot that answers every range query (the
  dealer's own after each showdown) just inside ``--t_query`` (900 of
  1,000 ms here), with ``--t_query_match 5000``;
* ``metrics_idle``: 1,100 connections to the metrics port that send half a
  request header and wait, against a dealer limited to 1,024 open files;
* ``metrics_churn``: connections to the metrics port, each sending half a
  header and closing at once, one after the other as fast as they go, for the
  whole match (never at the cap, and never a request for the request rate).

The machine is shared and small: read the ratios as a check of the order of
magnitude, rerun a case that looks off. A forking helper under ``--probe``
is not here: it concerns the processes ``evaluate`` starts, not the dealer
(tests/acpc_lbr/test_children.py and the tournament's test of a helper that
leaves its process group cover it).

    python bench/bench_hostile.py [--hands 3000] [--runs 3] [--cases query_flood,ignored_99,...] [--sample DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GAME = "nolimit"
PYTHON = sys.executable
#: The most a case may take before the bench calls it unbounded and kills it.
CASE_TIMEOUT_S = 300.0


# -- the attacker, run as a bot: python bench/bench_hostile.py --bot KIND HOST PORT -----------------


def _turns(sock: socket.socket) -> Iterator[tuple[str, int, str]]:
    """(the MATCHSTATE line, its hand, the betting) of each state where this bot is to act, and
    (the line, -1, "") of every line that is not a MATCHSTATE (QUERY, comments)."""
    # lazy: the bot mode alone reads the protocol, once main() put the repository on the path
    from protocol.gamedef import load_game
    from protocol.wire import parse_matchstate  # lazy: as above

    game = load_game(GAME)
    for raw in sock.makefile("rb"):
        line = raw.decode("ascii", "replace").rstrip("\r\n")
        if not line.startswith("MATCHSTATE:"):
            yield line, -1, ""
            continue
        view = parse_matchstate(line, game)
        state = view.to_state(game)
        if not state.finished and state.current_player == view.position:
            yield line, view.hand_id, line.split(":")[3]


def _legal_call(line: str) -> bytes:
    return f"{line}:c\r\n".encode("ascii")


def bot(kind: str, host: str, port: int) -> int:
    """Play every hand by calling, with ``kind``'s extra lines (see the module docstring)."""
    sock = socket.create_connection((host, port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.sendall(b"VERSION:2.0.0\r\n" + (b"# range-query 1 2\r\n" if kind == "slow_query" else b""))
    rng = random.Random(7)
    # Made once: the bench measures the dealer's work, not the attacker's.
    garbage = [bytes(rng.choice(b"abcdefghij:|/0123456789 ") for _ in range(rng.randint(1, 3000))) + b"\r\n"
               for _ in range(100)] if kind == "garbage" else []
    if kind == "output_flood":
        chunk = b"".join(f"FLOOD:{i}:{'x' * 200}\r\n".encode() for i in range(300))

        def flood() -> None:
            with contextlib.suppress(OSError):
                while True:
                    sock.sendall(chunk)

        threading.Thread(target=flood, daemon=True).start()
    per_turn = {"query_flood": 20_000, "query_under": 50, "ignored_99": 99, "ignored_under": 40,
                "garbage": 60}.get(kind, 0)
    per_hand = {"query_under": 200, "ignored_under": 200, "garbage": 200}.get(kind, 10**9)
    sent_in_hand: dict[int, int] = {}
    previous = ""
    with contextlib.suppress(OSError):
        for line, hand, _betting in _turns(sock):
            if hand < 0:
                if kind == "slow_query" and line.startswith("QUERY:"):
                    time.sleep(0.9)
                    sock.sendall(_answer(line))
                continue
            extra = min(per_turn, per_hand - sent_in_hand.get(hand, 0))
            sent_in_hand[hand] = sent_in_hand.get(hand, 0) + extra
            junk = b""
            if kind in ("query_flood", "query_under"):
                junk = f"QUERY:q1:0:{hand + 1000}::|:c\r\n".encode() * extra  # refused: not the current hand
            elif kind in ("ignored_99", "ignored_under") and previous:
                junk = _legal_call(previous) * extra  # a reply to a state that is over: ignored
            elif kind == "garbage":
                junk = b"".join(rng.choice(garbage) for _ in range(extra))
            sock.sendall(junk + _legal_call(line))
            previous = line
    return 0


def _answer(query: str) -> bytes:
    """A card-blind version-2 answer: each asked action equally likely for every hand."""
    qid, actions = query.split(":")[1], query.split(":")[-1].split(",")
    share = repr(1.0 / len(actions))
    return (f"RANGE:{qid}:2:" + ";".join(f"{a}=K{share}" for a in actions) + "\r\n").encode()


def metrics_idle(port: int, connections: int) -> int:
    """Open ``connections`` to the metrics port, send half a request header on each, and wait
    (until a connection cannot be made within a second: the dealer's port stopped accepting and
    the kernel's backlog is full)."""
    held = []
    for _ in range(connections):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=1)
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
            held.append(s)
        except OSError:
            break
    print(f"held {len(held)}", flush=True)
    time.sleep(3600)
    return 0


def metrics_churn(port: int) -> int:
    """Connect to the metrics port, send half a request header and hang up, in a loop until killed."""
    print("churning", flush=True)
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        except OSError:
            continue  # the port is paused and its backlog full: try again


# -- one run of a case ---------------------------------------------------------------------------


@dataclass
class Run:
    """One dealer run: the honest match's speed and losses, the attack's end and costs."""

    seconds: float = 0.0
    honest_hands: int = 0
    honest_score: bool = False
    hostile_lines: list[str] = field(default_factory=list)
    events_bytes: int = 0
    stderr_bytes: int = 0
    peak_rss_mb: float = 0.0
    dealer_cpu: float = 0.0
    exit_code: int | None = None
    leftovers: list[str] = field(default_factory=list)
    timed_out: bool = False


@dataclass(frozen=True)
class Case:
    kind: str
    dealer_options: tuple[str, ...] = ()
    nofile: int | None = None


CASES = {
    "query_flood": Case("query_flood"),
    "query_under": Case("query_under"),
    "ignored_99": Case("ignored_99"),
    "ignored_under": Case("ignored_under"),
    "garbage": Case("garbage"),
    "output_flood": Case("output_flood"),
    "slow_query": Case("slow_query", ("--t_query", "1000", "--t_query_match", "5000")),
    "metrics_idle": Case("metrics_idle", ("--metrics-port", "0", "--metrics-grace", "0"), nofile=1024),
    "metrics_churn": Case("metrics_churn", ("--metrics-port", "0", "--metrics-grace", "0")),
}


def build_bot(folder: Path) -> Path:
    binary = folder / "plain_bot"
    subprocess.run(["cc", "-O2", "-std=c99", "-o", str(binary), str(REPO / "docs/examples/plain_bot.c")], check=True)
    return binary


def descendants(root: int) -> list[tuple[int, str]]:
    """(pid, command) of every live process below ``root`` (from /proc)."""
    children: dict[int, list[int]] = {}
    commands: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            commands[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()[:80]
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] == "Z":
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], list(children.get(root, []))
    while todo:
        pid = todo.pop()
        found.append((pid, commands.get(pid, "?")))
        todo.extend(children.get(pid, []))
    return found


def run_once(folder: Path, plain_bot: Path, case: Case, hands: int, mode: str,
             timeout: float = CASE_TIMEOUT_S, sample: Path | None = None) -> Run:
    """Play the honest match in a fresh folder: ``alone``, beside the attacker's ``twin`` (the
    same bot playing politely), or beside the ``attack``; ``sample``: where py-spy writes the
    dealer's stacks (raw, one line a stack with its count)."""
    for stale in folder.glob("*"):
        stale.unlink()
    # Processes this one had before the run (a test runner's multiprocessing resource tracker,
    # say) are not the run's: only those it leaves count.
    before = {pid for pid, _ in descendants(os.getpid())}
    beside = mode != "alone"
    attacker = case.kind if mode == "attack" else "polite"
    matches = [f"honest {GAME} {hands} 1 h1 h2"]
    scraper = case.kind.startswith("metrics_")
    if beside and not scraper:
        matches.append(f"hostile {GAME} 1000000 2 x1 x2")
    argv = [PYTHON, "-m", "acpc_lbr.cli", "dealer", "-q", "--console",
            *[w for m in matches for w in ("--match", m)], *case.dealer_options]

    def limit() -> None:
        os.setpgid(0, 0)
        if case.nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (case.nofile, case.nofile))

    err = open(folder / "dealer.err", "wb")
    dealer = subprocess.Popen(argv, cwd=folder, stdout=subprocess.PIPE, stderr=err, preexec_fn=limit)
    assert dealer.stdout is not None
    ports = [dealer.stdout.readline().decode().split() for _ in matches]
    others: list[subprocess.Popen[bytes]] = []
    spy = None
    if sample is not None:  # non-blocking: the dealer runs at full speed while sampled
        spy = subprocess.Popen([str(Path(PYTHON).parent / "py-spy"), "record", "--pid", str(dealer.pid), "-o", str(sample), "-f", "raw",
                                "-r", "250", "--nonblocking"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if mode == "attack" and scraper:
        port = _metrics_port(folder / "dealer.err")
        how = ["--metrics-idle", str(port), "1100"] if case.kind == "metrics_idle" else ["--metrics-churn", str(port)]
        others.append(subprocess.Popen([PYTHON, __file__, *how], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL))
        assert others[0].stdout is not None
        others[0].stdout.readline()  # "held N": the connections are open ("churning": it began)
    elif beside and not scraper:
        others.append(subprocess.Popen([str(plain_bot), "threshold", "127.0.0.1", ports[1][0]],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        others.append(subprocess.Popen([PYTHON, __file__, "--bot", attacker, "127.0.0.1", ports[1][1]],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    run = Run()
    started = time.perf_counter()
    honest = [subprocess.Popen([str(plain_bot), strategy, "127.0.0.1", port], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
              for strategy, port in zip(("random", "threshold"), ports[0])]
    try:
        for process in honest:
            process.wait(timeout=timeout)
        run.seconds = time.perf_counter() - started
    except subprocess.TimeoutExpired:
        run.timed_out = True
        for process in honest:
            process.kill()
    for process in others:  # the attack outlived the honest match: it is the dealer's to end now
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
    run.exit_code, run.peak_rss_mb, run.dealer_cpu = _reap(dealer, 60.0)
    dealer.stdout.close()
    err.close()
    for process in [*others, *honest, *([spy] if spy is not None else [])]:
        process.wait()
    left = [(pid, command) for pid, command in descendants(os.getpid()) if pid not in before]
    run.leftovers = [f"{pid} {command}" for pid, command in left]
    for pid, _ in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    _read_files(folder, run, hands)
    return run


def _metrics_port(stderr: Path) -> int:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        for line in stderr.read_text(errors="replace").splitlines():
            if line.startswith("METRICS http://"):
                return int(line.split(":")[2].split("/")[0])
        time.sleep(0.05)
    raise SystemExit("the dealer did not say its metrics port")


def _reap(dealer: subprocess.Popen[bytes], timeout: float) -> tuple[int | None, float, float]:
    """The dealer's exit code, peak RSS (MB) and CPU seconds; killed (code None) past ``timeout``."""
    deadline = time.monotonic() + timeout
    code: int | None = None
    while time.monotonic() < deadline:
        pid, status, usage = os.wait4(dealer.pid, os.WNOHANG)
        if pid:
            code = dealer.returncode = os.waitstatus_to_exitcode(status)
            break
        time.sleep(0.05)
    else:
        os.killpg(dealer.pid, signal.SIGKILL)
        _, status, usage = os.wait4(dealer.pid, 0)
        dealer.returncode = os.waitstatus_to_exitcode(status)
    return code, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def _read_files(folder: Path, run: Run, hands: int) -> None:
    log = folder / "honest.log"
    lines = log.read_text().splitlines() if log.exists() else []
    run.honest_hands = sum(line.startswith("STATE:") for line in lines)
    run.honest_score = any(line.startswith("SCORE:") for line in lines)
    stderr = (folder / "dealer.err").read_text(errors="replace")
    run.stderr_bytes = len(stderr.encode())
    # The reference's own line for a match that ended early, or what the dealer says of its metrics port.
    run.hostile_lines = [line for line in stderr.splitlines()
                         if line.startswith("[hostile] ERROR:")
                         or ("metrics" in line.lower() and not line.startswith("METRICS http"))]
    events = folder / "hostile.events.jsonl"
    run.events_bytes = events.stat().st_size if events.exists() else 0


# -- the table -----------------------------------------------------------------------------------


def measure(folder: Path, plain_bot: Path, name: str, hands: int, runs: int,
            sample: Path | None = None) -> dict[str, object]:
    case = CASES[name]
    ratios: dict[str, list[float]] = {"twin": [], "alone": [], "cpu": []}
    beside_runs = []
    for _ in range(runs):
        alone = run_once(folder, plain_bot, case, hands, "alone")
        run = len(beside_runs)
        twin = run_once(folder, plain_bot, case, hands, "twin",
                        sample=sample / f"{name}-twin-{run}.txt" if sample is not None else None)
        beside = run_once(folder, plain_bot, case, hands, "attack",
                          sample=sample / f"{name}-{run}.txt" if sample is not None else None)
        beside_runs.append(beside)
        if not (alone.timed_out or twin.timed_out or beside.timed_out):
            # Time ratios: hands/s without the attack over hands/s with it.
            ratios["twin"].append(beside.seconds / twin.seconds)
            ratios["alone"].append(beside.seconds / alone.seconds)
            ratios["cpu"].append(beside.dealer_cpu / twin.dealer_cpu)
        print(f"  {name}: alone {hands / alone.seconds:6.0f} hands/s, beside the twin {hands / twin.seconds:6.0f}, "
              f"beside the attack {hands / beside.seconds:6.0f}; dealer CPU alone {alone.dealer_cpu:.2f} s, "
              f"beside the twin {twin.dealer_cpu:.2f}, beside the attack {beside.dealer_cpu:.2f}", flush=True)
    worst = max(beside_runs, key=lambda r: (r.timed_out, hands - r.honest_hands, r.stderr_bytes))
    return {
        "case": name,
        "slower": statistics.median(ratios["twin"]) if ratios["twin"] else float("nan"),
        "slower_alone": statistics.median(ratios["alone"]) if ratios["alone"] else float("nan"),
        "cpu": statistics.median(ratios["cpu"]) if ratios["cpu"] else float("nan"),
        "lost": max(hands - r.honest_hands for r in beside_runs),
        "score": all(r.honest_score for r in beside_runs),
        "ended": worst.hostile_lines[0] if worst.hostile_lines else "(no line)",
        "lines": max(len(r.hostile_lines) for r in beside_runs),
        "events_kb": max(r.events_bytes for r in beside_runs) / 1024,
        "stderr_kb": max(r.stderr_bytes for r in beside_runs) / 1024,
        "rss_mb": max(r.peak_rss_mb for r in beside_runs),
        "timed_out": any(r.timed_out for r in beside_runs),
        "leftovers": sorted({p for r in beside_runs for p in r.leftovers}),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hands", type=int, default=3000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--sample", type=Path, metavar="DIR",
                        help="sample the dealer of each run beside the twin and the attack with py-spy (the "
                             "dev extra) into DIR/CASE-twin-RUN.txt and DIR/CASE-RUN.txt (raw stacks); the figures of a sampled run are not comparable")
    parser.add_argument("--bot", nargs=3, metavar=("KIND", "HOST", "PORT"), help=argparse.SUPPRESS)
    parser.add_argument("--metrics-idle", nargs=2, type=int, metavar=("PORT", "N"), help=argparse.SUPPRESS)
    parser.add_argument("--metrics-churn", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bot:
        sys.path.insert(0, str(REPO))
        return bot(args.bot[0], args.bot[1], int(args.bot[2]))
    if args.metrics_idle:
        return metrics_idle(*args.metrics_idle)
    if args.metrics_churn:
        return metrics_churn(args.metrics_churn)
    names = [n for n in args.cases.split(",") if n]
    unknown = [n for n in names if n not in CASES]
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; known: {', '.join(CASES)}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        plain_bot = build_bot(Path(tmp))
        folder = Path(tmp) / "run"
        folder.mkdir()
        for name in names:
            rows.append(measure(folder, plain_bot, name, args.hands, args.runs, args.sample))
    print(f"\nhonest match: {args.hands} hands of two C plain bots; median of {args.runs} alternating runs; "
          f"command: python bench/bench_hostile.py --hands {args.hands} --runs {args.runs}")
    print(f"{'case':<14} {'slower':>6} {'/alone':>6} {'cpu':>5} {'lost':>4} {'SCORE':>5} {'lines':>5} {'events':>8} {'stderr':>8} "
          f"{'RSS':>6} {'left':>4}  how the attack ended")
    for r in rows:
        print(f"{r['case']:<14} {r['slower']:6.2f} {r['slower_alone']:6.2f} {r['cpu']:5.2f} {r['lost']:>4} {'yes' if r['score'] else 'NO':>5} "
              f"{r['lines']:>5} {r['events_kb']:7.0f}K {r['stderr_kb']:7.0f}K {r['rss_mb']:5.0f}M "
              f"{len(r['leftovers']):>4}  {'TIMED OUT ' if r['timed_out'] else ''}{r['ended']}")
        for leftover in r["leftovers"]:
            print(f"{'':<14} leftover: {leftover}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

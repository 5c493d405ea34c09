"""A hostile bot beside an honest match in one dealer process (issue 33's judging).

Each case runs one ``acpc-lbr dealer`` with two matches: ``honest`` (two C
plain bots, docs/examples/plain_bot.c, ``--hands`` deals) and ``hostile`` (a
plain bot against an attacker, this file run as a bot). Three controls, in
the same dealer:

* the *paced twin*: the attacker's own bot without its misdeeds, playing as
  many hands a second as the attack's match did (the dealer's budgets slow a
  misbehaving bot's match, or end it), and hanging up as long after its
  dealer's port line as the attack's match ended after its own. The honest match beside it has the same company, the same hands to
  share the thread with, the same busy-polling rule (the dealer polls only
  while one match plays): only the misdeeds differ. This is the judged
  baseline of "one bot's misdeeds never slow another match by more than 10%";
* the *twin*: the same bot, polite and at full speed, for the whole match. A
  dealer serves its matches from one thread, so a second match that plays
  flat out takes its share of it; an attack that the dealer slows or ends
  takes less, and would look cheap against the twin (below 1) whatever its
  lines cost: so against the twin the bench counts only the hands the honest
  match played while the attack lasted;
* the honest match *alone*: what any second match costs, misbehaving or not
  (busy polling is on alone, off beside any other match).

For a scraper (the ``metrics_`` cases) no match is added: its twin scrapes
politely, once a second, and is its own paced twin. The runs alternate,
``--runs`` times each, and the table gives per case (medians of the per-run
ratios; times from the honest match's ``match_started`` event to its last
``hand_finished``, so the bots' process start-up is left out):

* ``paced``: the honest match's duration beside the attack over beside the
  paced twin: above 1.10 fails the judging's "at most 10% slower";
* ``twin``: the time the honest match took for the hands it played while
  the attack lasted, beside the attack over beside the twin;
* ``alone``: its duration beside the attack over alone;
* ``cpu``: the dealer's CPU seconds beside the attack over beside the twin;
* ``atk s``, ``twin s``: CPU seconds of the attacker's own process, and of
  the twin's, while the honest match played: on this machine they compete
  with the dealer for two cores, which an attacker on another host would not;
* honest hands lost: deals missing from ``honest.log`` or no SCORE line;
* how the attack ended (the hostile match's end line on the dealer's stderr;
  "one line" when exactly one line reports it), the hostile match's events
  file, the dealer's stderr and the dealer's peak RSS (bounded or not);
* leftover processes: any process descended from this one still alive after
  the case (the bench kills and reports them).

Each run also prints, per control, the dealer's CPU while the honest match
played and the seconds it was ready to run but waited for a processor (the
kernel's run-queue wait, ``/proc/PID/schedstat``), the honest bots' CPU and
wait, and the whole machine's busy CPU: when the wall time grows while the
dealer's CPU does not, these say whether it waited for a processor (another
process ran) or for its bots.

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
* ``metrics_idle``: 1,100 connections to the metrics port, started at once,
  that send half a request header as they open and wait, against a dealer
  limited to 1,024 open files (those the kernel turns away stay pending, and
  the kernel sends their SYNs again, as an attacker's would);
* ``metrics_churn``: connections to the metrics port, each sending half a
  header and closing at once, one after the other as fast as they go, for the
  whole match (never at the cap, and never a request for the request rate);
* ``metrics_slow_read``: 24 connections to the metrics port, each with a
  receive buffer as small as the system allows, sending a whole request and
  reading the response a byte a second, opened again when closed;
* ``query_edge``: refused queries just under both budgets, 63 before each
  action (of 64 a decision), at most 255 a hand (of 256);
* ``never_reads``: takes its seat and never reads (a receive buffer as small
  as the system allows), sending a query the dealer refuses every 40 ms
  (under the 64 a decision), with ``--t_response 1000``;
* ``version_drip``: seat 2's only connection sends its VERSION line a byte a
  second, and connects again when cut off (``--t_handshake 400
  --start_timeout 1200``: the bounds, shortened to fit the honest match).

The machine is shared and small: read the ratios as a check of the order of
magnitude, rerun a case that looks off. A forking helper under ``--probe``
is not here: it concerns the processes ``evaluate`` starts, not the dealer
(tests/acpc_lbr/test_children.py and the tournament's test of a helper that
leaves its process group cover it).

    python bench/bench_hostile.py [--hands 3000] [--runs 3] [--cases query_flood,ignored_99,...] [--sample DIR]
        [--dealer-options '--busy_poll 0']
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
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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


#: Junk lines sent before each reply, and at most in a hand, by kind.
PER_TURN = {"query_flood": 20_000, "query_under": 50, "query_edge": 63, "ignored_99": 99, "ignored_under": 40,
            "garbage": 60}
PER_HAND = {"query_under": 200, "query_edge": 255, "ignored_under": 200, "garbage": 200}


def bot(kind: str, host: str, port: int) -> int:
    """Play every hand by calling, with ``kind``'s extra lines (see the module docstring).

    ``polite@RATE@END`` (or ``polite_query@...``) is a twin paced as an attack went: it begins
    no more than RATE hands a second and hangs up at END (a POSIX time: when the attack's match
    ended, counted from its dealer's port line, in this run's dealer's time)."""
    kind, *pace = kind.split("@")
    if kind == "never_reads":
        return never_reads(host, port)
    if kind == "version_drip":
        return version_drip(host, port)
    rate, end = (float(pace[0]), float(pace[1])) if pace else (0.0, 0.0)
    queryable = kind in ("slow_query", "polite_query")
    sock = socket.create_connection((host, port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.sendall(b"VERSION:2.0.0\r\n" + (b"# range-query 1 2\r\n" if queryable else b""))
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
    per_turn, per_hand = PER_TURN.get(kind, 0), PER_HAND.get(kind, 10**9)
    sent_in_hand: dict[int, int] = {}
    previous = ""
    first_turn: float | None = None
    with contextlib.suppress(OSError):
        for line, hand, _betting in _turns(sock):
            if hand < 0:
                if queryable and line.startswith("QUERY:"):
                    time.sleep(0.9 if kind == "slow_query" else 0.0)
                    sock.sendall(_answer(line))
                continue
            if pace:
                first_turn = time.time() if first_turn is None else first_turn
                if not _paced(first_turn, hand, rate, end):
                    break  # the attack's match had ended by now
            extra = min(per_turn, per_hand - sent_in_hand.get(hand, 0))
            sent_in_hand[hand] = sent_in_hand.get(hand, 0) + extra
            junk = b""
            if kind in ("query_flood", "query_under", "query_edge"):
                junk = f"QUERY:q1:0:{hand + 1000}::|:c\r\n".encode() * extra  # refused: not the current hand
            elif kind in ("ignored_99", "ignored_under") and previous:
                junk = _legal_call(previous) * extra  # a reply to a state that is over: ignored
            elif kind == "garbage":
                junk = b"".join(rng.choice(garbage) for _ in range(extra))
            sock.sendall(junk + _legal_call(line))
            previous = line
    sock.close()
    return 0


def _paced(first_turn: float, hand: int, rate: float, end: float) -> bool:
    """Wait until ``hand`` may begin at ``rate`` hands a second; False once it is ``end`` (POSIX times)."""
    begin = first_turn + hand / rate if rate > 0 else end
    time.sleep(max(0.0, min(begin, end) - time.time()))
    return time.time() < end


def never_reads(host: str, port: int) -> int:
    """Take the seat, then never read (a receive buffer as small as the system allows): the
    dealer's states and answers pile up unread. Every 40 ms a query the dealer refuses (its
    QUERYERROR is one more line unread), about 50 a decision, under the budget of 64."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1)
    sock.connect((host, port))
    sock.sendall(b"VERSION:2.0.0\r\n")
    with contextlib.suppress(OSError):
        while True:
            time.sleep(0.04)
            sock.sendall(b"QUERY:q1:0:999999::|:c\r\n")
    return 0


def version_drip(host: str, port: int) -> int:
    """Connect to the seat and send a VERSION line a byte a second; when cut off, again."""
    line = b"VERSION:2.0.0\r\n"
    while True:
        with contextlib.suppress(OSError), socket.create_connection((host, port)) as sock:
            for byte in line[:-2]:  # never the end of the line
                sock.sendall(bytes([byte]))
                time.sleep(1.0)
            sock.recv(1)  # the dealer cuts it off (or never does)
        time.sleep(0.05)


def _answer(query: str) -> bytes:
    """A card-blind version-2 answer: each asked action equally likely for every hand."""
    qid, actions = query.split(":")[1], query.split(":")[-1].split(",")
    share = repr(1.0 / len(actions))
    return (f"RANGE:{qid}:2:" + ";".join(f"{a}=K{share}" for a in actions) + "\r\n").encode()


def metrics_idle(port: int, connections: int) -> int:
    """Start ``connections`` to the metrics port at once (non-blocking), send half a request
    header on each as it opens, and wait. Those the kernel does not complete (the port stopped
    accepting and its backlog is full) stay pending: the kernel sends their SYNs again (after
    1, 3, 7, 15... s), as an attacker's would. Ready (``held N, pending M``) a second after the
    last was started."""
    import selectors  # lazy: only this mode waits on many sockets

    pending = selectors.DefaultSelector()
    for _ in range(connections):
        sock = socket.socket()
        sock.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            sock.connect(("127.0.0.1", port))
        pending.register(sock, selectors.EVENT_WRITE)
    held = []
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        for key, _ in pending.select(timeout=max(0.0, deadline - time.monotonic())):
            sock = key.fileobj  # type: ignore[assignment]
            pending.unregister(sock)
            with contextlib.suppress(OSError):
                sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
                held.append(sock)
    print(f"held {len(held)}, pending {len(pending.get_map())}", flush=True)
    time.sleep(3600)
    return 0


def metrics_polite(port: int) -> int:
    """The scrapers' polite twin: one complete scrape a second, as Prometheus does (at its
    shortest interval), started as the attackers are and ready after as long (a second)."""
    import urllib.request  # lazy: only this mode scrapes

    def scrape() -> None:
        with contextlib.suppress(OSError), urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            r.read()

    scrape()
    time.sleep(1.0)  # metrics_idle is ready once a connection could not be made within a second
    print("scraping", flush=True)
    while True:
        time.sleep(1.0)
        scrape()


def metrics_slow_read(port: int, connections: int) -> int:
    """Open ``connections`` to the metrics port (receive buffers as small as the system allows),
    send a whole request on each, and read the responses a byte a second; open again any that
    the dealer closes."""
    request = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"

    def reader() -> None:
        while True:
            with contextlib.suppress(OSError), socket.socket() as sock:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1)
                sock.settimeout(5)
                sock.connect(("127.0.0.1", port))
                sock.sendall(request)
                while sock.recv(1):
                    time.sleep(1.0)
            time.sleep(0.05)

    for _ in range(connections):
        threading.Thread(target=reader, daemon=True).start()
    time.sleep(1.0)
    print("reading", flush=True)
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
    #: CPU seconds of the attacker's own process (or its twin's) while the honest match played, and
    #: of the whole machine (every process, the kernel's work included) meanwhile.
    attacker_cpu: float = 0.0
    machine_cpu: float = 0.0
    #: Meanwhile: the dealer's CPU seconds, and seconds it was ready to run but waited for a
    #: processor (the kernel's run-queue wait, /proc/PID/schedstat), and the honest bots' waits.
    dealer_cpu_during: float = 0.0
    dealer_wait: float = 0.0
    bots_wait: float = 0.0
    bots_cpu: float = 0.0
    #: Meanwhile, machine-wide: SYNs the kernel sent again, and connections its listeners dropped.
    syn_retries: int = 0
    listen_drops: int = 0
    #: Seconds from the honest match's start (its match_started event) to each of its hands'
    #: end, and to the hostile match's end (None: it outlived the honest match).
    honest_hand_times: list[float] = field(default_factory=list)
    hostile_end: float | None = None
    #: The hostile match's hands, and the seconds from its start to its end (or the honest match's).
    hostile_hands: int = 0
    hostile_seconds: float = 0.0
    #: When the dealer said its ports (POSIX time), and the seconds from then to the hostile
    #: match's end (None: it outlived the honest match).
    ports_said: float = 0.0
    hostile_end_after_ports: float | None = None

    def pace(self) -> tuple[float, float]:
        """(hands a second, seconds from the port line to its end) of the hostile match, for its
        paced twin (which ends as long after its own dealer's port line; an hour: it outlived
        the honest match, and so does the twin)."""
        rate = self.hostile_hands / self.hostile_seconds if self.hostile_seconds > 0 else 0.0
        return rate, self.hostile_end_after_ports if self.hostile_end_after_ports is not None else 3600.0


@dataclass(frozen=True)
class Case:
    kind: str
    dealer_options: tuple[str, ...] = ()
    nofile: int | None = None
    #: Seconds the attack may take, after the honest match, to end on its own (its bound, shortened
    #: by ``dealer_options``) before the bench stops its processes: its own end line is then reported.
    settle_s: float = 0.0


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
    "metrics_slow_read": Case("metrics_slow_read", ("--metrics-port", "0", "--metrics-grace", "0")),
    "query_edge": Case("query_edge"),
    "never_reads": Case("never_reads", ("--t_response", "1000"), settle_s=3.0),
    "version_drip": Case("version_drip", ("--t_handshake", "400", "--start_timeout", "1200"), settle_s=3.0),
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
             timeout: float = CASE_TIMEOUT_S, sample: Path | None = None, options: tuple[str, ...] = (),
             pace: tuple[float, float] | None = None) -> Run:
    """Play the honest match in a fresh folder: ``alone``, beside the attacker's ``twin`` (the
    same bot playing politely), beside the ``paced`` twin (as many hands a second as the attack's
    match played, ``pace`` = (hands a second, seconds it lasted)), or beside the ``attack``;
    ``sample``: where py-spy writes the dealer's stacks (raw, one line a stack with its count);
    ``options``: more dealer options (every mode)."""
    for stale in folder.glob("*"):
        stale.unlink()
    # Processes this one had before the run (a test runner's multiprocessing resource tracker,
    # say) are not the run's: only those it leaves count.
    before = {pid for pid, _ in descendants(os.getpid())}
    beside = mode != "alone"
    attacker = case.kind if mode == "attack" else "polite_query" if case.kind == "slow_query" else "polite"
    matches = [f"honest {GAME} {hands} 1 h1 h2"]
    scraper = case.kind.startswith("metrics_")
    if beside and not scraper:
        matches.append(f"hostile {GAME} 1000000 2 x1 x2")
    argv = [PYTHON, "-m", "acpc_lbr.cli", "dealer", "-q", "--console",
            *[w for m in matches for w in ("--match", m)], *case.dealer_options, *options]

    def limit() -> None:
        os.setpgid(0, 0)
        if case.nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (case.nofile, case.nofile))

    err = open(folder / "dealer.err", "wb")
    dealer = subprocess.Popen(argv, cwd=folder, stdout=subprocess.PIPE, stderr=err, preexec_fn=limit)
    assert dealer.stdout is not None
    ports = [dealer.stdout.readline().decode().split() for _ in matches]
    ports_said = time.time()
    if mode == "paced" and pace is not None:
        attacker += f"@{pace[0]:g}@{ports_said + pace[1]:.3f}"
    others: list[subprocess.Popen[bytes]] = []
    spy = None
    if sample is not None:  # non-blocking: the dealer runs at full speed while sampled
        spy = subprocess.Popen([str(Path(PYTHON).parent / "py-spy"), "record", "--pid", str(dealer.pid), "-o", str(sample), "-f", "raw",
                                "-r", "250", "--nonblocking"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if beside and scraper:
        port = _metrics_port(folder / "dealer.err")
        how = (["--metrics-polite", str(port)] if mode != "attack" else
               ["--metrics-idle", str(port), "1100"] if case.kind == "metrics_idle" else
               ["--metrics-slow-read", str(port), "24"] if case.kind == "metrics_slow_read" else
               ["--metrics-churn", str(port)])
        others.append(subprocess.Popen([PYTHON, __file__, *how], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL))
        assert others[0].stdout is not None
        others[0].stdout.readline()  # "held N": the connections are open ("churning": it began; "scraping")
    elif beside and not scraper:
        others.append(subprocess.Popen([str(plain_bot), "threshold", "127.0.0.1", ports[1][0]],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        others.append(subprocess.Popen([PYTHON, __file__, "--bot", attacker, "127.0.0.1", ports[1][1]],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    run = Run(ports_said=ports_said)
    attacker_pid = others[-1].pid if others else None
    attacker_cpu, machine_cpu = _process_cpu(attacker_pid), _machine_cpu()
    dealer_cpu, dealer_wait = _process_cpu(dealer.pid), _run_queue_wait(dealer.pid)
    syn_retries, listen_drops = _tcp_counters()
    started = time.perf_counter()
    honest = [subprocess.Popen([str(plain_bot), strategy, "127.0.0.1", port], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
              for strategy, port in zip(("random", "threshold"), ports[0])]
    try:
        deadline = time.monotonic() + timeout
        for process in honest:  # ended, not yet reaped: their /proc entries stay readable
            _wait_unreaped(process, deadline)
        run.seconds = time.perf_counter() - started
        run.attacker_cpu = _process_cpu(attacker_pid) - attacker_cpu
        run.machine_cpu = _machine_cpu() - machine_cpu
        run.dealer_cpu_during = _process_cpu(dealer.pid) - dealer_cpu
        run.dealer_wait = _run_queue_wait(dealer.pid) - dealer_wait
        run.bots_wait = sum(_run_queue_wait(process.pid) for process in honest)
        run.bots_cpu = sum(_process_cpu(process.pid) for process in honest)
        run.syn_retries, run.listen_drops = (now - then for now, then in zip(_tcp_counters(), (syn_retries, listen_drops)))
        for process in honest:
            process.wait()
    except subprocess.TimeoutExpired:
        run.timed_out = True
        for process in honest:
            process.kill()
    _settle(folder / "dealer.err", case.settle_s)
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


def _process_cpu(pid: int | None) -> float:
    """CPU seconds (user and system) of a live process so far; 0 for none or one that is gone."""
    if pid is None:
        return 0.0
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _settle(stderr: Path, seconds: float) -> None:
    """Wait up to ``seconds`` for the hostile match's end (its SCORE line on the dealer's stderr)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and "[hostile] SCORE" not in stderr.read_text(errors="replace"):
        time.sleep(0.05)


def _wait_unreaped(process: subprocess.Popen[bytes], deadline: float) -> None:
    """Wait for ``process`` to end without reaping it (TimeoutExpired past ``deadline``)."""
    while os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is None:
        if time.monotonic() > deadline:
            raise subprocess.TimeoutExpired(process.args, 0)
        time.sleep(0.005)


def _run_queue_wait(pid: int) -> float:
    """Seconds a process has been ready to run but waiting for a processor (0: unknown)."""
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def _tcp_counters() -> tuple[int, int]:
    """The kernel's SYN retransmissions and listen drops so far, machine-wide (0, 0: unknown)."""
    try:
        names, values = (line.split() for line in Path("/proc/net/netstat").read_text().splitlines()
                         if line.startswith("TcpExt:"))
    except (OSError, ValueError):
        return 0, 0
    counters = dict(zip(names[1:], (int(v) for v in values[1:])))
    return counters.get("TCPSynRetrans", 0), counters.get("ListenDrops", 0)


def _machine_cpu() -> float:
    """CPU seconds the whole machine has been busy (every processor, all but idle and iowait)."""
    ticks = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return (sum(ticks[:8]) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


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
    _read_times(folder, run)


def _read_times(folder: Path, run: Run) -> None:
    """The honest match's hand times and the hostile match's end, from the two events files."""
    honest = _records(folder / "honest.events.jsonl")
    start = next((t for event, t in honest if event == "match_started"), None)
    if start is None:
        return
    run.honest_hand_times = [t - start for event, t in honest if event == "hand_finished"]
    hostile = _records(folder / "hostile.events.jsonl")
    ends = [t for event, t in hostile if event in ("match_finished", "match_aborted", "match_ended_early")]
    if ends and run.honest_hand_times and ends[0] - start < run.honest_hand_times[-1]:
        run.hostile_end = max(ends[0] - start, 0.0)
        run.hostile_end_after_ports = ends[0] - run.ports_said
    hostile_start = next((t for event, t in hostile if event == "match_started"), None)
    if hostile_start is not None and run.honest_hand_times:
        until = start + (run.hostile_end if run.hostile_end is not None else run.honest_hand_times[-1])
        run.hostile_hands = sum(event == "hand_finished" and t <= until for event, t in hostile)
        run.hostile_seconds = until - hostile_start


def _records(path: Path) -> list[tuple[str, float]]:
    """(event, POSIX time) of each record of an events file (none if there is no file)."""
    import json  # lazy: as the other imports of the report only
    from datetime import datetime

    if not path.exists():
        return []
    found = []
    for line in path.read_text(errors="replace").splitlines():
        with contextlib.suppress(ValueError, KeyError, TypeError):
            record = json.loads(line)
            found.append((record["event"], datetime.fromisoformat(record["timestamp"]).timestamp()))
    return found


# -- the table -----------------------------------------------------------------------------------


def measure(folder: Path, plain_bot: Path, name: str, hands: int, runs: int,
            sample: Path | None = None, options: tuple[str, ...] = ()) -> dict[str, Any]:
    """Alternate the controls and the attack ``runs`` times; the medians of the per-run ratios."""
    case = CASES[name]
    ratios: dict[str, list[float]] = {key: [] for key in ("twin", "paced", "alone", "cpu", "attacker_cpu", "twin_cpu")}
    beside_runs = []
    for run in range(runs):
        alone = run_once(folder, plain_bot, case, hands, "alone", options=options)
        twin = run_once(folder, plain_bot, case, hands, "twin", options=options,
                        sample=sample / f"{name}-twin-{run}.txt" if sample is not None else None)
        beside = run_once(folder, plain_bot, case, hands, "attack", options=options,
                          sample=sample / f"{name}-{run}.txt" if sample is not None else None)
        # A scraper plays no match: its twin is already as slow as it (a scrape a second).
        paced = None if case.kind.startswith("metrics_") else run_once(
            folder, plain_bot, case, hands, "paced", options=options, pace=beside.pace())
        beside_runs.append(beside)
        window = _window(twin, beside)
        if any(r.timed_out or not r.honest_hand_times for r in (alone, twin, beside, *([paced] if paced else []))):
            print(f"  {name}: a run timed out or its honest match has no hand times: not counted", flush=True)
            continue
        ratios["alone"].append(_duration(beside) / _duration(alone))
        ratios["cpu"].append(beside.dealer_cpu / twin.dealer_cpu)
        ratios["attacker_cpu"].append(beside.attacker_cpu)
        ratios["twin_cpu"].append(twin.attacker_cpu)
        if window is not None:
            ratios["twin"].append(window[0])
        # The judged ratio: beside the attack over beside the same match without the misdeeds.
        ratios["paced"].append(_duration(beside) / _duration(paced if paced is not None else twin))
        _print_run(name, hands, alone, twin, beside, paced, window)
    worst = max(beside_runs, key=lambda r: (r.timed_out, hands - r.honest_hands, r.stderr_bytes))

    def median(key: str) -> float:
        return statistics.median(ratios[key]) if ratios[key] else float("nan")

    return {
        "case": name,
        "twin": median("twin"),
        "paced": median("paced"),
        "alone": median("alone"),
        "cpu": median("cpu"),
        "attacker_cpu": median("attacker_cpu"),
        "twin_cpu": median("twin_cpu"),
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


def _duration(run: Run) -> float:
    """The honest match's seconds from its start (both bots seated) to its last hand."""
    return run.honest_hand_times[-1]


def _print_run(name: str, hands: int, alone: Run, twin: Run, beside: Run, paced: Run | None,
               window: tuple[float, float, int] | None) -> None:
    """One run's figures: the honest match's speed and the dealer's and the processes' CPU."""
    runs = [("alone", alone), ("twin", twin), ("attack", beside), *([("paced", paced)] if paced else [])]

    def each(value: Callable[[Run], float], form: str = "{:.2f}") -> str:
        return " / ".join(form.format(value(r)) for _, r in runs)

    during = (f"; while the attack lasted ({window[1]:.2f} s, {window[2]} honest hands) {window[0]:.2f}x the twin"
              if window is not None else "")
    during += f"; {_duration(beside) / _duration(paced if paced is not None else twin):.2f}x the paced twin"
    print(f"  {name} ({' / '.join(label for label, _ in runs)}): honest hands/s "
          f"{each(lambda r: hands / _duration(r), '{:.0f}')}{during}; hostile match {beside.hostile_hands} hands in "
          f"{beside.hostile_seconds:.2f} s; dealer CPU {each(lambda r: r.dealer_cpu)} s (whole run), "
          f"{each(lambda r: r.dealer_cpu_during)} while the honest match played, when it also waited for a processor "
          f"{each(lambda r: r.dealer_wait)} s; the honest bots' CPU {each(lambda r: r.bots_cpu)}, their wait "
          f"{each(lambda r: r.bots_wait)}; the attacker's (twin's) process {each(lambda r: r.attacker_cpu)}; "
          f"the machine {each(lambda r: r.machine_cpu)} (every process and the kernel), the kernel's SYN "
          f"retransmissions {each(lambda r: r.syn_retries, '{:.0f}')} and listen drops "
          f"{each(lambda r: r.listen_drops, '{:.0f}')} (machine-wide)", flush=True)


def _window(twin: Run, attack: Run) -> tuple[float, float, int] | None:
    """The honest match's slowdown while the attack lasted: (the time its first N hands took beside
    the attack over beside the twin, where N is the honest hands that ended while the attack lasted;
    the attack's seconds; N). The attack lasts until the dealer ended the hostile match, or to the
    honest match's end. Times run from the honest match's start (its ``match_started`` event), so
    the bots' start-up is left out. None when a run has no hand times or no honest hand ended in it."""
    if not twin.honest_hand_times or not attack.honest_hand_times:
        return None
    seconds = attack.hostile_end if attack.hostile_end is not None else attack.honest_hand_times[-1]
    hands = sum(t <= seconds for t in attack.honest_hand_times)
    if hands == 0 or hands > len(twin.honest_hand_times):
        return None
    return attack.honest_hand_times[hands - 1] / max(twin.honest_hand_times[hands - 1], 1e-6), seconds, hands


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hands", type=int, default=3000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--sample", type=Path, metavar="DIR",
                        help="sample the dealer of each run beside the twin and the attack with py-spy (the "
                             "dev extra) into DIR/CASE-twin-RUN.txt and DIR/CASE-RUN.txt (raw stacks); the figures of a sampled run are not comparable")
    parser.add_argument("--dealer-options", default="", metavar="OPTIONS",
                        help="more dealer options for every run (one string, split on spaces), e.g. '--busy_poll 0'")
    parser.add_argument("--bot", nargs=3, metavar=("KIND", "HOST", "PORT"), help=argparse.SUPPRESS)
    parser.add_argument("--metrics-idle", nargs=2, type=int, metavar=("PORT", "N"), help=argparse.SUPPRESS)
    parser.add_argument("--metrics-churn", type=int, metavar="PORT", help=argparse.SUPPRESS)
    parser.add_argument("--metrics-polite", type=int, metavar="PORT", help=argparse.SUPPRESS)
    parser.add_argument("--metrics-slow-read", nargs=2, type=int, metavar=("PORT", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bot:
        sys.path.insert(0, str(REPO))
        return bot(args.bot[0], args.bot[1], int(args.bot[2]))
    if args.metrics_idle:
        return metrics_idle(*args.metrics_idle)
    if args.metrics_churn:
        return metrics_churn(args.metrics_churn)
    if args.metrics_slow_read:
        return metrics_slow_read(*args.metrics_slow_read)
    if args.metrics_polite:
        return metrics_polite(args.metrics_polite)
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
            rows.append(measure(folder, plain_bot, name, args.hands, args.runs, args.sample,
                                tuple(args.dealer_options.split())))
    extra = f" --dealer-options '{args.dealer_options}'" if args.dealer_options else ""
    print(f"\nhonest match: {args.hands} hands of two C plain bots; median of {args.runs} alternating runs; "
          f"command: python bench/bench_hostile.py --hands {args.hands} --runs {args.runs} --cases {','.join(names)}{extra}")
    print(f"{'case':<17} {'twin':>5} {'paced':>5} {'alone':>5} {'cpu':>5} {'atk s':>5} {'twin s':>6} {'lost':>4} "
          f"{'SCORE':>5} {'lines':>5} {'events':>8} {'stderr':>8} {'RSS':>6} {'left':>4}  how the attack ended")
    for r in rows:
        print(f"{r['case']:<17} {r['twin']:5.2f} {r['paced']:5.2f} {r['alone']:5.2f} {r['cpu']:5.2f} "
              f"{r['attacker_cpu']:5.2f} {r['twin_cpu']:6.2f} {r['lost']:>4} {'yes' if r['score'] else 'NO':>5} "
              f"{r['lines']:>5} {r['events_kb']:7.0f}K {r['stderr_kb']:7.0f}K {r['rss_mb']:5.0f}M "
              f"{len(r['leftovers']):>4}  {'TIMED OUT ' if r['timed_out'] else ''}{r['ended']}")
        for leftover in r["leftovers"]:
            print(f"{'':<14} leftover: {leftover}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The plain dealer's start-up: what it imports before its port line, and what it checks.

``acpc-lbr tournament`` starts one dealer per seating, thousands per event, so
what a dealer loads before it listens is paid thousands of times. A plain
dealer (``acpc-lbr dealer M G N S a b -q``: the ``.log`` and the events file on,
no console, no metrics) prints its port line before it loads Twisted (its
sockets are bound with the standard library's, dealer/startup.py) and must not
load, before that line, Twisted or uvloop, the console's structlog (with rich
and pygments), the metrics (prometheus_client, twisted.web), numpy (its deals
come from Python's own MT19937; range queries, their answers and hand tables
load with the first range query), the compute core's numba kernels, or its
results pipeline. A run that is refused prints no port line; a bot that
connects before the dealer accepts (it waits in the backlog) is seated.
"""

from __future__ import annotations

import errno
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ACPC_LBR = Path(sys.executable).parent / "acpc-lbr"

#: Packages a plain dealer must not import before its port line (a name, or a dotted prefix).
#: The results of a plain dealer (the query log beside its ``.log``) load after it.
NOT_LOADED = ("twisted", "uvloop", "structlog", "rich", "pygments", "prometheus_client", "numba", "numpy", "scipy", "jsonschema",
              "twisted.web", "dealer.metrics", "dealer.results", "acpc_lbr.results", "acpc_lbr.estimators",
              "protocol.rangecodec", "protocol.rangequery", "protocol.hands")


def modules_before_port_line(args: list[str], cwd: Path) -> tuple[set[str], str]:
    """Start ``acpc-lbr dealer ARGS`` with ``-X importtime``; the modules it had imported when
    it printed its port line, and that line. The dealer is stopped then.

    Its stdout and stderr are one pipe, so the order of the lines is the order of the
    events: every import before the port line, none after it.
    """
    command = [sys.executable, "-X", "importtime", str(ACPC_LBR), "dealer", *args]
    proc = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    imported: set[str] = set()
    port_line = ""
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            found = re.match(r"import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", line)
            if found:
                imported.add(found[1])
            elif re.fullmatch(r"\d+ \d+\n", line):
                port_line = line
                break
    finally:
        proc.terminate()
        proc.communicate(timeout=60)
    return imported, port_line


def loaded(imported: set[str], package: str) -> list[str]:
    return sorted(m for m in imported if m == package or m.startswith(package + "."))


@pytest.mark.parametrize("flags", [["-q"], ["-q", "-l"], ["-q", "-l", "--no_events"]])
def test_plain_dealer_loads_no_console_metrics_or_kernels(tmp_path: Path, flags: list[str]) -> None:
    """Up to its port line a plain dealer imports none of :data:`NOT_LOADED` (the import
    list is read from ``-X importtime``, so a module loaded at start-up anywhere counts)."""
    imported, port_line = modules_before_port_line(["m", "nolimit", "10", "1", "a", "b", *flags], tmp_path)
    assert re.fullmatch(r"\d+ \d+\n", port_line)
    assert "dealer.startup" in imported and "protocol.gamedef" in imported  # the reading works
    assert {package: loaded(imported, package) for package in NOT_LOADED} == dict.fromkeys(NOT_LOADED, [])


def test_console_still_loads_structlog(tmp_path: Path) -> None:
    """The readable console (``--console``) is structlog's: asked for, it is loaded (after the
    port line: a plain dealer's console needs no Twisted to be refused before it)."""
    command = [sys.executable, "-X", "importtime", str(ACPC_LBR), "dealer", "m", "nolimit", "10", "1",
               "a", "b", "-q", "--console", "--start_timeout", "100"]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 3  # no bot came
    assert re.search(r"\| structlog$", done.stderr, re.MULTILINE)


def test_results_asked_for_load_before_the_port_line(tmp_path: Path) -> None:
    """``--table`` (like ``--results-json`` and ``--metrics-port``) sets the results up before the
    port line, where a failure still means "did not start"."""
    imported, _ = modules_before_port_line(["m", "nolimit", "10", "1", "a", "b", "-q", "--table"], tmp_path)
    assert "dealer.results" in imported


@pytest.mark.parametrize("case", ["port in use", "log is a folder", "no such folder", "results folder",
                                  "event loop", "every match's log"])
def test_a_refused_run_prints_no_port_line(tmp_path: Path, case: str) -> None:
    """Whatever refuses the run is found before the port line (a launcher reads that line as
    "started"): exit 1, one ERROR line, nothing on stdout, no file of a match truncated."""
    args = ["m", "nolimit", "10", "1", "a", "b", "-q", "-l"]
    env = dict(os.environ)
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    port = busy.getsockname()[1]
    (tmp_path / "m.events.jsonl").write_text("kept\n")
    expected = ""
    if case == "port in use":
        args += ["-p", f"0,{port}"]
        expected = f"ERROR: cannot listen on port {port} for seat 2 (b): [Errno {errno.EADDRINUSE}]"
    elif case == "log is a folder":
        (tmp_path / "m.log").mkdir()
        args.remove("-l")
        expected = "ERROR: cannot write m.log: Is a directory"
    elif case == "no such folder":
        args[0] = "nowhere/m"
        expected = "ERROR: cannot write nowhere/m.events.jsonl: No such file or directory"
    elif case == "results folder":
        args += ["--results-json", "nowhere/r.json"]
        expected = "ERROR: cannot write nowhere/r.json: No such file or directory"
    elif case == "event loop":
        env["ACPC_LBR_EVENT_LOOP"] = "trio"
        expected = "error: ACPC_LBR_EVENT_LOOP must be uvloop or asyncio, not 'trio'"
    else:  # (one match of several whose files cannot be opened fails alone: test_hostile.py)
        (tmp_path / "first.log").mkdir()
        (tmp_path / "second.log").mkdir()
        args = ["--match", "first nolimit 10 1 a b", "--match", "second nolimit 10 2 c d", "-q"]
        expected = "ERROR: cannot write first.log: Is a directory"
    with busy:
        done = subprocess.run([str(ACPC_LBR), "dealer", *args], cwd=tmp_path, capture_output=True,
                              text=True, timeout=60, check=False, env=env)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.startswith(expected) and len(done.stderr.splitlines()) == 1, done.stderr
    if case in ("port in use", "results folder", "event loop"):  # found before any file is opened
        assert (tmp_path / "m.events.jsonl").read_text() == "kept\n"


def established_to(port: int) -> int:
    """TCP connections to ``port`` on this host that the kernel has established (accepted by
    the listener or waiting in its backlog), from /proc/net/tcp."""
    count = 0
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, _, state = line.split()[1:4]
        count += int(local.rpartition(":")[2], 16) == port and state == "01"
    return count


def test_bots_that_connect_before_the_dealer_accepts_are_seated(tmp_path: Path) -> None:
    """The port line comes before the dealer can accept: bots that connect then wait in the
    backlog, and are seated once it runs. The dealer is stopped (SIGSTOP) at its port line
    until both bots are connected, and the match it then plays is the reference's, byte for
    byte."""
    from tests.dealer.bots import REFERENCE
    from tests.dealer.test_cli import start_bot

    reference = REFERENCE / "logs" / "nl1000.log"
    game = "holdem.nolimit.2p.reverse_blinds.game"
    dealer = subprocess.Popen([str(ACPC_LBR), "dealer", "nl1000", game, "1000", "42", "p1", "p2", "-q"],
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    bots = []
    try:
        assert dealer.stdout is not None
        ports = [int(p) for p in dealer.stdout.readline().split()]
        dealer.send_signal(signal.SIGSTOP)
        bots = [start_bot(port, game, "--replay", str(reference)) for port in ports]
        deadline = time.monotonic() + 30
        while [established_to(p) for p in ports] != [1, 1]:
            assert time.monotonic() < deadline, "the bots could not connect to the stopped dealer"
            time.sleep(0.01)
        dealer.send_signal(signal.SIGCONT)
        out, err = dealer.communicate(timeout=120)
        for bot in bots:
            assert bot.wait(timeout=60) == 0
    finally:
        dealer.send_signal(signal.SIGCONT)
        dealer.kill()
        for bot in bots:
            bot.kill()
    assert dealer.returncode == 0, err
    assert (tmp_path / "nl1000.log").read_text() == reference.read_text()


def test_several_matches_from_a_file_print_their_port_lines_first(tmp_path: Path) -> None:
    """``--matches FILE`` with ``--duplicate``: one port line per pair, four ports each, in
    order, all printed before Twisted is loaded; each match is played on its own ports."""
    from tests.dealer.test_cli import start_bot

    (tmp_path / "matches.txt").write_text("# two pairs\none limit 4 1 a b\n\ntwo limit 4 2 c d\n")
    command = [sys.executable, "-X", "importtime", str(ACPC_LBR), "dealer", "--matches", "matches.txt",
               "--duplicate", "-q"]
    proc = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    bots = []
    try:
        assert proc.stdout is not None
        imported, lines = set(), []
        while len(lines) < 2:
            line = proc.stdout.readline()
            found = re.match(r"import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", line)
            if found:
                imported.add(found[1])
            elif re.fullmatch(r"\d+ \d+ \d+ \d+\n", line):
                lines.append(line)
            else:
                assert line, "the dealer ended before its port lines"
        bots = [start_bot(int(port), "limit") for line in lines for port in line.split()]
        rest, _ = proc.communicate(timeout=120)
        for bot in bots:
            assert bot.wait(timeout=60) == 0
    finally:
        proc.kill()
        for bot in bots:
            bot.kill()
    assert proc.returncode == 0
    assert "dealer.startup" in imported and loaded(imported, "twisted") == []
    assert "twisted.internet.tcp" in rest  # loaded after the lines (the reading works)
    ports = [int(p) for line in lines for p in line.split()]
    assert len(set(ports)) == 8
    for name in ("one", "one.dup", "two", "two.dup"):
        log = (tmp_path / f"{name}.log").read_text().splitlines()
        assert sum(line.startswith("STATE:") for line in log) == 4 and log[-1].startswith("SCORE:")


def test_seats_listen_on_ipv4_loopback_unless_told_otherwise() -> None:
    """The sockets bound before Twisted listen where Twisted's ports did: 127.0.0.1 by default
    (IPv4), an IPv6 literal as IPv6, ``-p`` ports as given; a port in use is refused naming
    the seat, and the sockets bound so far are closed."""
    from dealer.startup import StartupRefused, address_family, bind_seats, port_line
    from tests.dealer.harness import make_config

    sockets = bind_seats(make_config("m", names=("a", "b")))
    try:
        assert [(s.family, s.getsockname()[0]) for s in sockets] == [(socket.AF_INET, "127.0.0.1")] * 2
        assert not any(s.getblocking() for s in sockets)
        taken = sockets[1].getsockname()[1]
        with pytest.raises(StartupRefused) as refused:
            bind_seats(make_config("n", names=("c", "d"), ports=(0, taken)))
        assert refused.value.message.startswith(f"cannot listen on port {taken} for seat 2 (d): ")
    finally:
        for s in sockets:
            s.close()
    assert address_family("::1") == socket.AF_INET6 and address_family("fe80::1%lo") == socket.AF_INET6
    assert address_family("0.0.0.0") == socket.AF_INET and address_family("localhost") == socket.AF_INET
    assert port_line([[1, 2]]) == "1 2" and port_line([[1, 2], [3, 4]]) == "1 2 4 3"


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_right_after_the_port_line_ends_the_match_cleanly(tmp_path: Path, number: int) -> None:
    """A launcher may stop the dealer as soon as it reads the port line, while the dealer still
    loads Twisted: the stop is held until the reactor runs, then ends the match as a stop while
    waiting for the bots does (the ERROR and SCORE lines, exit code 4, no traceback)."""
    proc = subprocess.Popen([str(ACPC_LBR), "dealer", "m", "nolimit", "10", "1", "a", "b", "-q"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert re.fullmatch(r"\d+ \d+\n", proc.stdout.readline())
    proc.send_signal(number)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 4, err
    assert "Traceback" not in err and "ERROR: the dealer was stopped" in err, err
    assert out.strip().splitlines() == ["SCORE:0|0:a|b"]
    assert (tmp_path / "m.log").read_text().splitlines()[-2:] == ["# ERROR: the dealer was stopped",
                                                                   "SCORE:0|0:a|b"]

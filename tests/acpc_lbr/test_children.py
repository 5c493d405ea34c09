"""Processes we start die with us (acpc_lbr/runtime/children.py; issue 33).

Each end-to-end test runs ``acpc-lbr evaluate`` with a marker in its
environment, which every process it starts inherits, and at the end looks
through /proc for any process still carrying it: none may be left. The
opponent is tests/data/bots/forking_bot.py behind the probe adapter (``--probe``:
two copies of it), whose helper ignores SIGTERM and holds the bot's output
pipes open. Leduc, a few hands, loopback only.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from acpc_lbr.runtime import children

ACPC_LBR = Path(sys.executable).with_name("acpc-lbr")
BOT = Path(__file__).resolve().parents[1] / "data" / "bots" / "forking_bot.py"
#: Far longer than any run here: reaching it means something waited on a child.
HANG = 90.0

pytestmark = pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc (Linux)")


def _ours(mark: str) -> list[int]:
    """The live (not zombie) processes whose environment holds ``mark``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if mark.encode() in environ and state != "Z":
            found.append(int(entry))
    return found


def _none_left(mark: str, within: float = 3.0) -> list[int]:
    deadline = time.monotonic() + within
    while (left := _ours(mark)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def _evaluate(tmp_path: Path, mode: str, *extra: str) -> tuple[subprocess.Popen[str], str, Path]:
    mark = f"ACPC_TEST_MARK_{uuid.uuid4().hex}"
    pids = tmp_path / "pids"
    command = f"{sys.executable} {BOT} {mode} {pids} leduc {{host}} {{port}}"
    proc = subprocess.Popen(
        [str(ACPC_LBR), "evaluate", "--game", "leduc", "--rounds", "1-2", "--no-duplicate", "--quiet",
         "--probe", "5", "--out", str(tmp_path / "logs"), "--opponent-cmd", command, *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, mark: "1"})
    return proc, mark, pids


def _wait_for(path: Path) -> None:
    deadline = time.monotonic() + HANG
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert path.exists(), "the bot never started"


def test_a_child_runs_in_a_group_of_its_own_and_keeps_its_exit_status() -> None:
    """The launcher leads the group (its pid is the group's id), and exits with the command's status;
    the command gets SIGPIPE's default back (Python's own start ignores it)."""
    launched = subprocess.Popen(children.grouped_argv(
        ["sh", "-c", "awk '{print $5}' /proc/$$/stat; grep SigIgn /proc/self/status; exit 7"]),
        stdout=subprocess.PIPE, text=True)
    out, _ = launched.communicate(timeout=30)
    group, _, ignored = out.split()
    assert int(group) == launched.pid and launched.returncode == 7
    assert not int(ignored, 16) & (1 << (signal.SIGPIPE - 1)), "SIGPIPE is still ignored"


def test_an_evaluate_killed_with_sigkill_leaves_no_process_behind(tmp_path: Path) -> None:
    """SIGKILL gives evaluate no chance to clean up: each launcher sees its parent die and kills
    its group (the probe adapter, the copies of the bot, and the helpers they forked)."""
    proc, mark, pids = _evaluate(tmp_path, "hang", "--hands", "10")
    try:
        _wait_for(pids)
        time.sleep(0.5)
        proc.kill()
        proc.communicate(timeout=HANG)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert _none_left(mark, within=5.0) == []


def test_the_matches_end_does_not_wait_for_a_helper_holding_the_bots_output(tmp_path: Path) -> None:
    """Before: a bot that forked a helper kept evaluate waiting until the helper closed its
    stdout (80 s under --probe). Now evaluate ends with the match and the helper is killed."""
    proc, mark, _ = _evaluate(tmp_path, "play", "--hands", "10")
    started = time.monotonic()
    try:
        _, err = proc.communicate(timeout=HANG)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert time.monotonic() - started < 45, "evaluate waited on the helper"
    assert proc.returncode in (0, 6), err[-2000:]
    assert _none_left(mark) == []


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_stopped_evaluate_leaves_no_process_behind(tmp_path: Path, signum: int) -> None:
    """Before: after SIGINT a hung copy was alive 60 s later. Now a bot and a helper that both
    ignore SIGTERM are killed before evaluate exits, and evaluate says so in one line."""
    proc, mark, pids = _evaluate(tmp_path, "hang", "--hands", "10")
    try:
        _wait_for(pids)
        time.sleep(0.5)  # connected, waiting for its reply
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=HANG)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, err[-2000:]
    assert "Traceback" not in err and err.strip().splitlines()[-1].startswith("acpc-lbr evaluate: interrupted")
    assert _none_left(mark) == []


def test_t_response_ends_a_match_against_a_hung_bot(tmp_path: Path) -> None:
    """Before: a hung plain bot was waited on for the 600 s default, with no option to lower it."""
    proc, mark, _ = _evaluate(tmp_path, "hang", "--hands", "10", "--t_response", "1000")
    started = time.monotonic()
    try:
        _, err = proc.communicate(timeout=HANG)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert time.monotonic() - started < 45
    assert proc.returncode != 0 and "Traceback" not in err
    assert _none_left(mark) == []


def test_a_command_without_a_reactor_ends_on_sigterm_in_one_line(tmp_path: Path) -> None:
    """Before: SIGTERM killed such a command with no word (exit -15), and SIGINT printed a
    KeyboardInterrupt traceback (exit -2). ``results`` here waits on a FIFO nobody writes."""
    fifo = tmp_path / "m.log"
    os.mkfifo(fifo)
    for signum in (signal.SIGINT, signal.SIGTERM):
        proc = subprocess.Popen([str(ACPC_LBR), "results", str(fifo)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        time.sleep(1.5)  # past the imports, blocked in open()
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=HANG)
        assert proc.returncode == 1, err
        assert err == "acpc-lbr results: interrupted\n", err


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_stopped_dask_driver_says_so_in_one_line_and_leaves_nothing(tmp_path: Path, signum: int) -> None:
    """Before: SIGINT to a Dask driver printed a raw KeyboardInterrupt traceback (exit -2), SIGTERM
    gave exit -15 and no word. Now: exit 1, one line, and no worker or batch process left."""
    pytest.importorskip("distributed")
    mark = f"ACPC_TEST_MARK_{uuid.uuid4().hex}"
    proc = subprocess.Popen(
        [str(ACPC_LBR), "evaluate", "--game", "leduc", "--opponent", "random", "--rounds", "1-2",
         "--workers", "1", "--hands", "200000", "--batch-hands", "5000", "--out", str(tmp_path / "out")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, mark: "1"})
    try:
        deadline = time.monotonic() + HANG
        while time.monotonic() < deadline and not list((tmp_path / "out").glob("batch-*/logs/*.log")):
            time.sleep(0.1)  # a batch is being played
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=HANG)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, err[-2000:]
    lines = err.strip().splitlines()
    assert "Traceback" not in err and lines[-1].startswith("acpc-lbr evaluate: interrupted"), err[-2000:]
    assert not any("WARNING" in line or "ERROR" in line for line in lines), err[-2000:]
    assert _none_left(mark, within=10.0) == []


@pytest.mark.parametrize("command", [["play", "call-raise"], ["probe"]])
def test_play_and_the_probe_adapter_end_on_sigterm_in_one_line(command: list[str]) -> None:
    """Before: a stopped 'play' printed 'connection to the dealer lost' (a lost connection it caused).
    Both reactor commands now say 'interrupted' in one line, with exit 1. The dealer here is a
    socket that accepts and says nothing."""
    import socket

    with socket.socket() as dealer:
        dealer.bind(("127.0.0.1", 0))
        dealer.listen(4)
        port = str(dealer.getsockname()[1])
        args = ([*command, "127.0.0.1", port, "--game", "leduc"] if command[0] == "play"
                else [*command, "127.0.0.1", port, "--game", "leduc", "--", sys.executable, "-c",
                      "import time; time.sleep(60)"])
        proc = subprocess.Popen([str(ACPC_LBR), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(2.5)  # started and waiting
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=HANG)
    assert proc.returncode == 1
    assert err == f"acpc-lbr {command[0]}: interrupted\n", err

"""`acpc-lbr evaluate` always ends: under a scraper hammering /metrics at the end, and on SIGINT/SIGTERM.

The hang these tests guard against (issue 13, item 6): /metrics served from
the reactor's thread pool deadlocked the shutdown (the reactor joined the pool
while a worker waited for the reactor). The timeouts below only detect a hang;
they are generous and are not performance bounds.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

ACPC_LBR = Path(sys.executable).with_name("acpc-lbr")
#: Longer than any healthy run by far: reaching it means the process hung.
HANG = 120.0


def _start(out: Path, hands: int) -> tuple[subprocess.Popen[bytes], Path]:
    err = out / "stderr.txt"
    with open(err, "wb") as stream:
        proc = subprocess.Popen(
            [str(ACPC_LBR), "evaluate", "--game", "leduc", "--rounds", "1-2", "--opponent", "random",
             "--hands", str(hands), "--seed", "3", "--metrics-port", "0",
             "--progress-every", "1000000", "--out", str(out / "logs")],
            stdout=subprocess.PIPE, stderr=stream,
        )
    return proc, err


def _metrics_url(proc: subprocess.Popen[bytes], err: Path) -> str:
    deadline = time.monotonic() + HANG
    while time.monotonic() < deadline and proc.poll() is None:
        for line in err.read_text(errors="replace").splitlines():
            if line.startswith("METRICS "):
                return line.split()[1]
        time.sleep(0.02)
    raise AssertionError(f"no METRICS line; stderr: {err.read_text(errors='replace')[-2000:]}")


def _stop(proc: subprocess.Popen[bytes], signum: int) -> None:
    """Send ``signum`` to a running evaluate and wait for it to end (it must, well
    before HANG); a process that hangs is killed and the test fails."""
    try:
        if proc.poll() is None:
            proc.send_signal(signum)
            try:
                proc.communicate(timeout=HANG)
            except subprocess.TimeoutExpired:
                raise AssertionError("evaluate ignored the signal") from None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _hammer(url: str, stop: threading.Event, scrapes: list[int]) -> None:
    while not stop.is_set():
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                response.read()
            scrapes.append(1)
        except OSError:
            time.sleep(0.001)  # not listening yet, or already gone


@pytest.mark.parametrize("runs", [pytest.param(50, marks=pytest.mark.slow), 4])
def test_evaluate_exits_while_metrics_are_scraped(tmp_path: Path, runs: int) -> None:
    """Two scrapers hammer /metrics through every run, so scrapes are in flight as the match
    ends; each of ``runs`` evaluations still prints its result and exits 0."""
    for run in range(runs):
        out = tmp_path / str(run)
        out.mkdir()
        proc, err = _start(out, hands=40)
        stop = threading.Event()
        scrapes: list[int] = []
        threads = []
        try:
            url = _metrics_url(proc, err)
            threads = [threading.Thread(target=_hammer, args=(url, stop, scrapes)) for _ in range(2)]
            for thread in threads:
                thread.start()
            try:
                stdout, _ = proc.communicate(timeout=HANG)
            except subprocess.TimeoutExpired:
                raise AssertionError(f"run {run}: evaluate hung after the match") from None
        finally:
            stop.set()
            for thread in threads:
                thread.join(timeout=30)
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 0, (run, err.read_text(errors="replace")[-2000:])
        assert b"lower bound on exploitability" in stdout
        assert scrapes, "the scrapers never got an answer"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_evaluate_ends_cleanly_on_a_signal(tmp_path: Path, signum: int) -> None:
    """SIGINT or SIGTERM mid-match ends evaluate at once: a one-line message, exit 1, and the
    logs of the finished hands closed with the reason (no traceback, no hang)."""
    proc, err = _start(tmp_path, hands=200_000)
    try:
        url = _metrics_url(proc, err)
        log = tmp_path / "logs" / "lbr-vs-random.log"
        deadline = time.monotonic() + HANG
        while time.monotonic() < deadline and (not log.exists() or log.read_text().count("STATE:") < 20):
            time.sleep(0.05)  # wait until hands are being played
        with urllib.request.urlopen(url, timeout=5) as response:
            assert b"acpc_hands_total" in response.read()
    finally:
        _stop(proc, signum)
    text = err.read_text(errors="replace")
    assert proc.returncode == 1, text[-2000:]
    assert "Traceback" not in text
    assert "interrupted" in text.splitlines()[-1]
    assert log.read_text().splitlines()[-2].startswith("# ERROR:")


def test_an_interrupted_evaluation_keeps_the_opponent_programs_output(tmp_path: Path) -> None:
    """SIGTERM mid-match: an --opponent-cmd program's output is in its log (opponent0.out)
    even though the evaluation stops before the program ends and the process exits
    without a last garbage collection."""
    script = tmp_path / "opponent.sh"
    script.write_text("#!/bin/sh\necho 'the opponent was here'\n"
                      f"exec {sys.executable} -m acpc_lbr.cli play call-raise --game leduc \"$1\" \"$2\"\n")
    script.chmod(0o755)
    logs = tmp_path / "logs"
    with open(tmp_path / "stderr.txt", "wb") as err:
        proc = subprocess.Popen(
            [str(ACPC_LBR), "evaluate", "--game", "leduc", "--rounds", "1-2", "--hands", "200000",
             "--seed", "3", "--progress-every", "1000000", "--out", str(logs),
             "--opponent-cmd", f"{script} {{host}} {{port}}"],
            stdout=subprocess.PIPE, stderr=err)
    try:
        deadline = time.monotonic() + HANG
        while time.monotonic() < deadline and proc.poll() is None and not any(
                log.read_text().count("STATE:") >= 20 for log in logs.glob("*.log")):
            time.sleep(0.05)  # wait until hands are being played
    finally:
        _stop(proc, signal.SIGTERM)
    text = (tmp_path / "stderr.txt").read_text(errors="replace")
    assert proc.returncode == 1, text[-2000:]
    assert "the opponent was here" in (logs / "opponent0.out").read_text()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_the_mirrored_seatings_process_ends_quietly_on_a_signal(tmp_path: Path, signum: int) -> None:
    """Without --metrics-port the mirrored seating plays in a second process. Stopped, the
    parent exits at once and the child, stopped too, finds no reader for its summary: it
    ends its match and exits without a word (it printed 'internal error' and a
    BrokenPipeError traceback after the parent's 'interrupted' line)."""
    logs = tmp_path / "logs"
    proc = subprocess.Popen(
        [str(ACPC_LBR), "evaluate", "--game", "leduc", "--rounds", "1-2", "--opponent", "random",
         "--hands", "200000", "--seed", "3", "--progress-every", "1000000", "--out", str(logs)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + HANG
        mirror = logs / "lbr-vs-random.dup.log"
        while time.monotonic() < deadline and proc.poll() is None and not (
                mirror.exists() and mirror.read_text().count("STATE:") >= 20):
            time.sleep(0.05)  # wait until the mirror plays
        proc.send_signal(signum)
        # The child writes to the same stderr: the pipe ends when both have exited.
        _, err = proc.communicate(timeout=HANG)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = err.decode(errors="replace")
    assert proc.returncode == 1, text[-2000:]
    assert "Traceback" not in text and "internal error" not in text, text[-2000:]
    assert "interrupted" in text
    # The in-process agents' lost connections are the stop's own doing: not reported one by one.
    assert "connection to the dealer lost" not in text and "range query failed" not in text, text[-2000:]
    for log in (logs / "lbr-vs-random.log", mirror):
        assert log.read_text().splitlines()[-2].startswith("# ERROR:"), log


def test_one_deal_prints_no_nan_interval(tmp_path: Path) -> None:
    """Before: with one duplicate pair the duplicate rows read '± nan [+nan, +nan]'. A single unit
    has no interval: the row says so, and every figure printed is a number."""
    done = subprocess.run(
        [str(ACPC_LBR), "evaluate", "--game", "kuhn", "--opponent", "random", "--hands", "1", "--quiet",
         "--one-process", "--out", str(tmp_path / "logs")],
        capture_output=True, text=True, timeout=HANG, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert not re.search(r"\bnan\b", done.stdout.lower())
    duplicate = next(line for line in done.stdout.splitlines() if line.strip().startswith("duplicate "))
    assert "no interval: fewer than 2 units" in duplicate and "(1 pairs)" in duplicate

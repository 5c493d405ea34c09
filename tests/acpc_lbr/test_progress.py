"""Progress on stderr: plain lines with an ETA, and a live bar on a terminal (a pseudo-terminal here)."""

from __future__ import annotations

import io
import os
import pty
import re
import select
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from acpc_lbr.runtime.progress import Estimate, Progress, best_estimate, format_eta

REPO = Path(__file__).resolve().parents[2]
#: Every command here ends well within this; a hang fails the test instead of blocking the suite.
LIMIT_SECONDS = 120


def test_plain_lines_carry_rate_eta_estimate_and_errors() -> None:
    """Without a TTY: a line every N hands with hands/s, ETA, estimate ± half-width; errors only when non-zero."""
    out = io.StringIO()
    ticks = iter([0.0, 2.0, 4.0, 8.0])
    bar = Progress(out, total=40, every=10, clock=lambda: next(ticks))
    bar.update(10, Estimate("duplicate", 750.0, 12.4))
    bar.update(20, Estimate("io", -3.6, 80.2), query_errors=2)
    bar.update(40, None)
    assert out.getvalue().splitlines() == [
        "10/40 hands  LBR duplicate +750 ± 12 mbb/g  5.0 hands/s  ETA 0:00:06",
        "20/40 hands  LBR io -4 ± 80 mbb/g  5.0 hands/s  ETA 0:00:04  query errors 2",
        "40/40 hands  LBR …  5.0 hands/s  ETA 0:00:00",
    ]


def test_nothing_without_a_stream() -> None:
    """stream None (--quiet) draws nothing and never asks for a terminal."""
    bar = Progress(None, total=5, every=1)
    bar.update(5, Estimate("raw", 1.0, 1.0), 3)
    assert not bar.tty and bar.done == 5


def test_best_estimate_is_the_narrowest_interval() -> None:
    """The shown estimate is the estimator with the narrowest interval, in mbb/g; one unit is not enough."""
    figures = {"raw": (1.0, 0.5, 100), "duplicate": (0.9, 0.2, 50), "io": (5.0, 0.0, 1)}
    assert best_estimate(figures, 100) == Estimate("duplicate", 9.0, 2.0)
    assert best_estimate({"raw": (1.0, float("nan"), 1)}, 1) is None
    assert format_eta(3725.4) == "1:02:05" and format_eta(float("inf")) == "-:--:--"


class _Reader(threading.Thread):
    """Drains a pty master (so writers never block on a full buffer) until it closes."""

    def __init__(self, fd: int) -> None:
        super().__init__(daemon=True)
        self.fd, self.data = fd, bytearray()

    def run(self) -> None:
        while True:
            ready, _, _ = select.select([self.fd], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:  # the slave side closed
                    return
                if not chunk:
                    return
                self.data += chunk

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


def test_live_bar_on_a_terminal_shows_every_field() -> None:
    """On a TTY: a rich bar with done/total, hands/s, ETA, estimate ± half-width and the query errors."""
    master, slave = pty.openpty()
    termios.tcsetwinsize(slave, (24, 160))
    reader = _Reader(master)
    reader.start()
    stream = os.fdopen(slave, "w", encoding="utf-8")
    try:
        bar = Progress(stream, total=30, every=1)
        assert bar.tty
        for done in range(1, 31):
            bar.update(done, Estimate("duplicate_io", 2150.0 + done, 300.0), query_errors=done // 10)
        bar.close()
        stream.flush()
    finally:
        stream.close()
    reader.join(LIMIT_SECONDS)
    os.close(master)
    screen = reader.text()
    assert "\x1b[" in screen  # drawn with terminal control sequences, not plain lines
    assert "30/30" in screen and "hands/s" in screen and "ETA" in screen
    assert "LBR duplicate_io +2180 ± 300 mbb/g" in screen
    assert "query errors 3" in screen
    assert not re.search(r"^\d+/30 hands  LBR", screen, re.MULTILINE)  # no plain progress lines


def _on_a_terminal(argv: list[str], cwd: Path) -> tuple[str, str, int]:
    """Run ``argv`` with stderr on a pseudo-terminal; (stderr as drawn, stdout, exit status)."""
    master, slave = pty.openpty()
    termios.tcsetwinsize(slave, (24, 160))
    reader = _Reader(master)
    reader.start()
    env = dict(os.environ, PYTHONPATH=str(REPO), TERM="xterm-256color", COLUMNS="160")
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave,
                              cwd=cwd, env=env, timeout=LIMIT_SECONDS, check=False)
    finally:
        os.close(slave)
    reader.join(LIMIT_SECONDS)
    os.close(master)
    return reader.text(), done.stdout.decode(), done.returncode


def test_evaluate_draws_the_bar_on_a_terminal_and_quiet_silences_it(tmp_path: Path) -> None:
    """`acpc-lbr evaluate` with stderr on a pty: the live bar; with --quiet, nothing on stderr."""
    base = [sys.executable, "-m", "acpc_lbr.cli", "evaluate", "--game", "leduc", "--rounds", "1-2",
            "--opponent", "random", "--hands", "40"]
    screen, stdout, status = _on_a_terminal([*base, "--out", str(tmp_path / "a")], tmp_path)
    assert status == 0, screen
    assert "80/80" in screen and "hands/s" in screen and "ETA" in screen and "mbb/g" in screen
    assert "\x1b[" in screen and re.search(r"mbb/g", screen) and re.search(r"\[[+-]?\d+, [+-]?\d+\] mbb/g", screen)
    assert "lower bound on exploitability" in stdout and "\x1b[" not in stdout
    screen, stdout, status = _on_a_terminal([*base, "--out", str(tmp_path / "b"), "--quiet"], tmp_path)
    assert status == 0
    assert screen == "" and "lower bound on exploitability" in stdout


def _dealer_script(tmp_path: Path, flags: str) -> list[str]:
    """A shell match as in the README: a dealer and two bots; the port line goes to a file."""
    python = sys.executable
    script = tmp_path / "match.sh"
    script.write_text(
        f"""set -e
rm -f ports.txt
{python} -m acpc_lbr.cli dealer m leduc 150 3 alice bob {flags} --start_timeout 60000 > ports.txt &
until [ -s ports.txt ]; do sleep 0.1; done
read P1 P2 < ports.txt
{python} -m acpc_lbr.cli play random 127.0.0.1 "$P1" --game leduc --log-level ERROR 2>/dev/null &
{python} -m acpc_lbr.cli play call-raise 127.0.0.1 "$P2" --game leduc --log-level ERROR 2>/dev/null
wait
""")
    return ["bash", str(script)]


def test_the_progress_estimate_shows_the_documents_interval() -> None:
    """The estimate a progress line shows carries the printed 95% interval of the chosen estimator: from the
    running figures (LiveMean, within seats over hands) it is the results document's for the same hands."""
    from acpc_lbr.estimators import HandOutcome, MatchEstimates
    from acpc_lbr.results import estimates_from_outcomes, results_document

    rng = np.random.default_rng(4)
    outcomes = [HandOutcome(d, 0, float(rng.choice([-50.0, 0.0, 400.0], p=[0.5, 0.4, 0.1]) + 80 * (d % 2)))
                for d in range(300)]
    live = MatchEstimates.live_only(pairs=False)
    for outcome in outcomes:
        live.add(outcome)
    figures = {"raw": (*live.raw.live(), live.raw.n)}
    shown = best_estimate(figures, 100, lambda name: live.estimator(name).interval())
    document = results_document({"game": "nolimit"}, estimates_from_outcomes(outcomes), 100)
    raw = document["estimators"]["raw"]["mbb_per_game"]
    assert shown is not None and raw["low_95"] is not None and raw["high_95"] is not None
    assert (shown.low, shown.high) == pytest.approx((raw["low_95"], raw["high_95"]), rel=1e-9)
    assert shown.half_width == pytest.approx(raw["half_width_95"], rel=1e-9)
    assert shown.text() == f"raw {raw['mean']:+.0f} [{raw['low_95']:+.0f}, {raw['high_95']:+.0f}] mbb/g"


def test_dealer_bar_on_a_terminal_with_q_is_erased_and_quiet_silences_it(tmp_path: Path) -> None:
    """The dealer with -q on a terminal: a live bar while it runs, erased at the end; stdout untouched."""
    started = time.monotonic()
    screen, _, status = _on_a_terminal(_dealer_script(tmp_path, "-q"), tmp_path)
    assert status == 0, screen
    assert "150/150" in screen and "hands/s" in screen
    # the measured player's estimate, with its printed 95% interval
    assert re.search(r"alice \w+ [+-]\d+ \[[+-]?\d+, [+-]?\d+\] mbb/g", screen)
    assert "\x1b[2K" in screen  # the bar's line is erased when the match ends
    stdout = (tmp_path / "ports.txt").read_text()  # the port line, then SCORE: nothing of the bar
    assert re.fullmatch(r"\d+ \d+\nSCORE:[^\x1b]*\n", stdout), stdout
    screen, _, status = _on_a_terminal(_dealer_script(tmp_path, "--quiet"), tmp_path)
    assert status == 0
    assert not re.search(r"\d hands/s", screen) and "TO " not in screen
    assert (tmp_path / "ports.txt").read_text().count("SCORE:") == 1
    assert time.monotonic() - started < 2 * LIMIT_SECONDS


def test_a_long_first_eta_is_told_once_with_the_option_that_shortens_it() -> None:
    """A run whose first ETA (5 s in) is over 10 minutes says so once, naming the option that
    shortens it (the README's probe command ran 4 hours with no word); a short run says nothing."""
    out = io.StringIO()
    times = iter([0.0, 1.0, 6.0, 7.0, 8.0])
    bar = Progress(out, total=10_000, every=1_000_000, clock=times.__next__, shorter="--hands N shortens it")
    bar.update(1, None)  # 1 s in: too early for an ETA
    bar.update(6, None)  # 6 hands in 6 s: 9,994 s left
    bar.update(7, None)
    bar.update(8, None)
    lines = out.getvalue().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("this run will take about 2:46:34 more") and "--hands N shortens it" in lines[0]
    quick = io.StringIO()
    fast = Progress(quick, total=100, every=1_000_000, clock=iter([0.0, 6.0]).__next__, shorter="--hands N")
    fast.update(50, None)  # 50 hands in 6 s: 6 s left
    assert quick.getvalue() == ""

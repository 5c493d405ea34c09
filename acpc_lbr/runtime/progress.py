"""Progress of a long run on stderr: a live bar on a terminal, plain lines elsewhere.

``acpc-lbr evaluate`` and ``acpc-lbr dealer`` report, as hands finish, the
hands done out of the total, the rate in hands/s, the estimated time left,
the current estimate with its printed 95% interval (a results document's, from the
running figures) and, when there are any, the failed range queries.

* On a terminal (the stream is a TTY) this is a live bar drawn by ``rich``
  (redrawn four times a second, so the elapsed time and ETA move even when a
  slow bot takes seconds per hand; ``rich`` redraws from its own thread,
  under its lock). ``rich`` rather than ``tqdm``: its progress display is
  made of columns, so the estimate and the error count are their own fields
  (the error count in red) rather than a postfix string, and it finishes
  cleanly on the same stream.
* Elsewhere (a log file, a pipe, CI) a plain line every ``every`` hands and
  at the end, with the ETA from the mean rate so far.

The caller gives the figures; this module only shows them.

>>> import io
>>> out = io.StringIO()
>>> bar = Progress(out, total=4, every=2, clock=iter([0.0, 1.0, 2.0]).__next__)
>>> bar.update(1, None)
>>> bar.update(2, Estimate("duplicate", 750.0, 12.5, 739.0, 763.0), query_errors=3)
>>> out.getvalue()
'2/4 hands  LBR duplicate +750 [+739, +763] mbb/g  1.0 hands/s  ETA 0:00:02  query errors 3\\n'
"""

from __future__ import annotations

import io
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO, cast


@dataclass(frozen=True)
class Estimate:
    """The figure a progress display shows: an estimator's mean and printed 95% interval in mbb/g.

    ``half_width`` (1.96 × the mean's standard error) chooses the estimator shown; ``low``, ``high`` are the
    interval a results document prints for the same units (:meth:`acpc_lbr.stats.RunningMean.interval`).
    Without them (None, or NaN) the text is mean ± ``half_width``.
    """

    name: str
    mean: float
    half_width: float
    low: float | None = None
    high: float | None = None

    def text(self) -> str:
        """``duplicate +750 [+738, +762] mbb/g`` (``…`` until the interval exists)."""
        if math.isnan(self.mean) or math.isnan(self.half_width):
            return f"{self.name} …"
        if self.low is None or self.high is None or math.isnan(self.low) or math.isnan(self.high):
            return f"{self.name} {self.mean:+.0f} ± {self.half_width:.0f} mbb/g"
        return f"{self.name} {self.mean:+.0f} [{self.low:+.0f}, {self.high:+.0f}] mbb/g"


def format_eta(seconds: float) -> str:
    """``H:MM:SS``, or ``-:--:--`` when unknown."""
    if not math.isfinite(seconds) or seconds < 0:
        return "-:--:--"
    whole = round(seconds)
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


def best_estimate(figures: dict[str, tuple[float, float, int]], big_blind: int,
                  interval: Callable[[str], tuple[float, float]] | None = None) -> Estimate | None:
    """The estimator with the narrowest interval among those with two units or more.

    Args:
        figures: name -> (mean, 1.96 × standard error, units) in chips.
        big_blind: chips per big blind (for mbb/g).
        interval: name -> its printed 95% interval in chips, asked of the chosen estimator only
            (it costs tens of microseconds).
    """
    scale = 1000.0 / big_blind
    usable = [(half, name, mean) for name, (mean, half, n) in figures.items() if n > 1 and not math.isnan(half)]
    if not usable:
        return None
    half, name, mean = min(usable)
    if interval is None:
        return Estimate(name, mean * scale, half * scale)
    low, high = interval(name)
    return Estimate(name, mean * scale, half * scale, low * scale, high * scale)


#: A run whose first ETA is longer than this says so once (:class:`Progress`, ``shorter``).
LONG_RUN_SECONDS = 600.0
#: Seconds after the start when the first ETA is taken (the rate of the first hands is noise).
FIRST_ETA_AFTER = 5.0


class Progress:
    """Shows a run's progress on ``stream`` (None: nowhere).

    Args:
        stream: where to draw (stderr); a TTY gets the live bar.
        total: hands expected.
        every: without a TTY, a line every this many hands (and at the end).
        label: what is measured (``LBR``, or the measured player's name).
        clock: seconds, monotonic (tests).
        bar: draw the live bar on a TTY (False: plain lines even there).
        transient: erase the bar when it stops (the dealer: its output stays the reference's).
        shorter: the option that shortens the run (``--hands N``): when the first ETA
            (:data:`FIRST_ETA_AFTER`) is over :data:`LONG_RUN_SECONDS`, one line says how long
            the run will take and names it (None: no such line).
    """

    def __init__(self, stream: TextIO | None, total: int, every: int, label: str = "LBR",
                 clock: Callable[[], float] = time.monotonic, bar: bool = True,
                 transient: bool = False, shorter: str | None = None) -> None:
        self.stream = stream
        self.shorter = shorter
        self._eta_told = shorter is None
        self.total = max(total, 1)
        self.every = max(1, every)
        self.label = label
        self.clock = clock
        self.started = clock()
        self.done = 0
        self._bar: Any = None
        self._task: Any = None
        self._console: Any = None
        if bar and stream is not None and stream.isatty():
            self._start_bar(stream, transient)

    def _start_bar(self, stream: TextIO, transient: bool) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
        from rich.progress import Progress as RichProgress

        try:  # the size of this stream's terminal (rich asks fds 0-2 only)
            width: int | None = os.get_terminal_size(stream.fileno()).columns
        except (OSError, ValueError, AttributeError):
            width = None
        console = self._console = Console(file=stream, force_terminal=True, width=width)
        # The text needs about 95 columns; the bar takes what is left, up to 24.
        room = min(24, console.width - 96)
        self._bar = RichProgress(
            *([BarColumn(bar_width=room)] if room >= 6 else []),
            MofNCompleteColumn(),
            TextColumn("hands  {task.fields[rate]} hands/s  ETA"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[estimate]}"),
            TextColumn("[red]{task.fields[errors]}"),
            console=console,
            refresh_per_second=4,
            transient=transient,
            redirect_stdout=False,  # stdout is the dealer's port line and results, never the bar's
            redirect_stderr=False,  # other writers to stderr go through proxy()
        )
        self._task = self._bar.add_task("hands", total=self.total, rate="0", estimate="", errors="")
        self._bar.start()

    def proxy(self, stream: TextIO) -> TextIO:
        """A stream for other writers to the same terminal: their lines go above the bar."""
        if self._console is None:
            return stream
        return cast(TextIO, _AboveBar(self, stream))

    @property
    def tty(self) -> bool:
        """Whether the live bar is drawn."""
        return self._bar is not None

    def update(self, done: int, estimate: Estimate | None, query_errors: int = 0) -> None:
        """``done`` hands finished; the current estimate and failed-query count."""
        self.done = done
        if self.stream is None:
            return
        elapsed = self.clock() - self.started
        rate = done / elapsed if elapsed > 0 else math.nan
        if estimate is None:
            shown = f"{self.label} …" if self.label else ""
        else:
            shown = f"{self.label} {estimate.text()}".strip()
        errors = f"query errors {query_errors}" if query_errors else ""
        if not self._eta_told and elapsed >= FIRST_ETA_AFTER and done < self.total:
            self._tell_long_run(done, rate)
        if self._bar is not None:
            self._bar.update(self._task, completed=done, rate=_rate(rate), estimate=shown, errors=errors)
            if done >= self.total:
                self.close()
        elif done % self.every == 0 or done == self.total:
            eta = format_eta((self.total - done) / rate if rate > 0 else math.nan)
            parts = [f"{done}/{self.total} hands", shown, f"{_rate(rate)} hands/s", f"ETA {eta}", errors]
            self.stream.write("  ".join(p for p in parts if p) + "\n")
            self.stream.flush()

    def _tell_long_run(self, done: int, rate: float) -> None:
        """Once, from the first ETA: a run of more than :data:`LONG_RUN_SECONDS` says so, with
        the option that shortens it."""
        self._eta_told = True
        left = (self.total - done) / rate if rate > 0 else math.nan
        if self.stream is None or not left > LONG_RUN_SECONDS:
            return
        line = (f"this run will take about {format_eta(left)} more (the first estimate, at {done}/{self.total} "
                f"hands); {self.shorter}\n")
        out = self.proxy(self.stream)
        out.write(line)
        out.flush()

    def close(self) -> None:
        """Stop the live bar (leaving its last state on screen); idempotent."""
        if self._bar is not None:
            self._bar.refresh()
            self._bar.stop()
            self._bar = None


class _AboveBar(io.TextIOBase):
    """A stream whose lines print above the live bar while it runs, and straight through after."""

    def __init__(self, progress: Progress, stream: TextIO) -> None:
        from rich.file_proxy import FileProxy

        self._progress = progress
        self._stream = stream
        self._above = FileProxy(progress._console, stream)

    def write(self, text: str) -> int:
        if self._progress.tty:
            return self._above.write(text)
        self._above.flush()
        return self._stream.write(text)

    def flush(self) -> None:
        if self._progress.tty:
            self._above.flush()
        self._stream.flush()

    def isatty(self) -> bool:
        return self._stream.isatty()

    def fileno(self) -> int:
        return self._stream.fileno()


def _rate(rate: float) -> str:
    if math.isnan(rate):
        return "-"
    return f"{rate:.1f}" if rate < 10 else f"{rate:.0f}"

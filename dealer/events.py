"""What a match tells the world: the JSON-lines event log, the console, the trace.

Three outputs, each with one job:

* :class:`EventLog` -- structured events of one match (connections, hands,
  corrections, errors). Every event goes to ``MATCH.events.jsonl`` as one JSON
  object per line (structlog, ``JSONRenderer``), and lifecycle events at INFO
  and above also go to a readable console on stderr (``ConsoleRenderer``).
  Tracebacks are rendered as dicts **without local variables**
  (``ExceptionDictTransformer(show_locals=False)``), so hole cards held in a
  frame never reach a log. Subscribers (``EventLog.subscribe``) see every
  event as a plain dict: the seam for a metrics exporter.
* :class:`Trace` -- the reference dealer's stderr trace (acpc.md §12): the
  header, ``STARTED at``, one ``TO``/``FROM`` line per message, ``WARNING:``
  and ``ERROR:`` lines, ``FINISHED at`` and the ``SCORE``. It is buffered and
  written once per hand, because a write per message costs throughput; ``-q``
  drops only the ``TO``/``FROM`` lines, as in the reference.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, TextIO

import structlog
from structlog.processors import ExceptionRenderer
from structlog.tracebacks import ExceptionDictTransformer

#: A subscriber gets every event dict (``event``, ``level``, ``match`` and fields).
EventHook = Callable[[dict[str, Any]], None]

_LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40, "critical": 50}


def _exception_renderer() -> ExceptionRenderer:
    # show_locals=False: the frames of the hand loop hold deals (hole cards).
    return ExceptionRenderer(ExceptionDictTransformer(show_locals=False))


def json_processors() -> list[Any]:
    """The structlog processor chain of the JSON-lines event log."""
    return [
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        _exception_renderer(),
        structlog.processors.JSONRenderer(sort_keys=False),
    ]


def console_processors() -> list[Any]:
    """The structlog processor chain of the readable console on stderr."""
    return [
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="%H:%M:%S", utc=True),
        _exception_renderer(),
        structlog.dev.ConsoleRenderer(colors=False, exception_formatter=structlog.dev.plain_traceback),
    ]


class EventLog:
    """The structured event stream of one match.

    Args:
        match: the match name, bound to every event.
        path: where to write the JSON lines; None for no file.
        console: stream for the readable console (INFO and above); None for none.
        append: append to ``path`` instead of truncating it (resume).
    """

    def __init__(
        self,
        match: str,
        path: Path | None,
        console: TextIO | None = None,
        append: bool = False,
    ) -> None:
        self.match = match
        self.hooks: list[EventHook] = []
        self._file: IO[str] | None = None
        self._json: Any = None
        self._console: Any = None
        if path is not None:
            self._file = open(path, "a" if append else "w", encoding="utf-8")  # noqa: SIM115 (lives with the match)
            self._json = structlog.wrap_logger(
                structlog.WriteLogger(self._file), processors=json_processors()
            ).bind(match=match)
        if console is not None:
            self._console = structlog.wrap_logger(
                structlog.PrintLogger(console), processors=console_processors()
            ).bind(match=match)

    def subscribe(self, hook: EventHook) -> None:
        """Call ``hook`` with every later event (e.g. a metrics exporter)."""
        self.hooks.append(hook)

    def emit(self, event: str, level: str = "info", console: bool = True, **fields: Any) -> None:
        """Record one event.

        Args:
            event: the event name, e.g. ``"hand_finished"``.
            level: ``debug``, ``info``, ``warning`` or ``error``.
            console: also show it on the console (when at INFO or above).
            **fields: the event's data; ``exc_info=True`` adds a traceback dict.
        """
        for hook in self.hooks:
            hook({"event": event, "level": level, "match": self.match, **fields})
        if self._json is not None:
            getattr(self._json, level)(event, **fields)
        if console and self._console is not None and _LEVELS[level] >= 20:
            getattr(self._console, level)(event, **fields)

    def notify(self, event: str, **fields: Any) -> None:
        """Tell the subscribers only (no file, no console): for per-action events,
        which would cost too much to write. Callers check ``hooks`` first."""
        for hook in self.hooks:
            hook({"event": event, "level": "debug", "match": self.match, **fields})

    def flush(self) -> None:
        """Push buffered events to disk."""
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        """Flush and close the file."""
        if self._file is not None:
            self._file.close()
            self._file = None
            self._json = None


class Trace:
    """The reference-style stderr trace of one match, buffered per hand.

    Args:
        stream: where to write (stderr); None discards everything.
        messages: write the ``TO``/``FROM`` lines and the :meth:`progress`
            lines (False under ``-q``, which leaves the header, warnings,
            errors and the ``SCORE``, as the reference).
        prefix: put before every line (``"[name] "`` when one process runs
            several matches, so their traces can be told apart).
    """

    def __init__(self, stream: TextIO | None, messages: bool = True, prefix: str = "") -> None:
        self.stream = stream
        self.messages = messages and stream is not None
        self.prefix = prefix
        self._buffer: list[str] = []

    def line(self, text: str) -> None:
        """Queue one line (no line ending)."""
        if self.stream is not None:
            self._buffer.append(f"{self.prefix}{text}\n")

    def progress(self, text: str) -> None:
        """Queue a line the reference prints only without ``-q`` (``STARTED``,
        ``FINISHED``, the per-100-hands timing lines)."""
        if self.messages:
            self._buffer.append(f"{self.prefix}{text}\n")

    def to(self, seat: int, message: str) -> None:
        """A message sent to ``seat`` (0-based; printed 1-based, with its ``\\r``)."""
        self._buffer.append(f"{self.prefix}TO {seat + 1} at {time.time():.6f} {message}\r\n")

    def from_(self, seat: int, raw: str) -> None:
        """A raw line received from ``seat`` (0-based; printed 1-based)."""
        self._buffer.append(f"{self.prefix}FROM {seat + 1} at {time.time():.6f} {raw}\n")

    def flush(self) -> None:
        """Write what is queued."""
        if self._buffer and self.stream is not None:
            self.stream.write("".join(self._buffer))
            self.stream.flush()
        self._buffer.clear()


def stderr() -> TextIO:
    """The process's stderr (looked up late so tests can capture it)."""
    return sys.stderr

"""What a match tells the world: the JSON-lines event log, the console, the trace.

Three outputs, each with one job:

* :class:`EventLog` -- structured events of one match (connections, hands,
  corrections, errors). Every event goes to ``MATCH.events.jsonl`` as one JSON
  object per line, the bytes structlog's ``JSONRenderer`` chain
  (:func:`json_processors`) writes, rendered here without it
  (:func:`json_line`: less CPU per event, ``bench/bench_events.py``, and no
  structlog import);
  lifecycle events at INFO and above also go to a readable console on stderr
  (structlog's ``ConsoleRenderer``). The per-hand ``hand_finished`` lines are
  written in batches (:data:`BATCH_BYTES`, :data:`BATCH_SECONDS`), every other
  event at once.
  Tracebacks are rendered as dicts **without local variables**
  (``ExceptionDictTransformer(show_locals=False)``), so hole cards held in a
  frame never reach a log. Each event is a frozen record (:class:`EventRecord`,
  one subclass per kind, its fields the JSON line's); subscribers
  (``EventLog.subscribe``) get the records themselves: the typed seam between
  the dealer, the results and the metrics.
* :class:`Trace` -- the reference dealer's stderr trace (acpc.md §12): the
  header, ``STARTED at``, one ``TO``/``FROM`` line per message, ``WARNING:``
  and ``ERROR:`` lines, ``FINISHED at`` and the ``SCORE``. It is buffered and
  written once per hand, because a write per message costs throughput; ``-q``
  drops only the ``TO``/``FROM`` lines, as in the reference.

Files are written through :class:`RecordFile`: whole lines only. A write that
fails (a full disk, an I/O error) truncates the file back to its last complete
line and raises :class:`WriteFailed` naming the file, so a file is never left
with half a record; the match concerned ends and says ``cannot write <file>``.
A file cut by a kill mid-write is repaired on resume
(:func:`drop_partial_line`).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import fields as dataclass_fields
from enum import Enum, StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, ClassVar, Final, TextIO

from dealer.eventlines import (  # the per-hand line and the batches: compiled (dealer/eventlines.py)
    _ENCODE,
    _VALUES_TEXT,
    _VALUES_TEXTS,
    BATCH_BYTES,
    BATCH_SECONDS,
    PendingLines,
    _json_fallback,
    _json_string,
    _json_values,
    hand_finished_line,
    utc_stamp,
)

if TYPE_CHECKING:
    from structlog.processors import ExceptionRenderer
    from structlog.typing import Processor
# structlog itself is imported where a logger is built: a dealer with no
# events file and no console (-q --no_events) never loads it (~0.1 s).


class Event(StrEnum):
    """The names of a match's events: the vocabulary shared by the dealer, results and metrics.

    A ``StrEnum``, so a misspelt name fails at once (and under mypy) while the
    JSON lines keep the plain names (docs/dealer.md lists them).
    """

    LISTENING = "listening"
    CONNECTION_OPENED = "connection_opened"
    CONNECTION_CLOSED = "connection_closed"
    CONNECTION_REFUSED = "connection_refused"
    VERSION_MISMATCH = "version_mismatch"
    SEAT_CONNECTED = "seat_connected"
    SEAT_READY = "seat_ready"
    SEAT_QUERYABLE = "seat_queryable"
    SEAT_ANNOUNCE_REFUSED = "seat_announce_refused"
    RESUMED = "resumed"
    MATCH_STARTED = "match_started"
    #: Per action, to subscribers only (:meth:`EventLog.notify`).
    ACTION = "action"
    ACTION_CORRECTED = "action_corrected"
    REPLY_IGNORED = "reply_ignored"
    PARTIAL_LINE_DROPPED = "partial_line_dropped"
    HAND_FINISHED = "hand_finished"
    #: Per answered range query, to subscribers only.
    QUERY = "query"
    QUERY_ERROR = "query_error"
    QUERY_REFUSED = "query_refused"
    QUERY_ANSWER_DROPPED = "query_answer_dropped"
    QUERY_ANSWERS_DROPPED = "query_answers_dropped"
    #: Per seat, hand and kind: unusable lines past the ones logged one by one (dealer/budget.py).
    LINES_NOT_LOGGED = "lines_not_logged"
    #: Per hand whose range answers contradict the cards shown, to subscribers only.
    RANGE_INCONSISTENCY = "range_inconsistency"
    INTERNAL_ERROR = "internal_error"
    MATCH_ABORTED = "match_aborted"
    MATCH_FINISHED = "match_finished"
    MATCH_ENDED_EARLY = "match_ended_early"


class Cause(StrEnum):
    """Why a match ended early (``MatchAborted.cause``, ``MatchResult.cause``)."""

    DISCONNECT = "disconnect"
    TIMEOUT = "timeout"
    OUT_OF_TIME = "out_of_time"
    #: --idle_timeout: the bot sent nothing at all while it was due.
    IDLE = "idle"
    GARBAGE = "garbage"
    LINE_TOO_LONG = "line_too_long"
    OVER_BUDGET = "over_budget"
    NOT_READING = "not_reading"
    NO_CONNECTION = "no_connection"
    WRITE_FAILED = "write_failed"
    STARTUP = "startup"
    INTERRUPTED = "interrupted"
    INTERNAL = "internal"
    #: Not a failure: the match is over (what later calls are told).
    FINISHED = "finished"

    @property
    def is_timeout(self) -> bool:
        """A bot ran out of its time (per action, per hand or per match)."""
        return self in (Cause.TIMEOUT, Cause.OUT_OF_TIME)


class QueryCause(StrEnum):
    """Why a range query got no usable answer (``QueryFailed.cause``)."""

    NOT_QUERYABLE = "not_queryable"
    RANGE_ERROR = "range_error"
    MALFORMED = "malformed"
    TIMEOUT = "timeout"
    CLOSED = "closed"
    #: An agent's query broke a rule and was not forwarded.
    REFUSED = "refused"


# -- typed events: one frozen record per event kind ---------------------------------------


class Unset(Enum):
    """A field an event leaves out of its JSON line (distinct from None, written as null)."""

    UNSET = "unset"


#: The value of a field left out of an event's JSON line.
UNSET: Final = Unset.UNSET


@dataclass(frozen=True, slots=True)
class EventRecord:
    """One event of a match: a frozen record whose fields are the event's JSON fields.

    Each kind is a subclass naming its :class:`Event`, its log level and
    whether it reaches the console; its fields, in declaration order, are the
    fields of its JSON line (a field set to :data:`UNSET` is left out). A
    misspelt field fails under mypy and at construction, not silently.
    Subscribers get the record itself (``isinstance`` tells the kind).
    """

    EVENT: ClassVar[Event]
    #: ``debug``, ``info``, ``warning`` or ``error``.
    LEVEL: ClassVar[str] = "info"
    #: Also shown on the console (at INFO and above).
    CONSOLE: ClassVar[bool] = True

    def fields(self) -> dict[str, object]:
        """The JSON fields, in order (UNSET ones left out)."""
        return {name: value for name in _field_names(type(self))
                if (value := getattr(self, name)) is not UNSET}


_FIELD_NAMES: dict[type[EventRecord], tuple[str, ...]] = {}


def _field_names(kind: type[EventRecord]) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(kind)
    if names is None:
        names = _FIELD_NAMES[kind] = tuple(f.name for f in dataclass_fields(kind))
    return names


# Fields carry 1-based seat numbers, as the JSON lines always have.

@dataclass(frozen=True, slots=True, kw_only=True)
class Listening(EventRecord):
    """The seats' ports are open."""

    EVENT = Event.LISTENING
    CONSOLE = False
    ports: tuple[int, ...]
    bind: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionOpened(EventRecord):
    """A connection to a seat's port (it has not sent VERSION yet)."""

    EVENT = Event.CONNECTION_OPENED
    CONSOLE = False
    seat: int
    peer: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionClosed(EventRecord):
    """A connection closed before sending VERSION."""

    EVENT = Event.CONNECTION_CLOSED
    CONSOLE = False
    seat: int
    peer: str
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionRefused(EventRecord):
    """A connection to a seat was refused."""

    EVENT = Event.CONNECTION_REFUSED
    LEVEL = "warning"
    CONSOLE = False
    seat: int
    peer: str
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class VersionMismatch(EventRecord):
    """A bot announced a protocol version the dealer does not speak."""

    EVENT = Event.VERSION_MISMATCH
    LEVEL = "warning"
    seat: int
    line: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SeatConnected(EventRecord):
    """A connection sent VERSION first and holds the seat."""

    EVENT = Event.SEAT_CONNECTED
    CONSOLE = False
    seat: int
    name: str
    peer: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SeatReady(EventRecord):
    """A seat is ready to play."""

    EVENT = Event.SEAT_READY
    CONSOLE = False
    seat: int
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SeatQueryable(EventRecord):
    """A seat announced it answers range queries."""

    EVENT = Event.SEAT_QUERYABLE
    CONSOLE = False
    seat: int
    line: str
    version: int


@dataclass(frozen=True, slots=True, kw_only=True)
class SeatAnnounceRefused(EventRecord):
    """A seat's range-query announcement named no version the dealer supports."""

    EVENT = Event.SEAT_ANNOUNCE_REFUSED
    LEVEL = "warning"
    CONSOLE = False
    seat: int
    line: str
    supported: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Resumed(EventRecord):
    """A match resumed from its files."""

    EVENT = Event.RESUMED
    actions: int
    hands_finished: int
    mid_hand: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class MatchStarted(EventRecord):
    """Every seat is ready; the first hand is dealt."""

    EVENT = Event.MATCH_STARTED
    hands: int
    seed: int
    names: tuple[str, ...]
    first_hand: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ActionPlayed(EventRecord):
    """One action (to subscribers only: :meth:`EventLog.notify`)."""

    EVENT = Event.ACTION
    LEVEL = "debug"
    CONSOLE = False
    seat: int
    hand: int
    action: str
    seconds: float
    corrected: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class ActionCorrected(EventRecord):
    """The dealer replaced an invalid action."""

    EVENT = Event.ACTION_CORRECTED
    LEVEL = "warning"
    CONSOLE = False
    seat: int
    hand: int
    correction: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplyIgnored(EventRecord):
    """A line from a bot was ignored (unparsable or stale)."""

    EVENT = Event.REPLY_IGNORED
    LEVEL = "warning"
    CONSOLE = False
    seat: int
    hand: int
    problem: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PartialLineDropped(EventRecord):
    """On resume, a file's cut last line was dropped."""

    EVENT = Event.PARTIAL_LINE_DROPPED
    LEVEL = "warning"
    file: str


@dataclass(frozen=True, slots=True, kw_only=True)
class HandFinished(EventRecord):
    """A hand ended: its betting and each seat's value (seat order)."""

    EVENT = Event.HAND_FINISHED
    LEVEL = "debug"
    CONSOLE = False
    hand: int
    betting: str
    values: tuple[float, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryAnswered(EventRecord):
    """A range query was answered (to subscribers only)."""

    EVENT = Event.QUERY
    LEVEL = "debug"
    CONSOLE = False
    seat: int
    seconds: float
    actions: int


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryErrored(EventRecord):
    """A range query got no usable answer."""

    EVENT = Event.QUERY_ERROR
    LEVEL = "warning"
    CONSOLE = False
    seat: int
    cause: QueryCause
    reason: str
    seconds: float


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryRefused(EventRecord):
    """An agent's query broke a rule and was not forwarded."""

    EVENT = Event.QUERY_REFUSED
    LEVEL = "warning"
    CONSOLE = False
    seat: int
    reason: str
    line: str | Unset = UNSET


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryAnswerDropped(EventRecord):
    """An answer to no outstanding query was dropped."""

    EVENT = Event.QUERY_ANSWER_DROPPED
    LEVEL = "warning"
    CONSOLE = False
    seat: int
    qid: str
    line: str


@dataclass(frozen=True, slots=True, kw_only=True)
class LinesNotLogged(EventRecord):
    """A seat's unusable lines of one kind in one hand, past the ones logged one by one: their count
    (``kind``: ``query_refused``, ``reply_ignored`` or ``answer_dropped``; dealer/budget.py)."""

    EVENT = Event.LINES_NOT_LOGGED
    LEVEL = "warning"
    CONSOLE = False
    seat: int
    hand: int
    kind: str
    count: int


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryAnswersDropped(EventRecord):
    """The count of dropped answers, past the ones logged one by one."""

    EVENT = Event.QUERY_ANSWERS_DROPPED
    LEVEL = "warning"
    CONSOLE = False
    seat: int
    dropped: int
    not_logged: int


@dataclass(frozen=True, slots=True, kw_only=True)
class RangeInconsistency(EventRecord):
    """A hand whose range answers contradict the cards shown (to subscribers only)."""

    EVENT = Event.RANGE_INCONSISTENCY
    LEVEL = "debug"
    CONSOLE = False
    hand: int
    count: int


@dataclass(frozen=True, slots=True, kw_only=True)
class InternalError(EventRecord):
    """A dealer bug; ``exc_info=True`` (inside ``except``) adds the traceback."""

    EVENT = Event.INTERNAL_ERROR
    LEVEL = "error"
    error: str
    seat: int | Unset = UNSET
    exc_info: bool | Unset = UNSET


@dataclass(frozen=True, slots=True, kw_only=True)
class MatchAborted(EventRecord):
    """The match ends early; ``seat`` is the seat at fault (None: none; UNSET: not said)."""

    EVENT = Event.MATCH_ABORTED
    LEVEL = "error"
    cause: Cause
    seat: int | None | Unset = UNSET
    error: str
    hands_finished: int


@dataclass(frozen=True, slots=True, kw_only=True)
class MatchEnded(EventRecord):
    """The last event of a match: :class:`MatchFinished` or :class:`MatchEndedEarly`."""

    score: str
    hands: int
    corrections: tuple[int, ...]
    ignored: tuple[int, ...]
    exit_code: int
    totals: dict[str, str]


@dataclass(frozen=True, slots=True, kw_only=True)
class MatchFinished(MatchEnded):
    """Every hand was played."""

    EVENT = Event.MATCH_FINISHED


@dataclass(frozen=True, slots=True, kw_only=True)
class MatchEndedEarly(MatchEnded):
    """The match ended before its last hand."""

    EVENT = Event.MATCH_ENDED_EARLY
    LEVEL = "error"


#: A subscriber gets every event record (:meth:`EventLog.subscribe`).
EventHook = Callable[[EventRecord], None]


_LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40, "critical": 50}


class WriteFailed(Exception):
    """A log file could not be written (or opened).

    Attributes:
        path: the file.
        error: the underlying OSError.
        message: ``cannot write <path>: <reason>``.
    """

    def __init__(self, path: Path, error: OSError) -> None:
        self.path = path
        self.error = error
        self.message = f"cannot write {path}: {error.strerror or error}"
        super().__init__(self.message)


class RecordFile:
    """A text file written in whole lines: a failed write never leaves half a line.

    Lines are buffered by :meth:`write` and written by :meth:`flush`, in one
    go. If that fails part-way, the file is truncated back to the end of the
    last flush that succeeded and :class:`WriteFailed` is raised; the file is
    then dead (later writes are dropped, :attr:`failed` says why).

    Args:
        path: the file's name (for messages).
        raw: an unbuffered binary file (``open(path, "ab", buffering=0)``).
    """

    def __init__(self, path: Path, raw: BinaryIO) -> None:
        self.path = path
        self._raw = raw
        self._buffer: list[str] = []
        self._good = raw.seek(0, os.SEEK_END)
        self.failed: WriteFailed | None = None

    def write(self, text: str) -> None:
        """Buffer ``text`` (whole lines) for the next :meth:`flush`."""
        if self.failed is None:
            self._buffer.append(text)

    def flush(self) -> None:
        """Write what is buffered, all of it or none of it.

        Raises:
            WriteFailed: the write failed; the file holds what it held before.
        """
        if self.failed is not None or not self._buffer:
            return
        data = "".join(self._buffer).encode("utf-8")
        self._buffer.clear()
        done = 0
        try:
            while done < len(data):
                written = self._raw.write(data[done:])
                if not written:
                    raise OSError(f"wrote nothing ({len(data) - done} bytes left)")
                done += written
        except OSError as error:
            self.failed = WriteFailed(self.path, error)
            try:
                self._raw.truncate(self._good)
            except OSError:
                pass  # nothing more can be done; resume drops a partial line
            raise self.failed from error
        self._good += len(data)

    def close(self) -> None:
        """Flush and close (a flush error is raised after the file is closed)."""
        try:
            self.flush()
        finally:
            try:
                self._raw.close()
            except OSError:
                pass


def open_record_file(path: Path, append: bool) -> RecordFile:
    """Open ``path`` for whole-line writes (truncating it unless ``append``).

    Raises:
        WriteFailed: it cannot be opened for writing.
    """
    try:
        raw = open(path, "ab" if append else "wb", buffering=0)  # noqa: SIM115 (lives with the match)
    except OSError as error:
        raise WriteFailed(path, error) from error
    return RecordFile(path, raw)


#: Opens a file of a match (injectable: tests give files that fail).
Opener = Callable[[Path, bool], RecordFile]


def drop_partial_line(path: Path) -> int:
    """Cut a last line that has no line end (a write cut by a kill); returns the bytes cut.

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "x.tlog"
    >>> _ = p.write_bytes(b"c 0 1.0 2.0\nr300 1 1.")
    >>> drop_partial_line(p), p.read_bytes()
    (8, b'c 0 1.0 2.0\n')
    """
    if not path.exists():
        return 0
    with open(path, "r+b") as file:
        size = file.seek(0, os.SEEK_END)
        end = size
        while end > 0:
            start = max(0, end - 65536)
            file.seek(start)
            chunk = file.read(end - start)
            newline = chunk.rfind(b"\n")
            if newline >= 0:
                end = start + newline + 1
                break
            end = start
        if end < size:
            file.truncate(end)
        return size - end


def _exception_renderer() -> ExceptionRenderer:
    from structlog.processors import ExceptionRenderer
    from structlog.tracebacks import ExceptionDictTransformer

    # show_locals=False: the frames of the hand loop hold deals (hole cards).
    return ExceptionRenderer(ExceptionDictTransformer(show_locals=False))


def json_processors() -> list[Processor]:
    """The structlog processor chain the JSON lines have always been written with: the
    reference of :func:`json_line` (tests/dealer/test_events.py compares them byte for byte)."""
    import structlog

    return [
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        _exception_renderer(),
        structlog.processors.JSONRenderer(sort_keys=False),
    ]


def console_processors() -> list[Processor]:
    """The structlog processor chain of the readable console on stderr."""
    import structlog

    return [
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="%H:%M:%S", utc=True),
        # The renderer formats exc_info itself, as plain text without locals (a
        # structured exception from ExceptionRenderer is a list it cannot print).
        structlog.dev.ConsoleRenderer(colors=False, exception_formatter=structlog.dev.plain_traceback),
    ]


def _utc_stamp() -> str:
    """Now, as structlog's ``TimeStamper(fmt="iso", utc=True)`` writes it."""
    return utc_stamp(time.time_ns())


def json_line(match: str, event: EventRecord, stamp: str) -> str:
    """The JSON line of ``event`` (with its end), as structlog's chain of
    :func:`json_processors` renders it: ``match``, the event's fields in order,
    ``event``, ``level``, ``timestamp`` (and, for ``exc_info=True``, the
    ``exception`` that replaces it, last)."""
    data: dict[str, object] = {"match": match}
    data.update(event.fields())
    data["event"] = event.EVENT.value
    data["level"] = event.LEVEL
    data["timestamp"] = stamp
    if "exc_info" in data:  # a dealer bug: structlog renders the traceback (without locals)
        data = dict(_exception_renderer()(None, event.LEVEL, data))
    if _ENCODE is None:  # an interpreter without json's C accelerator
        return json.dumps(data, default=_json_fallback) + "\n"
    return "".join(_ENCODE(data, 0)) + "\n"


class EventLog:
    """The structured event stream of one match.

    Args:
        match: the match name, bound to every event.
        path: where to write the JSON lines; None for no file.
        console: stream for the readable console (INFO and above); None for none.
        append: append to ``path`` instead of truncating it (resume).
        opener: opens the file (see :func:`open_record_file`).

    The file never raises into the caller: if it cannot be opened,
    :attr:`failed` says why (the match then does not start); if a write
    fails, the file is dropped, :attr:`failed` is set and
    :attr:`on_write_failed` is called (the match then ends).
    """

    def __init__(
        self,
        match: str,
        path: Path | None,
        console: TextIO | None = None,
        append: bool = False,
        opener: Opener = open_record_file,
    ) -> None:
        self.match = match
        self._match_json = _json_string(match)
        self.hooks: list[EventHook] = []
        self._file: RecordFile | None = None
        self._console: Any = None
        #: The debug lines not flushed yet (counted, and the hand loop's hand lines kept):
        #: the compiled hand loop adds each hand's line there while only the file listens.
        self.pending = PendingLines(self._match_json)
        self.failed: WriteFailed | None = None
        #: Called once with the WriteFailed of the first failed write.
        self.on_write_failed: Callable[[WriteFailed], None] | None = None
        if path is not None:
            try:
                self._file = opener(path, append)
            except WriteFailed as error:
                self.failed = error
        self.pending.open = self._file is not None
        if console is not None:
            import structlog

            self._console = structlog.wrap_logger(
                structlog.PrintLogger(console), processors=console_processors()
            ).bind(match=match)

    def subscribe(self, hook: EventHook) -> None:
        """Call ``hook`` with every later event (e.g. a metrics exporter)."""
        self.hooks.append(hook)

    def wants(self, kind: type[EventRecord]) -> bool:
        """Whether an event of ``kind`` would go anywhere (the file, a subscriber, or the console
        if the kind goes there). A caller on the hot path asks before building a record."""
        return (self._file is not None or bool(self.hooks)
                or (kind.CONSOLE and self._console is not None and _LEVELS[kind.LEVEL] >= 20))

    def emit(self, event: EventRecord) -> None:
        """Record one event: to the subscribers, the JSON lines and (per its kind) the console.

        Its fields are the JSON line's, in order; ``exc_info=True`` (an
        :class:`InternalError` inside ``except``) adds a traceback dict.
        """
        for hook in self.hooks:
            hook(event)
        console = self._console if event.CONSOLE and _LEVELS[event.LEVEL] >= 20 else None
        file = self._file
        if file is not None:
            line = json_line(self.match, event, _utc_stamp())
            if self.pending.lines:  # the hand loop's lines come first
                file.write(self.pending.take())
            file.write(line)
            if not self._batched(event, len(line)):
                self.flush()
        if console is not None:
            getattr(console, event.LEVEL)(event.EVENT.value, **event.fields())

    def hand_finished(self, hand: int, betting: str, values: tuple[float, ...]) -> None:
        """Record a finished hand: :meth:`emit` of a :class:`HandFinished`, the same line.

        Called once per hand: when only the file listens (the defaults), the line
        is built directly (:func:`hand_finished_line`), with no record."""
        if self.hooks:
            self.emit(HandFinished(hand=hand, betting=betting, values=values))
            return
        file = self._file
        if file is None:
            return
        line = hand_finished_line(self._match_json, hand, betting, values, _utc_stamp())
        if self.pending.lines:
            file.write(self.pending.take())
        file.write(line)
        if not self._batched_debug(len(line)):
            self.flush()

    def _batched(self, event: EventRecord, size: int) -> bool:
        """Whether the line just written may wait for the next flush (see :data:`BATCH_BYTES`)."""
        return event.LEVEL == "debug" and self._batched_debug(size)

    def _batched_debug(self, size: int) -> bool:
        """:meth:`_batched` for a debug line of ``size`` characters."""
        return self.pending.batched(size)

    def notify(self, event: EventRecord) -> None:
        """Tell the subscribers only (no file, no console): for per-action events,
        which would cost too much to write. Callers check ``hooks`` first."""
        for hook in self.hooks:
            hook(event)

    def flush(self) -> None:
        """Push buffered events to disk (the hand loop's kept lines first)."""
        pending = self.pending
        pending.pending = 0
        if self._file is not None:
            if pending.lines:
                self._file.write(pending.take())
            try:
                self._file.flush()
            except WriteFailed as error:
                self._drop_file(error)

    def close(self) -> None:
        """Flush and close the file."""
        pending = self.pending
        if pending.lines and self._file is not None:
            self._file.write(pending.take())
        pending.lines.clear()
        pending.open, pending.pending = False, 0
        file, self._file = self._file, None
        if file is not None:
            try:
                file.close()
            except WriteFailed as error:
                self.failed = self.failed or error

    def _drop_file(self, error: WriteFailed) -> None:
        file, self._file = self._file, None
        pending = self.pending
        pending.open, pending.pending = False, 0
        pending.lines.clear()
        if file is not None:
            try:
                file.close()
            except WriteFailed:
                pass
        if self.failed is None:
            self.failed = error
            if self.on_write_failed is not None:
                self.on_write_failed(error)


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

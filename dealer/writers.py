"""The writers of a match: the ACPC ``.log``, the transaction log ``.tlog`` and the events file.

:class:`MatchWriters` owns the ``.log`` (its header, a ``STATE`` line per
finished hand, ``# ERROR`` and ``SCORE`` at the end) and the ``.tlog`` (one
line per action, which ``-a`` replays to resume: :meth:`MatchWriters.read_resume`).
:func:`open_event_log` opens ``MATCH.events.jsonl`` (dealer/events.py renders
the records). The query log, ``MATCH.queries``, is the results pipeline's
(:mod:`dealer.results`: a hand hook of the match). Every file goes through the
injected ``opener`` (tests give files that fail) and is written in whole lines
(:class:`dealer.events.RecordFile`); a failed write raises
:class:`dealer.events.WriteFailed`, and the match ends (``write_failed``).

The ``.tlog`` is written once per action, so this module is compiled with the
hand loop (protocol._variant.GROUP).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TextIO, TypeAlias

from acpc_lbr.runtime.exit_codes import EXIT_FAILED
from dealer import events as ev
from dealer.config import MatchAborted, MatchConfig
from dealer.events import (
    Cause,
    EventLog,
    Opener,
    RecordFile,
    Trace,
    WriteFailed,
    drop_partial_line,
)
from protocol.deal import Deal
from protocol.errors import ParseError
from protocol.gamedef import GameDef
from protocol.rules import Action, State
from protocol.wire import log_header, log_state_text, parse_action

#: One ``.tlog`` line read back: (action, hand, sent, received).
TlogRecord: TypeAlias = tuple[Action, int, float, float]


def open_event_log(config: MatchConfig, console: TextIO | None, opener: Opener,
                   on_write_failed: Callable[[WriteFailed], None]) -> EventLog:
    """The match's event log (``MATCH.events.jsonl`` unless --no_events; a resumed file's
    cut last line dropped first); ``on_write_failed`` is told of a failed write."""
    if config.resume and config.events:
        drop_partial_line(config.events_path)
    events = EventLog(
        config.name,
        config.events_path if config.events else None,
        console=console,
        append=config.resume,
        opener=opener,
    )
    events.on_write_failed = on_write_failed
    return events


class MatchWriters:
    """The ``.log`` and ``.tlog`` of one match.

    Args:
        config: the match (file names, which files, the header's fields, ``resume``).
        opener: opens a file for whole-line writes (path, append).
        trace: the stderr trace (the header is traced too).
        events: where a dropped partial line is told.
    """

    def __init__(self, config: MatchConfig, opener: Opener, trace: Trace, events: EventLog) -> None:
        self.config = config
        self.opener = opener
        self.trace = trace
        self.events = events
        self.names = config.names
        self.log: RecordFile | None = None
        self.tlog: RecordFile | None = None

    def open(self) -> None:
        """Open the files (appending when resuming) and write the ``.log``'s header.

        Raises:
            MatchAborted: a file cannot be written (cause ``startup``, exit code 1).
        """
        config = self.config
        header = log_header(config.name, config.game_arg, config.hands, config.seed,
                            config.t_response_ms, config.t_hand_ms, config.t_per_hand_ms)
        try:
            if config.resume:
                # A line cut by a kill mid-write would be glued to the next one.
                for path in (config.log_path, config.tlog_path):
                    if drop_partial_line(path):
                        self.events.emit(ev.PartialLineDropped(file=str(path)))
            if config.write_log:
                self.log = self.opener(config.log_path, config.resume)
                self.log.write("".join(line + "\n" for line in header))
                self.log.flush()
            if config.write_tlog:
                self.tlog = self.opener(config.tlog_path, config.resume)
        except WriteFailed as error:
            raise MatchAborted(Cause.STARTUP, error.message, None, EXIT_FAILED) from error
        except OSError as error:
            raise MatchAborted(Cause.STARTUP, f"cannot write {error.filename}: {error.strerror}",
                               None, EXIT_FAILED) from error
        for line in header:
            self.trace.line(line)
        self.trace.flush()

    def write_action(self, action: str, hand_id: int, sent: float, received: float) -> None:
        """One action in the ``.tlog`` (call only when :attr:`tlog` is open)."""
        tlog = self.tlog
        if tlog is not None:
            tlog.write(f"{action} {hand_id} {sent:.6f} {received:.6f}\n")

    def write_hand(self, state: State, deal: Deal, values: Sequence[float], seat_of: Sequence[int]) -> None:
        """A finished hand in the ``.log`` (flushed: a hand counts once it is on disk)."""
        if self.tlog is not None:
            self.tlog.flush()  # the tlog must never lag the .log (resume)
        if self.log is not None:
            names = tuple(self.names[s] for s in seat_of)
            self.log.write(log_state_text(state, deal, values, names) + "\n")
            self.log.flush()

    def write_error(self, message: str) -> None:
        """``# ERROR: message`` in the ``.log`` (a match that ended early)."""
        if self.log is not None:
            self.log.write(f"# ERROR: {message}\n")

    def write_score(self, score: str) -> None:
        """The ``SCORE`` line, last in the ``.log``."""
        if self.log is not None:
            self.log.write(score + "\n")

    def close(self) -> WriteFailed | None:
        """Close the .log and .tlog; returns the first write failure met, if any."""
        first: WriteFailed | None = None
        for log in (self.tlog, self.log):
            if log is not None:
                try:
                    log.close()
                except WriteFailed as error:
                    first = first or error
        self.log = self.tlog = None
        return first

    def read_resume(self, game: GameDef) -> tuple[set[int], list[TlogRecord]]:
        """What a resumed match finds on disk: the hands in the ``.log`` and the ``.tlog``'s
        actions (a last line cut by a kill is left out).

        Raises:
            MatchAborted: a ``.tlog`` line does not read (cause ``startup``).
        """
        config = self.config
        logged: set[int] = set()
        if config.log_path.exists():
            with open(config.log_path, encoding="ascii", errors="replace") as log:
                for line in log:
                    if line.startswith("STATE:"):
                        logged.add(int(line.split(":", 2)[1]))
        records: list[TlogRecord] = []
        if config.tlog_path.exists():
            with open(config.tlog_path, encoding="ascii", errors="replace") as tlog:
                for number, line in enumerate(tlog, 1):
                    if not line.endswith("\n"):
                        break  # a line cut short by a kill
                    try:
                        records.append(parse_tlog_line(line, game))
                    except (ValueError, ParseError) as error:
                        raise MatchAborted(Cause.STARTUP, f"{config.tlog_path}:{number}: {error}",
                                           None, EXIT_FAILED) from error
        return logged, records


def parse_tlog_line(line: str, game: GameDef) -> TlogRecord:
    """``r300 0 1795350979.782960 1795350979.782978`` -> (action, hand, sent, received).

    Raises:
        ValueError: not four fields, or numbers that do not read.
        ParseError: the first field is not one action of this game.
    """
    fields = line.split()
    if len(fields) != 4:
        raise ValueError(f"bad tlog line {line.rstrip()!r}")
    action = parse_action(fields[0], game)
    return action, int(fields[1]), float(fields[2]), float(fields[3])

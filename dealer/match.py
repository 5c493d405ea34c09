"""One ACPC match: seats, deals, the hand loop, logs and time budgets.

:class:`Match` is the factory side of the dealer. It listens on one port per
seat, waits for the bots and their ``VERSION`` lines, and plays the hands as
the reference dealer does (acpc.md): the same seat rotation, the same deals
(:class:`protocol.deal.DealSource`), the same ``MATCHSTATE`` traffic, the same
leniency (:func:`protocol.rules.correct_action`) and the same ``.log`` lines
(:mod:`protocol.wire`). The hand loop runs in callbacks, with no Deferred per action or per
hand (see ``_play_hand``); each acting seat's reply is awaited with a deadline on an
injectable clock.

Failure policy (where the reference dies, or hangs, this dealer ends the match
cleanly and says why; see docs/dealer.md):

========================  ==============================================  ========
What the bot does         What the dealer does                            cause
========================  ==============================================  ========
never connects            ends the match after ``--start_timeout``        no_connection
sends nothing while due   ends the match after ``--idle_timeout`` (opt-in) idle
bad/no ``VERSION`` line   closes that connection, the seat keeps waiting  --
disconnects (seated)      ends the match at once                          disconnect
VERSION 1.x or 2.1+       warns and plays on (as the reference)           --
no reply in time          ends the match (``t_response``)                 timeout
over its time budget      ends the match (``t_hand``, ``t_per_hand``)     out_of_time
line over ``MAX_LENGTH``  ends the match                                  line_too_long
unparsable reply          warns, ignores it, keeps waiting (reference)    --
stale reply               warns, ignores it, keeps waiting (reference)    --
too many ignored lines    ends the match (``--max_ignored`` per decision) garbage
invalid action            corrected as the reference does, counted        --
over a budget             ends the match (dealer/budget.py)               over_budget
does not read its output  stops reading from it; drops it at the limit    not_reading
========================  ==============================================  ========

A log that cannot be written ends the match whose log it is (cause
``write_failed``, ``cannot write <file>``); a file is never left with half a
record (:class:`dealer.events.RecordFile`).

When a match ends early, every finished hand is already in the ``.log`` (it is
flushed after every hand), the unfinished hand is dropped, and the dealer
writes ``# ERROR: <message>`` and a ``SCORE`` over the finished hands to the
``.log``, prints the ``ERROR`` and ``SCORE`` lines, and records the
cause in the event log. Other matches of the same process go on.

Exit codes (per match; the process returns the highest) come from
:mod:`acpc_lbr.runtime.exit_codes`: ``EXIT_OK`` (0) the match was played to the end;
``EXIT_FAILED`` (1) a startup failure (unreadable game, port in use,
unwritable log, unreadable tlog); ``EXIT_BOT_FAILURE`` (3) the match ended
early because of a bot; ``EXIT_INTERNAL`` (4) a dealer bug, a log that could
not be written mid-match, or an interrupted dealer.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO, TypeAlias

import numpy as np
import numpy.typing as npt
from twisted.internet import defer
from twisted.internet.error import CannotListenError
from twisted.python.failure import Failure

from acpc_lbr.runtime.exit_codes import EXIT_BOT_FAILURE, EXIT_FAILED, EXIT_INTERNAL, EXIT_OK
from dealer import events as ev
from dealer import seatio
from dealer.budget import BotBudget, Charge, LineKind
from dealer.busypoll import BusyPoll
from dealer.events import (
    Cause,
    EventLog,
    Opener,
    RecordFile,
    Trace,
    WriteFailed,
    drop_partial_line,
    open_record_file,
)
from dealer.fds import shortage_note, watch_accept_failures
from dealer.interfaces import Clock, DelayedCall, ListeningPort, MatchReactor
from dealer.relay import DEFAULT_T_QUERY_MS, QueryFailed, QueryRelay  # noqa: F401 (QueryFailed: ask_seat raises it)
from dealer.seat import DEFAULT_MAX_LINE, SeatFactory, SeatProtocol
from protocol.deal import Deal, DealSource
from protocol.errors import IllegalActionError, ParseError
from protocol.gamedef import GameDef
from protocol.rules import Action, Correction, State, correct_action
from protocol.wire import (
    HandLines,
    MatchState,
    Score,
    format_chips,
    log_header,
    log_state_text,
    matchstate_for,
    parse_action,
    parse_reply,
    read_reply_action,
    same_decision_point,
    scanf_unsigned,
)

#: Declared a TypeAlias: a type even without numpy installed (the mypyc build, setup.py).
FloatArray: TypeAlias = npt.NDArray[np.float64]

#: The protocol version this dealer speaks.
VERSION = (2, 0, 0)
#: The reference's ``sscanf(line, "VERSION:%u.%u.%u")``: C blanks, a sign, ASCII digits.
_VERSION_LINE = re.compile(r"VERSION:[ \t\n\v\f\r]*([+-]?[0-9]+)\.[ \t\n\v\f\r]*([+-]?[0-9]+)"
                           r"\.[ \t\n\v\f\r]*([+-]?[0-9]+)")


def _version_number(digits: str) -> int:
    """A VERSION field's value as the reference's ``%u`` stores it (``-2`` and 2**32 + 2 are
    not 2 and 2, but 4294967294 and 2), in linear time however many digits."""
    return scanf_unsigned(digits, 32)


def _printable(text: str) -> str:
    """``text`` with each character outside printable ASCII written ``\\xNN`` (lines are latin-1)."""
    if text.isascii() and text.isprintable():
        return text
    return "".join(c if " " <= c <= "~" else f"\\x{ord(c):02x}" for c in text)


#: The command line's default ``--start_timeout``: bots must connect within a
#: minute (the reference waits forever; ``--start_timeout -1`` does too).
DEFAULT_START_TIMEOUT_MS = 60_000


@dataclass(frozen=True)
class MatchConfig:
    """Everything that defines one match (the dealer's command line).

    Attributes:
        name: the match name; the logs are ``<name>.log`` etc.
        game_arg: the game as typed (bundled name or path), for the header.
        game: the loaded game definition.
        hands: the number of hands.
        seed: the deal seed (unsigned 32-bit).
        names: one player name per seat.
        ports: one port per seat (0 or missing: any free port).
        bind: the interface to listen on.
        t_response_ms, t_hand_ms, t_per_hand_ms: time limits, as the reference's.
        start_timeout_ms: how long to wait for every seat to connect (None: forever).
        idle_timeout_ms: end the match when the seat the dealer waits for has
            sent no line at all for this long (None: off). Not a rule of the
            match (the ``.log`` header does not record it): a watchdog for a bot
            that is stuck or cannot read the states (started for another game).
        fixed_seats: ``-f``, seat s is always position s.
        write_log: write ``<name>.log``.
        keep_hand_values: keep every hand's values in ``MatchResult.hand_values``
            (the duplicate line, ``evaluate`` and the seatings read them); the
            dealer command keeps them only with ``--duplicate``, so that its
            memory does not grow with the hands played.
        write_tlog: write ``<name>.tlog`` (``-T``).
        resume: ``-a``: append to the logs and resume from the tlog.
        trace_messages: write the TO/FROM trace (False with ``-q``).
        max_line: the line limit of each seat, in bytes.
        max_ignored: unparsable or stale lines tolerated while one decision is
            pending; one more ends the match (cause ``garbage``).
        events: write ``<name>.events.jsonl``.
        t_query_ms: a bot's time limit per range query (dealer/relay.py).
        queryable: names of players that answer range queries without
            announcing it (``--queryable``).
        budget: what one bot may cost the dealer (dealer/budget.py).
    """

    name: str
    game_arg: str
    game: GameDef
    hands: int
    seed: int
    names: tuple[str, ...]
    ports: tuple[int, ...] = ()
    bind: str = "127.0.0.1"
    t_response_ms: int = 600_000
    t_hand_ms: int = 600_000
    t_per_hand_ms: int = 7_000
    start_timeout_ms: int | None = None
    idle_timeout_ms: int | None = None
    fixed_seats: bool = False
    write_log: bool = True
    write_tlog: bool = False
    resume: bool = False
    trace_messages: bool = True
    max_line: int = DEFAULT_MAX_LINE
    max_ignored: int = 100
    events: bool = True
    t_query_ms: int = DEFAULT_T_QUERY_MS
    queryable: tuple[str, ...] = ()
    budget: BotBudget = field(default_factory=BotBudget)
    keep_hand_values: bool = True

    def __post_init__(self) -> None:
        if len(self.names) != self.game.num_players:
            raise ValueError(
                f"{self.game.num_players} player names needed, got {len(self.names)}"
            )
        if self.hands < 1:
            raise ValueError(f"the number of hands must be positive, got {self.hands}")
        if not 0 <= self.seed < 2**32:
            raise ValueError(f"the seed must be an unsigned 32-bit integer, got {self.seed}")

    @property
    def log_path(self) -> Path:
        return Path(f"{self.name}.log")

    @property
    def tlog_path(self) -> Path:
        return Path(f"{self.name}.tlog")

    @property
    def events_path(self) -> Path:
        return Path(f"{self.name}.events.jsonl")


class MatchAborted(Exception):
    """The match cannot go on.

    Args:
        cause: a short code (``disconnect``, ``timeout``, ``out_of_time``,
            ``garbage``, ``line_too_long``, ``over_budget``, ``not_reading``,
            ``no_connection``, ``write_failed``, ``startup``, ``interrupted``,
            ``internal``).
        message: what happened, naming the seat.
        seat: the seat at fault (0-based), if any.
        exit_code: the exit code this ending maps to.
    """

    def __init__(
        self, cause: Cause, message: str, seat: int | None = None, exit_code: int = EXIT_BOT_FAILURE
    ) -> None:
        super().__init__(message)
        self.cause = cause
        self.message = message
        self.seat = seat
        self.exit_code = exit_code


@dataclass
class MatchResult:
    """How a match ended.

    Attributes:
        name: the match name.
        names: player names in seat order.
        totals: chips won by each seat over the finished hands.
        hand_values: per finished hand, each seat's value (seat order), by hand id
            (empty unless the match's ``keep_hand_values``).
        finished: the hands finished.
        completed: every hand was played.
        exit_code: see the module docstring.
        cause: None, or the failure code (see :class:`MatchAborted`).
        message: None, or the failure message.
        seat: the seat at fault, if any.
        corrections: corrected actions per seat.
        ignored: ignored (unparsable or stale) lines per seat.
    """

    name: str
    names: tuple[str, ...]
    totals: list[float]
    hand_values: dict[int, tuple[float, ...]] = field(default_factory=dict)
    completed: bool = False
    exit_code: int = EXIT_OK
    cause: Cause | None = None
    message: str | None = None
    seat: int | None = None
    corrections: list[int] = field(default_factory=list)
    ignored: list[int] = field(default_factory=list)
    finished: int = 0

    @property
    def hands_played(self) -> int:
        return self.finished

    def score_line(self) -> str:
        """The ``SCORE:`` line over the finished hands."""
        return Score(tuple(self.totals), self.names).text()


class _Seat:
    """The dealer's view of one seat (not the connection itself)."""

    __slots__ = (
        "candidates",
        "connected",
        "corrections",
        "factory",
        "hand_time",
        "ignored",
        "index",
        "last_refusal",
        "last_reply_s",
        "lost",
        "match_time",
        "name",
        "port",
        "protocol",
        "queue",
        "queued_bytes",
        "ready",
        "trace_bytes",
        "untraced",
    )

    def __init__(self, index: int, name: str, factory: SeatFactory) -> None:
        self.index = index
        self.name = name
        self.factory = factory
        self.port: ListeningPort | None = None
        self.protocol: SeatProtocol | None = None
        self.queue: deque[str] = deque()
        self.queued_bytes = 0
        #: Connections on this seat's port that have not sent VERSION yet.
        self.candidates: list[SeatProtocol] = []
        #: Why the last candidate was closed (for the start-timeout message).
        self.last_refusal: str | None = None
        self.connected = False
        self.lost = False
        self.ready = False  # its VERSION line was read
        self.match_time = 0.0
        self.hand_time = 0.0
        self.corrections = 0
        self.ignored = 0
        self.trace_bytes = 0  # FROM trace bytes in this hand
        self.untraced = 0  # lines not traced in this hand (over the budget)
        #: How long its last action took from the send (0 before the first): the
        #: busy poll polls only for a seat that answered within its budget.
        self.last_reply_s = 0.0

    def label(self) -> str:
        return f"seat {self.index + 1} ({self.name})"


class _Hand:
    """The hand being played: what every decision point of it needs."""

    __slots__ = ("deal", "done", "first_turn", "lines", "ordered", "seat_of", "state", "t_hand",
                 "t_match", "t_response", "waits")

    def __init__(self, state: State, deal: Deal, seat_of: list[int],
                 ordered: list[tuple[_Seat, int]], lines: HandLines,
                 t_response: float, t_hand: float, t_match: float,
                 done: defer.Deferred[tuple[State, Deal]]) -> None:
        self.state = state
        self.deal = deal
        #: The seat of each position, and (seat, position) in seat order.
        self.seat_of = seat_of
        self.ordered = ordered
        self.lines = lines
        self.t_response = t_response
        self.t_hand = t_hand
        self.t_match = t_match
        #: Fires with the last hand played (state, deal) when this hand, and those
        #: begun right after it, are over; fails with why the match ended early.
        self.done = done
        #: No decision point of this hand was sent yet.
        self.first_turn = True
        #: Waits for a seat's line so far in this hand (the next hand is drawn at the second).
        self.waits = 0


class _Drawn:
    """A hand drawn before it is played: its fresh state, its deal and its lines.

    Drawing a hand (the deal's random draws, the state, the rendered pieces of
    its lines) takes tens of microseconds; done while a bot thinks about its
    action (:meth:`Match._draw_ahead`), it is off the path from the last
    action of a hand to the first state of the next.
    """

    __slots__ = ("deal", "lines", "opener", "state")

    def __init__(self, state: State, deal: Deal) -> None:
        self.state = state
        self.deal = deal
        self.lines = HandLines(state, deal)
        #: For the states made ready at the end of the hand before (Match._opener):
        #: the seat to act first, its position in the hand before, its first line.
        self.opener: tuple[_Seat, int, str] | None = None


class _Turn:
    """One decision point: the acting seat's wait for its action."""

    __slots__ = ("charged_to", "expected", "heard", "ignored", "paused_at_send", "paused_mark",
                 "polled", "position", "seat", "sent")

    def __init__(self, seat: _Seat, position: int, expected: str, sent: float,
                 paused: float) -> None:
        self.seat = seat
        self.position = position
        #: The state sent to the seat and ``:``: a reply echoing it needs no parsing.
        self.expected = expected
        #: When the state was sent; time is charged from here on.
        self.sent = sent
        self.charged_to = sent
        #: The seat's paused clock (its range queries out) at the send and at the last charge.
        self.paused_at_send = paused
        self.paused_mark = paused
        #: The seat's last line (any line), for --idle_timeout.
        self.heard = sent
        #: Lines ignored (unparsable, stale, comments) while this decision is pending.
        self.ignored = 0
        #: Whether the busy poll polled for this wait (None: it did not decide).
        self.polled: bool | None = None


class Match:
    """A match between bots on TCP, played like the reference dealer plays it.

    Args:
        config: the match definition.
        reactor: provides ``listenTCP`` (and the clock unless ``clock`` is given).
        clock: the time source for deadlines and budgets (``task.Clock`` in tests).
        stderr: where the trace and the console events go (None: nowhere).
        trace_prefix: put before every trace line (several matches per process).
        console: also write the readable event lines (structlog) to ``stderr``.
        opener: opens the log files (tests give files that fail).
        busy_poll: keeps the event loop polling while a fast seat is to act
            (dealer/busypoll.py; shared by the matches of a process).
    """

    def __init__(
        self,
        config: MatchConfig,
        reactor: MatchReactor,
        clock: Clock | None = None,
        stderr: TextIO | None = None,
        trace_prefix: str = "",
        console: bool = True,
        opener: Opener = open_record_file,
        busy_poll: BusyPoll | None = None,
    ) -> None:
        self.config = config
        self.busy_poll = busy_poll
        self.game = config.game
        self.reactor = reactor
        self.clock: Clock = clock if clock is not None else reactor
        self.trace = Trace(stderr, config.trace_messages, trace_prefix)
        self.opener = opener
        # A connection must send VERSION within the handshake limit (or --idle_timeout if shorter).
        self._handshake_s = config.budget.handshake_s
        if config.idle_timeout_ms is not None:
            self._handshake_s = min(self._handshake_s, config.idle_timeout_ms / 1000.0)
        self.events = self._event_log(stderr if console else None)
        self.seats = [
            _Seat(i, name, SeatFactory(self, i, config.max_line, config.budget))
            for i, name in enumerate(config.names)
        ]
        self.result = MatchResult(
            config.name, config.names, [0.0] * len(self.seats),
            corrections=[0] * len(self.seats), ignored=[0] * len(self.seats),
        )
        self._init_play_state()
        #: t_response, t_hand and the match budget (t_per_hand x hands), in seconds.
        self._limits = (config.t_response_ms / 1000.0, config.t_hand_ms / 1000.0,
                        config.t_per_hand_ms * config.hands / 1000.0)
        self._started = False
        self._done = False
        self.finished: defer.Deferred[MatchResult] | None = None
        #: The hand being played: (live state, deal, seat of each position).
        self.current_hand: tuple[State, Deal, list[int]] | None = None
        #: Range-query traffic: counters in ``relay.counts`` (per seat).
        self.relay = QueryRelay(
            self.game, config.names, config.budget, self.clock, self.events,
            lambda: self.current_hand, self.bot_over_budget, config.t_query_ms, config.queryable,
        )
        #: Awaited after every hand, before the next deal, with (state, deal,
        #: seat of each position): the results' own range queries (dealer/results.py).
        self.hand_hooks: list[Callable[[State, Deal, list[int]], Awaitable[None]]] = []
        # The limits are fixed for the match, so each seat's three timeout
        # messages are built once, not on every wait (see _deadline).
        self._deadline_messages = [self._timeout_messages(seat) for seat in self.seats]

    def _init_play_state(self) -> None:
        """The live state of play: the hand and decision point, the wait for a
        seat's line and its timer, the log files and the deals (set as play goes)."""
        config = self.config
        self._failure: MatchAborted | None = None
        #: The hand being played and its decision point (see _play_hand).
        self._hand: _Hand | None = None
        self._turn: _Turn | None = None
        #: The hand waits for a line of seat _waiter_seat (seat_line resumes it).
        self._waiting = False
        self._waiter_seat = -1
        self._timer: DelayedCall | None = None  # None when not armed
        self._timer_at = 0.0  # when it is set to fire (the clock's time)
        self._wait_deadline: float | None = None
        self._wait_paused = 0.0
        #: The next state made ready for the acting seat's likely replies (see
        #: _make_ahead), while it is to act; then, if the read step sent it, until
        #: _begin_turn has checked it.
        self._ahead: seatio.Ahead | None = None
        self._idle_s = None if config.idle_timeout_ms is None else config.idle_timeout_ms / 1000.0
        self._all_connected: defer.Deferred[None] = defer.Deferred()
        self._log: RecordFile | None = None
        self._tlog: RecordFile | None = None
        #: The match's deals, once run() has skipped to its first hand.
        self._deals: DealSource | None = None
        #: The next hand, drawn ahead from _deals (see _draw_ahead); None when not drawn yet.
        self._drawn: _Drawn | None = None
        self._seatings: dict[int, tuple[list[int], list[tuple[_Seat, int]]]] = {}

    def _event_log(self, console: TextIO | None) -> EventLog:
        """The match's event log (``MATCH.events.jsonl`` unless --no_events; a resumed file's
        cut last line dropped first); a failed write ends the match."""
        config = self.config
        if config.resume and config.events:
            drop_partial_line(config.events_path)
        events = EventLog(
            config.name,
            config.events_path if config.events else None,
            console=console,
            append=config.resume,
            opener=self.opener,
        )
        events.on_write_failed = self._write_failed
        return events

    def _timeout_messages(self, seat: _Seat) -> tuple[str, str, str, str]:
        """A seat's messages for running out of t_response, t_hand, the match budget, and idling."""
        config = self.config
        t_response = config.t_response_ms / 1000.0
        t_hand = config.t_hand_ms / 1000.0
        t_match = config.t_per_hand_ms * config.hands / 1000.0
        return ((f"could not get action from {seat.label()}: "
                 f"{t_response:.1f} seconds spent waiting; timeout {t_response:g}"),
                f"{seat.label()} ran out of time: t_hand {t_hand:g} s used up in one hand",
                (f"{seat.label()} ran out of time: match budget {t_match:g} s "
                 f"(t_per_hand x hands) used up"),
                self._idle_message(seat))

    def _idle_message(self, seat: _Seat) -> str:
        idle = (self.config.idle_timeout_ms or 0) / 1000.0
        return (f"{seat.label()} sent nothing for {idle:g} s while the dealer waited for it "
                f"(--idle_timeout); is it stuck, or started for another game than "
                f"{self.config.game_arg}?")

    # -- listening ---------------------------------------------------------

    def listen(self) -> list[int]:
        """Open one listening port per seat and return the port numbers.

        Raises:
            MatchAborted: a port could not be opened (exit code 1).
        """
        tcp = self.reactor
        ports = list(self.config.ports) + [0] * (len(self.seats) - len(self.config.ports))
        watch_accept_failures()  # a seat refused for want of descriptors is then said so
        numbers = []
        for seat, port in zip(self.seats, ports):
            try:
                seat.port = tcp.listenTCP(
                    port, seat.factory, backlog=8, interface=self.config.bind
                )
            except CannotListenError as error:
                self.stop_listening()
                raise MatchAborted(
                    Cause.STARTUP, f"cannot listen on port {port} for {seat.label()}: {error.socketError}",
                    seat.index, EXIT_FAILED,
                ) from error
            numbers.append(seat.port.getHost().port)
        self.events.emit(ev.Listening(ports=tuple(numbers), bind=self.config.bind))
        return numbers

    def stop_listening(self) -> None:
        """Close every listening port that is still open."""
        for seat in self.seats:
            if seat.port is not None:
                seat.port.stopListening()
                seat.port = None

    # -- events from the seat connections (SeatListener) -------------------

    def seat_candidate(self, seat_index: int, protocol: SeatProtocol) -> bool:
        seat = self.seats[seat_index]
        if seat.connected or self._failure is not None or self._done:
            return False
        budget = self.config.budget
        seat.candidates.append(protocol)
        if len(seat.candidates) > budget.max_candidates:
            oldest = seat.candidates.pop(0)
            self._refuse_candidate(seat, oldest, f"{oldest.peer_label()} to {seat.label()} closed: "
                                   f"more than {budget.max_candidates} connections waited "
                                   "to send VERSION")
        protocol.handshake_timer = self.clock.callLater(
            self._handshake_s, self._handshake_expired, seat, protocol)
        self.events.emit(ev.ConnectionOpened(seat=seat_index + 1, peer=protocol.peer_label()))
        return True

    def _handshake_expired(self, seat: _Seat, protocol: SeatProtocol) -> None:
        protocol.handshake_timer = None
        if protocol in seat.candidates:
            seat.candidates.remove(protocol)
            self._refuse_candidate(seat, protocol, f"{protocol.peer_label()} to {seat.label()} "
                                   f"sent no VERSION line within {self._handshake_s:g} s")

    def _refuse_candidate(self, seat: _Seat, protocol: SeatProtocol, why: str) -> None:
        """Close a connection that did not get the seat, saying why (naming the connection)."""
        seat.last_refusal = why
        self.trace.line(f"WARNING: {why}")
        self.trace.flush()
        self.events.emit(ev.ConnectionRefused(seat=seat.index + 1, peer=protocol.peer_label(), reason=why))
        if protocol.handshake_timer is not None and protocol.handshake_timer.active():
            protocol.handshake_timer.cancel()
        protocol.handshake_timer = None
        protocol.refuse()

    def seat_hello(self, seat_index: int, protocol: SeatProtocol, line: str) -> bool:
        seat = self.seats[seat_index]
        if protocol not in seat.candidates or seat.connected or self._failure is not None:
            return False
        seat.candidates.remove(protocol)
        match = _VERSION_LINE.match(line)
        if match is None:
            # A stranger's bytes: quoted in printable ASCII (no terminal escapes, no NUL in the .log).
            shown = _printable(line[:100]) + ("" if len(line) <= 100 else f"... ({len(line)} bytes)")
            self._refuse_candidate(seat, protocol, f"{protocol.peer_label()} to {seat.label()} "
                                   f"sent an invalid version string {shown}")
            return False
        if protocol.handshake_timer is not None and protocol.handshake_timer.active():
            protocol.handshake_timer.cancel()
        protocol.handshake_timer = None
        seat.connected = True
        seat.protocol = protocol
        self.relay.attach(seat_index, protocol)
        if seat.port is not None:
            seat.port.stopListening()
            seat.port = None
        others, seat.candidates = seat.candidates, []
        for other in others:
            self._refuse_candidate(seat, other, f"{other.peer_label()} to {seat.label()} closed: "
                                   "another connection sent VERSION first")
        self.events.emit(ev.SeatConnected(seat=seat_index + 1, name=seat.name, peer=protocol.peer_label()))
        major, minor, _ = (_version_number(g) for g in match.groups())
        if major != VERSION[0] or minor > VERSION[1]:
            self.trace.line("ERROR: this server is currently using version 2.0.0")
            self.events.emit(ev.VersionMismatch(seat=seat.index + 1, line=line[:100]))
        seat.ready = True
        self.events.emit(ev.SeatReady(seat=seat.index + 1, name=seat.name))
        if all(s.connected for s in self.seats) and not self._all_connected.called:
            self._all_connected.callback(None)
        return True

    def seat_candidate_lost(self, seat_index: int, protocol: SeatProtocol) -> None:
        seat = self.seats[seat_index]
        if protocol in seat.candidates:
            seat.candidates.remove(protocol)
            if protocol.handshake_timer is not None and protocol.handshake_timer.active():
                protocol.handshake_timer.cancel()
            protocol.handshake_timer = None
            self.events.emit(ev.ConnectionClosed(seat=seat_index + 1, peer=protocol.peer_label(),
                                                 reason="closed before sending VERSION"))

    def seat_candidate_line_too_long(self, seat_index: int, protocol: SeatProtocol, start: bytes,
                                     limit: int) -> None:
        seat = self.seats[seat_index]
        if protocol in seat.candidates:
            seat.candidates.remove(protocol)
            shown = _printable(start.decode("latin-1"))
            self._refuse_candidate(seat, protocol, f"{protocol.peer_label()} to {seat.label()} sent a first "
                                   f"line longer than {limit} bytes, which no VERSION line is: {shown}...")

    def seat_line(self, seat_index: int, line: str) -> None:
        seat = self.seats[seat_index]
        if self._waiting and self._waiter_seat == seat_index and not seat.queue:
            self._waiting = False
            self._wait_deadline = None
            hand = self._hand
            assert hand is not None
            self._advance(hand, line)
            return
        seat.queue.append(line)
        seat.queued_bytes += len(line) + 1
        budget = self.config.budget
        if len(seat.queue) > budget.max_queued_lines:
            self.bot_over_budget(seat_index, f"sent more than {budget.max_queued_lines} lines "
                                 "while it was not its turn (limit max_queued_lines "
                                 f"{budget.max_queued_lines})")
        elif seat.queued_bytes > budget.max_queued_bytes:
            self.bot_over_budget(seat_index, f"sent {seat.queued_bytes} bytes while it was not its "
                                 f"turn (limit max_queued_bytes {budget.max_queued_bytes})")

    def _pop_queued(self, seat: _Seat) -> str:
        line = seat.queue.popleft()
        seat.queued_bytes -= len(line) + 1
        return line

    def seat_line_too_long(self, seat_index: int, length: int, limit: int) -> None:
        seat = self.seats[seat_index]
        self.abort(MatchAborted(
            Cause.LINE_TOO_LONG,
            f"{seat.label()} sent a line longer than {limit} bytes (its line limit)",
            seat_index,
        ))

    def seat_not_reading(self, seat_index: int, unsent: int, limit: int) -> None:
        seat = self.seats[seat_index]
        self.abort(MatchAborted(
            Cause.NOT_READING,
            f"{seat.label()} does not read what it is sent: {unsent} bytes unsent "
            f"(limit max_unsent_bytes {limit})",
            seat_index,
        ))

    def seat_error(self, seat_index: int, error: Exception) -> None:
        self.events.emit(ev.InternalError(error=repr(error)[:200], seat=seat_index + 1))
        self.abort(MatchAborted(
            Cause.INTERNAL, f"internal error on a line from {self.seats[seat_index].label()}: "
            f"{type(error).__name__}", None, EXIT_INTERNAL))

    def bot_over_budget(self, seat_index: int, what: str, cause: Cause = Cause.OVER_BUDGET) -> None:
        """End the match because ``seat_index`` went over one of its limits.

        Args:
            seat_index: the seat at fault.
            what: what it did, ending with the limit (``sent ... (limit X N)``).
            cause: the cause code of the ending.
        """
        self.abort(MatchAborted(cause, f"{self.seats[seat_index].label()} {what}", seat_index))

    def seat_lost(self, seat_index: int, reason: Failure) -> None:
        seat = self.seats[seat_index]
        seat.lost = True
        if self._done:
            return
        if not self._started:
            when = "before the match started"
        elif self._waiter_seat == seat_index and self._waiting:
            when = "while acting"
        else:
            when = "while not acting"
        self.abort(MatchAborted(
            Cause.DISCONNECT, f"{seat.label()} disconnected {when}", seat_index
        ))

    # -- control -----------------------------------------------------------

    def abort(self, failure: MatchAborted) -> None:
        """End the match with ``failure`` (the first failure wins)."""
        if self._failure is not None or self._done:
            return
        self._failure = failure
        self._cancel_timer()
        self._drop_ahead()
        if self._waiting:
            # The hand waits for a line: it ends now.
            self._waiting = False
            hand, self._hand, self._turn = self._hand, None, None
            if hand is not None:
                hand.done.errback(failure)
        if not self._all_connected.called:
            self._all_connected.errback(failure)
        # Outstanding range queries (e.g. the results' queries between hands) fail now
        # rather than after t_query.
        self.relay.close()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            if self._timer.active():
                self._timer.cancel()
            self._timer = None

    def start(self) -> defer.Deferred[MatchResult]:
        """Run the match; the Deferred fires with its :class:`MatchResult` (never fails)."""
        self.finished = defer.ensureDeferred(self.run())
        return self.finished

    async def run(self) -> MatchResult:
        """Play the whole match (listen first) and return how it ended."""
        config = self.config
        result = self.result
        try:
            if self.events.failed is not None and self._failure is None:
                raise MatchAborted(Cause.STARTUP, self.events.failed.message, None, EXIT_FAILED)
            self._open_logs()
            start_hand, pending = self._resume() if config.resume else (0, None)
            await self._wait_for_seats()
            self._started = True
            if self.busy_poll is not None:
                self.busy_poll.playing += 1
            self.trace.progress(f"STARTED at {self.clock.seconds():.6f}")
            self.trace.flush()
            self.events.emit(ev.MatchStarted(hands=config.hands, seed=config.seed,
                                             names=tuple(config.names), first_hand=start_hand))
            deals = DealSource(config.seed)
            if pending is not None:
                deals.skip(self.game, start_hand + 1)
            else:
                deals.skip(self.game, start_hand)
            self._deals = deals
            hand_id = start_hand
            while hand_id < config.hands:
                if pending is not None:
                    state, deal = pending
                    pending = None
                    lines = None
                else:
                    drawn = self._draw(hand_id)
                    state, deal, lines = drawn.state, drawn.deal, drawn.lines
                # Without hand hooks, this plays every hand left (see _play_hand).
                state, deal = await self._play_hand(state, deal, lines)
                for hook in self.hand_hooks:
                    await hook(state, deal, self._position_to_seat(state.hand_id))
                hand_id = state.hand_id + 1
            failure = self._failure
            if failure is not None and failure.cause is not Cause.DISCONNECT:
                # A bot that broke a rule while the last hand's hooks waited on it (e.g. a
                # comment flood during that hand's IO queries) is charged as in any other
                # hand; leaving after the last hand is what bots do, so that one is not.
                raise failure
            result.completed = True
        except MatchAborted as failure:
            self._record_failure(failure)
        except WriteFailed as error:
            self._record_failure(MatchAborted(Cause.WRITE_FAILED, error.message, None, EXIT_INTERNAL))
        except Exception as error:  # noqa: BLE001 (a dealer bug: still leave a clean ending)
            self.events.emit(ev.InternalError(error=repr(error), exc_info=True))
            self._record_failure(MatchAborted(Cause.INTERNAL, f"internal error: {error!r}", None, EXIT_INTERNAL))
        except BaseException:  # GeneratorExit, KeyboardInterrupt: no ending to write
            self._close_files()
            raise
        finally:
            if self._started and self.busy_poll is not None:
                self.busy_poll.playing -= 1
        self._finish()
        return result

    def _write_failed(self, error: WriteFailed) -> None:
        """A log of this match cannot be written: the match ends (its seats are closed)."""
        self.abort(MatchAborted(Cause.WRITE_FAILED, error.message, None, EXIT_INTERNAL))

    # -- phases --------------------------------------------------------------

    async def _wait_for_seats(self) -> None:
        timeout = self.config.start_timeout_ms
        timer = None
        if timeout is not None:
            def expire() -> None:
                missing = next(s for s in self.seats if not s.connected)
                last = f" (last refused: {missing.last_refusal})" if missing.last_refusal else ""
                self.abort(MatchAborted(
                    Cause.NO_CONNECTION,
                    # No option named: the dealer's is --start_timeout, evaluate has none.
                    f"timed out waiting for seat {missing.index + 1} ({missing.name}) to connect "
                    f"within {timeout / 1000.0:g} s{last}{shortage_note()}",
                    missing.index,
                ))
            timer = self.clock.callLater(timeout / 1000.0, expire)
        try:
            await self._all_connected
        finally:
            if timer is not None and timer.active():
                timer.cancel()
        self.stop_listening()

    def _wait_for_line(self, hand: _Hand, turn: _Turn) -> None:
        """Wait for the acting seat's next line: :meth:`seat_line` resumes the hand.

        The wait ends with a MatchAborted(cause) at the earliest deadline (see
        :meth:`_deadline`), moved on by the time the seat's own range queries
        are out.
        """
        if self._failure is not None:
            raise self._failure
        if self._ahead is not None:
            self._ahead_mismatch("the reply did not lead to the next decision")
        seat = turn.seat
        index = seat.index
        # The earliest of _deadline's limits (which one it is matters only if it passes).
        charged = turn.charged_to
        deadline = min(turn.sent + hand.t_response, charged + (hand.t_hand - seat.hand_time),
                       charged + (hand.t_match - seat.match_time))
        idle_s = self._idle_s
        if idle_s is not None and turn.heard + idle_s < deadline:
            deadline = turn.heard + idle_s
        relay = self.relay
        if relay.ever_paused[index]:
            now = self.clock.seconds()
            self._wait_paused = relay.paused(index, now)
            deadline += self._wait_paused - turn.paused_at_send
        else:
            now = turn.heard  # the last line's time, or the send's: microseconds ago
            self._wait_paused = 0.0
        self._waiting = True
        self._waiter_seat = index
        self._wait_deadline = deadline
        busy_poll = self.busy_poll
        if busy_poll is not None and turn.polled is None and busy_poll.worth_it(seat.last_reply_s):
            turn.polled = polled = busy_poll.decide()
            if polled:
                busy_poll.arm()
        # One watchdog timer, not one per wait: replies come in microseconds,
        # so the timer is left armed and re-armed only when it fires early or
        # when this wait must end sooner than it is set for. (_timer is None
        # whenever it is not armed: it fired, or _cancel_timer cancelled it.)
        timer = self._timer
        if timer is None or self._timer_at > deadline:
            if timer is not None:
                timer.cancel()
            self._timer = self.clock.callLater(max(0.0, deadline - now), self._watchdog)
            self._timer_at = deadline
        # At the first wait the bot's think time goes to recording the hand
        # before (see _next_hand_begun); the second is free.
        hand.waits += 1
        if hand.waits == 2:
            self._draw_ahead(hand)
        # The next state is made ready in the time the dealer would spend polling, when
        # this is the process's only match playing: when it does not poll, the bot is
        # slow or the machine busy, and with other matches that time is theirs.
        protocol = seat.protocol
        if (turn.polled and busy_poll is not None and busy_poll.playing == 1
                and protocol is not None and not self.trace.messages
                and True not in relay.queryable):
            self._make_ahead(hand, turn, protocol, deadline)

    def _make_ahead(self, hand: _Hand, turn: _Turn, protocol: SeatProtocol, deadline: float) -> None:
        """Make the next state ready for the acting seat's likely replies (a call, a
        raise of any legal size), for its connection's read step to send at once
        (:class:`dealer.seatio.Ahead`).

        A round trip with fast bots is the bot's time and the dealer's path from
        its line to the next send; this takes the reading of the action, the
        rules and the rendering off that path, into the time the bot thinks,
        which the dealer would otherwise spend polling (it is done only for a
        wait the busy poll polls for). The states come from the rules: the
        hand's copy played on for a call, and for a raise the line cut around
        its size. The reply itself still goes through every step, and
        :meth:`_begin_turn` checks that the states it gives are the ones sent.
        A reply that ends the hand is made ready once the next hand is drawn
        (:meth:`_next_send`). Not with the trace (it lists each line before the
        send it causes) or with range queries in play (their answers arrive on
        the same connections).
        """
        state = hand.state
        lines = hand.lines
        seats, seat_of = self.seats, hand.seat_of
        # 1 ms before the deadline: a reply that late goes through the time checks first.
        ahead = seatio.Ahead(turn.expected.encode("latin-1"), deadline - 1e-3, self.clock)
        opener = self._opener(hand)
        after = state.clone()
        after.apply(Action.CALL)
        ahead.call_to, ahead.call_text = self._next_send(hand, after, opener)
        if opener is not None and state.can_fold() and state.fold_leaves_one():
            seat, position, first_line = opener
            head, tail = lines.around_next_action(state, position)
            ahead.fold_to, ahead.fold_text = seat.protocol, head + "f" + tail + "\r\n" + first_line
        sizes = state.raise_range()
        if sizes is not None:
            # A raise never ends the round; the player to act next is the same for
            # every size (tests/protocol/test_fast_paths.py checks both on random play).
            position = state.next_to_act_after(turn.position)
            target = seats[seat_of[position]].protocol
            if target is not None:
                ahead.raise_to = target
                if self.game.is_limit:
                    after = state.clone()
                    after.apply(Action.RAISE)
                    ahead.raise_sized = False
                    ahead.raise_head = lines.text_after(after, position)
                else:
                    head, ahead.raise_tail = lines.around_next_action(state, position)
                    ahead.raise_head = head + "r"
                    ahead.raise_min, ahead.raise_max = sizes
        self._ahead = protocol.ahead = ahead

    def _next_send(self, hand: _Hand, after: State,
                   opener: tuple[_Seat, int, str] | None) -> tuple[SeatProtocol | None, str]:
        """The next send of the match if ``hand`` goes on as ``after`` (a copy of its
        state, one action on): the connection and the lines, or (None, "") when
        there is none to make ready.

        In a hand that goes on, the seat to act gets its state. When ``after``
        ends the hand and the next hand will begin at once (``opener``, see
        :meth:`_opener`), the next hand's first seat to act gets its final state
        of this hand and its first of the next (the other seats get theirs with
        another send, as usual: :meth:`_next_hand_begun`).
        """
        if not after.finished:
            position = after.current_player
            return self.seats[hand.seat_of[position]].protocol, hand.lines.text_after(after, position)
        if opener is None:
            return None, ""
        seat, position, first_line = opener
        return seat.protocol, hand.lines.text_after(after, position) + "\r\n" + first_line

    def _opener(self, hand: _Hand) -> tuple[_Seat, int, str] | None:
        """The seat to act first in the hand after ``hand``, its position in ``hand``
        and its first line, if that hand is drawn and will begin as soon as
        ``hand`` ends (worked out once per hand)."""
        drawn = self._drawn
        if drawn is None or not self._may_follow(drawn.state.hand_id):
            return None
        opener = drawn.opener
        if opener is None:
            first = drawn.state.current_player
            seat = self.seats[self._seating(drawn.state.hand_id)[0][first]]
            for other, position in hand.ordered:
                if other is seat:
                    opener = drawn.opener = (seat, position, drawn.lines.text(first))
        return opener

    def _drop_ahead(self) -> None:
        """The wait is over without a reply read: what was made ready for it goes."""
        ahead = self._ahead
        if ahead is not None:
            self._ahead = None
            for seat in self.seats:
                protocol = seat.protocol
                if protocol is not None and protocol.ahead is ahead:
                    protocol.ahead = None

    def _watchdog(self) -> None:
        """The wait timer fired: end the wait if its deadline has passed, else re-arm."""
        self._timer = None
        turn, hand, deadline = self._turn, self._hand, self._wait_deadline
        if not self._waiting or deadline is None or turn is None or hand is None:
            return
        seat = turn.seat
        now = self.clock.seconds()
        # The seat's clock stands still while its range queries are out.
        deadline += self.relay.paused(seat.index, now) - self._wait_paused
        if now >= deadline - 1e-6:
            _, cause, message = self._deadline(seat, turn.sent, turn.charged_to, turn.heard,
                                               hand.t_response, hand.t_hand, hand.t_match)
            self.abort(MatchAborted(cause, message, seat.index))
        else:
            self._timer = self.clock.callLater(deadline - now, self._watchdog)
            self._timer_at = deadline

    async def ask_seat(self, seat: int, state: MatchState, actions: Sequence[Action]) -> FloatArray:
        """Ask ``seat`` a range query (its hole-card slots are blanked) and await the answer.

        Queries may be pipelined; each must be answered within ``t_query``.

        Args:
            seat: the seat to ask (0-based).
            state: the decision point, as the MATCHSTATE that seat would get
                there; the seat must be the one to act.
            actions: the actions whose probabilities are wanted.

        Returns:
            float64 array ``(len(actions), game.num_hands)``, rows in
            ``actions`` order; hands colliding with the board carry whatever
            the bot sent.

        Raises:
            QueryFailed: RANGEERROR, a malformed answer, no answer in time,
                a seat that does not answer queries, or the match ended.
        """
        values, _ = await self.relay.ask(seat, state, actions)
        return values

    def _seating(self, hand_id: int) -> tuple[list[int], list[tuple[_Seat, int]]]:
        """The seat of each position in hand ``hand_id``, and (seat, position) in seat order.

        One of N seatings (the seats rotate); each is built once and shared
        by the hands that use it (neither list is changed).
        """
        key = 0 if self.config.fixed_seats else hand_id % len(self.seats)
        seating = self._seatings.get(key)
        if seating is None:
            seat_of = self._position_to_seat(hand_id)
            ordered = [(self.seats[s], p) for p, s in sorted(enumerate(seat_of), key=lambda ps: ps[1])]
            seating = self._seatings[key] = (seat_of, ordered)
        return seating

    def _position_to_seat(self, hand_id: int) -> list[int]:
        n = len(self.seats)
        if self.config.fixed_seats:
            return list(range(n))
        # Seat s plays position (s - h) mod N, so position p is seat (p + h) mod N.
        return [(p + hand_id) % n for p in range(n)]

    # -- the hand loop ---------------------------------------------------------
    #
    # Callback style: no Deferred and no coroutine step per action. A hand runs
    # in _advance until it needs a line the acting seat has not sent yet; then
    # it returns, and seat_line calls _advance again with that line. Only a
    # series of hands has a Deferred (awaited by run()): one hand when hand
    # hooks wait between hands, else every hand left.

    def _play_hand(self, state: State, deal: Deal,
                   lines: HandLines | None) -> defer.Deferred[tuple[State, Deal]]:
        """Play one hand, and the ones after it when nothing waits between hands.

        The Deferred fires with the last hand played (its state and deal)
        when it is over, or fails with why the match ended early. With hand
        hooks (the results' accounting) it is always this one hand; without
        them the next hand begins as soon as one ends, with no Deferred and
        no coroutine step in between (:meth:`_following_hand`).
        """
        hand = self._new_hand(state, deal, lines, defer.Deferred())
        self._advance(hand, None)
        return hand.done

    def _new_hand(self, state: State, deal: Deal, lines: HandLines | None,
                  done: defer.Deferred[tuple[State, Deal]]) -> _Hand:
        """Set up ``state`` as the hand being played (nothing sent yet; ``lines``
        are its lines if drawn already)."""
        seats = self.seats
        seat_of, ordered = self._seating(state.hand_id)
        for seat in seats:
            seat.hand_time = 0.0
            seat.trace_bytes = 0
        self.current_hand = (state, deal, seat_of)
        relay = self.relay
        if any(relay.ever_paused):
            relay.new_hand(self.clock.seconds())
        t_response, t_hand, t_match = self._limits
        hand = _Hand(state, deal, seat_of, ordered, HandLines(state, deal) if lines is None else lines,
                     t_response, t_hand, t_match, done)
        self._hand = hand
        self._turn = None
        return hand

    def _following_hand(self, hand: _Hand) -> _Hand | None:
        """The hand after ``hand``, set up now, if it may begin at once.

        It may not when hand hooks wait between hands, when the match is
        over or failing, or before :meth:`run` gave the deals.
        """
        next_id = hand.state.hand_id + 1
        if not self._may_follow(next_id):
            return None
        drawn = self._draw(next_id)
        return self._new_hand(drawn.state, drawn.deal, drawn.lines, hand.done)

    def _may_follow(self, next_id: int) -> bool:
        """Whether hand ``next_id`` may begin as soon as the hand before it ends."""
        return (not self.hand_hooks and self._deals is not None and next_id < self.config.hands
                and self._failure is None)

    def _draw(self, hand_id: int) -> _Drawn:
        """Hand ``hand_id``, the next of the deals: the one drawn ahead, or drawn now."""
        drawn = self._drawn
        if drawn is not None:
            self._drawn = None
            if drawn.state.hand_id != hand_id:  # the deals are drawn in order, one per hand
                raise RuntimeError(f"hand {drawn.state.hand_id} was drawn ahead, "
                                   f"but hand {hand_id} is next")
            return drawn
        deals = self._deals
        assert deals is not None
        return _Drawn(State(self.game, hand_id), deals.deal(self.game))

    def _draw_ahead(self, hand: _Hand) -> None:
        """Draw the hand after ``hand`` now, if it will follow it at once: called
        while a bot thinks (the second wait of ``hand``), so that the end of a
        hand sends the next hand's first states sooner. The deals are the
        same: each hand's is drawn in order, once (:meth:`_draw`)."""
        next_id = hand.state.hand_id + 1
        if self._drawn is None and self._may_follow(next_id):
            self._drawn = self._draw(next_id)

    def _advance(self, hand: _Hand, line: str | None) -> None:
        """Play ``hand`` on (with ``line``, the acting seat's newest line, if any).

        Whatever ends the hand early -- a MatchAborted, a failed write, a
        dealer bug -- fails the hand's Deferred, so run() handles it.
        """
        try:
            state = hand.state
            while True:
                turn = self._turn
                if turn is None:
                    if state.finished:
                        self._hand = None
                        following = self._next_hand_begun(hand)
                        if following is None:
                            if self._ahead is not None:
                                self._ahead_mismatch("the next hand was sent but does not begin")
                            hand.done.callback((state, hand.deal))
                            return
                        hand, state = following, following.state
                        continue
                    if self._failure is not None:
                        raise self._failure
                    turn = self._turn = self._begin_turn(hand)
                if line is None:
                    seat = turn.seat
                    if seat.queue and self._failure is None:
                        line = self._pop_queued(seat)
                    else:
                        self._wait_for_line(hand, turn)
                        return
                self._read_line(hand, turn, line)
                line = None
        except Exception:  # noqa: BLE001 (run() sorts out the failure)
            self._waiting = False
            self._drop_ahead()
            self._hand = self._turn = None
            hand.done.errback(Failure())  # type: ignore[no-untyped-call]

    def _next_hand_begun(self, hand: _Hand) -> _Hand | None:
        """End ``hand`` (finished) and begin the hand after it, if it may begin at once.

        Returns the following hand with its first decision point sent, or None
        when there is none now (see :meth:`_following_hand`).

        Without the trace, the finished hand is recorded (its values, the
        ``.log``, the hand's events) right after the next hand's first states
        are out, while the bot to act thinks, instead of before: with fast
        bots the hand boundary is the longest step of a match, and the bots
        see the same lines in the same order either way (a hand's final
        states are queued now and go out ahead of the next hand's first). It
        is recorded even if beginning the next hand fails. The reference
        too sends a hand's final states before it logs the hand. With the
        trace, everything of the finished hand comes first, so the trace reads
        as the reference's.
        """
        if self.trace.messages:
            self._end_hand(hand)
            return self._following_hand(hand)
        self._queue_final_states(hand)
        try:
            following = self._following_hand(hand)
            if following is not None:
                self._turn = self._begin_turn(following)
        finally:
            self._record_end(hand)
        turn = self._turn
        if following is not None and turn is not None:
            # The bot's clock starts after the dealer's own writes (a slow disk's
            # time is never charged to the bot; it may think meanwhile, uncharged).
            turn.sent = turn.charged_to = turn.heard = self.clock.seconds()
        return following

    def _begin_turn(self, hand: _Hand) -> _Turn:
        """Send the states of a new decision point: one send, to the seat to act.

        After a hand's first decision point, the other seats' states are
        queued and go out, in order, with the next line sent to them (their
        turn, a range query, the next hand, the end of the match; at most
        ``SeatProtocol.MAX_QUEUED_LINES`` wait): a seat needs them only when
        it is to act, and one send per action instead of one per seat saves
        the dealer a system call and a bot that is not to act a wake-up per
        action. A hand's first states go to every seat at once, and so does
        every state while range queries are in play (a seat announced them,
        or ``--queryable``), as from the reference.
        """
        state = hand.state
        actor = state.current_player
        texts = hand.lines.texts()
        text = texts[actor]
        ahead = self._ahead
        if ahead is not None:  # the read step sent this state already
            self._ahead = None
            self._check_ahead(ahead, hand, actor, text)
            if ahead.error is not None:
                raise ahead.error
            if ahead.held:  # the check the send would have made here
                seatio.check_unsent(ahead.sent_to)
            # As below (a seat may have announced range queries while the state was ready).
            at_once = hand.first_turn or True in self.relay.queryable
            hand.first_turn = False
            for seat, position in hand.ordered:
                protocol = seat.protocol
                if protocol is not None and position != actor:
                    if at_once:  # as _send_states
                        seatio.send_line(protocol, texts[position])
                    else:
                        seatio.queue_line(protocol, texts[position])
        # A hand's first states go to every seat at once; with range queries in
        # play, every state does (queries and answers are about them).
        elif hand.first_turn or True in self.relay.queryable:
            hand.first_turn = False
            self._send_states(hand, texts, actor, defer_others=False)
        elif self.trace.messages:
            self._send_states(hand, texts, actor, defer_others=True)
        else:  # the usual case, as _send_states but without the trace
            for seat, position in hand.ordered:
                protocol = seat.protocol
                if protocol is not None:
                    if position == actor:
                        seatio.send_line(protocol, text)
                    else:
                        seatio.queue_line(protocol, texts[position])
        seat = self.seats[hand.seat_of[actor]]
        sent = self.clock.seconds()
        relay = self.relay
        paused = 0.0
        if relay.ever_paused[seat.index]:
            # Time with the seat's own range queries out is not charged to it
            # (up to the budget's pause caps per decision and per hand).
            relay.begin_decision(seat.index, sent)
            paused = relay.paused(seat.index, sent)
        return _Turn(seat, actor, text + ":", sent, paused)

    def _check_ahead(self, ahead: seatio.Ahead, hand: _Hand, actor: int, text: str) -> None:
        """The lines the read step sent ahead must be the ones the rules give that seat now:
        those of the hand just ended, if any (:meth:`_queue_final_states`), then ``text``."""
        protocol = self.seats[hand.seat_of[actor]].protocol
        given = ahead.given
        given.append(text)
        if ahead.sent_to is not protocol or ahead.sent_text != "\r\n".join(given):
            self._ahead_mismatch(f"sent {ahead.sent_text!r}, the rules give {given!r}")

    def _ahead_mismatch(self, what: str) -> None:
        """The next state sent ahead of a reply is not the one the reply gives: a dealer bug."""
        raise MatchAborted(Cause.INTERNAL, f"internal error: the state sent ahead of the reply "
                           f"was wrong ({what})", None, EXIT_INTERNAL)

    def _send_states(self, hand: _Hand, texts: list[str], actor: int, defer_others: bool) -> None:
        """Send the acting seat its state, then every other seat its own, now or
        with its next send (``defer_others``); the trace lists them in seat order.

        The seat to act goes first: its answer is what the match waits for, and
        each send before it would delay it by a system call (one that wakes a bot).
        """
        seat = self.seats[hand.seat_of[actor]]
        if seat.protocol is not None:
            seatio.send_line(seat.protocol, texts[actor])
        messages = self.trace.messages
        for seat, position in hand.ordered:
            text = texts[position]
            protocol = seat.protocol
            if protocol is not None and position != actor:
                if defer_others:
                    seatio.queue_line(protocol, text)
                else:
                    seatio.send_line(protocol, text)
            if messages:
                self.trace.to(seat.index, text)

    def _read_line(self, hand: _Hand, turn: _Turn, line: str) -> None:
        """Take one line of the acting seat: its action, or a line to ignore.

        The common reply (the echoed state exactly as sent) is read inline;
        the rare lines go to their own steps (_read_other_reply, _ignore_reply,
        _note_correction)."""
        state = hand.state
        seat = turn.seat
        now = self.clock.seconds() if self._ahead is None else self._line_time_ahead(turn, line)
        turn.heard = now  # the seat's last line (any line), for --idle_timeout
        relay = self.relay
        paused_now = relay.paused(seat.index, now) if relay.ever_paused[seat.index] else 0.0
        if self.trace.messages:
            self._trace_reply(seat, line)
        problem: str | None = None
        expected = turn.expected
        if line.startswith(expected):
            # The usual case: the echoed state is exactly the one sent,
            # so only the action needs reading (parse_reply would replay
            # the whole betting through the rules again).
            action, action_problem = read_reply_action(line[len(expected):], self.game)
        else:
            read = self._read_other_reply(hand, turn, line)
            if read is None:  # a comment: skipped and not charged
                return
            action, action_problem, problem = read
        # Charge the time since the last charged line (the reference
        # charges from the send each time, counting some time twice).
        elapsed = now - turn.charged_to - (paused_now - turn.paused_mark)
        turn.charged_to = now
        turn.paused_mark = paused_now
        if elapsed > 0.0:
            seat.hand_time += elapsed
            seat.match_time += elapsed
        if seat.hand_time > hand.t_hand or seat.match_time > hand.t_match:
            self._check_budgets(seat, hand.t_hand, hand.t_match)
        hand_id = state.hand_id
        if problem is not None:
            if self._ahead is not None:
                self._ahead_mismatch(f"a reply the rules ignore: {problem}")
            self._ignore_reply(seat, turn, hand_id, problem)
            return
        answer_s = seat.last_reply_s = now - turn.sent
        polled = turn.polled
        if polled is not None and self.busy_poll is not None:
            self.busy_poll.record(polled, answer_s)
        applied, correction = correct_action(state, action, action_problem)
        if correction is not None:
            if self._ahead is not None:
                self._ahead_mismatch(f"an action the rules correct: {correction.message}")
            self._note_correction(seat, hand_id, correction)
        state.apply(applied)
        self._turn = None
        sent = turn.sent
        if self.events.hooks:
            self.events.notify(ev.ActionPlayed(seat=seat.index + 1, hand=hand_id,
                                               action=applied.text(), seconds=now - sent,
                                               corrected=correction is not None))
        if self._tlog is not None:
            self._tlog.write(f"{applied.text()} {hand_id} {sent:.6f} {now:.6f}\n")

    def _line_time_ahead(self, turn: _Turn, line: str) -> float:
        """The time of the acting seat's ``line`` while a state is made ready for it
        (:meth:`_read_line`); the state goes unless the read step sent it on this line.

        If it did (:meth:`_begin_turn` checks it), the line's time is the one the
        read step checked against the deadline, and ``_ahead`` stays set: the
        rules must neither ignore the line nor correct its action.
        """
        ahead = self._ahead
        assert ahead is not None
        protocol = turn.seat.protocol
        if protocol is not None and protocol.ahead is ahead:
            protocol.ahead = None  # one reply per decision point
        if ahead.sent_to is None:
            self._ahead = None
            return self.clock.seconds()
        if not line.startswith(turn.expected):
            self._ahead_mismatch(f"a reply that does not echo the state: {line[:80]!r}")
        return ahead.heard

    def _trace_reply(self, seat: _Seat, line: str) -> None:
        """Trace a line of the seat (up to its trace bytes per hand; then only count it)."""
        if seat.trace_bytes < self.config.budget.trace_bytes_per_hand:
            seat.trace_bytes += len(line)
            self.trace.from_(seat.index, line)
        else:
            seat.untraced += 1

    def _read_other_reply(
        self, hand: _Hand, turn: _Turn, line: str,
    ) -> tuple[Action | None, str | None, str | None] | None:
        """Read a line that does not echo the sent state verbatim: (action, its
        problem, the reason to ignore the line or None); None for a comment
        (skipped, not charged, but counted)."""
        state = hand.state
        try:
            reply = parse_reply(line, self.game)
        except ParseError:
            return None, None, "bad state format in response"
        if reply is None:
            turn.ignored += 1
            if turn.ignored > self.config.max_ignored:
                self._too_many_ignored(turn.seat, turn.ignored, state.hand_id, "a comment line")
            return None
        problem = None
        if not same_decision_point(reply.state, matchstate_for(state, hand.deal, turn.position)):
            problem = "ignoring un-requested response"
        return reply.action, reply.problem, problem

    def _ignore_reply(self, seat: _Seat, turn: _Turn, hand_id: int, problem: str) -> None:
        """Count, trace and publish an unusable line (past the first few of the hand, only count
        it: dealer/budget.py ``LineCosts``); too many in a row, or in the hand, end the match."""
        turn.ignored += 1
        seat.ignored += 1
        costs = self.relay.line_costs[seat.index]
        charge = costs.charge(LineKind.REPLY_IGNORED, hand_id, None)
        if charge == Charge.LOG:
            self.trace.line(f"WARNING: {problem}")
            self.events.emit(ev.ReplyIgnored(seat=seat.index + 1, hand=hand_id, problem=problem))
        elif charge == Charge.COUNT:
            self.relay.hold(seat.index)  # its next lines wait: its cost, not the other matches'
        if turn.ignored > self.config.max_ignored:
            self._too_many_ignored(seat, turn.ignored, hand_id, problem)
        if charge == Charge.OVER:
            raise MatchAborted(Cause.OVER_BUDGET, f"{seat.label()} {costs.over()}", seat.index)

    def _note_correction(self, seat: _Seat, hand_id: int, correction: Correction) -> None:
        """Count, trace and publish an action the rules corrected (after the warnings the
        reference prints before the correction's own)."""
        for note in correction.notes:
            self.trace.line(f"WARNING: {note}")
        message = correction.message
        seat.corrections += 1
        self.trace.line(f"WARNING: {message}")
        self.events.emit(ev.ActionCorrected(seat=seat.index + 1, hand=hand_id, correction=message))

    def _too_many_ignored(self, seat: _Seat, count: int, hand_id: int, last: str) -> None:
        raise MatchAborted(
            Cause.GARBAGE,
            f"{seat.label()} sent {count} unusable lines in a row in hand {hand_id} "
            f"(limit --max_ignored {self.config.max_ignored}; last: {last})",
            seat.index,
        )

    def _deadline(self, seat: _Seat, sent: float, charged_to: float, heard: float,
                  t_response: float, t_hand: float, t_match: float) -> tuple[float, Cause, str]:
        """When the acting seat's wait must end, and how to report it if it does."""
        response = sent + t_response
        hand = charged_to + (t_hand - seat.hand_time)
        match = charged_to + (t_match - seat.match_time)
        messages = self._deadline_messages[seat.index]
        idle_ms = self.config.idle_timeout_ms
        if idle_ms is not None:
            idle = heard + idle_ms / 1000.0
            if idle < response and idle < hand and idle < match:
                return idle, Cause.IDLE, messages[3]
        if response <= hand and response <= match:
            return response, Cause.TIMEOUT, messages[0]
        if hand <= match:
            return hand, Cause.OUT_OF_TIME, messages[1]
        return match, Cause.OUT_OF_TIME, messages[2]

    def _check_budgets(self, seat: _Seat, t_hand: float, t_match: float) -> None:
        if seat.hand_time > t_hand:
            raise MatchAborted(Cause.OUT_OF_TIME, f"{seat.label()} ran out of time "
                               f"({seat.hand_time:.3f} s in this hand; t_hand {t_hand:g})", seat.index)
        if seat.match_time > t_match:
            raise MatchAborted(Cause.OUT_OF_TIME, f"{seat.label()} ran out of time "
                               f"({seat.match_time:.3f} s in the match; budget {t_match:g})", seat.index)

    def _end_hand(self, hand: _Hand) -> None:
        """Queue ``hand``'s final states and record it."""
        self._queue_final_states(hand)
        self._record_end(hand)

    def _queue_final_states(self, hand: _Hand) -> None:
        """Queue the final state of ``hand`` for every seat: each goes out with the
        seat's next line (the next hand's first state, or at the end of the match)."""
        messages = self.trace.messages
        texts = hand.lines.texts()
        ahead = self._ahead
        for seat, position in hand.ordered:
            text = texts[position]
            protocol = seat.protocol
            if protocol is not None:
                if ahead is not None and protocol is ahead.sent_to:
                    ahead.given.append(text)  # sent ahead (_begin_turn checks it)
                else:
                    seatio.queue_line(protocol, text)
            if messages:
                self.trace.to(seat.index, text)

    def _record_end(self, hand: _Hand) -> None:
        """Record the finished ``hand``: its values and SCORE totals, the ``.log``,
        its events, and the trace's end-of-hand lines."""
        state = hand.state
        for seat in self.seats:
            if seat.untraced:
                self.trace.line(f"WARNING: {seat.untraced} more lines from seat {seat.index + 1} "
                                f"in hand {state.hand_id} not traced (limit trace_bytes_per_hand "
                                f"{self.config.budget.trace_bytes_per_hand})")
                seat.untraced = 0
        self._record_hand(state, hand.deal, hand.seat_of, write=True)
        hand_id = state.hand_id
        if hand_id % 100 == 0:
            for seat in self.seats:
                self.trace.progress(f"Seconds cumulatively spent in match for seat {seat.index}: "
                                    f"{int(seat.match_time)}")
        self.trace.flush()

    def _record_hand(self, state: State, deal: Deal, seat_of: Sequence[int], write: bool) -> None:
        values = state.values(deal.hole, deal.board_cards)
        by_seat = [0.0] * len(self.seats)
        for position, seat in enumerate(seat_of):
            by_seat[seat] = values[position]
        if write:
            # A hand counts once it is on disk: if a write fails, the SCORE covers the logged hands.
            if self._tlog is not None:
                self._tlog.flush()  # the tlog must never lag the .log (resume)
            if self._log is not None:
                names = tuple(self.seats[s].name for s in seat_of)
                self._log.write(log_state_text(state, deal, values, names) + "\n")
                self._log.flush()
        totals = self.result.totals
        for seat, value in enumerate(by_seat):
            totals[seat] += value
        self.result.finished += 1
        if self.config.keep_hand_values:
            self.result.hand_values[state.hand_id] = tuple(by_seat)
        if write and self.events.wants(ev.HandFinished):
            self.events.emit(ev.HandFinished(hand=state.hand_id, betting=state.betting_string(),
                                             values=tuple(by_seat)))

    # -- logs and resume -------------------------------------------------------

    def _open_logs(self) -> None:
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
                self._log = self.opener(config.log_path, config.resume)
                self._log.write("".join(line + "\n" for line in header))
                self._log.flush()
            if config.write_tlog:
                self._tlog = self.opener(config.tlog_path, config.resume)
        except WriteFailed as error:
            raise MatchAborted(Cause.STARTUP, error.message, None, EXIT_FAILED) from error
        except OSError as error:
            raise MatchAborted(Cause.STARTUP, f"cannot write {error.filename}: {error.strerror}",
                               None, EXIT_FAILED) from error
        for line in header:
            self.trace.line(line)
        self.trace.flush()

    def _resume(self) -> tuple[int, tuple[State, Deal] | None]:
        """Replay the tlog: returns the first hand to play and a hand in progress.

        Finished hands are added to the totals; those missing from the .log
        (killed between the tlog and the log) are written to it.
        """
        config = self.config
        logged: set[int] = set()
        if config.log_path.exists():
            with open(config.log_path, encoding="ascii", errors="replace") as log:
                for line in log:
                    if line.startswith("STATE:"):
                        logged.add(int(line.split(":", 2)[1]))
        records: list[tuple[Action, int, float, float]] = []
        if config.tlog_path.exists():
            with open(config.tlog_path, encoding="ascii", errors="replace") as tlog:
                for number, line in enumerate(tlog, 1):
                    if not line.endswith("\n"):
                        break  # a line cut short by a kill
                    try:
                        records.append(_parse_tlog_line(line, self.game))
                    except (ValueError, ParseError) as error:
                        raise MatchAborted(Cause.STARTUP, f"{config.tlog_path}:{number}: {error}",
                                           None, EXIT_FAILED) from error
        if not records:
            return 0, None
        deals = DealSource(config.seed)
        hand_id = 0
        state = State(self.game, 0)
        deal = deals.deal(self.game)
        for action, record_hand, sent, received in records:
            if state.finished:
                hand_id += 1
                state, deal = State(self.game, hand_id), deals.deal(self.game)
            if record_hand != hand_id:
                raise MatchAborted(Cause.STARTUP, f"{config.tlog_path}: hand {record_hand} where hand "
                                   f"{hand_id} was expected", None, EXIT_FAILED)
            seat_of = self._position_to_seat(hand_id)
            self.seats[seat_of[state.current_player]].match_time += max(0.0, received - sent)
            try:
                state.apply(action)
            except IllegalActionError as error:
                raise MatchAborted(Cause.STARTUP, f"{config.tlog_path}: hand {hand_id}: {error}",
                                   None, EXIT_FAILED) from error
            if state.finished:
                self._record_hand(state, deal, seat_of, write=hand_id not in logged)
        self.events.emit(ev.Resumed(actions=len(records), hands_finished=self.result.finished,
                                    mid_hand=not state.finished))
        if state.finished:
            return hand_id + 1, None
        return hand_id, (state, deal)

    # -- ending --------------------------------------------------------------

    def _record_failure(self, failure: MatchAborted) -> None:
        result = self.result
        result.exit_code = failure.exit_code
        result.cause = failure.cause
        result.message = failure.message
        result.seat = failure.seat
        self.trace.line(f"ERROR: {failure.message}")
        self.events.emit(ev.MatchAborted(cause=failure.cause,
                                         seat=None if failure.seat is None else failure.seat + 1,
                                         error=failure.message, hands_finished=result.hands_played))
        if self._log is not None and failure.exit_code != EXIT_FAILED:
            self._log.write(f"# ERROR: {failure.message}\n")

    def _close_files(self) -> WriteFailed | None:
        """Close the .log and .tlog; returns the first write failure met, if any."""
        first: WriteFailed | None = None
        for log in (self._tlog, self._log):
            if log is not None:
                try:
                    log.close()
                except WriteFailed as error:
                    first = first or error
        self._log = self._tlog = None
        return first

    def _finish(self) -> None:
        result = self.result
        self._done = True
        result.corrections = [s.corrections for s in self.seats]
        result.ignored = [s.ignored for s in self.seats]
        self.stop_listening()
        self._cancel_timer()
        self.relay.close()
        if self._failure is None:
            self._failure = MatchAborted(Cause.FINISHED, "the match is over", None, EXIT_OK)
        score = result.score_line()
        if result.exit_code != EXIT_FAILED:
            if self._log is not None:
                self._log.write(score + "\n")
            self.trace.progress(f"FINISHED at {self.clock.seconds():.6f}")
            self.trace.line(score)
        failed = self._close_files()
        if failed is not None and result.exit_code != EXIT_FAILED:
            # The last lines (SCORE) could not be written: say so; the hands are on disk.
            if result.cause is None:
                result.completed = False
                result.exit_code, result.cause, result.message = EXIT_INTERNAL, Cause.WRITE_FAILED, failed.message
            self.trace.line(f"ERROR: {failed.message}")
            self.events.emit(ev.MatchAborted(cause=Cause.WRITE_FAILED, error=failed.message,
                                             hands_finished=result.hands_played))
        self.trace.flush()
        for seat in self.seats:
            for candidate in seat.candidates:
                if candidate.handshake_timer is not None and candidate.handshake_timer.active():
                    candidate.handshake_timer.cancel()
                candidate.refuse()
            seat.candidates = []
        ending = ev.MatchFinished if result.completed else ev.MatchEndedEarly
        self.events.emit(ending(
            score=score, hands=result.hands_played, corrections=tuple(result.corrections),
            ignored=tuple(result.ignored), exit_code=result.exit_code,
            totals={name: format_chips(v) for name, v in zip(result.names, result.totals)},
        ))
        self.events.close()
        for seat in self.seats:
            if seat.protocol is not None:
                seat.protocol.close()
                if seat.protocol.unsent_bytes():
                    # A bot that does not read would hold its connection open forever.
                    self.clock.callLater(self.config.budget.close_grace_s, seat.protocol.abort)


def _parse_tlog_line(line: str, game: GameDef) -> tuple[Action, int, float, float]:
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

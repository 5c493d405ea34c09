"""One ACPC match, composed of the dealer's parts: seating, the hand loop, the turn policy
and the writers.

:class:`Match` builds the parts of one match and runs it: it listens on one port
per seat and waits for the bots (:class:`dealer.seating.Seating`), plays the hands
as the reference dealer does (:class:`dealer.handloop.HandLoop`: the same seat
rotation, deals, ``MATCHSTATE`` traffic, leniency and ``.log`` lines), with each
acting seat's reply awaited within the time limits of
:class:`dealer.turns.TurnPolicy` on an injectable clock, and records the match
(:class:`dealer.writers.MatchWriters`, the events file). It owns only what joins
them: the order of the phases (:meth:`Match.run`), the hand hooks awaited
between hands, and the ending -- :meth:`Match.abort` (the first failure wins)
and the ``ERROR``/``SCORE`` lines. Each part takes what it needs (clock,
writers, policy, an ``abort`` callable) as arguments, so it is tested alone in
memory (tests/dealer/test_seating.py, test_handloop.py, test_turns.py,
test_writers.py).

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

import _socket
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

from twisted.internet import defer

from acpc_lbr.runtime.exit_codes import EXIT_FAILED, EXIT_INTERNAL, EXIT_OK
from dealer import events as ev
from dealer.busypoll import BusyPoll, MatchesPlaying
from dealer.config import DEFAULT_START_TIMEOUT_MS, MatchAborted, MatchConfig, MatchResult
from dealer.events import Cause, Opener, Trace, WriteFailed, open_record_file
from dealer.handloop import HandHook, HandLoop
from dealer.interfaces import Clock, MatchReactor
from dealer.relay import QueryFailed, QueryRelay
from dealer.seat import SeatProtocol
from dealer.seating import Seating
from dealer.seats import Seat
from dealer.sendstates import SendStates
from dealer.turns import TurnPolicy
from dealer.writers import MatchWriters, open_event_log
from protocol.deal import Deal
from protocol.rules import Action, State
from protocol.wire import MatchState, format_chips

if TYPE_CHECKING:
    from protocol.arrays import FloatArray  # numpy: not loaded by a plain dealer (dealer/relay.py)


__all__ = ["DEFAULT_START_TIMEOUT_MS", "Match", "MatchAborted", "MatchConfig", "MatchResult",
           "QueryFailed"]


class Match:
    """A match between bots on TCP, played like the reference dealer plays it: a thin
    composition of the dealer's parts.

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
        playing: the count of the process's matches playing, shared by them (the busy
            poll's when not given, else the match's own).
        send_states: when the states of the seats not to act are sent (dealer/sendstates.py;
            by default ``config.send_states``, measured with this match's busy poll and count).

    Attributes:
        seats: the :class:`dealer.seats.Seat` of each seat.
        seating: the ports and handshakes (:class:`dealer.seating.Seating`).
        hand_loop: the hands (:class:`dealer.handloop.HandLoop`).
        policy: the turn policy (:class:`dealer.turns.TurnPolicy`).
        writers: the ``.log`` and ``.tlog`` (:class:`dealer.writers.MatchWriters`).
        events: the event log; relay: the range-query relay (counters in ``relay.counts``).
        hand_hooks: awaited after every hand, before the next deal, with (state, deal,
            seat of each position): the results' own range queries (dealer/results.py).
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
        playing: MatchesPlaying | None = None,
        send_states: SendStates | None = None,
    ) -> None:
        self.config = config
        self.busy_poll = busy_poll
        if playing is None:
            playing = busy_poll.playing if busy_poll is not None else MatchesPlaying()
        elif busy_poll is not None and busy_poll.playing is not playing:
            raise ValueError("a match's busy poll must count the matches playing with it")
        self.playing = playing
        if send_states is None:
            send_states = SendStates(config.send_states, playing, busy_poll)
        elif send_states.playing is not playing or send_states.busy_poll is not busy_poll:
            raise ValueError("a match's way of sending states must measure with its busy poll "
                             "and its count of matches playing")
        self.send_states = send_states
        self.game = config.game
        self.reactor = reactor
        self.clock: Clock = clock if clock is not None else reactor
        self.trace = Trace(stderr, config.trace_messages, trace_prefix)
        self.opener = opener
        self.events = open_event_log(config, stderr if console else None, opener, self._write_failed)
        self.seats = [Seat(i, name) for i, name in enumerate(config.names)]
        self.result = MatchResult(
            config.name, config.names, [0.0] * len(self.seats),
            corrections=[0] * len(self.seats), ignored=[0] * len(self.seats),
        )
        self._done = False
        self.finished: defer.Deferred[MatchResult] | None = None
        self.hand_hooks: list[HandHook] = []
        self.relay = QueryRelay(
            self.game, config.names, config.budget, self.clock, self.events,
            lambda: self.hand_loop.current_hand, self.bot_over_budget, config.t_query_ms,
            config.queryable,
        )
        self._build_parts(reactor)

    def _build_parts(self, reactor: MatchReactor) -> None:
        """The parts, each given what it needs (the clock, the writers, the policy, abort)."""
        config, clock = self.config, self.clock
        self.writers = MatchWriters(config, self.opener, self.trace, self.events)
        self.policy = TurnPolicy(config, self.seats, clock, self.relay, self.busy_poll,
                                 self.trace.messages, self.abort, self.playing)
        self.hand_loop = HandLoop(config, self.seats, self.policy, self.writers, self.relay,
                                  self.events, self.trace, clock, self.result, self.hand_hooks,
                                  self.abort, self.send_states)
        # A connection must send VERSION within the handshake limit (or --idle_timeout if shorter).
        handshake_s = config.budget.handshake_s
        if config.idle_timeout_ms is not None:
            handshake_s = min(handshake_s, config.idle_timeout_ms / 1000.0)
        self.seating = Seating(
            self.seats, self.hand_loop, reactor=reactor, clock=clock, events=self.events,
            trace=self.trace, budget=config.budget, max_line=config.max_line,
            handshake_s=handshake_s, abort=self.abort, on_seated=self._seated,
        )

    def _seated(self, seat: Seat, protocol: SeatProtocol) -> None:
        self.relay.attach(seat.index, protocol)

    @property
    def current_hand(self) -> tuple[State, Deal, list[int]] | None:
        """The hand being played: (live state, deal, seat of each position)."""
        return self.hand_loop.current_hand

    # -- listening ---------------------------------------------------------

    def listen(self, bound: Sequence[_socket.socket] = ()) -> list[int]:
        """Open one listening port per seat and return the port numbers.

        Args:
            bound: the seats' sockets, already listening (dealer/startup.py): listened on
                instead of new ports (:meth:`dealer.seating.Seating.listen`).

        Raises:
            MatchAborted: a port could not be opened (exit code 1).
        """
        return self.seating.listen(self.config.ports, self.config.bind, bound)

    def stop_listening(self) -> None:
        """Close every listening port that is still open."""
        self.seating.stop_listening()

    # -- control -----------------------------------------------------------

    def abort(self, failure: MatchAborted) -> None:
        """End the match with ``failure`` (the first failure wins)."""
        if self.hand_loop.failure is not None or self._done:
            return
        self.policy.stop()
        # A hand waiting for a line ends now; so does the wait for the seats.
        self.hand_loop.fail(failure)
        self.seating.fail(failure)
        # Outstanding range queries (e.g. the results' queries between hands) fail now
        # rather than after t_query.
        self.relay.close()

    def bot_over_budget(self, seat_index: int, what: str, cause: Cause = Cause.OVER_BUDGET) -> None:
        """End the match because ``seat_index`` went over one of its limits.

        Args:
            seat_index: the seat at fault.
            what: what it did, ending with the limit (``sent ... (limit X N)``).
            cause: the cause code of the ending.
        """
        self.abort(MatchAborted(cause, f"{self.seats[seat_index].label()} {what}", seat_index))

    def _write_failed(self, error: WriteFailed) -> None:
        """A log of this match cannot be written: the match ends (its seats are closed)."""
        self.abort(MatchAborted(Cause.WRITE_FAILED, error.message, None, EXIT_INTERNAL))

    def start(self) -> defer.Deferred[MatchResult]:
        """Run the match; the Deferred fires with its :class:`MatchResult` (never fails)."""
        self.finished = defer.ensureDeferred(self.run())
        return self.finished

    async def run(self) -> MatchResult:
        """Play the whole match (listen first) and return how it ended."""
        loop = self.hand_loop
        try:
            await self._phases()
            failure = loop.failure
            if failure is not None and failure.cause is not Cause.DISCONNECT:
                # A bot that broke a rule while the last hand's hooks waited on it (e.g. a
                # comment flood during that hand's IO queries) is charged as in any other
                # hand; leaving after the last hand is what bots do, so that one is not.
                raise failure
            self.result.completed = True
        except MatchAborted as failure:
            self._record_failure(failure)
        except WriteFailed as error:
            self._record_failure(MatchAborted(Cause.WRITE_FAILED, error.message, None, EXIT_INTERNAL))
        except Exception as error:  # noqa: BLE001 (a dealer bug: still leave a clean ending)
            self.events.emit(ev.InternalError(error=repr(error), exc_info=True))
            self._record_failure(MatchAborted(Cause.INTERNAL, f"internal error: {error!r}", None, EXIT_INTERNAL))
        except BaseException:  # GeneratorExit, KeyboardInterrupt: no ending to write
            self.writers.close()
            raise
        finally:
            if loop.started:
                self.playing.count -= 1
        self._finish()
        return self.result

    async def _phases(self) -> None:
        """Open the logs, resume, wait for the seats, then play every hand left."""
        config = self.config
        loop = self.hand_loop
        failed = self.events.failed
        if failed is not None and loop.failure is None:
            raise MatchAborted(Cause.STARTUP, failed.message, None, EXIT_FAILED)
        self.writers.open()
        start_hand, pending = self._resume() if config.resume else (0, None)
        await self.seating.wait(config.start_timeout_ms)
        loop.started = True
        self.playing.count += 1
        self.trace.progress(f"STARTED at {self.clock.seconds():.6f}")
        self.trace.flush()
        self.events.emit(ev.MatchStarted(hands=config.hands, seed=config.seed,
                                         names=tuple(config.names), first_hand=start_hand))
        loop.start_dealing(config.seed, start_hand + 1 if pending is not None else start_hand)
        await self._play(start_hand, pending)

    async def _play(self, hand_id: int, pending: tuple[State, Deal] | None) -> None:
        """Play the hands from ``hand_id`` (``pending``: a resumed hand in progress), awaiting
        the hand hooks after each (without hooks, one series plays them all)."""
        loop = self.hand_loop
        while hand_id < self.config.hands:
            if pending is not None:
                state, deal = pending
                pending = None
                lines = None
            else:
                drawn = loop.draw(hand_id)
                state, deal, lines = drawn.state, drawn.deal, drawn.lines
            state, deal = await loop.play_hand(state, deal, lines)
            for hook in self.hand_hooks:
                await hook(state, deal, loop.position_to_seat(state.hand_id))
            hand_id = state.hand_id + 1

    def _resume(self) -> tuple[int, tuple[State, Deal] | None]:
        """Replay the tlog: returns the first hand to play and a hand in progress."""
        logged, records = self.writers.read_resume(self.game)
        return self.hand_loop.replay(records, logged, self.config.seed, str(self.config.tlog_path))

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
        if failure.exit_code != EXIT_FAILED:
            self.writers.write_error(failure.message)

    def _finish(self) -> None:
        result = self.result
        self._done = self.hand_loop.over = True
        self.seating.accepting = False
        result.corrections = [s.corrections for s in self.seats]
        result.ignored = [s.ignored for s in self.seats]
        self.seating.stop_listening()
        self.policy.stop()
        self.relay.close()
        if self.hand_loop.failure is None:
            self.hand_loop.failure = MatchAborted(Cause.FINISHED, "the match is over", None, EXIT_OK)
        score = result.score_line()
        if result.exit_code != EXIT_FAILED:
            self.writers.write_score(score)
            self.trace.progress(f"FINISHED at {self.clock.seconds():.6f}")
            self.trace.line(score)
        self._close_files()
        self.trace.flush()
        self.seating.close()
        ending = ev.MatchFinished if result.completed else ev.MatchEndedEarly
        self.events.emit(ending(
            score=score, hands=result.hands_played, corrections=tuple(result.corrections),
            ignored=tuple(result.ignored), exit_code=result.exit_code,
            totals={name: format_chips(v) for name, v in zip(result.names, result.totals)},
        ))
        self.events.close()
        self._close_seats()

    def _close_files(self) -> None:
        """Close the .log and .tlog; a failure to write their last lines is said (the hands are on disk)."""
        result = self.result
        failed = self.writers.close()
        if failed is not None and result.exit_code != EXIT_FAILED:
            if result.cause is None:
                result.completed = False
                result.exit_code, result.cause, result.message = EXIT_INTERNAL, Cause.WRITE_FAILED, failed.message
            self.trace.line(f"ERROR: {failed.message}")
            self.events.emit(ev.MatchAborted(cause=Cause.WRITE_FAILED, error=failed.message,
                                             hands_finished=result.hands_played))

    def _close_seats(self) -> None:
        """Close every seat's connection once its output is out (dropped after a grace time)."""
        for seat in self.seats:
            protocol = seat.protocol
            if protocol is not None:
                protocol.close()
                if protocol.unsent_bytes():
                    # A bot that does not read would hold its connection open forever.
                    self.clock.callLater(self.config.budget.close_grace_s, protocol.abort)

"""The hand loop: deal, turns, apply through the rules, showdown -- one hand after another.

:class:`HandLoop` plays the hands of a match on seats already taken (the
seating's job, :mod:`dealer.seating`). It deals as the reference dealer does
(:class:`protocol.deal.DealSource`, the same seat rotation), sends each
decision point's ``MATCHSTATE`` lines, reads the acting seat's reply, applies
it through :mod:`protocol.rules` (with the reference's leniency,
:func:`protocol.rules.correct_action`), and at the end of a hand records it:
values and totals, the ``.log`` (through :class:`dealer.writers.MatchWriters`)
and the hand's events. It is the seated connections' :class:`dealer.seat.SeatListener`.

What it does not decide: how long a seat may take and what its time costs
(:class:`dealer.turns.TurnPolicy`, injected), when the match fails (it calls the
injected ``abort``; the match's :meth:`dealer.match.Match.abort` then calls
:meth:`HandLoop.fail`).

Callback style: no Deferred and no coroutine step per action. A hand runs in
``_advance`` until it needs a line the acting seat has not sent yet; then it
returns, and :meth:`HandLoop.seat_line` calls ``_advance`` again with that line.
Only a series of hands has a Deferred (:meth:`HandLoop.play_hand`): one hand
when hand hooks wait between hands, else every hand left.

Every action goes through here, so this module is compiled (protocol._variant.GROUP).
Tests drive it in memory, with ``task.Clock`` and ``StringTransport``
(tests/dealer/test_handloop.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from twisted.internet import defer
from twisted.python.failure import Failure

from acpc_lbr.runtime.exit_codes import EXIT_FAILED, EXIT_INTERNAL
from dealer import events as ev
from dealer import seatio
from dealer.budget import BotBudget, Charge, LineKind
from dealer.config import MatchAborted, MatchConfig, MatchResult
from dealer.eventlines import PendingLines
from dealer.events import Cause, EventLog, Trace
from dealer.interfaces import Clock
from dealer.relay import QueryRelay
from dealer.seat import SeatProtocol
from dealer.seats import Seat
from dealer.sendstates import AT_ONCE, MEASURED, SendStates
from dealer.turns import Opener, Turn, TurnPolicy, make_ahead
from dealer.writers import MatchWriters, TlogRecord
from protocol.deal import Deal, DealSource
from protocol.errors import IllegalActionError, ParseError
from protocol.gamedef import GameDef
from protocol.rules import Action, Correction, State, correct_action
from protocol.wire import HandLines, matchstate_for, parse_reply, read_reply_action, same_decision_point

#: Awaited after every hand, before the next deal: (state, deal, seat of each position).
HandHook = Callable[[State, Deal, list[int]], Awaitable[None]]


def _no_clock() -> float:
    """The time, for a match built without a clock (it is never played)."""
    raise RuntimeError("this match has no clock")


class Hand:
    """The hand being played: what every decision point of it needs."""

    __slots__ = ("deal", "done", "first_turn", "lines", "ordered", "seat_of", "state", "waits")

    def __init__(self, state: State, deal: Deal, seat_of: list[int],
                 ordered: list[tuple[Seat, int]], lines: HandLines,
                 done: defer.Deferred[tuple[State, Deal]]) -> None:
        self.state = state
        self.deal = deal
        #: The seat of each position, and (seat, position) in seat order.
        self.seat_of = seat_of
        self.ordered = ordered
        self.lines = lines
        #: Fires with the last hand played (state, deal) when this hand, and those
        #: begun right after it, are over; fails with why the match ended early.
        self.done = done
        #: No decision point of this hand was sent yet.
        self.first_turn = True
        #: Waits for a seat's line so far in this hand (the next hand is drawn at the second).
        self.waits = 0


class Drawn:
    """A hand drawn before it is played: its fresh state, its deal and its lines.

    Drawing a hand (the deal's random draws, the state, the rendered pieces of
    its lines) takes tens of microseconds; done while a bot thinks about its
    action (``HandLoop._draw_ahead``), it is off the path from the last
    action of a hand to the first state of the next.
    """

    __slots__ = ("deal", "lines", "opener", "state")

    def __init__(self, state: State, deal: Deal) -> None:
        self.state = state
        self.deal = deal
        self.lines = HandLines(state, deal)
        #: For the states made ready at the end of the hand before (HandLoop._opener):
        #: the seat to act first, its position in the hand before, its first line.
        self.opener: Opener | None = None


class HandLoop:
    """The hands of one match, played on its seats.

    Args:
        config: the match (hands, seat rotation, ``max_ignored``, the budget, ...).
        seats: the match's seats, in seat order.
        policy: the turn policy (deadlines, charges, polling, sending ahead).
        writers: the ``.log`` and ``.tlog``.
        relay: the range-query relay (its clock pauses, its per-seat line costs).
        events, trace: where the hands and their warnings are told.
        clock: the time source (``task.Clock`` in tests).
        result: where the totals, the hand values and the finished count go.
        hand_hooks: awaited between hands (the match's list, shared).
        abort: ends the match (the match's ``abort``, which calls :meth:`fail`).
        send_states: when the states of the seats not to act are sent (``--send_states``).
    """

    def __init__(self, config: MatchConfig, seats: list[Seat], policy: TurnPolicy,
                 writers: MatchWriters, relay: QueryRelay, events: EventLog, trace: Trace,
                 clock: Clock, result: MatchResult, hand_hooks: list[HandHook],
                 abort: Callable[[MatchAborted], None], send_states: SendStates) -> None:
        self.game: GameDef = config.game
        self.hands = config.hands
        self.fixed_seats = config.fixed_seats
        self.keep_hand_values = config.keep_hand_values
        self.max_ignored = config.max_ignored
        self.budget: BotBudget = config.budget
        self.seats = seats
        self.policy = policy
        self.writers = writers
        self.relay = relay
        self.events = events
        self.trace = trace
        self.clock = clock
        self.result = result
        self.hand_hooks = hand_hooks
        self.abort = abort
        # Read on every action, so kept here as native attributes: the clock, the relay and
        # the trace are Python objects, each read of theirs a dictionary lookup. None of
        # these is rebound while a match lasts (the relay's lists change in place).
        # (A match built without a clock, and never played, has none: some tests build one.)
        self._now: Callable[[], float] = getattr(clock, "seconds", _no_clock)
        self._queryable: list[bool] = relay.queryable
        #: When the states of the seats not to act go (--send_states): asked at every
        #: decision point when measured; else fixed, every state at once or not.
        self._send_ways: SendStates | None = send_states if send_states.mode == MEASURED else None
        self._always_at_once = send_states.mode == AT_ONCE
        self._ever_paused: list[bool] = relay.ever_paused
        self._trace_messages: bool = trace.messages
        #: The events file's pending lines (compiled: dealer/eventlines.py) and the event
        #: log's subscribers (the list changes in place): a hand's line goes straight there
        #: while only the file listens.
        self._event_lines: PendingLines = events.pending
        self._event_hooks: list[ev.EventHook] = events.hooks
        #: Why the match cannot go on (set by :meth:`fail`); the hand loop stops at it.
        self.failure: MatchAborted | None = None
        #: The match started playing (its seats are all taken), and it is over.
        self.started = False
        self.over = False
        #: The hand being played: (live state, deal, seat of each position) (the relay reads it).
        self.current_hand: tuple[State, Deal, list[int]] | None = None
        self._init_play_state()

    def _init_play_state(self) -> None:
        """The live state of play: the hand and decision point, the wait for a seat's
        line, the state made ready ahead and the deals (set as play goes)."""
        self._hand: Hand | None = None
        self._turn: Turn | None = None
        #: The hand waits for a line of seat _waiter_seat (seat_line resumes it).
        self._waiting = False
        self._waiter_seat = -1
        #: The next state made ready for the acting seat's likely replies (see
        #: _make_ahead), while it is to act; then, if the read step sent it, until
        #: _begin_turn has checked it.
        self._ahead: seatio.Ahead | None = None
        #: The match's deals, once :meth:`start_dealing` gave them.
        self.deals: DealSource | None = None
        #: The next hand, drawn ahead from deals (see _draw_ahead); None when not drawn yet.
        self._drawn: Drawn | None = None
        self._seatings: dict[int, tuple[list[int], list[tuple[Seat, int]]]] = {}

    # -- from the seated connections (SeatListener) -------------------------

    def seat_line(self, seat_index: int, line: str) -> None:
        seat = self.seats[seat_index]
        if self._waiting and self._waiter_seat == seat_index and not seat.queue:
            self._waiting = False
            self.policy.wait_turn = None
            hand = self._hand
            assert hand is not None
            self._advance(hand, line)
            return
        waiting = seat.queue_line(line)
        budget = self.budget
        if waiting > budget.max_queued_lines:
            self._over_budget(seat, f"sent more than {budget.max_queued_lines} lines "
                              "while it was not its turn (limit max_queued_lines "
                              f"{budget.max_queued_lines})")
        elif seat.queued_bytes > budget.max_queued_bytes:
            self._over_budget(seat, f"sent {seat.queued_bytes} bytes while it was not its "
                              f"turn (limit max_queued_bytes {budget.max_queued_bytes})")

    def _over_budget(self, seat: Seat, what: str) -> None:
        self.abort(MatchAborted(Cause.OVER_BUDGET, f"{seat.label()} {what}", seat.index))

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

    def seat_lost(self, seat_index: int, reason: Failure) -> None:
        seat = self.seats[seat_index]
        seat.lost = True
        if self.over:
            return
        if not self.started:
            when = "before the match started"
        elif self._waiter_seat == seat_index and self._waiting:
            when = "while acting"
        else:
            when = "while not acting"
        self.abort(MatchAborted(Cause.DISCONNECT, f"{seat.label()} disconnected {when}", seat_index))

    def fail(self, failure: MatchAborted) -> None:
        """The match cannot go on: what is made ready goes, and a hand waiting for a line
        ends now (its Deferred fails with ``failure``)."""
        self.failure = failure
        self._drop_ahead()
        if self._waiting:
            self._waiting = False
            hand, self._hand, self._turn = self._hand, None, None
            if hand is not None:
                hand.done.errback(failure)

    # -- hands ------------------------------------------------------------

    def start_dealing(self, seed: int, first_hand: int) -> None:
        """Deal from ``seed``, the next deal being hand ``first_hand``'s."""
        deals = DealSource(seed)
        deals.skip(self.game, first_hand)
        self.deals = deals

    def play_hand(self, state: State, deal: Deal,
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

    def seating(self, hand_id: int) -> tuple[list[int], list[tuple[Seat, int]]]:
        """The seat of each position in hand ``hand_id``, and (seat, position) in seat order.

        One of N seatings (the seats rotate); each is built once and shared
        by the hands that use it (neither list is changed).
        """
        key = 0 if self.fixed_seats else hand_id % len(self.seats)
        seating = self._seatings.get(key)
        if seating is None:
            seat_of = self.position_to_seat(hand_id)
            ordered = [(self.seats[s], p) for p, s in sorted(enumerate(seat_of), key=lambda ps: ps[1])]
            seating = self._seatings[key] = (seat_of, ordered)
        return seating

    def position_to_seat(self, hand_id: int) -> list[int]:
        """The seat of each position in hand ``hand_id`` (a new list)."""
        n = len(self.seats)
        if self.fixed_seats:
            return list(range(n))
        # Seat s plays position (s - h) mod N, so position p is seat (p + h) mod N.
        return [(p + hand_id) % n for p in range(n)]

    def _new_hand(self, state: State, deal: Deal, lines: HandLines | None,
                  done: defer.Deferred[tuple[State, Deal]]) -> Hand:
        """Set up ``state`` as the hand being played (nothing sent yet; ``lines``
        are its lines if drawn already)."""
        seat_of, ordered = self.seating(state.hand_id)
        for seat in self.seats:
            seat.hand_time = 0.0  # the turn policy's t_hand starts again
            seat.trace_bytes = 0
        self.current_hand = (state, deal, seat_of)
        relay = self.relay
        if True in self._ever_paused:
            relay.new_hand(self._now())
        hand = Hand(state, deal, seat_of, ordered, HandLines(state, deal) if lines is None else lines, done)
        self._hand = hand
        self._turn = None
        return hand

    def _following_hand(self, hand: Hand) -> Hand | None:
        """The hand after ``hand``, set up now, if it may begin at once.

        It may not when hand hooks wait between hands, when the match is
        over or failing, or before :meth:`start_dealing` gave the deals.
        """
        next_id = hand.state.hand_id + 1
        if not self._may_follow(next_id):
            return None
        drawn = self.draw(next_id)
        return self._new_hand(drawn.state, drawn.deal, drawn.lines, hand.done)

    def _may_follow(self, next_id: int) -> bool:
        """Whether hand ``next_id`` may begin as soon as the hand before it ends."""
        return (not self.hand_hooks and self.deals is not None and next_id < self.hands
                and self.failure is None)

    def draw(self, hand_id: int) -> Drawn:
        """Hand ``hand_id``, the next of the deals: the one drawn ahead, or drawn now."""
        drawn = self._drawn
        if drawn is not None:
            self._drawn = None
            if drawn.state.hand_id != hand_id:  # the deals are drawn in order, one per hand
                raise RuntimeError(f"hand {drawn.state.hand_id} was drawn ahead, "
                                   f"but hand {hand_id} is next")
            return drawn
        deals = self.deals
        assert deals is not None
        return Drawn(State(self.game, hand_id), deals.deal(self.game))

    def _draw_ahead(self, hand: Hand) -> None:
        """Draw the hand after ``hand`` now, if it will follow it at once: called
        while a bot thinks (the second wait of ``hand``), so that the end of a
        hand sends the next hand's first states sooner. The deals are the
        same: each hand's is drawn in order, once (:meth:`draw`)."""
        next_id = hand.state.hand_id + 1
        if self._drawn is None and self._may_follow(next_id):
            self._drawn = self.draw(next_id)

    # -- the loop -------------------------------------------------------------

    def _advance(self, hand: Hand, line: str | None) -> None:
        """Play ``hand`` on (with ``line``, the acting seat's newest line, if any).

        Whatever ends the hand early -- a MatchAborted, a failed write, a
        dealer bug -- fails the hand's Deferred, so the match handles it.
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
                    if self.failure is not None:
                        raise self.failure
                    turn = self._turn = self._begin_turn(hand)
                if line is None:
                    seat = turn.seat
                    if seat.queue and self.failure is None:
                        line = seat.pop_queued()
                    else:
                        self._wait_for_line(hand, turn)
                        return
                self._read_line(hand, turn, line)
                line = None
        except Exception:  # noqa: BLE001 (the match sorts out the failure)
            self._waiting = False
            self.policy.wait_turn = None
            self._drop_ahead()
            self._hand = self._turn = None
            hand.done.errback(Failure())  # type: ignore[no-untyped-call]

    def _next_hand_begun(self, hand: Hand) -> Hand | None:
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
        if self._trace_messages:
            self._queue_final_states(hand)
            self._record_end(hand)
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
            turn.sent = turn.charged_to = turn.heard = self._now()
        return following

    def _wait_for_line(self, hand: Hand, turn: Turn) -> None:
        """Wait for the acting seat's next line: :meth:`seat_line` resumes the hand.

        The wait ends with a MatchAborted(cause) at the earliest deadline (the
        turn policy's), moved on by the time the seat's own range queries are out.
        """
        if self.failure is not None:
            raise self.failure
        if self._ahead is not None:
            self._ahead_mismatch("the reply did not lead to the next decision")
        policy = self.policy
        deadline = policy.wait(turn)
        seat = turn.seat
        self._waiting = True
        self._waiter_seat = seat.index
        # At the first wait the bot's think time goes to recording the hand
        # before (see _next_hand_begun); the second is free.
        hand.waits += 1
        if hand.waits == 2:
            self._draw_ahead(hand)
        protocol = seat.protocol
        if protocol is not None and policy.ahead_wanted(turn):
            self._make_ahead(hand, turn, protocol, deadline)

    def _begin_turn(self, hand: Hand) -> Turn:
        """Send the states of a new decision point: one send, to the seat to act.

        After a hand's first decision point, the other seats' states are
        queued and go out, in order, with the next line sent to them (their
        turn, a range query, the next hand, the end of the match; at most
        ``SeatProtocol.MAX_QUEUED_LINES`` wait): a seat needs them only when
        it is to act, and one send per action instead of one per seat saves
        the dealer a system call and a bot that is not to act a wake-up per
        action. A hand's first states go to every seat at once, and so does
        every state while range queries are in play (a seat announced them,
        or ``--queryable``), as from the reference; so do all the others when
        :class:`dealer.sendstates.SendStates` says so (``--send_states``: asked
        for, or measured faster on this machine).
        """
        state = hand.state
        actor = state.current_player
        texts = hand.lines.texts()
        text = texts[actor]
        at_once = self._states_at_once(hand, actor)
        hand.first_turn = False
        ahead = self._ahead
        if ahead is not None:  # the read step sent this state already
            self._ahead = None
            self._sent_ahead(ahead, hand, actor, texts, at_once)
        elif at_once:
            self._send_states(hand, texts, actor, defer_others=False)
        elif self._trace_messages:
            self._send_states(hand, texts, actor, defer_others=True)
        else:  # the usual case, as _send_states but without the trace
            for seat, position in hand.ordered:
                protocol = seat.protocol
                if protocol is not None:
                    if position == actor:
                        seatio.send_line(protocol.io, text)
                    else:
                        seatio.queue_line(protocol.io, texts[position])
        seat = self.seats[hand.seat_of[actor]]
        # The seat's clock starts now, when the dealer is done with the reply, also when the
        # read step sent this state before the reply was played: the dealer's own work (the
        # rules, the writes) is never charged to a bot, which may think meanwhile, uncharged,
        # as at a hand's start (_next_hand_begun). So a match ends the same either way.
        sent = self._now()
        paused = 0.0
        if self._ever_paused[seat.index]:
            relay = self.relay
            # Time with the seat's own range queries out is not charged to it
            # (up to the budget's pause caps per decision and per hand).
            relay.begin_decision(seat.index, sent)
            paused = relay.paused(seat.index, sent)
        return Turn(seat, actor, text + ":", sent, paused)

    def _states_at_once(self, hand: Hand, actor: int) -> bool:
        """Whether this decision point's states go to every seat now (:meth:`_begin_turn`).

        A hand's first states do; with range queries in play every state does (queries and
        answers are about them; a seat may have announced them while a state was made
        ready); the others when the way of sending says so (``--send_states``).
        """
        at_once = hand.first_turn or True in self._queryable
        ways = self._send_ways
        if ways is not None:  # measured: asked at every decision point, its round trips timed
            unasked: int = ways.unasked
            if unasked:  # but in the rest of a cycle that chose one send per action
                ways.unasked = unasked - 1
                return at_once
            return ways.at_once(at_once, self.seats[hand.seat_of[actor]].last_reply_s)
        return at_once or self._always_at_once

    def _sent_ahead(self, ahead: seatio.Ahead, hand: Hand, actor: int, texts: list[str],
                    at_once: bool) -> None:
        """:meth:`_begin_turn` when the read step sent the acting seat its state already:
        check it, then send (``at_once``) or queue the other seats theirs."""
        self.check_ahead(ahead, hand.seat_of[actor], texts[actor])
        if ahead.error is not None:
            raise ahead.error
        sent_to = ahead.sent_to
        if ahead.held and sent_to is not None:  # the check the send would have made here
            seatio.check_unsent(sent_to)
        for seat, position in hand.ordered:
            protocol = seat.protocol
            if protocol is not None and position != actor:
                if at_once:  # as _send_states
                    seatio.send_line(protocol.io, texts[position])
                else:
                    seatio.queue_line(protocol.io, texts[position])

    def _send_states(self, hand: Hand, texts: list[str], actor: int, defer_others: bool) -> None:
        """Send the acting seat its state, then every other seat its own, now or
        with its next send (``defer_others``); the trace lists them in seat order.

        The seat to act goes first: its answer is what the match waits for, and
        each send before it would delay it by a system call (one that wakes a bot).
        """
        seat = self.seats[hand.seat_of[actor]]
        if seat.protocol is not None:
            seatio.send_line(seat.protocol.io, texts[actor])
        messages = self._trace_messages
        for seat, position in hand.ordered:
            text = texts[position]
            protocol = seat.protocol
            if protocol is not None and position != actor:
                if defer_others:
                    seatio.queue_line(protocol.io, text)
                else:
                    seatio.send_line(protocol.io, text)
            if messages:
                self.trace.to(seat.index, text)

    # -- reading a reply --------------------------------------------------------

    def _read_line(self, hand: Hand, turn: Turn, line: str) -> None:
        """Take one line of the acting seat: its action, or a line to ignore.

        The common reply (the echoed state exactly as sent) is read inline;
        the rare lines go to their own steps (_read_other_reply, _ignore_reply,
        _note_correction)."""
        state = hand.state
        seat = turn.seat
        now = self._now() if self._ahead is None else self._line_time_ahead(turn, line)
        turn.heard = now  # the seat's last line (any line), for --idle_timeout
        if self._trace_messages:
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
        policy = self.policy
        policy.charge(turn, now)
        hand_id = state.hand_id
        if problem is not None:
            if self._ahead is not None:
                self._ahead_mismatch(f"a reply the rules ignore: {problem}")
            self._ignore_reply(seat, turn, hand_id, problem)
            return
        policy.answered(turn, now)
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
        if self.writers.tlog is not None:
            self.writers.write_action(applied.text(), hand_id, sent, now)

    def _trace_reply(self, seat: Seat, line: str) -> None:
        """Trace a line of the seat (up to its trace bytes per hand; then only count it)."""
        if seat.trace_bytes < self.budget.trace_bytes_per_hand:
            seat.trace_bytes += len(line)
            self.trace.from_(seat.index, line)
        else:
            seat.untraced += 1

    def _read_other_reply(
        self, hand: Hand, turn: Turn, line: str,
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
            if turn.ignored > self.max_ignored:
                self._too_many_ignored(turn.seat, turn.ignored, state.hand_id, "a comment line")
            return None
        problem = None
        if not same_decision_point(reply.state, matchstate_for(state, hand.deal, turn.position)):
            problem = "ignoring un-requested response"
        return reply.action, reply.problem, problem

    def _ignore_reply(self, seat: Seat, turn: Turn, hand_id: int, problem: str) -> None:
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
        if turn.ignored > self.max_ignored:
            self._too_many_ignored(seat, turn.ignored, hand_id, problem)
        if charge == Charge.OVER:
            raise MatchAborted(Cause.OVER_BUDGET, f"{seat.label()} {costs.over()}", seat.index)

    def _note_correction(self, seat: Seat, hand_id: int, correction: Correction) -> None:
        """Count, trace and publish an action the rules corrected (after the warnings the
        reference prints before the correction's own)."""
        for note in correction.notes:
            self.trace.line(f"WARNING: {note}")
        message = correction.message
        seat.corrections += 1
        self.trace.line(f"WARNING: {message}")
        self.events.emit(ev.ActionCorrected(seat=seat.index + 1, hand=hand_id, correction=message))

    def _too_many_ignored(self, seat: Seat, count: int, hand_id: int, last: str) -> None:
        raise MatchAborted(
            Cause.GARBAGE,
            f"{seat.label()} sent {count} unusable lines in a row in hand {hand_id} "
            f"(limit --max_ignored {self.max_ignored}; last: {last})",
            seat.index,
        )

    # -- the next state, sent ahead of the reply ----------------------------------

    def _make_ahead(self, hand: Hand, turn: Turn, protocol: SeatProtocol, deadline: float) -> None:
        """Make the next state ready for the acting seat's likely replies, for its
        connection's read step to send (:func:`dealer.turns.make_ahead`). A reply that
        ends the hand is made ready once the next hand is drawn (:meth:`_opener`)."""
        self._ahead = protocol.io.ahead = make_ahead(
            turn, hand.state, hand.lines, hand.seat_of, self.seats, self._opener(hand), deadline,
            self.clock, self.game.is_limit)

    def _opener(self, hand: Hand) -> Opener | None:
        """The seat to act first in the hand after ``hand``, its position in ``hand``
        and its first line, if that hand is drawn and will begin as soon as
        ``hand`` ends (worked out once per hand)."""
        drawn = self._drawn
        if drawn is None or not self._may_follow(drawn.state.hand_id):
            return None
        opener = drawn.opener
        if opener is None:
            first = drawn.state.current_player
            seat = self.seats[self.seating(drawn.state.hand_id)[0][first]]
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
                if protocol is not None and protocol.io.ahead is ahead:
                    protocol.io.ahead = None

    def _line_time_ahead(self, turn: Turn, line: str) -> float:
        """The time of the acting seat's ``line`` while a state is made ready for it
        (:meth:`_read_line`); the state goes unless the read step sent it on this line.

        If it did (:meth:`_begin_turn` checks it), the line's time is the one the
        read step checked against the deadline, and ``_ahead`` stays set: the
        rules must neither ignore the line nor correct its action.
        """
        ahead = self._ahead
        assert ahead is not None
        protocol = turn.seat.protocol
        if protocol is not None and protocol.io.ahead is ahead:
            protocol.io.ahead = None  # one reply per decision point
        if ahead.sent_to is None:
            self._ahead = None
            return self.clock.seconds()
        if not line.startswith(turn.expected):
            self._ahead_mismatch(f"a reply that does not echo the state: {line[:80]!r}")
        return ahead.heard

    def check_ahead(self, ahead: seatio.Ahead, seat_index: int, text: str) -> None:
        """The lines the read step sent ahead must be the ones the rules give that seat now:
        those of the hand just ended, if any (:meth:`_queue_final_states`), then ``text``.

        Raises:
            MatchAborted: they are not (a dealer bug; cause ``internal``).
        """
        protocol = self.seats[seat_index].protocol
        given = ahead.given
        given.append(text)
        if protocol is None or ahead.sent_to is not protocol.io or ahead.sent_text != "\r\n".join(given):
            self._ahead_mismatch(f"sent {ahead.sent_text!r}, the rules give {given!r}")

    def _ahead_mismatch(self, what: str) -> None:
        """The next state sent ahead of a reply is not the one the reply gives: a dealer bug."""
        raise MatchAborted(Cause.INTERNAL, f"internal error: the state sent ahead of the reply "
                           f"was wrong ({what})", None, EXIT_INTERNAL)

    # -- the end of a hand ------------------------------------------------------

    def _queue_final_states(self, hand: Hand) -> None:
        """Queue the final state of ``hand`` for every seat: each goes out with the
        seat's next line (the next hand's first state, or at the end of the match)."""
        messages = self._trace_messages
        texts = hand.lines.texts()
        ahead = self._ahead
        for seat, position in hand.ordered:
            text = texts[position]
            protocol = seat.protocol
            if protocol is not None:
                if ahead is not None and protocol.io is ahead.sent_to:
                    ahead.given.append(text)  # sent ahead (check_ahead checks it)
                else:
                    seatio.queue_line(protocol.io, text)
            if messages:
                self.trace.to(seat.index, text)

    def _record_end(self, hand: Hand) -> None:
        """Record the finished ``hand``: its values and SCORE totals, the ``.log``,
        its events, and the trace's end-of-hand lines."""
        state = hand.state
        for seat in self.seats:
            if seat.untraced:
                self.trace.line(f"WARNING: {seat.untraced} more lines from seat {seat.index + 1} "
                                f"in hand {state.hand_id} not traced (limit trace_bytes_per_hand "
                                f"{self.budget.trace_bytes_per_hand})")
                seat.untraced = 0
        self.record_hand(state, hand.deal, hand.seat_of, write=True)
        hand_id = state.hand_id
        if hand_id % 100 == 0:
            for seat in self.seats:
                self.trace.progress(f"Seconds cumulatively spent in match for seat {seat.index}: "
                                    f"{int(seat.match_time)}")
        self.trace.flush()

    def record_hand(self, state: State, deal: Deal, seat_of: Sequence[int], write: bool) -> None:
        """Count a finished hand (values, totals, the result) and, with ``write``, log it."""
        values = state.values(deal.hole, deal.board_cards)
        by_seat = [0.0] * len(self.seats)
        for position, seat in enumerate(seat_of):
            by_seat[seat] = values[position]
        if write:
            # A hand counts once it is on disk: if a write fails, the SCORE covers the logged hands.
            self.writers.write_hand(state, deal, values, seat_of)
        result = self.result
        totals = result.totals
        for seat, value in enumerate(by_seat):
            totals[seat] += value
        result.finished += 1
        if self.keep_hand_values:
            result.hand_values[state.hand_id] = tuple(by_seat)
        if write:
            lines = self._event_lines
            if lines.open and not self._event_hooks:  # only the file listens: no record, no Python call
                if lines.add(state.hand_id, state.betting_string(), tuple(by_seat)):
                    self.events.flush()
            elif self.events.wants(ev.HandFinished):
                self.events.hand_finished(state.hand_id, state.betting_string(), tuple(by_seat))

    # -- resuming ----------------------------------------------------------------

    def replay(self, records: Sequence[TlogRecord], logged: set[int], seed: int,
               source: str) -> tuple[int, tuple[State, Deal] | None]:
        """Replay a ``.tlog``'s actions (``records``) through the rules: returns the first
        hand to play and a hand in progress.

        Finished hands are added to the totals; those missing from the .log
        (``logged``: killed between the tlog and the log) are written to it.

        Raises:
            MatchAborted: a record does not follow the deals or the rules (``source``
                names the file in the message; cause ``startup``).
        """
        if not records:
            return 0, None
        game = self.game
        deals = DealSource(seed)
        hand_id = 0
        state = State(game, 0)
        deal = deals.deal(game)
        for action, record_hand, sent, received in records:
            if state.finished:
                hand_id += 1
                state, deal = State(game, hand_id), deals.deal(game)
            if record_hand != hand_id:
                raise MatchAborted(Cause.STARTUP, f"{source}: hand {record_hand} where hand "
                                   f"{hand_id} was expected", None, EXIT_FAILED)
            seat_of = self.position_to_seat(hand_id)
            self.seats[seat_of[state.current_player]].match_time += max(0.0, received - sent)
            try:
                state.apply(action)
            except IllegalActionError as error:
                raise MatchAborted(Cause.STARTUP, f"{source}: hand {hand_id}: {error}",
                                   None, EXIT_FAILED) from error
            if state.finished:
                self.record_hand(state, deal, seat_of, write=hand_id not in logged)
        self.events.emit(ev.Resumed(actions=len(records), hands_finished=self.result.finished,
                                    mid_hand=not state.finished))
        if state.finished:
            return hand_id + 1, None
        return hand_id, (state, deal)

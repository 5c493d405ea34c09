"""The turn policy: how long a seat may take to act, what its time costs it, and how the
dealer spends the wait (busy polling, the next state made ready ahead of the reply).

A *turn* (:class:`Turn`) is one decision point: the acting seat was sent its
state and the dealer waits for its action. :class:`TurnPolicy` decides

- **when the wait ends** (:meth:`TurnPolicy.wait`, :meth:`TurnPolicy.deadline`):
  the earliest of ``t_response`` from the send, what is left of ``t_hand`` in
  this hand and of the match budget (``t_per_hand`` x hands), and, opt-in,
  ``--idle_timeout`` from the seat's last line; the seat's clock stands still
  while its own range queries are out (:class:`dealer.relay.QueryRelay`). One
  watchdog timer on the injected clock ends the wait (``task.Clock`` in tests);
- **what a line costs** (:meth:`TurnPolicy.charge`): the time since the last
  charged line goes to the seat's hand and match clocks, and a seat over
  either ends the match (cause ``out_of_time``);
- **how to spend the wait**: whether to poll (:class:`dealer.busypoll.BusyPoll`,
  decided per wait for a fast seat) and whether to make the next state ready
  ahead of the reply (:meth:`TurnPolicy.ahead_wanted`, :func:`make_ahead`).

A new time limit goes here: its value in :class:`dealer.config.MatchConfig`,
its deadline in :meth:`TurnPolicy.wait` (the earliest of the limits) and its
message in :meth:`TurnPolicy.deadline` (docs/architecture.md, "Adding a dealer
time limit").

Every action goes through :meth:`TurnPolicy.wait` and :meth:`TurnPolicy.charge`,
so this module is compiled with the hand loop (protocol._variant.GROUP).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

from dealer import seatio
from dealer.busypoll import BusyPoll, MatchesPlaying
from dealer.config import MatchAborted, MatchConfig
from dealer.events import Cause
from dealer.interfaces import Clock, DelayedCall
from dealer.relay import QueryRelay
from dealer.seats import Seat
from protocol.rules import Action, State
from protocol.wire import HandLines

#: The seat to act first in the next hand, its position in the hand before and its first line.
Opener: TypeAlias = tuple[Seat, int, str]


class Turn:
    """One decision point: the acting seat's wait for its action."""

    __slots__ = ("charged_to", "expected", "heard", "ignored", "paused_at_send", "paused_mark",
                 "polled", "position", "seat", "sent")

    def __init__(self, seat: Seat, position: int, expected: str, sent: float,
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


class TurnPolicy:
    """The time limits, budgets and polling of a match's turns.

    Args:
        config: the match (its time limits, ``idle_timeout_ms``, game name for messages).
        seats: the match's seats (their clocks are charged here).
        clock: the time source of deadlines and charges (``task.Clock`` in tests).
        relay: whose range queries pause a seat's clock (and whether any are in play).
        busy_poll: the process's poller, if any (shared by its matches).
        trace_messages: the TO/FROM trace is on (no state is then sent ahead).
        abort: ends the match when a wait passes its deadline.
        playing: the count of the process's matches playing (shared by them; the busy
            poll's, if any: :class:`dealer.match.Match` gives it).
    """

    def __init__(self, config: MatchConfig, seats: list[Seat], clock: Clock, relay: QueryRelay,
                 busy_poll: BusyPoll | None, trace_messages: bool,
                 abort: Callable[[MatchAborted], None], playing: MatchesPlaying) -> None:
        self.clock = clock
        self.relay = relay
        #: The relay's list, read on every action (a native attribute here; it changes in place).
        self._ever_paused: list[bool] = relay.ever_paused
        self.busy_poll = busy_poll
        self.playing = playing
        self.trace_messages = trace_messages
        self.abort = abort
        #: t_response, t_hand and the match budget (t_per_hand x hands), in seconds.
        self.t_response = config.t_response_ms / 1000.0
        self.t_hand = config.t_hand_ms / 1000.0
        self.t_match = config.t_per_hand_ms * config.hands / 1000.0
        self.idle_s: float | None = None if config.idle_timeout_ms is None else config.idle_timeout_ms / 1000.0
        # The limits are fixed for the match, so each seat's timeout messages are built once.
        self._messages = [self._timeout_messages(seat, config.game_arg) for seat in seats]
        #: The turn waited for and when its wait ends (None: no wait), with the seat's
        #: paused clock when the deadline was set.
        self.wait_turn: Turn | None = None
        self.wait_deadline = 0.0
        self._wait_paused = 0.0
        self._timer: DelayedCall | None = None  # None when not armed
        self._timer_at = 0.0  # when it is set to fire (the clock's time)

    def _timeout_messages(self, seat: Seat, game_arg: str) -> tuple[str, str, str, str]:
        """A seat's messages for running out of t_response, t_hand, the match budget, and idling."""
        t_response, t_hand, t_match = self.t_response, self.t_hand, self.t_match
        idle = self.idle_s or 0.0
        return ((f"could not get action from {seat.label()}: "
                 f"{t_response:.1f} seconds spent waiting; timeout {t_response:g}"),
                f"{seat.label()} ran out of time: t_hand {t_hand:g} s used up in one hand",
                (f"{seat.label()} ran out of time: match budget {t_match:g} s "
                 f"(t_per_hand x hands) used up"),
                (f"{seat.label()} sent nothing for {idle:g} s while the dealer waited for it "
                 f"(--idle_timeout); is it stuck, or started for another game than {game_arg}?"))

    def wait(self, turn: Turn) -> float:
        """The seat of ``turn`` is waited for: set the watchdog to its deadline (returned) and
        decide whether to poll."""
        seat = turn.seat
        index = seat.index
        # The earliest of deadline()'s limits (which one it is matters only if it passes).
        charged = turn.charged_to
        # (Compared by hand: the builtin min of three floats is a generic call here.)
        deadline = turn.sent + self.t_response
        hand_end = charged + (self.t_hand - seat.hand_time)
        if hand_end < deadline:
            deadline = hand_end
        match_end = charged + (self.t_match - seat.match_time)
        if match_end < deadline:
            deadline = match_end
        idle_s = self.idle_s
        if idle_s is not None and turn.heard + idle_s < deadline:
            deadline = turn.heard + idle_s
        if self._ever_paused[index]:
            relay = self.relay
            now = self.clock.seconds()
            self._wait_paused = relay.paused(index, now)
            deadline += self._wait_paused - turn.paused_at_send
        else:
            now = turn.heard  # the last line's time, or the send's: microseconds ago
            self._wait_paused = 0.0
        self.wait_turn = turn
        self.wait_deadline = deadline
        busy_poll = self.busy_poll
        if busy_poll is not None and turn.polled is None:
            if busy_poll.worth_it(seat.last_reply_s):
                turn.polled = polled = busy_poll.decide()
                if polled:
                    busy_poll.arm()
            else:
                busy_poll.pass_wait()
        # One watchdog timer, not one per wait: replies come in microseconds,
        # so the timer is left armed and re-armed only when it fires early or
        # when this wait must end sooner than it is set for. (_timer is None
        # whenever it is not armed: it fired, or stop() cancelled it.)
        timer = self._timer
        if timer is None or self._timer_at > deadline:
            if timer is not None:
                timer.cancel()
            self._timer = self.clock.callLater(max(0.0, deadline - now), self._watchdog)
            self._timer_at = deadline
        return deadline

    def _watchdog(self) -> None:
        """The wait timer fired: end the wait if its deadline has passed, else re-arm."""
        self._timer = None
        turn = self.wait_turn
        if turn is None:
            return
        seat = turn.seat
        now = self.clock.seconds()
        # The seat's clock stands still while its range queries are out.
        deadline = self.wait_deadline + self.relay.paused(seat.index, now) - self._wait_paused
        if now >= deadline - 1e-6:
            _, cause, message = self.deadline(seat, turn.sent, turn.charged_to, turn.heard)
            self.abort(MatchAborted(cause, message, seat.index))
        else:
            self._timer = self.clock.callLater(deadline - now, self._watchdog)
            self._timer_at = deadline

    def deadline(self, seat: Seat, sent: float, charged_to: float, heard: float) -> tuple[float, Cause, str]:
        """When the acting seat's wait must end, and how to report it if it does."""
        response = sent + self.t_response
        hand = charged_to + (self.t_hand - seat.hand_time)
        match = charged_to + (self.t_match - seat.match_time)
        messages = self._messages[seat.index]
        idle_s = self.idle_s
        if idle_s is not None:
            idle = heard + idle_s
            if idle < response and idle < hand and idle < match:
                return idle, Cause.IDLE, messages[3]
        if response <= hand and response <= match:
            return response, Cause.TIMEOUT, messages[0]
        if hand <= match:
            return hand, Cause.OUT_OF_TIME, messages[1]
        return match, Cause.OUT_OF_TIME, messages[2]

    def stop(self) -> None:
        """No wait any more (the match failed or ended): cancel the watchdog."""
        self.wait_turn = None
        if self._timer is not None:
            if self._timer.active():
                self._timer.cancel()
            self._timer = None

    def charge(self, turn: Turn, now: float) -> None:
        """Charge the acting seat the time since its last charged line (the reference
        charges from the send each time, counting some time twice).

        Raises:
            MatchAborted: the seat is over ``t_hand`` or its match budget (``out_of_time``).
        """
        seat = turn.seat
        paused_now = self.relay.paused(seat.index, now) if self._ever_paused[seat.index] else 0.0
        elapsed = now - turn.charged_to - (paused_now - turn.paused_mark)
        turn.charged_to = now
        turn.paused_mark = paused_now
        if elapsed > 0.0:
            seat.hand_time += elapsed
            seat.match_time += elapsed
        if seat.hand_time > self.t_hand or seat.match_time > self.t_match:
            self._over_time(seat)

    def _over_time(self, seat: Seat) -> None:
        t_hand, t_match = self.t_hand, self.t_match
        if seat.hand_time > t_hand:
            raise MatchAborted(Cause.OUT_OF_TIME, f"{seat.label()} ran out of time "
                               f"({seat.hand_time:.3f} s in this hand; t_hand {t_hand:g})", seat.index)
        if seat.match_time > t_match:
            raise MatchAborted(Cause.OUT_OF_TIME, f"{seat.label()} ran out of time "
                               f"({seat.match_time:.3f} s in the match; budget {t_match:g})", seat.index)

    def answered(self, turn: Turn, now: float) -> None:
        """The seat of ``turn`` acted at ``now``: how fast it was decides the next polls."""
        answer_s = turn.seat.last_reply_s = now - turn.sent
        polled = turn.polled
        if polled is not None and self.busy_poll is not None:
            self.busy_poll.record(polled, answer_s)

    def ahead_wanted(self, turn: Turn) -> bool:
        """Whether to make the next state ready while this wait lasts: while this is the
        process's only match playing, polled for or not (with other matches the time a bot
        thinks is theirs); not with the trace (it lists each line before the send it
        causes) or with range queries in play (their answers arrive on the same
        connections).

        Polled for or not: without polling the dealer sleeps until the reply and wakes on
        cold caches, and the path from the reply to the next send is then most of its share
        of a round trip; made ready, that path is a comparison and a send. With
        ``--busy_poll 0`` and the C example players: 1.13 times the hands/s of the install
        before, for 5-8% more dealer CPU a hand (docs/dealer.md, "The next state ready
        before the reply"). And the busy poll's exploration, blocks of waits polled for and
        not, then compares the spin alone: made only for the polled waits, the state made
        ready would shorten their answer times and count as polling's gain."""
        return (self.playing.count == 1 and not self.trace_messages
                and True not in self.relay.queryable)


def _io_of(seat: Seat) -> seatio.SeatIO | None:
    """The per-line state of the seat's connection (None: no connection)."""
    protocol = seat.protocol
    return None if protocol is None else protocol.io


def next_send(state: State, lines: HandLines, seat_of: list[int], seats: list[Seat],
              opener: Opener | None) -> tuple[seatio.SeatIO | None, str]:
    """The next send of the match if the hand goes on as ``state`` (a copy of its state,
    one action on): the connection and the lines, or (None, "") when there is none to
    make ready.

    In a hand that goes on, the seat to act gets its state. When ``state`` ends the
    hand and the next hand will begin at once (``opener``), the next hand's first seat
    to act gets its final state of this hand and its first of the next (the other
    seats get theirs with another send, as usual).
    """
    if not state.finished:
        position = state.current_player
        return _io_of(seats[seat_of[position]]), lines.text_after(state, position)
    if opener is None:
        return None, ""
    seat, position, first_line = opener
    return _io_of(seat), lines.text_after(state, position) + "\r\n" + first_line


def make_ahead(turn: Turn, state: State, lines: HandLines, seat_of: list[int], seats: list[Seat],
               opener: Opener | None, deadline: float, clock: Clock, is_limit: bool) -> seatio.Ahead:
    """The next state for the acting seat's likely replies (a call, a fold that ends the
    hand, a raise of any legal size), for its connection's read step to send at once
    (:class:`dealer.seatio.Ahead`).

    A round trip with fast bots is the bot's time and the dealer's path from its line
    to the next send; this takes the reading of the action, the rules and the rendering
    off that path, into the time the bot thinks. The states come from the rules: the
    hand's copy played on for a call, and for a raise the line cut around its size. The
    reply itself still goes through every step, and the hand loop checks that the
    states it gives are the ones sent (:meth:`dealer.handloop.HandLoop.check_ahead`).
    """
    # 1 ms before the deadline: a reply that late goes through the time checks first.
    ahead = seatio.Ahead(turn.expected.encode("latin-1"), deadline - 1e-3, clock)
    after = state.clone()
    after.apply(Action.CALL)
    ahead.call_to, ahead.call_text = next_send(after, lines, seat_of, seats, opener)
    if opener is not None and state.can_fold() and state.fold_leaves_one():
        seat, position, first_line = opener
        head, tail = lines.around_next_action(state, position)
        ahead.fold_to, ahead.fold_text = _io_of(seat), head + "f" + tail + "\r\n" + first_line
    sizes = state.raise_range()
    if sizes is not None:
        # A raise never ends the round; the player to act next is the same for
        # every size (tests/protocol/test_fast_paths.py checks both on random play).
        position = state.next_to_act_after(turn.position)
        target = _io_of(seats[seat_of[position]])
        if target is not None:
            ahead.raise_to = target
            if is_limit:
                after = state.clone()
                after.apply(Action.RAISE)
                ahead.raise_sized = False
                ahead.raise_head = lines.text_after(after, position)
            else:
                head, ahead.raise_tail = lines.around_next_action(state, position)
                ahead.raise_head = head + "r"
                ahead.raise_min, ahead.raise_max = sizes
    return ahead

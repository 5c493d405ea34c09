"""The turn policy alone (dealer/turns.py): deadlines, charges, polling, on a task.Clock."""

from __future__ import annotations

import pytest

from dealer.busypoll import BusyPoll
from dealer.config import MatchAborted
from dealer.events import Cause
from dealer.turns import Turn
from tests.dealer.harness import make_config
from tests.dealer.parts import Parts, Polling


def _turn(parts: Parts, seat: int = 0) -> Turn:
    return Turn(parts.seats[seat], 0, "MATCHSTATE:0:0::Kh|:", parts.clock.seconds(), 0.0)


def test_a_wait_ends_at_t_response_with_the_reference_message() -> None:
    """The watchdog fires at t_response after the send, not before, and names the seat."""
    parts = Parts(make_config("t", names=("alice", "bob"), t_response_ms=1500))
    policy = parts.policy()
    parts.clock.advance(10.0)
    assert policy.wait(_turn(parts)) == pytest.approx(11.5)
    parts.clock.advance(1.49)
    assert parts.aborts.failures == []
    parts.clock.advance(0.02)
    [failure] = parts.aborts.failures
    assert failure.cause is Cause.TIMEOUT and failure.seat == 0
    assert failure.message == ("could not get action from seat 1 (alice): 1.5 seconds spent "
                               "waiting; timeout 1.5")


def test_the_earliest_limit_wins_and_says_which() -> None:
    """t_hand left in the hand, the match budget and --idle_timeout each end the wait when
    they come first, with their own cause and message."""
    parts = Parts(make_config("t", hands=2, t_response_ms=60_000, t_hand_ms=5_000,
                              t_per_hand_ms=2_000, idle_timeout_ms=30_000))
    policy = parts.policy()
    seat = parts.seats[0]
    deadline, cause, message = policy.deadline(seat, 0.0, 0.0, 0.0)
    assert (deadline, cause) == (pytest.approx(4.0), Cause.OUT_OF_TIME) and "match budget 4 s" in message
    seat.match_time = -10.0  # a budget far off: t_hand comes first
    deadline, cause, message = policy.deadline(seat, 0.0, 0.0, 0.0)
    assert (deadline, cause) == (pytest.approx(5.0), Cause.OUT_OF_TIME) and "t_hand 5 s" in message
    seat.hand_time = seat.match_time = -100.0  # the idle limit is the earliest now
    deadline, cause, message = policy.deadline(seat, 0.0, 0.0, 0.0)
    assert (deadline, cause) == (pytest.approx(30.0), Cause.IDLE) and "--idle_timeout" in message


def test_one_watchdog_timer_serves_every_wait() -> None:
    """Waits in a row re-use the armed timer (no delayed call per action); stop() cancels it."""
    parts = Parts(make_config("t", t_response_ms=1000))
    policy = parts.policy()
    for _ in range(5):
        policy.wait(_turn(parts))
        policy.wait_turn = None  # the line came
        parts.clock.advance(0.01)
    assert len(parts.clock.getDelayedCalls()) == 1
    policy.stop()
    assert parts.clock.getDelayedCalls() == []


def test_a_timer_that_fires_early_is_set_again_for_the_later_deadline() -> None:
    """The timer armed for an early wait fires before a later wait's deadline: it re-arms."""
    parts = Parts(make_config("t", t_response_ms=1000))
    policy = parts.policy()
    policy.wait(_turn(parts))
    policy.wait_turn = None
    parts.clock.advance(0.5)
    policy.wait(_turn(parts))  # due at 1.5; the timer stays set for 1.0
    parts.clock.advance(0.6)
    assert parts.aborts.failures == [] and len(parts.clock.getDelayedCalls()) == 1
    parts.clock.advance(0.45)
    assert [f.cause for f in parts.aborts.failures] == [Cause.TIMEOUT]


def test_charges_go_to_the_hand_and_match_clocks_and_end_an_overdrawn_seat() -> None:
    """Time is charged from the last charged line; over t_hand is out_of_time, at once."""
    parts = Parts(make_config("t", t_hand_ms=1000))
    policy = parts.policy()
    turn = _turn(parts)
    parts.clock.advance(0.4)
    policy.charge(turn, parts.clock.seconds())
    parts.clock.advance(0.4)
    policy.charge(turn, parts.clock.seconds())
    seat = parts.seats[0]
    assert seat.hand_time == pytest.approx(0.8) and seat.match_time == pytest.approx(0.8)
    parts.clock.advance(0.3)
    with pytest.raises(MatchAborted) as raised:
        policy.charge(turn, parts.clock.seconds())
    assert raised.value.cause is Cause.OUT_OF_TIME and "t_hand 1" in raised.value.message


def test_a_fast_seat_is_polled_for_and_gets_its_next_state_made_ready() -> None:
    """A seat that answered within the poll's budget is polled for; with one match playing
    and no trace, the next state is made ready; the answer time is recorded."""
    parts = Parts(make_config("t"))
    poll = Polling()
    poll.playing.count = 1
    policy = parts.policy(poll)
    turn = _turn(parts)
    policy.wait(turn)
    assert turn.polled is True and poll.arms == 1 and policy.ahead_wanted(turn)
    parts.clock.advance(0.25)
    policy.answered(turn, parts.clock.seconds())
    assert parts.seats[0].last_reply_s == pytest.approx(0.25)
    poll.playing.count = 2  # another match plays: its time, not ours
    assert not policy.ahead_wanted(turn)
    traced = Parts(make_config("t"), trace=True).policy(poll)
    poll.playing.count = 1
    assert not traced.ahead_wanted(turn)


def test_a_state_is_made_ready_for_a_wait_polled_for_or_not() -> None:
    """Polled for, not polled for (a block of the poll's exploration, or polling measured
    not to pay), a seat too slow to poll for, or no poll at all (--busy_poll 0): the same
    answer while one match plays, so the poll's exploration compares the spin alone."""

    class NotPolling(Polling):
        def decide(self) -> bool:
            return False

    seen = []
    for poll, slow in ((Polling(), False), (NotPolling(), False), (Polling(), True), (None, False)):
        parts = Parts(make_config("t"))
        policy = parts.policy(poll)
        policy.playing.count = 1
        turn = _turn(parts)
        if slow:
            turn.seat.last_reply_s = 10.0  # over the poll's budget: not worth polling for
        policy.wait(turn)
        seen.append((turn.polled, policy.ahead_wanted(turn)))
        policy.playing.count = 2
        assert not policy.ahead_wanted(turn)
    assert seen == [(True, True), (False, True), (None, True), (None, True)]


def test_a_wait_the_busy_poll_does_not_decide_is_passed_to_it() -> None:
    """A fast seat's wait is the poll's (it explores: ``busy``, and the way of sending states
    stands aside); a slow seat's it does not decide, and is told, so that ``busy`` is not
    left over from the wait before (the dealer sleeps through this one)."""
    parts = Parts(make_config("t"))
    poll = BusyPoll(lambda callback: None, 100e-6)
    poll.playing.count = 1
    policy = parts.policy(poll)
    fast = _turn(parts)
    policy.wait(fast)
    assert fast.polled is not None and poll.busy
    slow = _turn(parts, 1)
    slow.seat.last_reply_s = 10.0
    policy.wait(slow)
    assert slow.polled is None and not poll.busy

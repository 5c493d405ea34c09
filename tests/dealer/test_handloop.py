"""The hand loop alone (dealer/handloop.py): deal, turns, apply, showdown, on StringTransports
and a task.Clock, with its turn policy, writers and abort injected (no Match, no seating)."""

from __future__ import annotations

from typing import Any

from twisted.internet.testing import StringTransport

from dealer.busypoll import MatchesPlaying
from dealer.config import MatchAborted
from dealer.events import Cause
from dealer.handloop import HandLoop
from dealer.seat import SeatProtocol
from dealer.sendstates import SendStates
from dealer.turns import TurnPolicy
from dealer.writers import MatchWriters
from protocol.deal import DealSource
from protocol.rules import State
from protocol.wire import matchstate_text
from tests.dealer.harness import make_config
from tests.dealer.parts import MemoryOpener, Parts


class _Seated:
    """The handshake side of a connection that is seated already."""

    def candidate(self, protocol: SeatProtocol) -> bool:
        return True


class _Loop:
    """A HandLoop on two seated StringTransport connections; abort fails the loop, as Match does."""

    def __init__(self, **options: Any) -> None:
        self.parts = parts = Parts(make_config("h", names=("alice", "bob"), **options))
        self.opener = MemoryOpener()
        self.writers = MatchWriters(parts.config, self.opener, parts.trace, parts.events)
        self.writers.open()
        # No match counts itself in (count 0): no state is made ready ahead.
        self.policy = TurnPolicy(parts.config, parts.seats, parts.clock, parts.relay, None,
                                 parts.trace.messages, self.abort, MatchesPlaying())
        self.loop = HandLoop(parts.config, parts.seats, self.policy, self.writers, parts.relay,
                             parts.events, parts.trace, parts.clock, parts.result, [], self.abort,
                             SendStates(parts.config.send_states, self.policy.playing,
                                        self.policy.busy_poll))
        self.transports: list[StringTransport] = []
        for seat in parts.seats:
            protocol = SeatProtocol(_Seated(), self.loop, seat.index)  # type: ignore[arg-type]
            transport = StringTransport()
            protocol.makeConnection(transport)
            protocol.accepted = True
            seat.protocol = protocol
            self.transports.append(transport)
        self.loop.started = True

    def abort(self, failure: MatchAborted) -> None:
        self.parts.aborts(failure)
        self.policy.stop()
        self.loop.fail(failure)

    def take(self, seat: int) -> list[str]:
        data = self.transports[seat].value().decode()
        self.transports[seat].clear()
        return data.split("\r\n")[:-1]

    def reply(self, seat: int, action: str) -> None:
        """Echo the last state sent to ``seat`` with ``action``."""
        last = self.take(seat)[-1]
        assert self.parts.seats[seat].protocol is not None
        self.parts.seats[seat].protocol.dataReceived(f"{last}:{action}\r\n".encode())


def test_a_hand_is_dealt_played_through_the_rules_and_logged() -> None:
    """Hand 0 of seed 7: the deal's cards go out, each call is applied by the rules, the
    showdown values go to the totals and the .log, and the hand's Deferred fires."""
    table = _Loop(hands=1, seed=7)
    game = table.parts.config.game
    table.loop.start_dealing(7, 0)
    drawn = table.loop.draw(0)
    done = table.loop.play_hand(drawn.state, drawn.deal, drawn.lines)
    deal = DealSource(7).deal(game)
    assert drawn.deal.hole == deal.hole and drawn.deal.board_cards == deal.board_cards
    _call_until(table, done)
    state, played = done.result
    assert isinstance(state, State) and state.finished and state.betting_string() == "cc/cc/cc/cc"
    values = state.values(played.hole, played.board_cards)
    assert table.parts.result.totals == [values[0], values[1]] and table.parts.result.finished == 1
    assert table.opener.text("h.log").splitlines()[-1].startswith("STATE:0:cc/cc/cc/cc:")


def test_a_line_sent_out_of_turn_waits_for_the_seat_s_turn() -> None:
    """A reply that arrives before the seat is to act is kept, and read at its turn."""
    table = _Loop(hands=1)
    table.loop.start_dealing(7, 0)
    drawn = table.loop.draw(0)
    table.loop.play_hand(drawn.state, drawn.deal, drawn.lines)
    first = table.take(0)[-1]
    table.parts.seats[0].protocol.dataReceived(f"{first}:c\r\n".encode())  # type: ignore[union-attr]
    assert list(table.parts.seats[0].queue) == [f"{first}:c"]
    table.reply(1, "c")  # seat 1 calls; seat 0's queued line is then its (stale) reply
    assert not table.parts.seats[0].queue and table.parts.seats[0].ignored == 1


def test_an_invalid_action_is_corrected_and_counted() -> None:
    """A raise too small is corrected as the reference does, with a warning; play goes on."""
    table = _Loop(hands=1)
    table.loop.start_dealing(7, 0)
    drawn = table.loop.draw(0)
    table.loop.play_hand(drawn.state, drawn.deal, drawn.lines)
    table.reply(1, "r1")
    assert table.parts.seats[1].corrections == 1 and drawn.state.betting_string() != ""
    table.parts.trace.flush()
    assert "WARNING:" in table.parts.stderr.getvalue()


def test_no_reply_in_time_fails_the_hand_through_abort() -> None:
    """The turn policy's watchdog calls abort; the hand's Deferred fails with that cause."""
    table = _Loop(hands=1, t_response_ms=2000)
    table.loop.start_dealing(7, 0)
    drawn = table.loop.draw(0)
    done = table.loop.play_hand(drawn.state, drawn.deal, drawn.lines)
    failures: list[Any] = []
    done.addErrback(failures.append)
    table.parts.clock.advance(2.5)
    [failure] = failures
    assert isinstance(failure.value, MatchAborted) and failure.value.cause is Cause.TIMEOUT
    assert "seat 2 (bob)" in failure.value.message


def test_seats_rotate_unless_fixed() -> None:
    """Seat s plays position (s - h) mod N; with fixed seats, position s."""
    table = _Loop()
    assert [table.loop.position_to_seat(h) for h in range(3)] == [[0, 1], [1, 0], [0, 1]]
    fixed = _Loop(fixed_seats=True)
    assert [fixed.loop.position_to_seat(h) for h in range(3)] == [[0, 1]] * 3


def test_hands_follow_one_another_without_hooks() -> None:
    """Without hand hooks one Deferred covers every hand left: the loop deals the next hand
    as soon as one ends, and the .log gets one STATE line per hand."""
    table = _Loop(hands=3)
    table.loop.start_dealing(7, 0)
    drawn = table.loop.draw(0)
    done = table.loop.play_hand(drawn.state, drawn.deal, drawn.lines)
    _call_until(table, done)
    assert table.parts.result.finished == 3 and done.result[0].hand_id == 2
    assert sum(line.startswith("STATE:") for line in table.opener.text("h.log").splitlines()) == 3


def _call_until(table: _Loop, done: Any) -> None:
    """The seat to act calls, echoing its state, until ``done`` fires."""
    for _ in range(1000):
        if done.called:
            return
        assert table.loop.current_hand is not None
        state, deal, seat_of = table.loop.current_hand
        position = state.current_player
        protocol = table.parts.seats[seat_of[position]].protocol
        assert protocol is not None
        protocol.dataReceived(f"{matchstate_text(state, deal, position)}:c\r\n".encode())
    raise AssertionError("the hands did not end")

"""In-memory protocol tests: StringTransport connections and a task.Clock for time limits."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from twisted.internet.testing import StringTransport

from acpc_lbr.runtime.exit_codes import EXIT_BOT_FAILURE, EXIT_OK
from dealer.seat import SeatProtocol
from protocol.deal import DealSource
from protocol.rules import Action, State
from protocol.wire import matchstate_text, parse_matchstate
from tests.dealer.harness import MemoryTable, make_config


@pytest.mark.parametrize("options", [{"queryable": ("p1", "p2")}, {"send_states": "at_once"}])
@pytest.mark.parametrize("chunk", [0, 1, 2, 3, 7, 64])
def test_reference_exchange_in_every_chunk_size(in_tmp: Path, chunk: int, options: dict[str, Any]) -> None:
    """The first exchange of transcripts/nl1000.trace, fed in any chunking, gives the same traffic.

    The reference sends every state to every seat at once. With range queries in
    play (here ``--queryable``) so does this dealer, line for line and step for step,
    and with ``--send_states at_once`` without them.
    """
    table = MemoryTable(make_config("nl", hands=1, seed=42, names=("p1", "p2"), **options))
    table.feed(0, b"VERSION:2.0.0\r\n", chunk)
    table.feed(1, b"VERSION:2.0.0\n", chunk)
    assert table.take(0) == ["MATCHSTATE:0:0::7d3d|"]
    assert table.take(1) == ["MATCHSTATE:1:0::|2hAc"]
    table.feed(1, b"MATCHSTATE:1:0::|2hAc:r14085\r\n", chunk)
    assert table.take(0) == ["MATCHSTATE:0:0:r14085:7d3d|"]
    assert table.take(1) == ["MATCHSTATE:1:0:r14085:|2hAc"]
    table.feed(0, b"# thinking\nMATCHSTATE:0:0:r14085:7d3d|:f\n", chunk)
    assert table.take(0) == ["MATCHSTATE:0:0:r14085f:7d3d|"]
    assert table.take(1) == ["MATCHSTATE:1:0:r14085f:|2hAc"]
    result = table.done.result
    assert result.exit_code == EXIT_OK
    assert Path("nl.log").read_text().splitlines()[4] == "STATE:0:r14085f:7d3d|2hAc:-100|100:p1|p2"


@pytest.mark.parametrize("chunk", [0, 1, 7])
def test_states_of_a_seat_not_to_act_come_with_its_turn(in_tmp: Path, chunk: int) -> None:
    """Without range queries each seat gets the reference's lines, in order; after a hand's
    first states, a seat that is not to act gets its states with its next turn (or at the end)."""
    table = MemoryTable(make_config("nl", hands=1, seed=42, names=("p1", "p2"), send_states="on_turn"))
    table.feed(0, b"VERSION:2.0.0\r\n", chunk)
    table.feed(1, b"VERSION:2.0.0\n", chunk)
    assert table.take(0) == ["MATCHSTATE:0:0::7d3d|"]
    assert table.take(1) == ["MATCHSTATE:1:0::|2hAc"]
    table.feed(1, b"MATCHSTATE:1:0::|2hAc:r14085\r\n", chunk)
    assert table.take(0) == ["MATCHSTATE:0:0:r14085:7d3d|"]
    assert table.take(1) == []
    table.feed(0, b"# thinking\nMATCHSTATE:0:0:r14085:7d3d|:f\n", chunk)
    assert table.take(0) == ["MATCHSTATE:0:0:r14085f:7d3d|"]
    assert table.take(1) == ["MATCHSTATE:1:0:r14085:|2hAc", "MATCHSTATE:1:0:r14085f:|2hAc"]
    assert table.done.result.exit_code == EXIT_OK
    assert Path("nl.log").read_text().splitlines()[4] == "STATE:0:r14085f:7d3d|2hAc:-100|100:p1|p2"


def _log_writes(table: MemoryTable) -> list[tuple[int, bytes]]:
    """Every write to a seat's transport from now on, in order: (seat, bytes)."""
    writes: list[tuple[int, bytes]] = []
    for seat, transport in enumerate(table.transports):
        def logged(data: bytes, seat: int = seat, write: Any = transport.write) -> None:
            writes.append((seat, data))
            write(data)
        transport.write = logged  # type: ignore[method-assign]
    return writes


def _play_out(table: MemoryTable, policy: Callable[[State], Action]) -> list[list[str]]:
    """Seat both bots, answer every state a seat is to act on with ``policy``, and
    return the lines each seat received, up to the match's end."""
    game = table.match.config.game
    table.feed(0, b"VERSION:2.0.0\n")
    table.feed(1, b"VERSION:2.0.0\n")
    received: list[list[str]] = [[], []]
    while not table.done.called:
        acted = False
        for seat in (0, 1):
            lines = table.take(seat)
            received[seat] += lines
            if lines:
                view = parse_matchstate(lines[-1], game)
                state = view.to_state(game)
                if not state.finished and state.current_player == view.position:
                    table.feed(seat, f"{lines[-1]}:{policy(state).text()}\n")
                    acted = True
        assert acted or table.done.called
    for seat in (0, 1):
        received[seat] += table.take(seat)  # the last states, sent as the match closes
    return received


def _reference_lines(config: Any, policy: Callable[[State], Action]) -> list[list[str]]:
    """The lines the reference sends each seat of ``config``'s match played with ``policy``."""
    deals = DealSource(config.seed)
    expected: list[list[str]] = [[], []]
    for hand in range(config.hands):
        deal, state = deals.deal(config.game), State(config.game, hand)
        seat_of = [(p + hand) % 2 for p in range(2)]
        while True:
            for position in (0, 1):
                expected[seat_of[position]].append(matchstate_text(state, deal, position))
            if state.finished:
                break
            state.apply(policy(state))
    return expected


def test_one_send_per_action_and_every_state_in_order(in_tmp: Path) -> None:
    """Always-call hold'em: 8 actions a hand, 9 sends a hand (both seats at the hand's first
    decision, then the seat to act), and each seat still receives every state of every
    hand, in order, as the reference sends them."""
    config = make_config("m", hands=3, seed=5, send_states="on_turn")
    table = MemoryTable(config)
    writes = _log_writes(table)
    received = _play_out(table, lambda state: Action.CALL)
    assert table.done.result.exit_code == EXIT_OK
    assert received == _reference_lines(config, lambda state: Action.CALL)
    # 8 decision points a hand: the first one send to each seat, the others one
    # send to the seat to act; the last hand's final states go out when the
    # match closes (one send per seat). The reference: 2 sends per decision point.
    assert len(writes) == 9 * config.hands + 2


@pytest.mark.parametrize(("read_step", "trace"), [(False, False), (True, False), (False, True)])
def test_send_states_at_once_sends_to_every_seat_at_every_decision(
        in_tmp: Path, read_step: bool, trace: bool) -> None:
    """Always-call hold'em with ``--send_states at_once``: 16 sends a hand, one per seat per
    decision point, as from the reference (against 9 without it), the same lines in the
    same order and the same .log, with or without the read step sending the state made
    ready ahead of a reply, and with the trace."""
    logs = []
    for at_once in (True, False):
        config = make_config(f"m{at_once}", hands=3, seed=5, trace_messages=trace,
                             send_states="at_once" if at_once else "on_turn")
        table = MemoryTable(config, read_step=read_step, stderr=io.StringIO() if trace else None)
        writes = _log_writes(table)
        received = _play_out(table, lambda state: Action.CALL)
        assert table.done.result.exit_code == EXIT_OK
        assert received == _reference_lines(config, lambda state: Action.CALL)
        # A hand's final states go out with the next hand's first; the last hand's
        # when the match closes (one send per seat).
        assert len(writes) == (16 if at_once else 9) * config.hands + 2
        assert (table.sent_ahead > 0) == read_step
        logs.append(Path(config.log_path).read_text().splitlines()[1:])
    assert logs[0] == logs[1]


def test_seat_to_act_gets_the_first_state_first_and_deals_stay_in_order(in_tmp: Path) -> None:
    """At a hand's first decision point the seat to act is sent its state before the
    other seat (the match waits on its answer). And the next hand is drawn while a bot
    thinks (from a hand's second wait): hands that end at their first action (nothing
    drawn ahead) and long ones alternate, and every seat still gets every state of
    every hand, from the seed's deals, in order."""
    def policy(state: State) -> Action:
        return Action.FOLD if state.hand_id % 3 == 0 else Action.CALL

    config = make_config("m", hands=12, seed=11)
    table = MemoryTable(config)
    writes = _log_writes(table)
    received = _play_out(table, policy)
    assert table.done.result.exit_code == EXIT_OK
    assert received == _reference_lines(config, policy)
    assert any(len(lines) > 3 for lines in received)  # long hands were played too
    for hand in range(config.hands):
        # The write that carries this hand's first state, per seat: the actor's is first.
        first_write: dict[int, int] = {}
        for index, (seat, data) in enumerate(writes):
            if seat not in first_write and f":{hand}::".encode() in data:
                first_write[seat] = index
        actor = (State(config.game, hand).current_player + hand) % 2
        assert first_write[actor] < first_write[1 - actor], hand


def test_response_timeout_on_the_clock(in_tmp: Path) -> None:
    """No reply within t_response ends the match exactly when the clock passes it."""
    table = MemoryTable(make_config("m", hands=3, t_response_ms=5000))
    table.feed(0, b"VERSION:2.0.0\n")
    table.feed(1, b"VERSION:2.0.0\n")
    table.clock.advance(4.9)
    assert not table.done.called
    table.clock.advance(0.2)
    result = table.done.result
    assert (result.exit_code, result.cause, result.seat) == (EXIT_BOT_FAILURE, "timeout", 1)
    assert result.message == "could not get action from seat 2 (s2): 5.0 seconds spent waiting; timeout 5"
    assert table.transports[0].disconnecting and table.transports[1].disconnecting


def test_hand_budget_on_the_clock(in_tmp: Path) -> None:
    """t_hand: slow replies that add up within one hand end the match when the budget runs out."""
    table = MemoryTable(make_config("m", hands=3, t_hand_ms=1000))
    table.feed(0, b"VERSION:2.0.0\n")
    table.feed(1, b"VERSION:2.0.0\n")
    state = table.take(1)[0]
    table.clock.advance(0.7)
    table.feed(1, f"{state}:c\n".encode())  # seat 2 calls after 0.7 s; seat 1 checks at once
    table.feed(0, f"{table.take(0)[-1]}:c\n".encode())
    flop = table.take(0)[-1]
    assert flop.split(":")[3] == "cc/"
    table.feed(0, f"{flop}:c\n".encode())  # seat 1 opens the flop at once; seat 2 to act
    table.clock.advance(0.29)  # 0.99 s used by seat 2 in this hand
    assert not table.done.called
    table.clock.advance(0.02)
    result = table.done.result
    assert (result.cause, result.seat) == ("out_of_time", 1)
    assert "t_hand 1 s used up" in (result.message or "")


def test_match_budget_on_the_clock(in_tmp: Path) -> None:
    """t_per_hand x hands is a match budget: time from earlier hands counts."""
    table = MemoryTable(make_config("m", hands=2, t_per_hand_ms=500))  # 1 s for the match
    table.feed(0, b"VERSION:2.0.0\n")
    table.feed(1, b"VERSION:2.0.0\n")
    table.clock.advance(0.6)
    table.feed(1, f"{table.take(1)[-1]}:f\n".encode())  # seat 2 folds hand 0 after 0.6 s
    hand1 = table.take(0)[-1]
    assert hand1.startswith("MATCHSTATE:1:1::")  # seat 1 opens hand 1
    table.feed(0, f"{hand1}:c\n".encode())
    table.clock.advance(0.39)
    assert not table.done.called
    table.clock.advance(0.02)  # seat 2 has used its 1 s
    result = table.done.result
    assert (result.cause, result.seat, result.hands_played) == ("out_of_time", 1, 1)
    assert "match budget 1 s" in (result.message or "")


def test_comments_are_not_charged_and_not_answers(in_tmp: Path) -> None:
    """'#' and ';' lines are skipped; the reply after them is used."""
    table = MemoryTable(make_config("m", hands=1))
    table.feed(0, b"VERSION:2.0.0\n")
    table.feed(1, b"VERSION:2.0.0\n")
    state = table.take(1)[0]
    table.feed(1, f"; hi\n# there\n{state}:f\n".encode())
    result = table.done.result
    assert result.exit_code == EXIT_OK and result.ignored == [0, 0]
    assert result.totals == [50.0, -50.0]


def test_connection_after_the_seat_is_taken_is_refused(in_tmp: Path) -> None:
    """Once a connection's VERSION line took the seat, a further connection is closed at once."""
    table = MemoryTable(make_config("m", hands=1))
    table.feed(0, b"VERSION:2.0.0\n")
    extra = table.match.seating.factories[0].buildProtocol(None)
    transport = StringTransport()
    extra.makeConnection(transport)
    assert transport.disconnecting and not extra.accepted
    assert table.protocols[0].accepted and not table.transports[0].disconnecting


def test_line_limit_is_per_connection(in_tmp: Path) -> None:
    """MAX_LENGTH is set per seat connection, from the match's max_line."""
    table = MemoryTable(make_config("m", hands=1, max_line=100_000))
    assert all(p.MAX_LENGTH == 100_000 for p in table.protocols)
    with pytest.raises(ValueError):
        SeatProtocol(table.match.seating.factories[0], table.match.hand_loop, 0, max_length=2 << 20)


def test_prefix_handlers_route_lines(in_tmp: Path) -> None:
    """A line with a registered prefix goes to its handler, not to the match."""
    table = MemoryTable(make_config("m", hands=1))
    seen: list[str] = []
    table.feed(0, b"VERSION:2.0.0\n")
    table.feed(1, b"VERSION:2.0.0\n")
    table.protocols[1].prefix_handlers["QUERY"] = seen.append
    table.feed(1, b"QUERY:1\r\n")
    assert seen == ["QUERY:1"]
    assert not table.match.seats[1].queue


def test_queued_lines_go_out_first_in_one_send_and_never_pile_up() -> None:
    """A seat's queued states go out before the next line it is sent (a range query,
    say), in one write; past MAX_QUEUED_LINES they are sent without waiting."""
    from dealer.seat import SeatProtocol as Seat

    class Handshake:
        def candidate(self, protocol: Seat) -> bool:
            return True

    transport = StringTransport()
    writes: list[bytes] = []
    write = transport.write
    transport.write = lambda data: (writes.append(data), write(data))[1]  # type: ignore[method-assign]
    protocol = Seat(Handshake(), None, 0)  # type: ignore[arg-type]
    protocol.makeConnection(transport)
    protocol.queue_line("MATCHSTATE:0:0::7d3d|")
    protocol.queue_line("MATCHSTATE:0:0:r300:7d3d|")
    assert writes == []
    protocol.send_line("QUERY:d1:x")
    assert writes == [b"MATCHSTATE:0:0::7d3d|\r\nMATCHSTATE:0:0:r300:7d3d|\r\nQUERY:d1:x\r\n"]
    for i in range(Seat.MAX_QUEUED_LINES):
        protocol.queue_line(f"line {i}")
    assert len(writes) == 1
    protocol.queue_line("one more")
    assert len(writes) == 2 and writes[1].count(b"\r\n") == Seat.MAX_QUEUED_LINES + 1
    protocol.flush_lines()
    assert len(writes) == 2  # nothing left to send


@pytest.mark.parametrize("hooked", [False, True])
def test_hands_follow_one_another_without_a_deferred_unless_hooks_wait(in_tmp: Path, hooked: bool) -> None:
    """Without hand hooks one series of hands plays the whole match (one Deferred for all
    its hands); with one, every hand has its own, the hook runs after every hand, in order,
    and the logs are the same.

    Seen from outside, so that it holds for the compiled Match too: every action's event
    notes the Deferred its hand fires when over."""
    from dealer.events import ActionPlayed, EventRecord
    from dealer.match import Match
    from tests.dealer.harness import MemoryRun, call_bots, log_lines

    done_of: dict[int, Any] = {}  # hand id -> the Deferred its series fires
    hooked_hands: list[int] = []

    def prepare(match: Match) -> None:
        def seen(event: EventRecord) -> None:
            if isinstance(event, ActionPlayed):
                hand = match.hand_loop._hand
                assert hand is not None and hand.state.hand_id == event.hand
                done_of.setdefault(event.hand, hand.done)

        match.events.subscribe(seen)
        if hooked:
            async def hook(state: Any, deal: Any, seat_of: list[int]) -> None:
                hooked_hands.append(state.hand_id)
            match.hand_hooks.append(hook)

    config = make_config("chain", hands=7)
    result = MemoryRun().play(config, call_bots(config), prepare=prepare)
    assert result.completed and result.hands_played == 7
    assert sorted(done_of) == list(range(7))
    series: list[int] = []  # the hands that begin a series (a new Deferred)
    for hand_id in range(7):
        if all(done_of[hand_id] is not done_of[first] for first in series):
            series.append(hand_id)
    assert series == (list(range(7)) if hooked else [0])
    assert hooked_hands == (list(range(7)) if hooked else [])
    assert sum(line.startswith("STATE:") for line in log_lines(config)) == 7

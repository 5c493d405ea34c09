"""The reference dealer's full TO/FROM traces, parsed and rebuilt by protocol/.

Source of truth: ``tests/data/acpc-reference/transcripts/{nl1000,lim1000}.trace``,
the stderr of the reference dealer (acpc.md §2, §12, §14). Game and seed come
from each trace's header line.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from protocol.deal import DealSource
from protocol.gamedef import GameDef, load_game
from protocol.rules import State
from protocol.wire import format_reply, matchstate_for, parse_matchstate, parse_reply
from tests.reference import REFERENCE_DIR

REFERENCE = REFERENCE_DIR
TRACES = ["nl1000", "lim1000"]


@dataclass
class Message:
    direction: str  # "TO" or "FROM"
    seat: int  # 1-based, as the trace writes it
    text: str  # the line as sent or received, line ending removed


@dataclass
class Trace:
    game: GameDef
    hands: int
    seed: int
    messages: list[Message]


def read_trace(name: str) -> Trace:
    path = REFERENCE / "transcripts" / f"{name}.trace"
    if not path.is_file():
        pytest.fail(f"reference trace {path} not found")
    # Bytes, so that the '\r\n' the dealer sent stays visible.
    lines = path.read_bytes().decode().split("\n")
    _, _, _, game_arg, hands, seed = lines[0].split(" ")
    messages = []
    for line in lines:
        if line.startswith(("TO ", "FROM ")):
            direction, seat, _at, _time, text = line.split(" ", 4)
            messages.append(Message(direction, int(seat), text))
    return Trace(load_game(game_arg.removesuffix(".game")), int(hands), int(seed), messages)


@pytest.fixture(scope="module", params=TRACES)
def trace(request: pytest.FixtureRequest) -> Trace:
    return read_trace(request.param)


def test_dealer_lines_end_in_crlf(trace: Trace) -> None:
    """Every message the dealer sent ends in '\\r\\n' (acpc.md §2)."""
    sent = [m for m in trace.messages if m.direction == "TO"]
    assert sent and all(m.text.endswith("\r") for m in sent)


def test_every_sent_state_reprints(trace: Trace) -> None:
    """Every TO line parses and reprints byte for byte, minus the line ending."""
    for message in trace.messages:
        if message.direction == "TO":
            body = message.text.removesuffix("\r")
            assert parse_matchstate(message.text, trace.game).text() == body


def test_every_reply_parses(trace: Trace) -> None:
    """Every FROM line is a well-formed reply with a readable action."""
    for message in trace.messages:
        if message.direction == "FROM":
            reply = parse_reply(message.text, trace.game)
            assert reply is not None and reply.problem is None, message.text
            assert reply.action is not None
            # The example player sends canonical actions, so the reply reprints.
            assert format_reply(reply.state, reply.action) == message.text.removesuffix("\r")


def test_dealer_view_is_rebuilt(trace: Trace) -> None:
    """matchstate_for with the seed's deals regenerates every TO line, in order.

    Before each decision every seat gets the state (in seat order), and again
    once the hand is over; seat s plays position (s - h) mod N in hand h.
    """
    game = trace.game
    n = game.num_players
    source = DealSource(trace.seed)
    replies = iter(m for m in trace.messages if m.direction == "FROM")
    sent = [m for m in trace.messages if m.direction == "TO"]
    expected: list[tuple[int, str]] = []
    for hand in range(trace.hands):
        deal = source.deal(game)
        state = State(game, hand)
        while True:
            for seat in range(n):
                position = (seat - hand) % n
                expected.append((seat + 1, matchstate_for(state, deal, position).text()))
            if state.finished:
                break
            reply_message = next(replies)
            actor_seat = (state.current_player + hand) % n
            assert reply_message.seat == actor_seat + 1, reply_message.text
            reply = parse_reply(reply_message.text, game)
            assert reply is not None and reply.action is not None
            assert reply.state.text() == matchstate_for(state, deal, state.current_player).text()
            state.apply(reply.action)
    assert next(replies, None) is None
    assert [(m.seat, m.text.removesuffix("\r")) for m in sent] == expected

"""Property tests for the wire formats, game definitions and rules.

Round trips (parse -> print gives the text back), conservation of chips
under random legal play, and robustness: whatever text comes in, the parsers
either succeed or raise the project's ProtocolError, never anything else.
Example counts come from the hypothesis profile in tests/conftest.py.
"""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import given
from hypothesis import strategies as st

from protocol.deal import Deal, DealSource
from protocol.errors import ProtocolError
from protocol.gamedef import (
    INT32_MAX,
    MAX_BOARD_CARDS,
    GameDef,
    bundled_games,
    format_gamedef,
    load_game,
    parse_gamedef,
)
from protocol.rules import Action, ActionType, State
from protocol.wire import (
    Score,
    format_reply,
    log_state_for,
    matchstate_for,
    parse_log_state,
    parse_matchstate,
    parse_reply,
    parse_score,
    same_decision_point,
)
from tests.reference import REFERENCE_DIR

REFERENCE = REFERENCE_DIR
GAMES = {name: load_game(name) for name in bundled_games()}
NL = GAMES["holdem.nolimit.2p.reverse_blinds"]


# -- strategies ------------------------------------------------------------


@st.composite
def game_defs(draw: st.DrawFn) -> GameDef:
    """Any game definition the reader accepts."""
    betting = draw(st.sampled_from(["limit", "nolimit"]))
    num_players = draw(st.integers(2, 10))
    num_rounds = draw(st.integers(1, 4))
    num_suits = draw(st.integers(1, 4))
    num_ranks = draw(st.integers(1, 13))
    deck = num_suits * num_ranks
    num_hole = draw(st.integers(1, min(3, deck // num_players) or 1))
    if num_hole * num_players > deck:
        num_suits, num_ranks, deck = 4, 13, 52
        num_hole = min(num_hole, 52 // num_players)
    budget = min(MAX_BOARD_CARDS, deck - num_hole * num_players)
    board = []
    for _ in range(num_rounds):
        count = draw(st.integers(0, budget))
        board.append(count)
        budget -= count
    stack = draw(
        st.lists(st.integers(1, INT32_MAX), min_size=num_players, max_size=num_players)
        | st.just([INT32_MAX] * num_players)
    )
    blind = [draw(st.integers(0, s)) for s in stack]
    per_round = st.lists(st.integers(1, 1000), min_size=num_rounds, max_size=num_rounds)
    return GameDef(
        betting=betting,
        num_players=num_players,
        num_rounds=num_rounds,
        stack=tuple(stack),
        blind=tuple(blind),
        raise_size=tuple(draw(per_round)) if betting == "limit" else (),
        first_player=tuple(
            draw(
                st.lists(st.integers(0, num_players - 1), min_size=num_rounds, max_size=num_rounds)
            )
        ),
        max_raises=tuple(
            draw(
                st.lists(st.integers(0, 255), min_size=num_rounds, max_size=num_rounds)
                | st.just([255] * num_rounds)
            )
        ),
        num_suits=num_suits,
        num_ranks=num_ranks,
        num_hole_cards=num_hole,
        num_board_cards=tuple(board),
    )


def random_action(data: st.DataObject, state: State) -> Action:
    """A legal action for the player to act, drawn by hypothesis."""
    kind = data.draw(st.sampled_from(state.legal_actions()))
    if kind is ActionType.RAISE and not state.game.is_limit:
        bounds = state.raise_range()
        assert bounds is not None
        low, high = bounds
        size = data.draw(st.sampled_from([low, high]) | st.integers(low, high))
        return Action.raise_to(size)
    return Action(kind)


def random_hand(data: st.DataObject, game: GameDef) -> tuple[State, Deal, list[State]]:
    """A hand of ``game`` with a random deal, played to the end by random legal actions.

    Returns the final state, the deal, and the state before each decision.
    """
    source = DealSource(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    hand_id = data.draw(st.integers(0, 2**32 - 1), label="hand")
    deal = source.deal(game)
    state = State(game, hand_id)
    decisions = []
    while not state.finished:
        decisions.append(state.clone())
        state.apply(random_action(data, state))
    return state, deal, decisions


bundled = st.sampled_from(sorted(GAMES))


# -- round trips -----------------------------------------------------------


@given(game_defs())
def test_gamedef_round_trip(game: GameDef) -> None:
    """parse(format(g)) == g for every valid game definition."""
    assert parse_gamedef(format_gamedef(game)) == game


@given(st.data(), bundled)
def test_matchstate_round_trip_and_conservation(data: st.DataObject, name: str) -> None:
    """Every state of a random legal hand reprints; the values sum to zero."""
    game = GAMES[name]
    final, deal, decisions = random_hand(data, game)
    for state in [*decisions, final]:
        for position in range(game.num_players):
            message = matchstate_for(state, deal, position)
            parsed = parse_matchstate(message.text() + "\r\n", game)
            assert parsed == message
            assert parsed.to_state(game).betting_string() == state.betting_string()
            assert same_decision_point(parsed, message)
    values = final.values(deal.hole, deal.board_cards)
    assert abs(sum(values)) < 1e-9
    assert len(values) == game.num_players


@st.composite
def reply_spellings(draw: st.DrawFn, action: Action, limit: bool) -> str:
    """Ways a client may legitimately spell ``action`` (aliases, case, junk after)."""
    letters = {
        ActionType.FOLD: "fF",
        ActionType.CALL: "cCkK",
        ActionType.RAISE: "rRbB",
    }[action.type]
    text = draw(st.sampled_from(letters))
    if action.type is ActionType.RAISE and not limit:
        text += draw(st.sampled_from(["", " ", "+", "  +", "\t"])) + str(action.size)
        junk = st.text(alphabet="xyz:|/ \t", max_size=5)
    else:
        junk = st.text(alphabet="0123456789xyz:|/ ", max_size=5)
    return text + draw(junk)


@given(st.data(), bundled)
def test_reply_round_trip_with_aliases(data: st.DataObject, name: str) -> None:
    """A reply echoes the state and any spelling of the action reads back as it."""
    game = GAMES[name]
    _, deal, decisions = random_hand(data, game)
    for state in decisions:
        actor = state.current_player
        message = matchstate_for(state, deal, actor)
        action = random_action(data, state)
        canonical = parse_reply(format_reply(message, action), game)
        assert canonical is not None and canonical.action == action
        assert canonical.state == message and canonical.problem is None
        spelled = data.draw(reply_spellings(action, game.is_limit))
        # Card letters in the echo are read case-insensitively.
        echo = message.text()
        echo = data.draw(st.sampled_from([echo, echo[:11] + echo[11:].swapcase()]))
        reply = parse_reply(f"{echo}:{spelled}\r\n", game)
        assert reply is not None and reply.action == action, spelled
        assert same_decision_point(reply.state, message)


@given(st.data(), bundled, st.lists(st.text("abcxyz_-.", min_size=1, max_size=8), min_size=10))
def test_log_lines_round_trip(data: st.DataObject, name: str, pool: list[str]) -> None:
    """A finished hand's STATE line and a SCORE line reprint byte for byte."""
    game = GAMES[name]
    final, deal, _ = random_hand(data, game)
    values = final.values(deal.hole, deal.board_cards)
    names = pool[: game.num_players]
    line = log_state_for(final, deal, values, names).text()
    parsed = parse_log_state(line, game)
    assert parsed.text() == line
    assert parsed.hole == deal.hole and parsed.names == tuple(names)
    score = Score(values, tuple(names)).text()
    assert parse_score(score).text() == score


# -- robustness --------------------------------------------------------------


def seed_lines() -> list[str]:
    """Valid lines of every kind to mutate: reference lines plus a few of our own."""
    lines = [
        "MATCHSTATE:1:0:r300c/:|Td4d/As9d6s",
        "MATCHSTATE:0:1:cc/cc/r6233r19109c/cr19795c:9h6s|3d3h/5s3s8h/9d/5c",
        "MATCHSTATE:1:3:r6961c/r19310r20000c//:Ad3s|8d5d/2cAs8s/Tc/Qh",
        "MATCHSTATE:1:0::|Td4d:r300",
        "MATCHSTATE:0:0:r300c/:8dJd|/As9d6s:b700",
        "STATE:3:r6961c/r19310r20000c//:Ad3s|8d5d/2cAs8s/Tc/Qh:20000|-20000:p2|p1",
        "STATE:2:f:4d6c|QsJh:50|-50:p1|p2",
        "SCORE:-211082|211082:p1|p2",
        format_gamedef(NL),
    ]
    log = REFERENCE / "logs" / "nl1000.log"
    if log.is_file():
        lines += log.read_text().splitlines()[4:40]
    return lines


SEEDS = seed_lines()
PARSERS: list[Callable[[str], object]] = [
    lambda text: parse_matchstate(text, NL),
    lambda text: parse_reply(text, NL),
    lambda text: parse_log_state(text, NL),
    lambda text: parse_score(text),
    lambda text: parse_gamedef(text),
    lambda text: parse_matchstate(text, GAMES["leduc.limit.2p"]),
    lambda text: parse_reply(text, GAMES["holdem.limit.2p.reverse_blinds"]),
    lambda text: parse_log_state(text, GAMES["holdem.nolimit.3p"]),
]


def only_protocol_errors(text: str) -> None:
    for parse in PARSERS:
        try:
            parse(text)
        except ProtocolError:
            pass


@st.composite
def mutated_lines(draw: st.DrawFn) -> str:
    """A valid line, truncated, with characters substituted, or with separators inserted."""
    text = draw(st.sampled_from(SEEDS))
    special = st.sampled_from(list(":|/0123456789rcfkbRCFTdAs-+ \r\n\t\x00é٣"))
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(text)))
        how = draw(st.sampled_from(["truncate", "substitute", "insert", "delete"]))
        if how == "truncate":
            text = text[:i]
        elif how == "substitute":
            text = text[:i] + draw(special | st.characters()) + text[i + 1 :]
        elif how == "insert":
            text = text[:i] + draw(st.sampled_from(":|/") | special) + text[i:]
        else:
            text = text[:i] + text[i + 1 :]
    return text


@given(st.text())
def test_any_text_raises_only_protocol_errors(text: str) -> None:
    """Arbitrary text never escapes the error family."""
    only_protocol_errors(text)
    only_protocol_errors("MATCHSTATE:" + text)
    only_protocol_errors("STATE:" + text)
    only_protocol_errors("SCORE:" + text)


@given(mutated_lines())
def test_mutated_lines_raise_only_protocol_errors(text: str) -> None:
    """Near-valid lines either parse or raise ProtocolError, never anything else."""
    only_protocol_errors(text)

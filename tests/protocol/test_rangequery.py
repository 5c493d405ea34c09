"""Range-query messages: print/parse round trips and malformed input (answers: test_rangecodec.py)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from protocol.errors import ParseError
from protocol.gamedef import GameDef, load_game
from protocol.rangequery import (
    Query,
    QueryErrorReply,
    RangeErrorReply,
    parse_action_token,
    parse_query,
    parse_query_error,
    parse_range_error,
    parse_range_message,
    read_query,
)
from protocol.rules import Action, State
from protocol.wire import MatchState

GAMES = {name: load_game(name) for name in ("nolimit", "limit", "leduc", "holdem.nolimit.3p")}

qids = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
    min_size=1,
    max_size=12,
)


@st.composite
def decision_points(draw: st.DrawFn) -> tuple[GameDef, MatchState]:
    """A random game and a public state in it where someone is to act, holes hidden."""
    game = GAMES[draw(st.sampled_from(sorted(GAMES)))]
    state = State(game, draw(st.integers(0, 10**6)))
    for _ in range(draw(st.integers(0, 12))):
        legal = state.legal_actions()
        kind = draw(st.sampled_from(legal))
        bounds = state.raise_range()
        if kind.value == "r" and bounds is not None and not game.is_limit:
            action = Action.raise_to(draw(st.integers(*bounds)))
        else:
            action = Action(kind)
        trial = state.clone()
        trial.apply(action)
        if trial.finished:
            break
        state = trial
    deck = list(game.cards)
    shown = game.board_cards_visible(state.round)
    cards = draw(st.permutations(deck))[:shown]
    board, start = [], 0
    for round_ in range(state.round + 1):
        count = game.num_board_cards[round_]
        board.append(tuple(cards[start : start + count]))
        start += count
    betting = tuple(tuple(actions) for actions in state.actions)
    hole = tuple(() for _ in range(game.num_players))
    return game, MatchState(state.current_player, state.hand_id, betting, hole, tuple(board))


@st.composite
def action_lists(draw: st.DrawFn, game: GameDef) -> tuple[Action, ...]:
    """A non-empty list of distinct canonical actions of ``game``."""
    raises = st.just(Action.RAISE) if game.is_limit else st.integers(1, 10**6).map(Action.raise_to)
    pool = st.one_of(st.just(Action.FOLD), st.just(Action.CALL), raises)
    return tuple(draw(st.lists(pool, min_size=1, max_size=6, unique=True)))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), qid=qids)
def test_query_round_trips(data: st.DataObject, qid: str) -> None:
    """print -> parse gives back the same query, and its text survives byte for byte."""
    game, state = data.draw(decision_points())
    query = Query(qid, state, data.draw(action_lists(game)))
    text = query.text()
    parsed = parse_query(text, game)
    assert parsed == query
    assert parsed.text() == text
    assert parse_query(text + "\r\n", game) == query
    assert parse_range_message(text, game) == query




@given(
    qid=qids,
    message=st.text(
        st.characters(blacklist_characters="\r\n", blacklist_categories=["Cs"]), max_size=40
    ),
)
def test_error_messages_round_trip(qid: str, message: str) -> None:
    """RANGEERROR and QUERYERROR lines print and parse back (':' allowed in the text)."""
    assume(message.isascii())
    assert parse_range_error(RangeErrorReply(qid, message).text()) == RangeErrorReply(qid, message)
    assert parse_query_error(QueryErrorReply(qid, message).text()) == QueryErrorReply(qid, message)


@settings(max_examples=300, deadline=None)
@given(line=st.text(max_size=80), game_name=st.sampled_from(sorted(GAMES)))
def test_garbage_raises_only_parse_error(line: str, game_name: str) -> None:
    """Arbitrary text is either a message or a ParseError, never another exception."""
    game = GAMES[game_name]
    for text in (line, "QUERY:" + line, "RANGE:" + line, "QUERY:q:" + line):
        try:
            parse_range_message(text, game)
        except ParseError:
            pass


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), qid=qids, position=st.integers(0, 200), char=st.characters(codec="ascii"))
def test_mutated_queries_raise_only_parse_error(
    data: st.DataObject, qid: str, position: int, char: str
) -> None:
    """A valid query with one character changed still parses or raises ParseError."""
    game, state = data.draw(decision_points())
    text = Query(qid, state, data.draw(action_lists(game))).text()
    index = position % len(text)
    for mutated in (text[:index] + char + text[index + 1 :], text[:index] + text[index + 1 :]):
        try:
            parse_query(mutated, game)
        except ParseError:
            pass


@pytest.mark.parametrize(
    "line",
    [
        "QUERY:q1:0:0::|:",  # no actions
        "QUERY:q-1:1:0::|:c",  # bad qid
        "QUERY::1:0::|:c",  # empty qid
        "QUERY:q1:1:0::|2hAc:c",  # a hole card shown
        "QUERY:q1:1:0::|:c,c",  # an action twice
        "QUERY:q1:1:0::|:r",  # bare r in no-limit
        "QUERY:q1:1:0::|:k",  # aliases are not canonical
        "QUERY:q1:1:0:r100:|:c",  # illegal betting
        "QUERY:q1:1:0::|:c:extra",  # too many fields
        "QUERY:q1:1:0::|",  # too few fields
        "QUERY:q1:1:0:cc/:|/2c3d:c",  # wrong board size
    ],
)
def test_malformed_queries_are_refused(line: str) -> None:
    """Each malformed query raises ParseError."""
    with pytest.raises(ParseError):
        parse_query(line, GAMES["nolimit"])


def test_limit_queries_take_bare_raises_only() -> None:
    """In limit 'r' is the raise; 'r300' is refused."""
    assert parse_query("QUERY:a:1:0::|:r", GAMES["limit"]).actions == (Action.RAISE,)
    with pytest.raises(ParseError):
        parse_query("QUERY:a:1:0::|:r300", GAMES["limit"])


def test_action_tokens() -> None:
    """Canonical tokens parse; anything else raises ParseError."""
    assert [parse_action_token(t).text() for t in ("f", "c", "r", "r250")] == [
        "f",
        "c",
        "r",
        "r250",
    ]
    for token in ("", "F", "k", "b", "r0", "r-5", "r+5", "r 5", "rr", "c1", "r٣"):
        with pytest.raises(ParseError):
            parse_action_token(token)


def test_action_token_sizes_are_bounded_as_in_betting() -> None:
    """A raise-to total is read past any leading zeros and is at most INT32_MAX, however long its digits."""
    zeros = "0" * 5000  # more digits than int() reads
    assert parse_action_token(f"r{zeros}250") == Action.raise_to(250)
    assert parse_action_token("r2147483647") == Action.raise_to(2147483647)
    for token in ("r2147483648", "r" + "9" * 30, "r" + "9" * 5000, f"r{zeros}", f"r{zeros}2147483648"):
        with pytest.raises(ParseError):
            parse_action_token(token)
    with pytest.raises(ParseError, match="at most 2147483647"):
        read_query("QUERY:q1:1:0::|:f,c,r" + "9" * 5000, GAMES["nolimit"])


def test_a_state_read_again_is_a_fresh_copy_and_per_game() -> None:
    """read_query keeps the states it parsed; a second read gets its own copy, in its own game.

    The bot and the relay of one process read the same state: what one does to
    its copy must not reach the other, and the same text in another game must
    be parsed in that game (a limit query is malformed in no-limit).
    """
    game = GAMES["nolimit"]
    line = "QUERY:q1:0:7:r300c/r900:|/2c3d4h:f,c"
    first, first_state = read_query(line, game)
    first_state.apply(Action.CALL)
    first_state.spent[0] = -5
    second, second_state = read_query(line.replace("q1", "q2"), game)
    assert second.qid == "q2" and second.state == first.state
    assert second_state.betting_string() == "r300c/r900" and second_state.spent == [900, 300]
    assert read_query("QUERY:q3:0:7:rc/r:|/2c3d4h:f", GAMES["limit"])[1].betting_string() == "rc/r"
    with pytest.raises(ParseError, match="no-limit raise needs"):
        read_query("QUERY:q4:0:7:rc/r:|/2c3d4h:f", game)

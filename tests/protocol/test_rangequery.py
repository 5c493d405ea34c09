"""Range-query messages: print/parse round trips, malformed input, and answer validation."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from protocol.errors import ParseError
from protocol.gamedef import GameDef, load_game
from protocol.rangequery import (
    Query,
    QueryErrorReply,
    RangeAnswer,
    RangeErrorReply,
    format_probabilities,
    format_probability,
    format_range,
    parse_action_token,
    parse_query,
    parse_query_error,
    parse_range,
    parse_range_error,
    parse_range_message,
    validate_range,
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
    shown = game.board_cards_before(state.round)
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


dyadic = st.integers(0, 1024).map(lambda k: k / 1024)


@settings(max_examples=200, deadline=None)
@given(qid=qids, data=st.data(), num_hands=st.integers(1, 40))
def test_range_answer_round_trips(qid: str, data: st.DataObject, num_hands: int) -> None:
    """A RANGE line prints and parses back to the same answer (values exact in decimal)."""
    actions = data.draw(action_lists(GAMES["nolimit"]))
    rows = tuple(
        tuple(data.draw(st.lists(dyadic, min_size=num_hands, max_size=num_hands))) for _ in actions
    )
    answer = RangeAnswer(qid, actions, rows)
    text = answer.text()
    assert parse_range(text) == answer
    assert parse_range(text).text() == text


@given(st.floats(0.0, 1.0))
def test_probabilities_print_as_plain_decimals_within_5e13(value: float) -> None:
    """Any probability prints without exponent and reads back within 5e-13."""
    text = format_probability(value)
    assert "e" not in text.lower() and not text.startswith("-")
    assert abs(float(text) - value) <= 5e-13
    assert format_probability(float(text)) == text


@given(
    st.lists(st.floats(-2.0, 2.0) | st.sampled_from([0.0, -0.0, 1.0, 1e-13, -1e-13]), max_size=30)
)
def test_row_formatting_agrees_with_single_values(values: list[float]) -> None:
    """The one-pass row printer gives exactly the single-value texts, comma-joined."""
    assert format_probabilities(values) == ",".join(format_probability(v) for v in values)


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


@pytest.mark.parametrize(
    "line",
    [
        "RANGE:q1",
        "RANGE:q1:c",
        "RANGE:q1:c=",
        "RANGE:q1:c=0.5,x",
        "RANGE:q1:c=nan",
        "RANGE:q1:c=inf",
        "RANGE:q1:c=1;c=1",
        "RANGE:q1:x=1",
        "RANGE:q_1:c=1",
        "RANGEX:q1:c=1",
        "RANGE:q1:c=1,,1",
    ],
)
def test_malformed_answers_are_refused(line: str) -> None:
    """Each malformed RANGE line raises ParseError."""
    with pytest.raises(ParseError):
        parse_range(line)


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


ACTIONS = (Action.FOLD, Action.CALL, Action.raise_to(400))


def answer(*rows: tuple[float, ...], actions: tuple[Action, ...] = ACTIONS) -> RangeAnswer:
    """A RANGE answer with the given rows."""
    return RangeAnswer("q", actions, tuple(rows))


def test_validation_accepts_a_proper_answer_and_a_sum_at_the_tolerance() -> None:
    """Rows of N values in [0, 1] summing to at most 1 + 1e-6 pass, in any action order."""
    validate_range(answer((0.2, 0.0), (0.3, 1.0), (0.5, 0.0)), ACTIONS, 2)
    shuffled = RangeAnswer("q", ACTIONS[::-1], ((0.5, 0.0), (0.3, 1.0), (0.2, 0.0)))
    validate_range(shuffled, ACTIONS, 2)
    validate_range(answer((0.0,), (1.0,), (9e-7,)), ACTIONS, 1)


@pytest.mark.parametrize(
    ("candidate", "fragment"),
    [
        (answer((0.0, 0.0), (1.0, 1.0), actions=ACTIONS[:2]), "missing: r400"),
        (
            answer((0.0,), (1.0,), (0.0,), (0.0,), actions=(*ACTIONS, Action.raise_to(500))),
            "extra: r500",
        ),
        (answer((0.0,), (1.0, 0.0), (0.0,)), "expected 2"),
        (answer((0.0, 0.0), (1.0, math.nan), (0.0, 0.0)), "hand 1"),
        (answer((0.0, -0.1), (1.0, 0.0), (0.0, 0.0)), "not in [0, 1]"),
        (answer((0.0, 0.0), (1.5, 0.0), (0.0, 0.0)), "not in [0, 1]"),
        (answer((0.0, 0.5), (1.0, 0.5), (0.0, 2e-6)), "sum"),
    ],
)
def test_validation_refuses_with_a_clear_message(candidate: RangeAnswer, fragment: str) -> None:
    """Missing/extra actions, wrong N, non-finite or out-of-range values, sums > 1: ParseError."""
    num_hands = (
        1 if len(candidate.probabilities[0]) == 1 and len(candidate.probabilities) == 4 else 2
    )
    with pytest.raises(ParseError, match=fragment.replace("[", r"\[").replace("]", r"\]")):
        validate_range(candidate, ACTIONS, num_hands)


def test_validation_ignores_flagged_hands() -> None:
    """Hands flagged in the ignore mask (board collisions) may carry anything."""
    bad = answer((0.0, 7.0), (1.0, math.inf), (0.0, 3.0))
    validate_range(bad, ACTIONS, 2, ignore=[False, True])
    with pytest.raises(ParseError):
        validate_range(bad, ACTIONS, 2)


def test_format_range_accepts_numpy_rows() -> None:
    """format_range prints numpy arrays like lists, compactly."""
    import numpy as np

    text = format_range("x9", [Action.CALL, Action.FOLD], np.array([[1.0, 1.0], [0.0, 0.125]]))
    assert text == "RANGE:x9:c=1,1;f=0,0.125"

"""Hand-picked cases for protocol.wire: what is refused, and the reply grammar.

Expected behaviour is from acpc.md §2 (MATCHSTATE grammar), §3 (replies),
§12 (log lines) and the reference's readMatchState/readAction.
"""

from __future__ import annotations

import pytest

from protocol.cards import cards_from_text
from protocol.deal import DealSource
from protocol.errors import ParseError, ProtocolError
from protocol.gamedef import GameDef, load_game
from protocol.rules import Action, State
from protocol.wire import (
    MatchState,
    format_chips,
    format_reply,
    log_state_for,
    matchstate_for,
    parse_action,
    parse_betting,
    parse_log_state,
    parse_matchstate,
    parse_reply,
    parse_score,
    same_decision_point,
)

NL = load_game("holdem.nolimit.2p.reverse_blinds")
LIMIT = load_game("holdem.limit.2p.reverse_blinds")
NL3 = load_game("holdem.nolimit.3p")
LEDUC = load_game("leduc.limit.2p")


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("MATCHSTATE:1:0:|Td4d", "field count"),
        ("MATCHSTATE:1:0::|Td4d:extra", "field count"),
        ("matchstate:1:0::|Td4d", "prefix"),
        ("MATCHSTATE:x:0::|Td4d", "bad position"),
        ("MATCHSTATE:-1:0::|Td4d", "negative position"),
        ("MATCHSTATE:2:0::|Td4d", "position out of range"),
        ("MATCHSTATE:1:-3::|Td4d", "negative hand id"),
        ("MATCHSTATE:1:4294967296::|Td4d", "hand id over 32 bits"),
        ("MATCHSTATE:1:٣::|Td4d", "non-ASCII digit"),
        ("MATCHSTATE:1:0::|Td4x", "bad card"),
        ("MATCHSTATE:1:0::|Td4", "half a card"),
        ("MATCHSTATE:1:0::|TdTd", "duplicate card"),
        ("MATCHSTATE:1:0:r300c/:8dJd|/As9d8d", "card repeated across hole and board"),
        ("MATCHSTATE:1:0::|Td4d3c", "too many hole cards"),
        ("MATCHSTATE:1:0::|Td", "too few hole cards"),
        ("MATCHSTATE:1:0::|Td4d|2c3c", "too many players"),
        ("MATCHSTATE:1:0:r300c/:|Td4d/As9d", "flop short"),
        ("MATCHSTATE:1:0:r300c/:|Td4d", "board missing for the round"),
        ("MATCHSTATE:1:0::|Td4d/As9d6s", "board shown before its round"),
        ("MATCHSTATE:1:0:r:|Td4d", "no-limit raise without size"),
        ("MATCHSTATE:1:0:r150:|Td4d", "raise below the minimum"),
        ("MATCHSTATE:1:0:r20001:|Td4d", "raise above the stack"),
        ("MATCHSTATE:1:0:cf:|Td4d", "fold when checking is free"),
        ("MATCHSTATE:1:0:cc:|Td4d", "round closed without '/'"),
        ("MATCHSTATE:1:0:c/:|Td4d/As9d6s", "'/' before the round closed"),
        ("MATCHSTATE:1:0:ccc/:|Td4d/As9d6s", "action after the round closed"),
        ("MATCHSTATE:1:0:fc:|Td4d", "action after the hand ended"),
        ("MATCHSTATE:1:0:x:|Td4d", "unknown action"),
        ("MATCHSTATE:1:0:r 300:|Td4d", "space in betting"),
    ],
)
def test_malformed_matchstate_is_a_parse_error(line: str, why: str) -> None:
    """Each malformed or illegal MATCHSTATE is refused with ParseError."""
    with pytest.raises(ParseError):
        parse_matchstate(line, NL)


def test_illegal_betting_message_says_so() -> None:
    """A rules violation during replay is a ParseError that names the betting illegal."""
    with pytest.raises(ParseError, match="illegal betting"):
        parse_matchstate("MATCHSTATE:1:0:r150:|Td4d", NL)


@pytest.mark.parametrize(
    "line",
    ["MATCHSTATE:0:0:r300:8dJd|", "MATCHSTATE:0:0:rrrr:8dJd|", "MATCHSTATE:0:0:r:8dJd"],
)
def test_limit_refuses_sized_raises_and_caps(line: str) -> None:
    """In limit 'r' is bare and capped at maxRaises; every position has a field."""
    with pytest.raises(ParseError):
        parse_matchstate(line, LIMIT)


def test_reduced_deck_refuses_foreign_cards() -> None:
    """Leduc has only J, Q, K of two suits: a deuce is not one of its cards."""
    assert parse_matchstate("MATCHSTATE:0:0::Kh|", LEDUC).hole[0] == cards_from_text("Kh")
    with pytest.raises(ParseError, match="not a card of this game"):
        parse_matchstate("MATCHSTATE:0:0::2c|", LEDUC)


def test_board_round_shows_after_its_slash() -> None:
    """Leduc's one board card shows after the first '/'."""
    state = parse_matchstate("MATCHSTATE:1:5:rc/r:|Qs/Kh", LEDUC)
    assert state.board == ((), cards_from_text("Kh"))
    assert state.text() == "MATCHSTATE:1:5:rc/r:|Qs/Kh"


def test_three_player_fields() -> None:
    """A 3-player state has three hole fields and replays legally."""
    line = "MATCHSTATE:2:0:cr5844cc/:||Ah4s/6hTsAc"
    state = parse_matchstate(line, NL3)
    assert state.text() == line
    # firstPlayer = 3 1 1 1: after the flop position 0 opens.
    assert state.to_state(NL3).current_player == 0


def test_matchstate_for_showdown_and_fold() -> None:
    """The final state shows live hands at a showdown, nothing more after a fold."""
    game, deal = NL, DealSource(7).deal(NL)
    state = State(game, 0)
    for action in [Action.CALL, Action.CALL] + [Action.CALL] * 6:
        state.apply(action)
    assert matchstate_for(state, deal, 0).text() == (
        "MATCHSTATE:0:0:cc/cc/cc/cc:8dJd|Td4d/As9d6s/3d/6c"
    )
    folded = State(game, 0)
    folded.apply(Action.FOLD)
    assert matchstate_for(folded, deal, 0).text() == "MATCHSTATE:0:0:f:8dJd|"
    assert matchstate_for(folded, deal, 1).text() == "MATCHSTATE:1:0:f:|Td4d"


# -- replies -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("suffix", "expected"),
    [
        ("f", Action.FOLD),
        ("F", Action.FOLD),
        ("c", Action.CALL),
        ("K", Action.CALL),
        ("k and more", Action.CALL),
        ("r300", Action.raise_to(300)),
        ("B300", Action.raise_to(300)),
        ("r 300", Action.raise_to(300)),
        ("r+300", Action.raise_to(300)),
        ("r \t+0300xyz", Action.raise_to(300)),
        ("r-5", Action.raise_to(-5)),
        # glibc's %d: strtol (saturating at 64 bits), then the low 32 bits
        # (tests/data/acpc-reference/probes/V_raise_overflow).
        ("r99999999999999", Action.raise_to(276447231)),
        ("r4294967596", Action.raise_to(300)),
        ("r2147483648", Action.raise_to(-(2**31))),
        ("r-2147483649", Action.raise_to(2**31 - 1)),
        ("r9223372036854775807", Action.raise_to(-1)),
        ("r99999999999999999999", Action.raise_to(-1)),
        ("r-99999999999999999999", Action.raise_to(0)),
        ("r" + "0" * 5000 + "300", Action.raise_to(300)),
        ("r300:junk", Action.raise_to(300)),
    ],
)
def test_reply_actions_read_the_scanf_way(suffix: str, expected: Action) -> None:
    """Letters are case-insensitive, k=c, b=r; sizes read like glibc's scanf('%d')."""
    reply = parse_reply(f"MATCHSTATE:1:0::|Td4d:{suffix}\r\n", NL)
    assert reply is not None
    assert reply.action == expected and reply.problem is None
    assert reply.text == f"MATCHSTATE:1:0::|Td4d:{suffix}"


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("MATCHSTATE:1:0::|Td4d:r", "bad_format"),
        ("MATCHSTATE:1:0::|Td4d:r+", "bad_format"),
        ("MATCHSTATE:1:0::|Td4d:rx", "bad_format"),
        ("MATCHSTATE:1:0::|Td4d", "bad_format"),
        ("MATCHSTATE:1:0::|Td4d:x", "invalid"),
        ("MATCHSTATE:1:0::|Td4d:", "invalid"),
        ("MATCHSTATE:1:0::|Td4d: c", "invalid"),
    ],
)
def test_reply_problems(line: str, problem: str) -> None:
    """A sizeless no-limit raise or missing action is bad format; an unknown letter invalid."""
    reply = parse_reply(line, NL)
    assert reply is not None and reply.problem == problem and reply.action is None


def test_limit_reply_ignores_a_size() -> None:
    """In limit 'r300' reads as 'r' (probe M2_limit_r300)."""
    reply = parse_reply("MATCHSTATE:1:0::|Td4d:r300", LIMIT)
    assert reply is not None and reply.action == Action.RAISE


@pytest.mark.parametrize("line", ["# hello", ";", "#MATCHSTATE:1:0::|Td4d:c"])
def test_comments_are_none(line: str) -> None:
    """Lines starting with '#' or ';' are comments."""
    assert parse_reply(line, NL) is None


@pytest.mark.parametrize(
    "line", ["c", "", "\r\n", "MATCHSTATE:1:0:c", "MATCHSTATE:1:0:r150:|Td4d:c"]
)
def test_unparsable_reply_state(line: str) -> None:
    """A reply whose state part does not parse is a ParseError (bad state format)."""
    with pytest.raises(ParseError):
        parse_reply(line, NL)


@pytest.mark.parametrize(
    ("line", "action", "problem"),
    [
        # Read as the reference's readMatchState reads it (probe W_lenient_echo): a prefix.
        ("MATCHSTATE:1:0::|Td4d x:f", None, "bad_format"),  # text before the ':'
        ("MATCHSTATE:0:0:c:Td4d:f", Action.FOLD, None),  # no '|' after the hole cards
        ("MATCHSTATE: 1: +4294967296::|Td4d:c", Action.CALL, None),  # %u: blanks, sign, 32 bits
        ("MATCHSTATE:257:0::|Td4d:c", Action.CALL, None),  # %hhu: 8 bits
        ("MATCHSTATE:1:0::Td4d|Td4d:c", Action.CALL, None),  # no check that a card appears once
        ("MATCHSTATE:1:0:r 300c:|Td4d/As9d6s:c", Action.CALL, None),  # '/' skipped, sizes as %d
        # The line is a C string to the reference: it ends at a NUL.
        ("MATCHSTATE:1:0::|Td4d\0:f", None, "bad_format"),
        ("MATCHSTATE:1:0::|Td4d:r300\0 and more", Action.raise_to(300), None),
    ],
)
def test_echo_is_read_as_the_reference_reads_it(line: str, action: Action | None,
                                                 problem: str | None) -> None:
    reply = parse_reply(line, NL)
    assert reply is not None and (reply.action, reply.problem) == (action, problem)


def test_a_lenient_echo_is_the_state_it_names() -> None:
    reply = parse_reply("MATCHSTATE:1:0:r 300c:|td4D/As9d6s:c", NL)
    assert reply is not None
    assert reply.state.text() == "MATCHSTATE:1:0:r300c/:|Td4d/As9d6s"


def test_echo_is_case_insensitive() -> None:
    """Lower-case ranks and upper-case suits in the echo are the same cards."""
    reply = parse_reply("MATCHSTATE:1:0:R300C/:|tD4D/aS9D6S:c", NL)
    assert reply is not None
    assert reply.state.text() == "MATCHSTATE:1:0:r300c/:|Td4d/As9d6s"


def test_format_reply() -> None:
    """A reply is the state, ':' and the canonical action."""
    state = parse_matchstate("MATCHSTATE:1:0::|2hAc", NL)
    assert format_reply(state, Action.raise_to(14085)) == "MATCHSTATE:1:0::|2hAc:r14085"


def test_same_decision_point() -> None:
    """Position, hand, actions, board and own cards matter; others' cards do not."""
    expected = parse_matchstate("MATCHSTATE:0:1:cc/:9h6s|/5s3s8h", NL)
    with_other = MatchState(
        expected.position,
        expected.hand_id,
        expected.betting,
        (expected.hole[0], cards_from_text("3d3h")),
        expected.board,
    )
    assert same_decision_point(with_other, expected)
    for line in [
        "MATCHSTATE:0:2:cc/:9h6s|/5s3s8h",  # hand
        "MATCHSTATE:0:1:cc/:9h7s|/5s3s8h",  # own cards
        "MATCHSTATE:0:1:cc/:9h6s|/5s3s8d",  # board
        "MATCHSTATE:0:1:cc/:|/5s3s8h",  # own cards hidden
        "MATCHSTATE:0:1:r200c/:9h6s|/5s3s8h",  # actions
        "MATCHSTATE:0:1:cc/c:9h6s|/5s3s8h",  # actions in the round
        "MATCHSTATE:1:1:cc/:|9h6s/5s3s8h",  # position
    ]:
        assert not same_decision_point(parse_matchstate(line, NL), expected), line


# -- log lines -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (100.0, "100"),
        (-19795.0, "-19795"),
        (0.0, "0"),
        (0.5, "0.5"),
        (1 / 3, "0.333333"),
        (-2.0 / 3, "-0.666667"),
        (1e-7, "0"),
    ],
)
def test_format_chips(value: float, text: str) -> None:
    """'%.6f' with trailing zeros and a trailing '.' stripped."""
    assert format_chips(value) == text


@pytest.mark.parametrize(
    "line",
    [
        "STATE:2:f:4d6c|:50|-50:p1|p2",  # folded player's cards are shown in logs
        "STATE:2:r300:4d6c|QsJh:50|-50:p1|p2",  # unfinished hand
        "STATE:2:f:4d6c|QsJh:50:p1|p2",  # one value
        "STATE:2:f:4d6c|QsJh:50|x:p1|p2",  # bad value
        "STATE:2:f:4d6c|QsJh:50|nan:p1|p2",
        "STATE:2:f:4d6c|QsJh:50|-50:p1",  # one name
        "STATE:2:f:4d6c|QsJh:50|-50",  # no names
        "STATE:2:f:4d6c|QsJh/2c3c4c:50|-50:p1|p2",  # board after a preflop fold
    ],
)
def test_malformed_log_state(line: str) -> None:
    """Log STATE lines must be finished hands with every card, value and name."""
    with pytest.raises(ParseError):
        parse_log_state(line, NL)


def test_log_state_shows_folded_cards_and_board_to_the_end_round() -> None:
    """The log shows every hole card and the board only up to the last round reached."""
    deal = DealSource(42).deal(NL)
    state = State(NL, 0)
    state.apply(Action.raise_to(14085))
    state.apply(Action.FOLD)
    values = state.values(deal.hole, deal.board_cards)
    line = log_state_for(state, deal, values, ["p1", "p2"]).text()
    assert line == "STATE:0:r14085f:7d3d|2hAc:-100|100:p1|p2"


@pytest.mark.parametrize(
    "line", ["SCORE:1|2", "SCORE:1|2:a", "SCORE::a", "SCORE:1|x:a|b", "STATE:1|2:a|b"]
)
def test_malformed_score(line: str) -> None:
    """SCORE needs as many names as totals, and numeric totals."""
    with pytest.raises(ProtocolError):
        parse_score(line)


def test_parse_betting_reads_rounds_and_tails() -> None:
    """parse_betting splits rounds, reads a tail that starts a round, and keeps sizes."""
    assert parse_betting("r300c/cr900", NL) == ((Action.raise_to(300), Action.CALL),
                                                 (Action.CALL, Action.raise_to(900)))
    assert parse_betting("/r900", NL) == ((), (Action.raise_to(900),))
    assert parse_betting("rc/crf", LIMIT) == ((Action.RAISE, Action.CALL),
                                              (Action.CALL, Action.RAISE, Action.FOLD))


@pytest.mark.parametrize(
    ("text", "game"),
    [("r", NL), ("r300", LIMIT), ("cx", NL), ("c9", NL), (f"r{2**31}", NL)],
)
def test_parse_betting_refuses_malformed(text: str, game: GameDef) -> None:
    """A bare no-limit raise, a sized limit raise, an unknown letter, a size on a call, a size above INT32_MAX."""
    with pytest.raises(ParseError):
        parse_betting(text, game)


def test_parse_action_reads_exactly_one() -> None:
    """parse_action takes one action of the game's form and refuses none, two, or a separator."""
    assert parse_action("r300", NL) == Action.raise_to(300)
    assert parse_action("f", LIMIT) == Action.FOLD
    for text, game in (("", NL), ("cc", NL), ("c/", NL), ("x", NL), ("r300", LIMIT), ("r", NL)):
        with pytest.raises(ParseError):
            parse_action(text, game)


#: More leading zeros than int() reads (it refuses over 4300 digits, zeros included).
ZEROS = "0" * 5000


def test_zero_padded_numbers_read_as_their_value() -> None:
    """Leading zeros do not count toward a number's limit, however many (scanf reads them so)."""
    view = parse_matchstate(f"MATCHSTATE:{ZEROS}1:{ZEROS}7:r{ZEROS}300:|Td4d", NL)
    assert (view.position, view.hand_id, view.betting) == (1, 7, ((Action.raise_to(300),),))
    reply = parse_reply(f"MATCHSTATE:1:{ZEROS}7::|Td4d:c", NL)
    assert reply is not None and reply.state.hand_id == 7 and reply.action == Action.CALL
    assert parse_log_state(f"STATE:{ZEROS}2:f:4d6c|QsJh:50|-50:p1|p2", NL).hand_id == 2
    assert parse_betting(f"r{ZEROS}300c", NL) == ((Action.raise_to(300), Action.CALL),)
    assert parse_action(f"r{ZEROS}300", NL) == Action.raise_to(300)


@pytest.mark.parametrize(
    "line",
    [f"MATCHSTATE:1:{ZEROS}4294967296::|Td4d", f"MATCHSTATE:{ZEROS}2:0::|Td4d",
     f"MATCHSTATE:1:0:r{ZEROS}2147483648:|Td4d", f"MATCHSTATE:1:0:r{ZEROS}:|Td4d"],
)
def test_zero_padded_numbers_out_of_range_are_parse_errors(line: str) -> None:
    """Past the zeros, the limits hold: over 32 bits, off the table, over INT32_MAX, below the minimum."""
    with pytest.raises(ParseError):
        parse_matchstate(line, NL)

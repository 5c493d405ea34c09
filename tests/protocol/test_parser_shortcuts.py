"""One parser per grammar: every shortcut a reader takes agrees with that parser.

The wire formats have one reader each in protocol/wire.py: betting text
(``parse_betting``), MATCHSTATE lines as the agents read them
(``parse_matchstate``), a reply as the reference dealer reads it
(``parse_reply``: its echoed state is read leniently, as the reference's
``readMatchState`` does, and its action as ``readAction`` does), and the
``.log`` lines. The shortcuts are checked against those readers here on random
and adversarial text (hypothesis): the same result, or the same error class.

- the dealer's echo check: a reply that starts with the line sent is read by
  ``read_reply_action`` on what follows, never by ``parse_reply``;
- ``read_reply_action``'s plain ``r<digits>`` reading, against its ``scanf``
  reading of any other raise;
- the lenient echo reader against the strict line reader, where both apply
  (a line the strict reader accepts, echoed with an action).

Betting has no second reader; its properties (the canonical text of what it
reads, the first problem named, linear time) are checked against the grammar
as the spec states it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.errors import ParseError, ProtocolError
from protocol.gamedef import bundled_games, load_game
from protocol.rules import Action, ActionType
from protocol.wire import (
    _SCANF_INT,
    BAD_FORMAT,
    INVALID,
    _betting_text,
    _scanf_int32,
    matchstate_for,
    matchstate_text,
    parse_betting,
    parse_matchstate,
    parse_reply,
    read_reply_action,
    same_decision_point,
)
from tests.protocol.test_properties import mutated_lines, random_hand
from tests.work import source_module, work_of

GAMES = {name: load_game(name) for name in bundled_games()}
bundled = st.sampled_from(sorted(GAMES))

#: What a bot may put after the echoed state: action letters of either case,
#: signs, C white space, digits (ASCII and not), a NUL, separators, any character.
TAIL_CHARS = st.sampled_from(list("fcrkbFCRKBxz0123456789+- \t\r\n\v\f\x00:/|٣²\u212a")) | st.characters()
tails = st.text(TAIL_CHARS, max_size=14) | st.builds(
    lambda letter, zeros, digits, rest: f"{letter}{'0' * zeros}{digits}{rest}",
    st.sampled_from("rRbB"), st.integers(0, 30), st.integers(0, 2**70).map(str),
    st.text(TAIL_CHARS, max_size=3))


def _outcome(read: object, *args: object) -> tuple[str, object]:
    """A reader's result, or its error's class; anything outside the family fails the test."""
    try:
        return "ok", read(*args)  # type: ignore[operator]
    except ProtocolError as error:
        return "error", type(error).__name__


# -- the dealer's echo check --------------------------------------------------


@given(st.data(), bundled, tails)
def test_echo_shortcut_reads_what_parse_reply_reads(data: st.DataObject, name: str, tail: str) -> None:
    """A reply that echoes the sent line byte for byte, then ':' and anything: the dealer
    reads only the tail (read_reply_action); the one reply parser gives the same action or
    problem, and an echoed state at the decision point sent."""
    game = GAMES[name]
    _, deal, decisions = random_hand(data, game)
    state = data.draw(st.sampled_from(decisions), label="decision")
    sent = matchstate_text(state, deal, state.current_player)
    shortcut = read_reply_action(tail, game)
    reply = parse_reply(f"{sent}:{tail}", game)
    assert reply is not None
    assert (reply.action, reply.problem) == shortcut
    assert same_decision_point(reply.state, matchstate_for(state, deal, state.current_player))


@given(st.sampled_from(sorted(GAMES)), tails)
def test_reply_action_plain_raise_reading_is_the_scanf_reading(name: str, tail: str) -> None:
    """read_reply_action reads ``r<up to 9 digits>`` directly; any raise reads as glibc's
    ``sscanf("%d")`` would, and every letter as the reference's table says."""
    game = GAMES[name]
    action, problem = read_reply_action(tail, game)
    letter = tail[:1]
    if letter not in "fcrkbFCRKB" or not letter:
        assert (action, problem) == (None, INVALID)
        return
    kind = {"f": ActionType.FOLD, "c": ActionType.CALL, "k": ActionType.CALL}.get(
        letter.lower(), ActionType.RAISE)
    if kind is not ActionType.RAISE or game.is_limit:
        assert (action, problem) == (Action(kind), None)
        return
    found = _SCANF_INT.match(tail, 1)
    if found is None:
        assert (action, problem) == (None, BAD_FORMAT)
    else:
        assert (action, problem) == (Action.raise_to(_scanf_int32(found.group(1))), None)


# -- the lenient echo reader against the strict line reader -----------------------


@given(st.data(), bundled)
def test_lenient_echo_reads_a_sent_line_as_the_strict_reader(data: st.DataObject, name: str) -> None:
    """Every line the dealer sends, echoed with an action: the reply's state is the record
    the strict reader gives for the line."""
    game = GAMES[name]
    final, deal, decisions = random_hand(data, game)
    state = data.draw(st.sampled_from([*decisions, final]), label="state")
    position = data.draw(st.integers(0, game.num_players - 1), label="position")
    line = matchstate_text(state, deal, position)
    reply = parse_reply(f"{line}:c", game)
    assert reply is not None and reply.state == parse_matchstate(line, game)


@given(mutated_lines())
def test_lenient_echo_accepts_what_the_strict_reader_accepts(text: str) -> None:
    """Near-valid lines (mutated): where the strict reader accepts a line, the lenient
    reader of an echo gives the same record; both raise only the error family."""
    for game in (GAMES["holdem.nolimit.2p.reverse_blinds"], GAMES["holdem.limit.2p.reverse_blinds"]):
        line = text.split("\n")[0].split("\r")[0].split("\x00")[0]
        strict = _outcome(parse_matchstate, line, game)
        lenient = _outcome(parse_reply, f"{line}:c", game)
        if strict[0] == "ok" and line.count(":") == 4:
            assert lenient[0] == "ok" and lenient[1].state == strict[1]  # type: ignore[union-attr]


# -- betting ---------------------------------------------------------------------

BETTING_CHARS = st.sampled_from(list("fcrkbFCRKB0123456789//x :٣"))


def _canonical(text: str) -> str:
    """Betting text as the spec prints what it reads: lower case, k as c, b as r, sizes
    without leading zeros. A no-limit raise to 0 reads, as the reference's reader reads it,
    as a raise of size 0, which no rule allows (the rules refuse it, as the reference's
    do); an Action keeps "no size" as 0, so it prints as a bare ``r``."""
    text = text.lower().replace("k", "c").replace("b", "r")
    text = re.sub(r"[0-9]+", lambda digits: str(int(digits.group())), text)
    return re.sub(r"r0(?![0-9])", "r", text)


@given(st.text(BETTING_CHARS, max_size=40), bundled)
def test_betting_reads_to_its_canonical_text_or_names_the_first_problem(text: str, name: str) -> None:
    """What parse_betting reads prints as the text's canonical form, one round per '/';
    what it refuses, it refuses with a ParseError naming where the first bad token is."""
    game = GAMES[name]
    try:
        rounds = parse_betting(text, game)
    except ParseError as error:
        message = str(error)
        for segment in text.split("/"):
            bad = re.sub(r"^(?:[fcrkbFCRKB][0-9]*)*", "", segment)
            if bad:  # the first segment with a bad letter, unless a size was refused before it
                assert f"bad action at {bad!r}" in message or "size" in message, message
                break
        return
    assert len(rounds) == text.count("/") + 1
    assert _betting_text(rounds) == _canonical(text)
    if game.is_limit:
        assert all(action.size == 0 for actions in rounds for action in actions)


#: Hostile betting, per repeated unit: well-formed tokens (a raise war without its rules),
#: zero-padded sizes, round separators, and tokens before a bad letter at the very end.
HOSTILE_BETTING = [("r300", ""), ("r" + "0" * 50 + "1", ""), ("/", ""), ("cR9", "x"), ("k/", "٣")]


@pytest.mark.parametrize(("unit", "end"), HOSTILE_BETTING)
def test_betting_reads_hostile_text_in_linear_time(unit: str, end: str) -> None:
    """8x the text costs at most 3x8 times the steps and allocated bytes, read or refused
    (bot text: a range query's betting is as long as its line). Counted on the reader's
    source (tests/work.py), which the compiled build runs as machine code."""
    game = GAMES["holdem.nolimit.2p.reverse_blinds"]
    read_betting = source_module("protocol.wire").parse_betting

    def read(k: int) -> Callable[[], object]:
        text = unit * k + end
        return lambda: _outcome(read_betting, text, game)

    factor, small = 8, 300 // len(unit)  # 300 bytes, then 2.4 KB: each traced step is slow to count
    large_work, small_work = work_of(read(small * factor)), work_of(read(small))
    assert large_work.within(small_work, factor), (small_work, large_work)

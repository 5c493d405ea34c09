"""Messages of the range-query extension (version 1): parse and print.

A range query asks a bot for the probability of some actions at a public
state, for every private hand it could hold (docs/range-query.md)::

    QUERY:<qid>:<position>:<handNumber>:<betting>:<cards>:<actions>
    RANGE:<qid>:<action>=<p0>,<p1>,...;<action>=...
    RANGEERROR:<qid>:<message>
    QUERYERROR:<qid>:<reason>

The embedded state is a MATCHSTATE body with every hole-card slot empty,
parsed by :mod:`protocol.wire`; actions are :class:`protocol.rules.Action`
tokens. Every malformed input raises :class:`ParseError`, and so does
:func:`validate_range` for an answer that breaks the rules of the extension.

>>> from protocol.gamedef import load_game
>>> query = parse_query("QUERY:q7:0:3:cc/r250:|/2c3d4h:f,c,r1000", load_game("nolimit"))
>>> query.qid, query.state.betting_text(), [a.text() for a in query.actions]
('q7', 'cc/r250', ['f', 'c', 'r1000'])
>>> query.text()
'QUERY:q7:0:3:cc/r250:|/2c3d4h:f,c,r1000'
>>> answer = parse_range("RANGE:q7:c=1,0.25;f=0,0.5")
>>> answer.probabilities
((1.0, 0.25), (0.0, 0.5))
>>> answer.text()
'RANGE:q7:c=1,0.25;f=0,0.5'
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from protocol.errors import ParseError
from protocol.gamedef import GameDef
from protocol.rules import Action, ActionType
from protocol.wire import MatchState, parse_matchstate

#: The version of the extension these messages implement.
RANGE_QUERY_VERSION = 1

#: Sums of probabilities over the requested actions may exceed 1 by this much.
SUM_TOLERANCE = 1e-6

_QID = re.compile(r"[A-Za-z0-9]+\Z")
_NUMBER_TEXT = r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_NUMBER = re.compile(_NUMBER_TEXT + r"\Z")
#: A whole row at once: one regex call per action instead of one per hand.
_ROW = re.compile(rf"{_NUMBER_TEXT}(?:,{_NUMBER_TEXT})*\Z")


def _check_qid(qid: str, line: str) -> str:
    if not _QID.match(qid):
        raise ParseError("a query id is one or more letters and digits", line)
    return qid


def parse_action_token(token: str) -> Action:
    """Parse one canonical action token: ``f``, ``c``, ``r`` or ``r<total>``.

    >>> parse_action_token("r300").text()
    'r300'

    Raises:
        ParseError: anything else (aliases such as ``k``/``b`` are not accepted).
    """
    if token == "f":
        return Action.FOLD
    if token == "c":
        return Action.CALL
    if token == "r":
        return Action.RAISE
    if token[:1] == "r" and token[1:].isdigit() and token[1:].isascii():
        size = int(token[1:])
        if size <= 0:
            raise ParseError("a raise-to total is positive", token)
        return Action.raise_to(size)
    raise ParseError("not an action token (f, c, r or r<total>)", token)


def _parse_action_list(text: str, line: str) -> tuple[Action, ...]:
    if not text:
        raise ParseError("a query asks about at least one action", line)
    actions = tuple(parse_action_token(token) for token in text.split(","))
    if len(set(actions)) != len(actions):
        raise ParseError("an action is asked twice", line)
    return actions


def format_probability(value: float) -> str:
    """Print a probability as a plain decimal: ``0``, ``1``, ``0.25``, ``0.000050505``.

    Twelve decimals at most (error below 5e-13), trailing zeros stripped, no
    exponent.

    >>> format_probability(1.0), format_probability(1 / 19801)
    ('1', '0.0000505025')
    """
    if value == 0.0:
        return "0"
    if value == 1.0:
        return "1"
    text = f"{value:.12f}".rstrip("0").rstrip(".")
    return text if text not in ("", "-0") else "0"


def format_probabilities(values: Iterable[float]) -> str:
    """Comma-separated :func:`format_probability` texts, formatted in one pass.

    >>> format_probabilities([0.0, 1.0, 0.5, -0.0, 1 / 3])
    '0,1,0.5,0,0.333333333333'
    """
    items = [float(v) for v in values]
    distinct = set(items)
    if len(distinct) * 8 < len(items):
        # Few distinct values (a bot's constant rows, zeros on the board's
        # hands): print each value once.
        text_of = {value: format_probability(value) for value in distinct}
        return ",".join([text_of[value] for value in items])
    # One C-level %-format for the whole row, then strip each item's zeros.
    texts = ("%.12f," * len(items) % tuple(items)).split(",")[:-1]
    trimmed = [text.rstrip("0").rstrip(".") for text in texts]
    return ",".join(["0" if text == "-0" else text for text in trimmed])


@dataclass(frozen=True)
class Query:
    """``QUERY:<qid>:<position>:<handNumber>:<betting>:<cards>:<actions>``.

    Attributes:
        qid: letters and digits; the answer repeats it.
        state: the decision point, as the MATCHSTATE the queried bot would get
            there, with every hole-card slot empty.
        actions: the concrete actions whose probabilities are wanted.
    """

    qid: str
    state: MatchState
    actions: tuple[Action, ...]

    def text(self) -> str:
        """The message line, without a line ending."""
        tokens = ",".join(a.text() for a in self.actions)
        return f"QUERY:{self.qid}:{self.state.body()}:{tokens}"


def public_state(state: MatchState) -> MatchState:
    """``state`` with every hole-card slot emptied: the form a query carries.

    >>> from protocol.gamedef import load_game
    >>> from protocol.wire import parse_matchstate
    >>> public_state(parse_matchstate("MATCHSTATE:1:0:r300:|2hAc", load_game("nolimit"))).body()
    '1:0:r300:|'
    """
    return replace(state, hole=tuple(() for _ in state.hole))


def parse_query(line: str, game: GameDef) -> Query:
    """Parse a QUERY line (a trailing CR/LF is ignored).

    Raises:
        ParseError: bad id, unparsable state, a hole card shown, bad or
            repeated action tokens, or a sized raise in a limit game.
    """
    text = line.rstrip("\r\n")
    fields = text.split(":")
    if len(fields) != 7 or fields[0] != "QUERY":
        raise ParseError(
            "a query is QUERY:<qid>:<position>:<hand>:<betting>:<cards>:<actions>", line
        )
    qid = _check_qid(fields[1], line)
    try:
        state = parse_matchstate("MATCHSTATE:" + ":".join(fields[2:6]), game)
    except ParseError as error:
        raise ParseError(f"bad state in query: {error.message}", line) from error
    except Exception as error:  # the state parser must not leak other types
        raise ParseError(f"bad state in query: {error}", line) from error
    if any(state.hole):
        raise ParseError("a query shows no hole cards", line)
    actions = _parse_action_list(fields[6], line)
    for action in actions:
        if action.type is ActionType.RAISE and game.is_limit != (action.size == 0):
            need = "a bare 'r' in limit" if game.is_limit else "'r<total>' in no-limit"
            raise ParseError(f"a raise is {need}", line)
    return Query(qid, state, actions)


@dataclass(frozen=True)
class RangeAnswer:
    """``RANGE:<qid>:<action>=<p0>,…;<action>=…``: one row of probabilities per action.

    Attributes:
        qid: the query's id.
        actions: the actions answered, in the order sent.
        probabilities: one tuple of N probabilities per action, in hand order.
    """

    qid: str
    actions: tuple[Action, ...]
    probabilities: tuple[tuple[float, ...], ...]

    def text(self) -> str:
        """The message line, without a line ending."""
        return format_range(self.qid, self.actions, self.probabilities)


def format_range(qid: str, actions: Sequence[Action], rows: Iterable[Iterable[float]]) -> str:
    """Print a RANGE line from actions and rows of probabilities (e.g. a numpy array).

    >>> format_range("7", [Action.CALL], [[1.0, 0.5]])
    'RANGE:7:c=1,0.5'
    """
    parts = []
    for action, row in zip(actions, rows, strict=True):
        values = row.tolist() if hasattr(row, "tolist") else row
        parts.append(f"{action.text()}={format_probabilities(values)}")
    return f"RANGE:{qid}:{';'.join(parts)}"


def parse_range(line: str) -> RangeAnswer:
    """Parse a RANGE line (a trailing CR/LF is ignored).

    Only the syntax is checked; :func:`validate_range` checks the numbers.

    Raises:
        ParseError: a bad id, action token or number, or an action twice.
    """
    text = line.rstrip("\r\n")
    fields = text.split(":", 2)
    if len(fields) != 3 or fields[0] != "RANGE":
        raise ParseError("an answer is RANGE:<qid>:<action>=<p0>,<p1>,...;...", line[:200])
    qid = _check_qid(fields[1], line[:200])
    actions: list[Action] = []
    rows: list[tuple[float, ...]] = []
    for part in fields[2].split(";"):
        token, equals, numbers = part.partition("=")
        if not equals:
            raise ParseError("each answer part is <action>=<p0>,<p1>,...", part[:200])
        actions.append(parse_action_token(token))
        if not _ROW.match(numbers):
            bad = next((n for n in numbers.split(",") if not _NUMBER.match(n)), numbers)
            raise ParseError("not a decimal number", bad[:50])
        rows.append(tuple(map(float, numbers.split(","))))
    if len(set(actions)) != len(actions):
        raise ParseError("an action is answered twice", line[:200])
    return RangeAnswer(qid, tuple(actions), tuple(rows))


def validate_range(
    answer: RangeAnswer,
    actions: Sequence[Action],
    num_hands: int,
    ignore: Sequence[bool] | None = None,
) -> None:
    """Check an answer against its query: the rules a dealer enforces.

    Args:
        answer: the parsed answer.
        actions: the actions that were asked, each to be answered exactly once.
        num_hands: N, the game's number of private hands.
        ignore: optional mask of N flags; hands flagged (those sharing a card
            with the board) may carry any value.

    Raises:
        ParseError: a missing or extra action, a row without N values, a value
            not finite or outside [0, 1], or a hand whose probabilities over the
            asked actions sum to more than 1 + 1e-6.
    """
    asked = set(actions)
    got = set(answer.actions)
    if asked != got:
        missing = ",".join(a.text() for a in actions if a not in got)
        extra = ",".join(a.text() for a in answer.actions if a not in asked)
        raise ParseError(
            f"answer does not match the query (missing: {missing or '-'}, extra: {extra or '-'})"
        )
    if ignore is not None and len(ignore) != num_hands:
        raise ValueError("ignore mask needs one flag per hand")
    for action, row in zip(answer.actions, answer.probabilities):
        if len(row) != num_hands:
            raise ParseError(f"action {action.text()}: {len(row)} values, expected {num_hands}")
        for hand, value in enumerate(row):
            if ignore is not None and ignore[hand]:
                continue
            if not (math.isfinite(value) and 0.0 <= value <= 1.0):
                raise ParseError(f"action {action.text()}, hand {hand}: {value!r} is not in [0, 1]")
    for hand, column in enumerate(zip(*answer.probabilities)):
        if ignore is not None and ignore[hand]:
            continue
        total = math.fsum(column)
        if total > 1.0 + SUM_TOLERANCE:
            raise ParseError(f"hand {hand}: probabilities sum to {total!r} > 1")


@dataclass(frozen=True)
class RangeErrorReply:
    """``RANGEERROR:<qid>:<message>``: the bot cannot answer."""

    qid: str
    message: str

    def text(self) -> str:
        """The message line, without a line ending."""
        return f"RANGEERROR:{self.qid}:{_one_line(self.message)}"


@dataclass(frozen=True)
class QueryErrorReply:
    """``QUERYERROR:<qid>:<reason>``: the dealer refuses or could not relay a query."""

    qid: str
    reason: str

    def text(self) -> str:
        """The message line, without a line ending."""
        return f"QUERYERROR:{self.qid}:{_one_line(self.reason)}"


def _one_line(message: str) -> str:
    return message.replace("\r", " ").replace("\n", " ")


def _parse_error_line(line: str, tag: str) -> tuple[str, str]:
    text = line.rstrip("\r\n")
    fields = text.split(":", 2)
    if len(fields) != 3 or fields[0] != tag:
        raise ParseError(f"expected {tag}:<qid>:<text>", line[:200])
    if "\r" in fields[2] or "\n" in fields[2]:
        raise ParseError("a message is one line", line[:200])
    return _check_qid(fields[1], line[:200]), fields[2]


def parse_range_error(line: str) -> RangeErrorReply:
    """Parse a RANGEERROR line.

    >>> parse_range_error("RANGEERROR:q1:no strategy here").message
    'no strategy here'
    """
    return RangeErrorReply(*_parse_error_line(line, "RANGEERROR"))


def parse_query_error(line: str) -> QueryErrorReply:
    """Parse a QUERYERROR line.

    >>> parse_query_error("QUERYERROR:q1:not the current hand").reason
    'not the current hand'
    """
    return QueryErrorReply(*_parse_error_line(line, "QUERYERROR"))


#: Any message of the extension.
RangeMessage = Query | RangeAnswer | RangeErrorReply | QueryErrorReply


def parse_range_message(line: str, game: GameDef) -> RangeMessage:
    """Parse any extension message, dispatching on its tag.

    Raises:
        ParseError: an unknown tag or a malformed message.
    """
    tag = line.split(":", 1)[0]
    if tag == "QUERY":
        return parse_query(line, game)
    if tag == "RANGE":
        return parse_range(line)
    if tag == "RANGEERROR":
        return parse_range_error(line)
    if tag == "QUERYERROR":
        return parse_query_error(line)
    raise ParseError("not a range-query message", line[:200])

"""Messages of the range-query extension: queries, action tokens and error lines.

A range query asks a bot for the probability of some actions at a public
state, for every private hand it could hold (docs/range-query.md)::

    QUERY:<qid>:<position>:<handNumber>:<betting>:<cards>:<actions>
    RANGE:<qid>:...                (the answer: see protocol.rangecodec)
    RANGEERROR:<qid>:<message>
    QUERYERROR:<qid>:<reason>

The embedded state is a MATCHSTATE body with every hole-card slot empty,
parsed by :mod:`protocol.wire`; actions are :class:`protocol.rules.Action`
tokens. Every malformed input raises :class:`ParseError`. Answers (``RANGE``
lines, versions 1 and 2) are encoded, decoded and checked by
:mod:`protocol.rangecodec` alone.

>>> from protocol.gamedef import load_game
>>> query = parse_query("QUERY:q7:0:3:cc/r250:|/2c3d4h:f,c,r1000", load_game("nolimit"))
>>> query.qid, query.state.betting_text(), [a.text() for a in query.actions]
('q7', 'cc/r250', ['f', 'c', 'r1000'])
>>> query.text()
'QUERY:q7:0:3:cc/r250:|/2c3d4h:f,c,r1000'
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from protocol.errors import ParseError
from protocol.gamedef import GameDef
from protocol.rules import Action, ActionType, State
from protocol.wire import INT32_MAX, MatchState, ReplayCache, parse_matchstate_replayed

_QID = re.compile(r"[A-Za-z0-9]+\Z")
#: The states query bettings reached: a run of queries about one hand shares
#: its prefixes, so each is replayed from the last one (protocol.wire.ReplayCache).
_REPLAYS = ReplayCache()
#: The last states parsed, by text: where the relay and the bot it asks share
#: a process (acpc-lbr evaluate), the bot reads the very state the relay read.
_PARSED: dict[tuple[int, str], tuple[GameDef, MatchState, State]] = {}
_PARSED_SIZE = 256


def is_query_id(text: str) -> bool:
    """Whether ``text`` is a well-formed query id: one or more ASCII letters and digits.

    The one definition, shared by the query parser, the answer decoder
    (:mod:`protocol.rangecodec`) and the dealer's relay.

    >>> is_query_id("q17"), is_query_id(""), is_query_id("q-1"), is_query_id("q1\\n")
    (True, False, False, False)
    """
    return _QID.match(text) is not None


def _check_qid(qid: str, line: str) -> str:
    if not is_query_id(qid):
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
        digits = token[1:].lstrip("0")
        if not digits:
            raise ParseError("a raise-to total is positive", token)
        # As in betting text, at most INT32_MAX (and int() refuses over 4300 digits).
        if len(digits) > 10 or int(digits) > INT32_MAX:
            raise ParseError(f"a raise-to total is at most {INT32_MAX}", token)
        return Action.raise_to(int(digits))
    raise ParseError("not an action token (f, c, r or r<total>)", token)


def _parse_action_list(text: str, line: str) -> tuple[Action, ...]:
    if not text:
        raise ParseError("a query asks about at least one action", line)
    actions = tuple(parse_action_token(token) for token in text.split(","))
    if len(set(actions)) != len(actions):
        raise ParseError("an action is asked twice", line)
    return actions


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
    return read_query(line, game)[0]


def read_query(line: str, game: GameDef) -> tuple[Query, State]:
    """:func:`parse_query`, with the state the query's betting reaches (replayed once).

    Raises:
        ParseError: as :func:`parse_query`.
    """
    text = line.rstrip("\r\n")
    fields = text.split(":")
    if len(fields) != 7 or fields[0] != "QUERY":
        raise ParseError(
            "a query is QUERY:<qid>:<position>:<hand>:<betting>:<cards>:<actions>", line
        )
    qid = _check_qid(fields[1], line)
    body = ":".join(fields[2:6])
    seen = _PARSED.get((id(game), body))
    if seen is not None and seen[0] is game:
        state, replayed = seen[1], seen[2].clone()
    else:
        try:
            state, replayed = parse_matchstate_replayed("MATCHSTATE:" + body, game, _REPLAYS)
        except ParseError as error:
            raise ParseError(f"bad state in query: {error.message}", line) from error
        except Exception as error:  # the state parser must not leak other types
            raise ParseError(f"bad state in query: {error}", line) from error
        if len(_PARSED) >= _PARSED_SIZE:
            del _PARSED[next(iter(_PARSED))]
        _PARSED[(id(game), body)] = (game, state, replayed.clone())
    if any(state.hole):
        raise ParseError("a query shows no hole cards", line)
    actions = _parse_action_list(fields[6], line)
    for action in actions:
        if action.type is ActionType.RAISE and game.is_limit != (action.size == 0):
            need = "a bare 'r' in limit" if game.is_limit else "'r<total>' in no-limit"
            raise ParseError(f"a raise is {need}", line)
    return Query(qid, state, actions), replayed


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


#: Any message of the extension except answers (``RANGE`` lines are read by
#: :mod:`protocol.rangecodec`, which needs the query they answer).
RangeMessage = Query | RangeErrorReply | QueryErrorReply


def parse_range_message(line: str, game: GameDef) -> RangeMessage:
    """Parse any extension message, dispatching on its tag.

    Raises:
        ParseError: an unknown tag (``RANGE`` included) or a malformed message.
    """
    tag = line.split(":", 1)[0]
    if tag == "QUERY":
        return parse_query(line, game)
    if tag == "RANGEERROR":
        return parse_range_error(line)
    if tag == "QUERYERROR":
        return parse_query_error(line)
    raise ParseError("not a range-query message", line[:200])

"""The ACPC wire formats: MATCHSTATE lines, replies, and the ``.log`` lines.

Every reader goes through the rules: parsing a MATCHSTATE (or a log STATE)
line replays its betting through :class:`~protocol.rules.State`, so a parsed
line is always a legal position. Every printer is byte-compatible with the
reference dealer (``printMatchState``/``printState`` in its game.c), and every
reference log line survives parse -> print byte for byte. Malformed text of
any kind raises :class:`~protocol.errors.ParseError`, the one error family.

>>> from protocol.gamedef import load_game
>>> game = load_game("nolimit")
>>> ms = parse_matchstate("MATCHSTATE:1:0:r300c/:|Td4d/As9d6s", game)
>>> ms.position, ms.hand_id, ms.round, ms.betting_text()
(1, 0, 1, 'r300c/')
>>> ms.text()
'MATCHSTATE:1:0:r300c/:|Td4d/As9d6s'
>>> ms.to_state(game).current_player
0
>>> reply = parse_reply("MATCHSTATE:1:0::|Td4d:B 300", game)
>>> reply.action, reply.problem
(Action(type=<ActionType.RAISE: 'r'>, size=300), None)
>>> format_reply(reply.state, Action.CALL)
'MATCHSTATE:1:0::|Td4d:c'
>>> parse_reply("# a comment", game) is None
True
>>> format_chips(-19795.0), format_chips(33.333333333), format_chips(0.5)
('-19795', '33.333333', '0.5')
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from protocol._variant import native_helper, record_reduce
from protocol.cards import CARD_TEXT, DECK_SIZE, cards_to_text
from protocol.deal import Deal
from protocol.errors import IllegalActionError, ParseError
from protocol.gamedef import GameDef
from protocol.rules import Action, State

__all__ = [
    "BAD_FORMAT",
    "INVALID",
    "PREFIX",
    "HandLines",
    "LogState",
    "MatchState",
    "ReplayCache",
    "Reply",
    "Score",
    "format_chips",
    "format_reply",
    "log_header",
    "log_state_for",
    "log_state_text",
    "matchstate_for",
    "matchstate_text",
    "parse_action",
    "parse_betting",
    "parse_chips",
    "parse_log_state",
    "parse_matchstate",
    "parse_reply",
    "parse_score",
    "read_reply_action",
    "same_decision_point",
    "scanf_unsigned",
]

#: The prefix of every state line the dealer sends.
PREFIX: Final = "MATCHSTATE:"
_LOG_PREFIX = "STATE:"
_SCORE_PREFIX = "SCORE:"

#: Reply problems (see :class:`Reply`).
INVALID = "invalid"
BAD_FORMAT = "bad_format"

UINT32_MAX = 2**32 - 1
INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1

# ASCII digits only: ``\d`` and ``str.isdigit`` also accept other scripts' digits.
_UNSIGNED: Final = re.compile(r"[0-9]+")
# Betting letters are read as the reference's readAction reads them, through
# the same table as replies: case-insensitive, with k = c and b = r.
_ACTION_TOKEN: Final = re.compile(r"([fcrkbFCRKB])([0-9]*)")
_BETTING_ROUND: Final = re.compile(r"(?:[fcrkbFCRKB][0-9]*)*")
# ``scanf("%d")``: optional C white space, an optional sign, then digits.
_SCANF_INT: Final = re.compile(r"[ \t\n\v\f\r]*([+-]?[0-9]+)")
_CHIPS: Final = re.compile(r"-?[0-9]+(\.[0-9]+)?")
# The reference's action letters (readAction): f, c or k, r or b, in either case, as
# shared records (they are frozen; a no-limit raise then reads its size).
_SIMPLE_REPLY_ACTIONS: Final[dict[str, Action]] = {
    letter: action
    for letters, action in (("fF", Action.FOLD), ("cCkK", Action.CALL), ("rRbB", Action.RAISE))
    for letter in letters
}

# Card text by index; a lookup fails (rather than wraps) off the deck.
_CARD_TEXT_OF: Final[dict[int, str]] = dict(enumerate(CARD_TEXT))
# Card text as card_from_text reads it (rank and suit letters in either case).
_CARD_BY_TEXT: Final[dict[str, int]] = {
    rank + suit: card
    for card, text in enumerate(CARD_TEXT)
    for rank in {text[0], text[0].lower()}
    for suit in {text[1], text[1].upper()}
}

Betting = tuple[tuple[Action, ...], ...]
Cards = tuple[tuple[int, ...], ...]


# -- small readers ---------------------------------------------------------


def _strip_line_end(line: str) -> str:
    """Drop a trailing ``\\n`` and then a trailing ``\\r`` (the reference sends ``\\r\\n``)."""
    line = line.removesuffix("\n")
    line = line.removesuffix("\r")
    return line


def _unsigned(token: str, what: str, limit: int, line: str) -> int:
    """Read a decimal integer in ``0..limit`` made of ASCII digits only."""
    digits = token.lstrip("0")
    if not _UNSIGNED.fullmatch(token) or len(digits) > len(str(limit)):
        raise ParseError(f"{what} must be an integer in 0..{limit}, got {token!r}", line)
    # Only the significant digits: int() refuses more than 4300 (leading zeros count).
    value = int(digits or "0")
    if value > limit:
        raise ParseError(f"{what} must be an integer in 0..{limit}, got {token!r}", line)
    return value


def _cards(text: str, game: GameDef, line: str) -> tuple[int, ...]:
    """Parse concatenated cards, each of which must belong to ``game``'s deck."""
    if len(text) % 2:
        raise ParseError(f"card text {text!r} has an odd length", line)
    # Every card is in a full deck: only a smaller deck needs the membership test.
    deck = None if len(game.cards) == DECK_SIZE else game.cards
    cards = []
    for i in range(0, len(text), 2):
        card = _CARD_BY_TEXT.get(text[i : i + 2])
        if card is None:
            raise ParseError(f"{text[i : i + 2]!r} is not a card", line)
        if deck is not None and card not in deck:
            raise ParseError(f"{text[i : i + 2]!r} is not a card of this game", line)
        cards.append(card)
    return tuple(cards)


def _parse_betting(text: str, game: GameDef, line: str) -> Betting:
    """Split a betting string into rounds of actions (syntax only), naming the first problem.

    The one reader of betting text: one regex match finds where a round's
    well-formed tokens end (a bad letter, if any, is there), and the tokens
    before it are read in order, so the first problem in the text is the one
    named. Linear in the text.
    """
    no_limit = not game.is_limit
    rounds = []
    for segment in text.split("/"):
        found = _BETTING_ROUND.match(segment)  # always matches, maybe empty
        well_formed = found.end() if found is not None else 0
        actions: list[Action] = []
        for letter, digits in _ACTION_TOKEN.findall(segment, 0, well_formed):
            action = _SIMPLE_REPLY_ACTIONS[letter]  # shared records: they are frozen
            if action is Action.RAISE and no_limit:
                # Up to 9 digits is below INT32_MAX; longer goes through the bounds check.
                size = int(digits) if 0 < len(digits) < 10 else _raise_size(digits, line)
                action = Action.raise_to(size)
            elif digits:
                raise ParseError(f"{letter}{digits!r} takes no size in this game", line)
            actions.append(action)
        if well_formed != len(segment):
            raise ParseError(f"bad action at {segment[well_formed:]!r} in betting {text!r}", line)
        rounds.append(tuple(actions))
    return tuple(rounds)


def _raise_size(digits: str, line: str) -> int:
    """A no-limit raise's size from its digits (ASCII), in 0..INT32_MAX."""
    if not digits:
        raise ParseError("a no-limit raise needs a raise-to size", line)
    return _unsigned(digits, "raise size", INT32_MAX, line)


def parse_betting(text: str, game: GameDef, line: str | None = None) -> Betting:
    """Split betting text into rounds of actions, by syntax only (no rules).

    The one reader of betting text: MATCHSTATE and STATE lines, the agents'
    incremental tracker and the dealer's tlog all read actions through it.
    Letters are read as in replies (case-insensitive, ``k`` = ``c``, ``b`` =
    ``r``); a no-limit raise carries its raise-to size, a limit raise none.

    >>> from protocol.gamedef import load_game
    >>> [[a.text() for a in r] for r in parse_betting("r300c/cr900", load_game("nolimit"))]
    [['r300', 'c'], ['c', 'r900']]

    Args:
        text: betting such as ``'r300c/cr900'`` (or a tail of one, such as ``'/r900'``).
        game: the game, for whether raises carry a size.
        line: the whole line the text comes from, for the error (default: ``text``).

    Raises:
        ParseError: an unknown letter, a sized limit raise, a bare no-limit raise,
            or a size above INT32_MAX.
    """
    if len(text) > _SHORT_BETTING:
        return _parse_betting(text, game, text if line is None else line)
    # Short texts (the one- or two-action tails a tracker reads) repeat all
    # match long: keep their parses, which are immutable.
    key = (game.is_limit, text)
    found = _SHORT_BETTINGS.get(key)
    if found is None:
        found = _parse_betting(text, game, text if line is None else line)
        if len(_SHORT_BETTINGS) >= _SHORT_BETTINGS_KEPT:
            _SHORT_BETTINGS.clear()
        _SHORT_BETTINGS[key] = found
    return found


#: parse_betting keeps the parses of texts up to this long, up to this many of them.
_SHORT_BETTING: Final = 12
_SHORT_BETTINGS_KEPT: Final = 4096
_SHORT_BETTINGS: Final[dict[tuple[bool, str], Betting]] = {}


def parse_action(text: str, game: GameDef, line: str | None = None) -> Action:
    """Read exactly one action as betting writes it: ``'f'``, ``'c'``, ``'r300'`` (``'r'`` in limit).

    >>> from protocol.gamedef import load_game
    >>> parse_action("r300", load_game("nolimit")).text()
    'r300'

    Raises:
        ParseError: anything but one action of this game's form.
    """
    where = text if line is None else line
    rounds = _parse_betting(text, game, where)
    if len(rounds) != 1 or len(rounds[0]) != 1:
        raise ParseError(f"{text!r} is not one action", where)
    return rounds[0][0]



def _check_rounds_shown(state: State, shown: int, line: str) -> None:
    """The betting text's ``/`` separators must match the rounds the rules reached."""
    if state.round != shown - 1:
        raise ParseError(
            f"illegal betting: it reaches round {state.round + 1} but shows {shown} round(s)", line)


def _apply_in_round(state: State, round_: int, action: Action, line: str) -> None:
    """Apply one action of the betting text's round ``round_``, as a ParseError if illegal."""
    if state.finished:
        raise ParseError("illegal betting: action after the end of the hand", line)
    if state.round != round_:
        raise ParseError(f"illegal betting: round {round_ + 1} is already over", line)
    try:
        state.apply(action)
    except IllegalActionError as error:
        raise ParseError(f"illegal betting: {error}", line) from None

def _replay(betting: Betting, game: GameDef, hand_id: int, line: str) -> State:
    """Replay ``betting`` through the rules; the result has ``round == len(betting) - 1``.

    Raises:
        ParseError: the betting is illegal, or its ``/`` separators do not
            match the rounds the rules reach.
    """
    state = State(game, hand_id)
    for round_, actions in enumerate(betting):
        for action in actions:
            _apply_in_round(state, round_, action, line)
    _check_rounds_shown(state, len(betting), line)
    return state


#: ReplayCache looks this many actions back for a prefix it has seen, and keeps
#: the states after this many last actions of a betting (a hand's betting has
#: fewer actions than this; hostile betting, as many as its line has room for).
_REPLAY_LOOK_BACK: Final = 64


class ReplayCache:
    """The states that betting prefixes reach, kept for lines that share their prefixes.

    Range queries come in runs about one hand: an agent asks at every opponent
    decision on the line played so far and one step past it, so each query's
    betting extends one asked before by an action or two. :meth:`replay` gives
    what :func:`_replay` gives (the same state, the same errors) but starts from
    the longest prefix of the betting text it has seen, and keeps the state
    after each action it applies. States are kept as private copies and the
    caller gets its own, so a caller may change what it gets.

    Args:
        size: states kept (the oldest go first).
    """

    def __init__(self, size: int = 1024) -> None:
        self.size = size
        self._states: dict[tuple[int, int, str], tuple[GameDef, State]] = {}

    def _get(self, game: GameDef, hand_id: int, text: str) -> State | None:
        found = self._states.get((id(game), hand_id, text))
        return found[1] if found is not None and found[0] is game else None

    def _put(self, game: GameDef, hand_id: int, text: str, state: State) -> None:
        states = self._states
        if len(states) >= self.size:
            del states[next(iter(states))]
        states[(id(game), hand_id, text)] = (game, state.clone())

    def replay(self, text: str, betting: Betting, game: GameDef, hand_id: int, line: str) -> State:
        """:func:`_replay` of ``betting``, the parse of ``text``.

        Raises:
            ParseError: as :func:`_replay`.
        """
        # Walk back over the tokens of the text to a prefix seen before (a
        # few tokens at most: each step copies the text, and hostile betting
        # can be as long as a line).
        prefix = text
        stripped = 0  # actions stripped off the end
        start: State | None = None
        while stripped < _REPLAY_LOOK_BACK:
            prefix = prefix.rstrip("/")
            if not prefix:
                break
            start = self._get(game, hand_id, prefix)
            if start is not None:
                break
            prefix = prefix.rstrip("0123456789")[:-1]
            stripped += 1
        flat = [(round_, action) for round_, actions in enumerate(betting) for action in actions]
        if start is None or stripped > len(flat):  # nothing seen, or text and betting disagree
            start, stripped = None, len(flat)
        state = State(game, hand_id) if start is None else start.clone()
        todo = flat[len(flat) - stripped :]
        # The states after the last few actions are kept, under the text prefixes
        # that end with them; the actions before those are applied only.
        kept = min(stripped, _REPLAY_LOOK_BACK)
        for round_, action in todo[: stripped - kept]:
            _apply_in_round(state, round_, action, line)
        ends = []
        rest = text
        for _ in range(kept):
            rest = rest.rstrip("/")
            ends.append(rest)
            rest = rest.rstrip("0123456789")[:-1]
        ends.reverse()
        for (round_, action), end in zip(todo[stripped - kept :], ends):
            _apply_in_round(state, round_, action, line)
            self._put(game, hand_id, end, state)
        _check_rounds_shown(state, len(betting), line)
        return state


def _parse_cards(
    text: str, game: GameDef, rounds: int, line: str, *, all_hole: bool
) -> tuple[Cards, Cards]:
    """Parse ``hole|hole...[board0]/board1/...`` for a hand that reached ``rounds`` rounds.

    Each hole field holds 0 or ``num_hole_cards`` cards (all of them when
    ``all_hole``); round ``r`` shows exactly ``num_board_cards[r]`` cards.
    """
    parts = text.split("/")
    if len(parts) != rounds:
        raise ParseError(f"cards show {len(parts)} round(s), the betting {rounds}", line)
    fields = parts[0].split("|")
    if len(fields) != game.num_players:
        raise ParseError(f"{len(fields)} hole card fields for {game.num_players} players", line)
    # The reference prints round 0's board straight after the last hole field.
    board0 = game.num_board_cards[0] * 2
    last = fields[-1]
    if len(last) < board0:
        raise ParseError("missing board cards of the first round", line)
    fields[-1] = last[: len(last) - board0]
    board_texts = [last[len(last) - board0 :], *parts[1:]]
    hole = []
    allowed = {game.num_hole_cards} if all_hole else {0, game.num_hole_cards}
    for position, field in enumerate(fields):
        cards = _cards(field, game, line)
        if len(cards) not in allowed:
            raise ParseError(
                f"position {position} shows {len(cards)} hole card(s); "
                f"the game has {game.num_hole_cards}",
                line,
            )
        hole.append(cards)
    board = []
    for round_, board_text in enumerate(board_texts):
        cards = _cards(board_text, game, line)
        if len(cards) != game.num_board_cards[round_]:
            raise ParseError(
                f"round {round_ + 1} shows {len(cards)} board card(s), "
                f"the game deals {game.num_board_cards[round_]}",
                line,
            )
        board.append(cards)
    seen = [c for cards in (*hole, *board) for c in cards]
    if len(set(seen)) != len(seen):
        raise ParseError("a card appears twice", line)
    return tuple(hole), tuple(board)


def _betting_text(betting: Betting) -> str:
    return "/".join("".join(a.text() for a in actions) for actions in betting)


def _cards_text(hole: Cards, board: Cards) -> str:
    return "|".join([cards_to_text(h) for h in hole]) + "/".join(
        [cards_to_text(cards) for cards in board]
    )


def _state_betting(state: State) -> Betting:
    return tuple(tuple(actions) for actions in state.actions)


# -- MATCHSTATE ------------------------------------------------------------


@dataclass(frozen=True)
class MatchState:
    """One ``MATCHSTATE`` line: a hand as one position sees it.

    Attributes:
        position: the viewer's position in this hand.
        hand_id: the hand's number in the match.
        betting: the actions of each round reached.
        hole: hole cards of each position; ``()`` where not shown.
        board: board cards of each round reached, round 0 first.
    """

    position: int
    hand_id: int
    betting: Betting
    hole: Cards
    board: Cards
    # The line, rendered once (matchstate_for sets it along the fast path).
    # A declared field: a compiled record has no __dict__ to cache it in.
    _text: str | None = dataclasses.field(default=None, init=False, repr=False, compare=False)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return record_reduce(self)

    @property
    def round(self) -> int:
        """The current (0-based) round."""
        return len(self.betting) - 1

    @property
    def own_hole(self) -> tuple[int, ...]:
        """The viewer's own hole cards."""
        return self.hole[self.position]

    @property
    def board_cards(self) -> tuple[int, ...]:
        """Every visible board card, in dealing order."""
        return tuple(card for cards in self.board for card in cards)

    def betting_text(self) -> str:
        """The betting string, e.g. ``'r300c/cr900'``."""
        return _betting_text(self.betting)

    def body(self) -> str:
        """The line without the ``MATCHSTATE:`` prefix."""
        return (
            f"{self.position}:{self.hand_id}:{self.betting_text()}:"
            f"{_cards_text(self.hole, self.board)}"
        )

    def text(self) -> str:
        """The line as the dealer sends it (without the line ending)."""
        # A record is frozen, so its text never changes: matchstate_for
        # renders it along the fast path, and any other is rendered once.
        # (getattr: a compiled record leaves an init=False field unset.)
        cached: str | None = getattr(self, "_text", None)
        if cached is None:
            cached = PREFIX + self.body()
            object.__setattr__(self, "_text", cached)
        return cached

    def to_state(self, game: GameDef) -> State:
        """Replay the betting through the rules.

        Raises:
            ParseError: the betting is not legal in ``game``.
        """
        return _replay(self.betting, game, self.hand_id, self.text())

    def __str__(self) -> str:
        return self.text()


def _parse_matchstate(line: str, game: GameDef, cache: ReplayCache | None = None
                      ) -> tuple[MatchState, State]:
    if not line.startswith(PREFIX):
        raise ParseError("a state line starts with 'MATCHSTATE:'", line)
    fields = line[len(PREFIX) :].split(":")
    if len(fields) != 4:
        raise ParseError(f"a state line has 5 ':'-separated fields, got {len(fields) + 1}", line)
    position = _unsigned(fields[0], "position", game.num_players - 1, line)
    hand_id = _unsigned(fields[1], "hand id", UINT32_MAX, line)
    betting = _parse_betting(fields[2], game, line)
    if cache is None:
        state = _replay(betting, game, hand_id, line)
    else:
        state = cache.replay(fields[2], betting, game, hand_id, line)
    hole, board = _parse_cards(fields[3], game, len(betting), line, all_hole=False)
    return MatchState(position, hand_id, betting, hole, board), state


def parse_matchstate_replayed(line: str, game: GameDef, cache: ReplayCache | None = None
                              ) -> tuple[MatchState, State]:
    """:func:`parse_matchstate`, with the state its betting reaches (replayed once, not twice).

    With ``cache``, the replay starts from the longest betting prefix the
    cache has seen (:class:`ReplayCache`); the result is the same.

    Raises:
        ParseError: as :func:`parse_matchstate`.
    """
    return _parse_matchstate(_strip_line_end(line), game, cache)


def parse_matchstate(line: str, game: GameDef) -> MatchState:
    """Parse a ``MATCHSTATE`` line (a trailing ``\\r\\n`` or ``\\n`` is dropped).

    As in the reference (which reads an echoed state with the same code),
    card and action letters are read case-insensitively and ``k``/``b`` stand
    for ``c``/``r``; a raise is a bare ``r`` in limit and ``r<int>`` in
    no-limit; the betting must be legal. The printed text is canonical.

    Raises:
        ParseError: the line is malformed or its betting is illegal.

    >>> from protocol.gamedef import load_game
    >>> parse_matchstate("MATCHSTATE:0:2:rrc/r:8dJd|/as9D6s", load_game("limit")).text()
    'MATCHSTATE:0:2:rrc/r:8dJd|/As9d6s'
    >>> parse_matchstate("MATCHSTATE:0:2:rrrr:8dJd|", load_game("limit"))
    Traceback (most recent call last):
    ...
    protocol.errors.ParseError: illegal betting: no raise is allowed here: 'r': 'MATCHSTATE:0:2:rrrr:8dJd|'
    """
    return _parse_matchstate(_strip_line_end(line), game)[0]


def matchstate_for(state: State, deal: Deal, position: int) -> MatchState:
    """The state the dealer sends to ``position``.

    The viewer always sees its own hole cards; at the end of a hand that
    reached a showdown it also sees those of every player who did not fold.
    The board of every round up to ``state.round`` is shown.

    >>> from protocol.gamedef import load_game
    >>> from protocol.deal import DealSource
    >>> game = load_game("nolimit")
    >>> deal = DealSource(42).deal(game)
    >>> state = State(game)
    >>> matchstate_for(state, deal, 1).text()
    'MATCHSTATE:1:0::|2hAc'
    """
    showdown = state.is_showdown
    hole = tuple(
        deal.hole[p] if p == position or (showdown and not state.folded[p]) else ()
        for p in range(state.num_players)
    )
    board = tuple(deal.board[r] for r in range(state.round + 1))
    view = MatchState(position, state.hand_id, _state_betting(state), hole, board)
    text = _fast_matchstate_text(state, deal, position)
    if text is not None:
        object.__setattr__(view, "_text", text)
    return view


#: protocol/_handnative.c's ``deal_fields``, or None (not built, or ``ACPC_LBR_PURE``);
#: :func:`_slow_deal_fields` is its slow twin.
_NATIVE: Any = native_helper()


def _slow_card_texts(deal: Deal) -> tuple[list[str], list[str]]:
    """The texts of each position's hole cards and of each round's board cards."""
    try:
        return (["".join([_CARD_TEXT_OF[c] for c in cards]) for cards in deal.hole],
                ["".join([_CARD_TEXT_OF[c] for c in cards]) for cards in deal.board])
    except (KeyError, TypeError):  # off the deck: cards_to_text raises its usual error
        return ([cards_to_text(cards) for cards in deal.hole],
                [cards_to_text(cards) for cards in deal.board])


class _DealText:
    """The card fields of one deal's ``MATCHSTATE`` lines, rendered once.

    Within a hand the cards field changes only when a round's board is
    revealed (and at a showdown), so the dealer's lines differ from one
    another mostly by their betting.
    """

    __slots__ = ("boards", "deal", "hole", "own")

    def __init__(self, deal: Deal) -> None:
        self.deal = deal  # held so that id(deal) stays this deal's key
        fields: Any = None
        if _NATIVE is not None:  # None back: a card off the deck or not an int, said below
            fields = _NATIVE.deal_fields(deal.hole, deal.board)
        #: hole[p]: position p's cards; own[p]: the hole fields as position p sees them
        #: before a showdown; boards[r]: the board fields of rounds 0..r (``board0/board1/...``).
        if fields is None:
            fields = _slow_deal_fields(deal)
        self.hole: list[str] = fields[0]
        self.own: list[str] = fields[1]
        self.boards: list[str] = fields[2]


def _slow_deal_fields(deal: Deal) -> tuple[list[str], list[str], list[str]]:
    """:class:`_DealText`'s fields in Python: the C helper's slow twin (it raises the usual
    ``ParseError`` for a card off the deck)."""
    hole, board = _slow_card_texts(deal)
    if len(hole) == 2:
        own = [hole[0] + "|", "|" + hole[1]]
    else:
        own = ["|".join([text if p == position else "" for p, text in enumerate(hole)])
               for position in range(len(hole))]
    boards = [board[0]] if board else []
    for text in board[1:]:
        boards.append(f"{boards[-1]}/{text}")
    return hole, own, boards


# Rendered deals by id(); each entry keeps its deal alive, so ids are not
# reused while cached. Small and bounded: a match needs only its current hand.
_DEAL_TEXTS: Final[dict[int, _DealText]] = {}
_DEAL_TEXTS_MAX: Final = 64


_last_deal_text: _DealText | None = None


def _deal_text(deal: Deal) -> _DealText:
    global _last_deal_text
    entry = _last_deal_text
    if entry is not None and entry.deal is deal:
        return entry
    entry = _DEAL_TEXTS.get(id(deal))
    if entry is None or entry.deal is not deal:
        if len(_DEAL_TEXTS) >= _DEAL_TEXTS_MAX:
            _DEAL_TEXTS.clear()  # atomic, unlike evicting one entry, should threads share it
        entry = _DEAL_TEXTS[id(deal)] = _DealText(deal)
    _last_deal_text = entry
    return entry


def matchstate_text(state: State, deal: Deal, position: int) -> str:
    """``matchstate_for(state, deal, position).text()``, without building the record.

    The dealer's hot path: the cards part is rendered once per deal and
    round, and the betting string is the one the state keeps as it goes.

    >>> from protocol.gamedef import load_game
    >>> from protocol.deal import DealSource
    >>> game = load_game("nolimit")
    >>> deal = DealSource(42).deal(game)
    >>> state = State(game, 7)
    >>> _ = state.apply(Action.raise_to(300)); _ = state.apply(Action.CALL)
    >>> matchstate_text(state, deal, 1) == matchstate_for(state, deal, 1).text()
    True
    """
    text = _fast_matchstate_text(state, deal, position)
    if text is None:  # odd input: the plain way
        text = PREFIX + matchstate_for(state, deal, position).body()
    return text


def _fast_matchstate_text(state: State, deal: Deal, position: int) -> str | None:
    """:func:`matchstate_text`, or None for input it does not cover (position off the table)."""
    texts = _deal_text(deal)
    own = texts.own
    if not 0 <= position < len(own) or len(own) != state.table.num_players:
        return None
    if state.finished and state.is_showdown:
        folded = state.folded
        cards = "|".join(
            [text if p == position or not folded[p] else "" for p, text in enumerate(texts.hole)]
        )
    else:
        cards = own[position]
    return (
        f"{PREFIX}{position}:{state.hand_id}:{state.betting_string()}:"
        f"{cards}{texts.boards[state.round]}"
    )


class HandLines:
    """The ``MATCHSTATE`` lines of one hand, as the dealer sends them while it is played.

    A line is ``MATCHSTATE:<position>:<hand>:<betting>:<cards>``: the first two
    fields are fixed for the hand, the cards change only when a round's board
    is revealed (and at a showdown), and the betting grows by one action at a
    time (:meth:`State.betting_string` is kept as the hand goes). So each line
    is three pieces put together: a head per position, the betting, and a
    tail per position and round, all rendered once per hand.

    Args:
        state: the live hand (read at every :meth:`text`, never changed).
        deal: its cards.

    >>> from protocol.gamedef import load_game
    >>> from protocol.deal import DealSource
    >>> game = load_game("nolimit")
    >>> deal = DealSource(42).deal(game)
    >>> state = State(game, 7)
    >>> lines = HandLines(state, deal)
    >>> _ = state.apply(Action.raise_to(300)); _ = state.apply(Action.CALL)
    >>> lines.text(1) == matchstate_for(state, deal, 1).text()
    True
    >>> lines.texts() == [matchstate_text(state, deal, p) for p in (0, 1)]
    True
    """

    __slots__ = ("_boards", "_deal", "_heads", "_own", "_state", "_tails")

    def __init__(self, state: State, deal: Deal) -> None:
        self._state = state
        self._deal = deal
        texts = _deal_text(deal)
        #: The tails of each round, built when the hand (or a look ahead,
        #: :meth:`text_after`) first reaches it: most hands end before the last round.
        self._tails: list[list[str] | None] = [None] * state.table.num_rounds
        if len(texts.own) != state.table.num_players:
            self._heads: list[str] = []  # odd input: every line the plain way
            return
        hand_id = state.hand_id
        self._own = texts.own
        self._boards = texts.boards
        self._heads = [f"{PREFIX}{position}:{hand_id}:" for position in range(len(texts.own))]

    def _tails_of(self, round_: int) -> list[str]:
        """``:<cards>`` of every position in round ``round_`` (before a showdown)."""
        tails = self._tails[round_]
        if tails is None:
            board = self._boards[round_]
            tails = self._tails[round_] = [":" + own + board for own in self._own]
        return tails

    def texts(self) -> list[str]:
        """The line of every position now, in position order."""
        state = self._state
        heads = self._heads
        if not heads:
            return [matchstate_text(state, self._deal, p) for p in range(state.table.num_players)]
        if state.finished and state.is_showdown:
            return self._showdown_texts(state, heads)
        betting = state.betting_string()
        tails = self._tails_of(state.round)
        # By index, not zip: compiled, a zip is a generic iterator of tuples (once per action).
        return [f"{heads[p]}{betting}{tails[p]}" for p in range(len(heads))]

    def _showdown_texts(self, state: State, heads: list[str]) -> list[str]:
        """:meth:`texts` at a showdown: when no one folded, every position sees every hand, so
        the cards field is the same in every line (``matchstate_text`` of each otherwise)."""
        if True in state.folded:
            return [matchstate_text(state, self._deal, p) for p in range(len(heads))]
        texts = _deal_text(self._deal)
        cards = f"{state.betting_string()}:{'|'.join(texts.hole)}{texts.boards[state.round]}"
        return [f"{head}{cards}" for head in heads]

    def text(self, position: int) -> str:
        """The line for ``position`` now (``matchstate_text`` of the hand's state)."""
        return self.text_after(self._state, position)

    def text_after(self, state: State, position: int) -> str:
        """The line for ``position`` in ``state``: the hand's state, or a copy of it
        played on (the dealer's look ahead at a bot's likely replies, see
        :meth:`around_next_action`)."""
        heads = self._heads
        if not 0 <= position < len(heads) or (state.finished and state.is_showdown):
            return matchstate_text(state, self._deal, position)
        return f"{heads[position]}{state.betting_string()}{self._tails_of(state.round)[position]}"

    def around_next_action(self, state: State, position: int) -> tuple[str, str]:
        """The line for ``position`` cut where the next action's token goes: ``head +
        token + tail`` is the line once that action is applied to ``state`` (live),
        for an action that keeps the round and shows no cards -- a raise (``r`` and
        its size; a raise never ends a round), or a fold that ends the hand.
        ("", "") for odd input."""
        heads = self._heads
        if not 0 <= position < len(heads):
            return "", ""
        return heads[position] + state.betting_string(), self._tails_of(state.round)[position]


# -- replies ---------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """A client's reply: the echoed state, then ``:`` and an action.

    Attributes:
        state: the echoed state.
        action: the action read (raise sizes not yet checked), or None when
            ``problem`` is set.
        problem: None; ``'invalid'`` for an unknown action letter (the
            reference changes it to a call as an invalid action); or
            ``'bad_format'`` for a missing ``:`` or a no-limit raise without
            a size (the reference's "bad action format").
        text: the line as received, line ending removed.
    """

    state: MatchState
    action: Action | None
    problem: str | None
    text: str

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return record_reduce(self)


def read_reply_action(text: str, game: GameDef) -> tuple[Action | None, str | None]:
    """Read the action part of a reply as the reference's ``readAction`` does.

    ``text`` is what follows the echoed state and its ``:``; whatever follows
    the action is ignored. The dealer calls this directly when a reply echoes
    the state it sent byte for byte, skipping the full :func:`parse_reply`.

    Returns:
        ``(action, None)``, or ``(None, problem)`` with the problem as
        :class:`Reply` names it.

    >>> from protocol.gamedef import load_game
    >>> read_reply_action("r300 thinking", load_game("nolimit"))
    (Action(type=<ActionType.RAISE: 'r'>, size=300), None)
    >>> read_reply_action("z", load_game("nolimit"))
    (None, 'invalid')
    """
    # The reference's table (readAction): f, c/k, r/b, either case; ASCII only, as C's tolower.
    action = _SIMPLE_REPLY_ACTIONS.get(text[:1])
    if action is None:
        return None, INVALID
    if action is not Action.RAISE or game.is_limit:
        return action, None
    digits = text[1:]
    if 0 < len(digits) < 10 and digits.isdigit() and digits.isascii():
        return Action.raise_to(int(digits)), None  # the usual no-limit raise: r<digits>
    match = _SCANF_INT.match(text, 1)
    if match is None:
        return None, BAD_FORMAT
    return Action.raise_to(_scanf_int32(match.group(1))), None


def _scanf_int32(digits: str) -> int:
    """The int32 glibc's ``sscanf("%d")`` stores for ``digits`` (an optional sign, then digits).

    glibc reads the number with ``strtol``, which saturates at the 64-bit
    ``long``'s limits, and stores the ``long`` in the ``int`` by keeping its low
    32 bits: ``r4294967596`` is a raise to 300 and ``r2147483648`` one to
    -2147483648 (then corrected), as in the reference dealer.
    """
    negative = digits.startswith("-")
    magnitude = digits.lstrip("+-").lstrip("0") or "0"
    # Past 19 significant digits strtol has saturated (int() is spared a huge text).
    value = 2**63 if len(magnitude) > 19 else int(magnitude)
    value = max(-(2**63), -value) if negative else min(2**63 - 1, value)
    return (value + 2**31) % 2**32 - 2**31


def parse_reply(line: str, game: GameDef) -> Reply | None:
    """Parse a client's reply the way the reference dealer reads it.

    Returns:
        None for a comment line (starting with ``#`` or ``;``), else the reply.
        Letters are case-insensitive, ``k`` is call and ``b`` raise; in limit
        ``r300`` reads as ``r``; whatever follows the action is ignored.

    Raises:
        ParseError: the state part is unparsable (the reference's "bad state
            format in response"), e.g. a bare ``c``.

    >>> from protocol.gamedef import load_game
    >>> parse_reply("MATCHSTATE:1:0::|Td4d:x", load_game("nolimit")).problem
    'invalid'
    >>> parse_reply("MATCHSTATE:1:0::|Td4d:r", load_game("nolimit")).problem
    'bad_format'
    >>> parse_reply("MATCHSTATE:1:0::|Td4d:r300", load_game("limit")).action.text()
    'r'
    """
    text = _strip_line_end(line)
    if text.startswith(("#", ";")):
        return None
    # The reference reads the line as a C string: it ends at a NUL byte.
    body, nul, _ = text.partition("\0")
    state, end = _read_echo(body, game, cut=bool(nul))
    if body[end : end + 1] != ":":
        return Reply(state, None, BAD_FORMAT, text)
    action, problem = read_reply_action(body[end + 1 :], game)
    return Reply(state, action, problem, text)


def _read_echo(text: str, game: GameDef, cut: bool = False) -> tuple[MatchState, int]:
    """Read the state at the start of a reply as the reference's ``readMatchState`` does,
    and where it ends (the reply's ``:`` should follow).

    It reads a prefix, leniently: numbers the way glibc's ``scanf`` does
    (:func:`scanf_unsigned`), the betting's ``/`` skipped wherever they are
    (the rules say when a round ends), raise sizes as in a reply, a hole field
    with no cards or a missing ``|`` taken as no cards, at most the cards a
    field holds, and no check that a card appears once; the betting must be
    legal, end with ``:`` (the reference reads the line with its ``\n``, which
    no action begins with; only a line ``cut`` at a NUL byte may end in the
    betting), and each round reached must show its board cards. A viewer
    whose own hole cards are missing gets ``()`` (the reference would compare
    whatever its memory held; here the reply is never the state sent).

    Raises:
        ParseError: the reference's ``readMatchState`` fails on it.
    """
    where = text
    if not text.startswith(PREFIX):
        raise ParseError("a state line starts with 'MATCHSTATE:'", where)
    found = _SCANF_INT.match(text, len(PREFIX))
    position = scanf_unsigned(found.group(1), 8) if found is not None else game.num_players
    if found is None or position >= game.num_players or text[found.end() : found.end() + 1] != ":":
        raise ParseError("a reply starts with 'MATCHSTATE:<position>:'", where)
    found = _SCANF_INT.match(text, found.end() + 1)
    if found is None or text[found.end() : found.end() + 1] != ":":
        raise ParseError("a reply's hand id is a number followed by ':'", where)
    state = State(game, scanf_unsigned(found.group(1), 32))
    end = _read_echo_betting(text, found.end() + 1, state, game, cut)
    hole: list[tuple[int, ...]] = []
    for position_ in range(game.num_players):
        if position_ and text[end : end + 1] == "|":
            end += 1
        cards, end = _read_echo_cards(text, end, game.num_hole_cards)
        if cards and len(cards) != game.num_hole_cards:
            raise ParseError(f"position {position_} shows {len(cards)} hole card(s)", where)
        hole.append(cards)
    board: list[tuple[int, ...]] = []
    for round_ in range(state.round + 1):
        if round_ and text[end : end + 1] == "/":
            end += 1
        cards, end = _read_echo_cards(text, end, game.num_board_cards[round_])
        if len(cards) != game.num_board_cards[round_]:
            raise ParseError(f"round {round_ + 1} shows {len(cards)} board card(s)", where)
        board.append(cards)
    return MatchState(position, state.hand_id, _state_betting(state), tuple(hole), tuple(board)), end


def _read_echo_betting(text: str, start: int, state: State, game: GameDef, cut: bool) -> int:
    """Play the betting of an echoed state from ``text[start:]`` on ``state`` (the
    reference's ``readBetting``); returns where the hole cards begin."""
    end = start
    while end < len(text):
        letter = text[end]
        if letter == ":":
            return end + 1
        if letter == "/":  # the reference skips every one: the rules end the rounds
            end += 1
            continue
        simple = _SIMPLE_REPLY_ACTIONS.get(letter)
        if simple is None:
            raise ParseError(f"bad action at {text[end:end + 10]!r} in the echoed betting", text)
        end += 1
        action = simple
        if simple is Action.RAISE and not game.is_limit:
            found = _SCANF_INT.match(text, end)
            if found is None:
                raise ParseError("a no-limit raise needs a raise-to size", text)
            action, end = Action.raise_to(_scanf_int32(found.group(1))), found.end()
        try:
            state.apply(action)
        except IllegalActionError as error:
            raise ParseError(f"illegal betting: {error}", text) from None
    if not cut:
        raise ParseError("the echoed betting does not end with ':'", text)
    return end


def _read_echo_cards(text: str, start: int, most: int) -> tuple[tuple[int, ...], int]:
    """Up to ``most`` cards from ``text[start:]`` (the reference's ``readCards``), and where they end."""
    cards: list[int] = []
    end = start
    while len(cards) < most:
        card = _CARD_BY_TEXT.get(text[end : end + 2])
        if card is None:
            break
        cards.append(card)
        end += 2
    return tuple(cards), end


def scanf_unsigned(digits: str, bits: int) -> int:
    """The ``bits``-bit number glibc's ``sscanf("%u")`` (``%hhu`` for 8) stores for
    ``digits`` (an optional sign, then digits): ``strtoul`` (saturating at 64 bits,
    a ``-`` negating modulo 2**64), then the low ``bits`` bits."""
    negative = digits.startswith("-")
    magnitude = digits.lstrip("+-").lstrip("0") or "0"
    value = 2**64 if len(magnitude) > 20 else int(magnitude)
    if value >= 2**64:
        value = 2**64 - 1
    elif negative:
        value = -value % 2**64
    return value % (1 << bits)


def format_reply(state: MatchState, action: Action) -> str:
    """The reply line for ``action`` in ``state`` (without a line ending)."""
    return f"{state.text()}:{action.text()}"


def same_decision_point(reply: MatchState, expected: MatchState) -> bool:
    """The reference's stale-reply check (``matchStatesEqual``).

    It compares the viewer's position, the hand id, the round, every action
    (type and size), the visible board and the viewer's own hole cards; the
    other players' hole cards do not matter.
    """
    return (
        reply.position == expected.position
        and reply.hand_id == expected.hand_id
        and reply.betting == expected.betting
        and reply.board == expected.board
        and reply.hole[reply.position] == expected.hole[expected.position]
    )


# -- log lines -------------------------------------------------------------


def format_chips(value: float) -> str:
    """Chips as the reference logs them: ``%.6f``, trailing zeros and ``.`` stripped."""
    text = f"{value:.6f}"
    return text.rstrip("0").rstrip(".")


def parse_chips(text: str, line: str | None = None) -> float:
    """Read a chip value written by :func:`format_chips` (or any plain decimal).

    Raises:
        ParseError: not a plain decimal number.
    """
    if not _CHIPS.fullmatch(text) or len(text) > 40:
        raise ParseError(f"{text!r} is not a chip value", line if line is not None else text)
    return float(text)


@dataclass(frozen=True)
class LogState:
    """One ``STATE`` line of a ``.log``: a finished hand.

    Attributes:
        hand_id: the hand's number in the match.
        betting: the actions of each round reached.
        hole: every position's hole cards (folded players' too).
        board: board cards of each round up to the one the hand ended in.
        values: chips won by each position.
        names: the player name at each position.
    """

    hand_id: int
    betting: Betting
    hole: Cards
    board: Cards
    values: tuple[float, ...]
    names: tuple[str, ...]

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return record_reduce(self)

    def text(self) -> str:
        """The line as the reference writes it (without the line ending)."""
        return (
            f"STATE:{self.hand_id}:{_betting_text(self.betting)}:"
            f"{_cards_text(self.hole, self.board)}:"
            f"{'|'.join(format_chips(v) for v in self.values)}:{'|'.join(self.names)}"
        )

    def to_state(self, game: GameDef) -> State:
        """Replay the betting through the rules (the result is finished)."""
        return _replay(self.betting, game, self.hand_id, self.text())

    def __str__(self) -> str:
        return self.text()


def _names(text: str, count: int, line: str) -> tuple[str, ...]:
    names = tuple(text.split("|"))
    if len(names) != count or not all(names):
        raise ParseError(f"expected {count} non-empty names", line)
    return names


def parse_log_state(line: str, game: GameDef) -> LogState:
    """Parse a ``STATE`` line of a ``.log``.

    The betting must be legal and finished; every position shows its hole
    cards; the board shows the rounds reached.

    Raises:
        ParseError: the line is malformed or its betting illegal or unfinished.

    >>> from protocol.gamedef import load_game
    >>> line = "STATE:2:f:4d6c|QsJh:50|-50:p1|p2"
    >>> parse_log_state(line, load_game("nolimit")).text() == line
    True
    """
    text = _strip_line_end(line)
    if not text.startswith(_LOG_PREFIX):
        raise ParseError("a log state line starts with 'STATE:'", text)
    fields = text[len(_LOG_PREFIX) :].split(":", 4)
    if len(fields) != 5:
        raise ParseError("a log state line has 6 ':'-separated fields", text)
    hand_id = _unsigned(fields[0], "hand id", UINT32_MAX, text)
    betting = _parse_betting(fields[1], game, text)
    state = _replay(betting, game, hand_id, text)
    if not state.finished:
        raise ParseError("a log state line shows a finished hand", text)
    hole, board = _parse_cards(fields[2], game, len(betting), text, all_hole=True)
    value_text, name_text = fields[3], fields[4]
    values = tuple(parse_chips(v, text) for v in value_text.split("|"))
    if len(values) != game.num_players:
        raise ParseError(f"expected {game.num_players} values", text)
    names = _names(name_text, game.num_players, text)
    return LogState(hand_id, betting, hole, board, values, names)


def log_state_for(
    state: State, deal: Deal, values: Sequence[float], names: Sequence[str]
) -> LogState:
    """The log line of a finished hand.

    Args:
        state: the finished hand.
        deal: its cards; every hole card is shown, the board up to
            ``state.round``.
        values: chips won by each position (e.g. ``state.values(...)``).
        names: the player name at each position.
    """
    return LogState(
        hand_id=state.hand_id,
        betting=_state_betting(state),
        hole=tuple(deal.hole),
        board=tuple(deal.board[r] for r in range(state.round + 1)),
        values=tuple(float(v) for v in values),
        names=tuple(names),
    )


def log_state_text(
    state: State, deal: Deal, values: Sequence[float], names: Sequence[str]
) -> str:
    """``log_state_for(state, deal, values, names).text()``, without building the record.

    >>> from protocol.gamedef import load_game
    >>> from protocol.deal import DealSource
    >>> game = load_game("nolimit")
    >>> deal = DealSource(42).deal(game)
    >>> state = State(game, 3)
    >>> _ = state.apply(Action.FOLD)
    >>> log_state_text(state, deal, (-50, 50), ("a", "b"))
    'STATE:3:f:7d3d|2hAc:-50|50:a|b'
    """
    texts = _deal_text(deal)
    return (
        f"{_LOG_PREFIX}{state.hand_id}:{state.betting_string()}:"
        f"{'|'.join(texts.hole)}{texts.boards[state.round]}:"
        f"{'|'.join([format_chips(float(v)) for v in values])}:{'|'.join(names)}"
    )


@dataclass(frozen=True)
class Score:
    """The ``SCORE`` line: match totals and names, both in seat order."""

    totals: tuple[float, ...]
    names: tuple[str, ...]

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return record_reduce(self)

    def text(self) -> str:
        """The line as the reference writes it, e.g. ``'SCORE:-211082|211082:p1|p2'``."""
        return f"SCORE:{'|'.join(format_chips(t) for t in self.totals)}:{'|'.join(self.names)}"

    def __str__(self) -> str:
        return self.text()


def parse_score(line: str) -> Score:
    """Parse a ``SCORE`` line.

    Raises:
        ParseError: the line is malformed.

    >>> parse_score("SCORE:33272|290483|-323755:p1|p2|p3").totals
    (33272.0, 290483.0, -323755.0)
    """
    text = _strip_line_end(line)
    if not text.startswith(_SCORE_PREFIX):
        raise ParseError("a score line starts with 'SCORE:'", text)
    fields = text[len(_SCORE_PREFIX) :].split(":", 1)
    if len(fields) != 2:
        raise ParseError("a score line has 3 ':'-separated fields", text)
    totals = tuple(parse_chips(t, text) for t in fields[0].split("|"))
    names = _names(fields[1], len(totals), text)
    return Score(totals, names)


def log_header(
    match_name: str,
    game_arg: str,
    hands: int,
    seed: int,
    t_response_ms: int,
    t_hand_ms: int,
    t_per_hand_ms: int,
) -> list[str]:
    """The four ``#`` lines that open a ``.log`` (and the trace).

    >>> log_header("nl1000", "holdem.nolimit.2p.reverse_blinds.game", 1000, 42, 600000, 600000, 7000)[0]
    '# name/game/hands/seed nl1000 holdem.nolimit.2p.reverse_blinds.game 1000 42'
    """
    return [
        f"# name/game/hands/seed {match_name} {game_arg} {hands} {seed}",
        f"#--t_response {t_response_ms}",
        f"#--t_hand {t_hand_ms}",
        f"#--t_per_hand {t_per_hand_ms}",
    ]

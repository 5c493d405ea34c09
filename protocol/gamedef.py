"""ACPC game definitions: a frozen :class:`GameDef`, read and written as the reference does.

The reader follows the reference parser (``readGame`` in the ACPC server's
game.c): lines are matched case-insensitively by key prefix, ``#`` lines and
empty lines are skipped, unknown lines are ignored, keys may come before the
``GAMEDEF`` line, and reading stops at ``END GAMEDEF``. Values are integers
separated by blanks and/or ``=``. Unlike the reference, a key line whose values
are not integers is an error (the reference would silently read fewer values)
and every error names the line and the problem.

>>> game = load_game("holdem.nolimit.2p.reverse_blinds")
>>> game.betting, game.num_players, game.blind, game.first_player
('nolimit', 2, (100, 50), (1, 0, 0, 0))
>>> parse_gamedef(format_gamedef(game)) == game
True
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from math import comb
from pathlib import Path
from typing import TYPE_CHECKING

from protocol.cards import deck_for
from protocol.errors import GameDefError

if TYPE_CHECKING:
    from protocol.arrays import BoolArray, IntArray
    from protocol.hands import HandNumbering

MAX_PLAYERS = 10
MAX_ROUNDS = 4
MAX_SUITS = 4
MAX_RANKS = 13
MAX_HOLE_CARDS = 3
MAX_BOARD_CARDS = 7
INT32_MAX = 2**31 - 1
UINT8_MAX = 255


@dataclass(frozen=True)
class GameDef:
    """One ACPC game, immutable. Positions and rounds are 0-based.

    Attributes:
        betting: ``"limit"`` or ``"nolimit"``.
        num_players: 2..10.
        num_rounds: 1..4.
        stack: chips of each position at the start of every hand.
        blind: chips each position puts in before the deal.
        raise_size: fixed bet size per round (limit games; empty for no-limit).
        first_player: 0-based position that acts first in each round.
        max_raises: most bets and raises per round (255 means no cap).
        num_suits, num_ranks: the deck keeps the last suits and highest ranks.
        num_hole_cards: private cards per player.
        num_board_cards: board cards dealt at the start of each round.
    """

    betting: str
    num_players: int
    num_rounds: int
    stack: tuple[int, ...]
    blind: tuple[int, ...]
    raise_size: tuple[int, ...]
    first_player: tuple[int, ...]
    max_raises: tuple[int, ...]
    num_suits: int
    num_ranks: int
    num_hole_cards: int
    num_board_cards: tuple[int, ...]

    # Cached (a plain attribute read after the first): the rules ask on every action.
    @cached_property
    def is_limit(self) -> bool:
        """True for fixed-limit betting."""
        return self.betting == "limit"

    @cached_property
    def big_blind(self) -> int:
        """The largest blind (the unit of mbb/g); at least 1."""
        return max(max(self.blind), 1)

    @cached_property
    def deck(self) -> tuple[int, ...]:
        """The game's cards in the reference's suit-major dealing order."""
        return deck_for(self.num_ranks, self.num_suits)

    @cached_property
    def cards(self) -> tuple[int, ...]:
        """The game's card indices sorted: card number ``k`` is ``cards[k]``."""
        return tuple(sorted(self.deck))

    @property
    def deck_size(self) -> int:
        """Number of cards in the deck."""
        return self.num_suits * self.num_ranks

    @cached_property
    def hands(self) -> HandNumbering:
        """The game's private hands, numbered in the range-query hand order (:mod:`protocol.hands`)."""
        # The hand numbering is numpy's tables; a dealer without range queries needs none,
        # and its start-up does not load numpy (docs/dealer.md, "Start-up").
        from protocol.hands import numbering  # lazy: numpy, only with range queries (above)

        return numbering(self.cards, self.num_hole_cards)

    @cached_property
    def hand_cards(self) -> IntArray:
        """Card indices of every private hand, shape (num_hands, num_hole_cards), hand order.

        Rows follow the range-query hand order (colex over card numbers) and each
        row is sorted ascending. The array is read-only and computed once per game.
        """
        return self.hands.cards

    def hands_sharing(self, cards: Iterable[int]) -> BoolArray:
        """Which private hands hold one of ``cards`` (card indices): shape (num_hands,).

        "Hands blocked by these cards" (board cards, a player's own hole cards):
        :meth:`protocol.hands.HandNumbering.sharing`. Read-only, cached per set of cards.

        >>> game = load_game("nolimit")
        >>> int(game.hands_sharing([51]).sum()), int(game.hands_sharing([50, 51]).sum())
        (51, 101)
        """
        return self.hands.sharing(cards)

    def hand_of(self, hole: Sequence[int]) -> int:
        """The hand index (range-query hand order) of hole cards given as card indices.

        Maps hole cards to a row of :attr:`hand_cards` (:meth:`protocol.hands.HandNumbering.hand_of`).

        >>> game = load_game("nolimit")
        >>> game.hand_of((51, 50)), game.hand_of((0, 1))
        (1325, 0)
        >>> bool((game.hand_cards[game.hand_of((13, 7))] == (7, 13)).all())
        True
        """
        return self.hands.hand_of(hole)

    @property
    def num_hands(self) -> int:
        """Number of distinct private hands, e.g. 1326 in hold'em."""
        return comb(self.deck_size, self.num_hole_cards)

    def board_cards_visible(self, round_: int) -> int:
        """Board cards visible in ``round_``: those dealt in rounds 0 to ``round_``, inclusive."""
        return sum(self.num_board_cards[: round_ + 1])

    @cached_property
    def total_board_cards(self) -> int:
        """Board cards of the whole hand."""
        return sum(self.num_board_cards[: self.num_rounds])


_KEYS: tuple[tuple[str, str], ...] = (
    # (lower-case prefix, field) in the reference's order of tests.
    ("end gamedef", "end"),
    ("gamedef", "begin"),
    ("stack", "stack"),
    ("blind", "blind"),
    ("raisesize", "raise_size"),
    ("limit", "limit"),
    ("nolimit", "nolimit"),
    ("numplayers", "num_players"),
    ("numrounds", "num_rounds"),
    ("firstplayer", "first_player"),
    ("maxraises", "max_raises"),
    ("numsuits", "num_suits"),
    ("numranks", "num_ranks"),
    ("numholecards", "num_hole_cards"),
    ("numboardcards", "num_board_cards"),
)
_SCALARS = {"num_players", "num_rounds", "num_suits", "num_ranks", "num_hole_cards"}
_MAX_ITEMS = {
    "stack": MAX_PLAYERS,
    "blind": MAX_PLAYERS,
    "raise_size": MAX_ROUNDS,
    "first_player": MAX_ROUNDS,
    "max_raises": MAX_ROUNDS,
    "num_board_cards": MAX_ROUNDS,
}
_SEPARATORS = re.compile(r"[\s=]+")


def _read_values(field: str, rest: str, line_number: int, line: str) -> list[int]:
    tokens = [t for t in _SEPARATORS.split(rest) if t]
    values: list[int] = []
    for token in tokens:
        try:
            values.append(int(token))
        except ValueError:
            raise GameDefError(f"{field}: {token!r} is not an integer", line, line_number) from None
    limit = 1 if field in _SCALARS else _MAX_ITEMS[field]
    if len(values) > limit:
        raise GameDefError(f"{field}: at most {limit} value(s), got {len(values)}", line, line_number)
    if not values:
        raise GameDefError(f"{field}: no value", line, line_number)
    return values


def parse_gamedef(text: str) -> GameDef:
    """Read a game definition from its text.

    Raises:
        GameDefError: naming the line and the problem.
    """
    lines = _read_gamedef_lines(text)
    num_players = lines.bounded("num_players", "numPlayers", 2, MAX_PLAYERS)
    num_rounds = lines.bounded("num_rounds", "numRounds", 1, MAX_ROUNDS)
    stack, blind = _stacks_and_blinds(lines, num_players)
    raise_size = _raise_sizes(lines, num_rounds)
    first_player, max_raises = _round_orders(lines, num_players, num_rounds)
    num_suits = lines.bounded("num_suits", "numSuits", 1, MAX_SUITS)
    num_ranks = lines.bounded("num_ranks", "numRanks", 1, MAX_RANKS)
    num_hole = lines.bounded("num_hole_cards", "numHoleCards", 1, MAX_HOLE_CARDS)
    board = lines.at_least("num_board_cards", "board counts", num_rounds, lines.need("num_board_cards", "numBoardCards"))
    if any(b < 0 for b in board) or sum(board[:num_rounds]) > MAX_BOARD_CARDS:
        raise lines.error("num_board_cards", "board card counts out of range")
    used = num_hole * num_players + sum(board[:num_rounds])
    if used > num_suits * num_ranks:
        raise GameDefError(f"too many cards used: {used} > deck of {num_suits * num_ranks}")
    return GameDef(
        betting=lines.betting,
        num_players=num_players,
        num_rounds=num_rounds,
        stack=tuple(stack[:num_players]),
        blind=tuple(blind[:num_players]),
        raise_size=tuple(raise_size[:num_rounds]),
        first_player=tuple(f - 1 for f in first_player[:num_rounds]),
        max_raises=tuple(max_raises[:num_rounds]),
        num_suits=num_suits,
        num_ranks=num_ranks,
        num_hole_cards=num_hole,
        num_board_cards=tuple(board[:num_rounds]),
    )


@dataclass
class _GameDefLines:
    """The values of a gamedef's lines as read, before the checks (one parse's scratch).

    Attributes:
        betting: ``"limit"`` or ``"nolimit"`` (the last of those lines; limit without one).
        values: each key's integers, from the last line that gave it.
        line_of: each key's line number, so that an error names its line.
    """

    betting: str = "limit"
    values: dict[str, list[int]] = field(default_factory=dict)
    line_of: dict[str, int] = field(default_factory=dict)

    def error(self, key: str, message: str) -> GameDefError:
        """A :class:`GameDefError` pointing at ``key``'s line."""
        return GameDefError(message, None, self.line_of.get(key))

    def need(self, key: str, what: str) -> list[int]:
        """``key``'s values; a ``missing <what> line`` error when the text has none."""
        if key not in self.values:
            raise GameDefError(f"missing {what} line")
        return self.values[key]

    def bounded(self, key: str, what: str, low: int, high: int) -> int:
        """A required single count, checked to lie in ``low..high``."""
        value = self.need(key, what)[0]
        if not low <= value <= high:
            raise self.error(key, f"{what} must be {low}..{high}, got {value}")
        return value

    def at_least(self, key: str, plural: str, count: int, values: list[int]) -> list[int]:
        """``values`` (one per player or round), checked to hold at least ``count`` of them."""
        if len(values) < count:
            raise self.error(key, f"only {len(values)} {plural}, need {count}")
        return values


def _read_gamedef_lines(text: str) -> _GameDefLines:
    """Every known key's values, from ``GAMEDEF`` to ``END GAMEDEF`` (or the end of the text)."""
    lines = _GameDefLines()
    for line_number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip("\r")
        if not line or line.startswith("#"):
            continue
        lower = line.lower()
        for prefix, key in _KEYS:
            if lower.startswith(prefix):
                break
        else:
            continue  # the reference ignores lines it does not know
        if key == "end":
            break
        if key == "begin":
            continue
        if key in ("limit", "nolimit"):
            lines.betting = key
            continue
        lines.values[key] = _read_values(key, line[len(prefix) :], line_number, line)
        lines.line_of[key] = line_number
    return lines


def _stacks_and_blinds(lines: _GameDefLines, num_players: int) -> tuple[list[int], list[int]]:
    """Each position's stack (unlimited by default) and blind, checked against each other."""
    stack = lines.at_least("stack", "stack sizes", num_players,
                           lines.values.get("stack", [INT32_MAX] * num_players))
    blind = lines.at_least("blind", "blinds", num_players, lines.need("blind", "blind"))
    for p in range(num_players):
        if not 0 <= blind[p] <= stack[p] or stack[p] <= 0 or stack[p] > INT32_MAX:
            raise lines.error("blind", f"position {p + 1}: blind {blind[p]} and stack {stack[p]} are inconsistent")
    return stack, blind


def _raise_sizes(lines: _GameDefLines, num_rounds: int) -> list[int]:
    """Each round's raise size in a limit game (required and positive); none in no-limit."""
    if lines.betting != "limit":
        return []
    raise_size = lines.at_least("raise_size", "raise sizes", num_rounds, lines.need("raise_size", "raiseSize"))
    if any(r <= 0 for r in raise_size[:num_rounds]):
        raise lines.error("raise_size", "raise sizes must be positive")
    return raise_size


def _round_orders(lines: _GameDefLines, num_players: int, num_rounds: int) -> tuple[list[int], list[int]]:
    """Each round's first player (1-based as written; 1 by default) and raise cap (255 by default)."""
    first_player = lines.at_least("first_player", "first players", num_rounds,
                                  lines.values.get("first_player", [1] * num_rounds))
    for r in range(num_rounds):
        if not 1 <= first_player[r] <= num_players:
            raise lines.error("first_player", f"round {r + 1}: first player must be 1..{num_players}")
    max_raises = lines.at_least("max_raises", "raise caps", num_rounds,
                                lines.values.get("max_raises", [UINT8_MAX] * num_rounds))
    if any(not 0 <= m <= UINT8_MAX for m in max_raises):
        raise lines.error("max_raises", f"raise caps must be 0..{UINT8_MAX}")
    return first_player, max_raises


def format_gamedef(game: GameDef) -> str:
    """Write a game definition in the reference's layout (defaults left out)."""

    def join(values: tuple[int, ...]) -> str:
        return " ".join(str(v) for v in values)

    lines = ["GAMEDEF", game.betting]
    lines.append(f"numPlayers = {game.num_players}")
    lines.append(f"numRounds = {game.num_rounds}")
    if any(s != INT32_MAX for s in game.stack):
        lines.append(f"stack = {join(game.stack)}")
    lines.append(f"blind = {join(game.blind)}")
    if game.is_limit:
        lines.append(f"raiseSize = {join(game.raise_size)}")
    lines.append(f"firstPlayer = {join(tuple(f + 1 for f in game.first_player))}")
    if any(m != UINT8_MAX for m in game.max_raises):
        lines.append(f"maxRaises = {join(game.max_raises)}")
    lines.append(f"numSuits = {game.num_suits}")
    lines.append(f"numRanks = {game.num_ranks}")
    lines.append(f"numHoleCards = {game.num_hole_cards}")
    lines.append(f"numBoardCards = {join(game.num_board_cards)}")
    lines.append("END GAMEDEF")
    return "\n".join(lines) + "\n"


# Short names accepted wherever a game is asked for.
ALIASES = {
    "nolimit": "holdem.nolimit.2p.reverse_blinds",
    "holdem-nl": "holdem.nolimit.2p.reverse_blinds",
    "limit": "holdem.limit.2p.reverse_blinds",
    "holdem-limit": "holdem.limit.2p.reverse_blinds",
    "kuhn": "kuhn.limit.2p",
    "leduc": "leduc.limit.2p",
}


#: The game files shipped with the package. A folder of files, as the package is installed (never
#: zipped): read with pathlib, not importlib.resources, whose import (zipfile, tempfile, ...) would
#: cost every dealer's start-up several ms.
GAMES_DIR = Path(__file__).resolve().with_name("games")


def bundled_games() -> list[str]:
    """Names of the game files shipped with the package (without ``.game``)."""
    return sorted(p.name.removesuffix(".game") for p in GAMES_DIR.iterdir() if p.name.endswith(".game"))


def known_games() -> str:
    """The bundled games and their aliases, for error messages."""
    aliases = ", ".join(f"{alias} = {name}" for alias, name in ALIASES.items())
    return f"bundled: {', '.join(bundled_games())}; aliases: {aliases}"


def _bundled_file(name: str) -> Path | None:
    """The bundled game file of a name or alias, or None. One look-up, not a listing of the
    folder: every dealer's start-up loads its game through here."""
    name = ALIASES.get(name, name).removesuffix(".game")
    if not name or "/" in name or name.startswith("."):
        return None
    file = GAMES_DIR / f"{name}.game"
    return file if file.is_file() else None


def bundled_game_text(name: str) -> str:
    """Return the text of a bundled game file given its name or alias."""
    file = _bundled_file(name)
    if file is None:
        raise GameDefError(f"no bundled game named {ALIASES.get(name, name).removesuffix('.game')!r}; "
                           f"{known_games()}")
    return file.read_text()


def load_game(name_or_path: str | Path) -> GameDef:
    """Load a bundled game by name/alias, or a game file by path.

    An existing file wins over a bundled name.

    Raises:
        GameDefError: the file is missing or invalid (the message names the file).
    """
    path = Path(name_or_path)
    if path.is_file():
        try:
            return parse_gamedef(path.read_text())
        except GameDefError as error:
            located = GameDefError(f"{path}: {error.message}", error.text)
            located.line_number = error.line_number  # keep it for callers that point at the line
            raise located from None
    bundled = _bundled_file(str(name_or_path))
    if bundled is not None:
        return parse_gamedef(bundled.read_text())
    raise GameDefError(
        f"{name_or_path}: neither a game file nor a bundled game "
        f"({known_games()})"
    )

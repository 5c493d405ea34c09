"""Deals from a seed, exactly as the reference dealer deals them.

One MT19937 stream per match, seeded with the standard 32-bit
``init_genrand(seed)``; each hand is dealt whole, up front: position 0's hole
cards, then position 1's, ..., then each round's board cards. A draw with
``k`` cards left takes slot ``output mod k`` of the deck (plain modulo, no
rejection) and moves the last card into the hole. The deck is rebuilt in
suit-major order before every hand. So hand ``h`` of a heads-up hold'em match
uses outputs ``9h .. 9h + 8`` whatever happens at the table.

The generator is explicit: :class:`DealSource` owns it, and nothing else in
:mod:`protocol` draws random numbers.

>>> source = DealSource(42)
>>> from protocol.gamedef import load_game
>>> deal = source.deal(load_game("holdem.limit.2p.reverse_blinds"))
>>> deal.text()
'7d3d|2hAc/5sKs7s/9s/6h'
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from random import Random
from struct import Struct
from typing import Any, Final

from protocol._variant import native_helper, record_reduce
from protocol.cards import cards_to_text
from protocol.gamedef import GameDef
from protocol.rules import GameTable, game_table


@dataclass(frozen=True, init=False)
class Deal:
    """The cards of one hand.

    Attributes:
        hole: hole cards of each position, in position order.
        board: board cards of each round (round 0 first; may be empty tuples).
    """

    hole: tuple[tuple[int, ...], ...]
    board: tuple[tuple[int, ...], ...]

    def __init__(self, hole: tuple[tuple[int, ...], ...], board: tuple[tuple[int, ...], ...]) -> None:
        # Written out: compiled, the __init__ that dataclass generates for a frozen class runs as
        # interpreted Python (about 4 k instructions, once per hand); this one is compiled.
        object.__setattr__(self, "hole", hole)
        object.__setattr__(self, "board", board)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return record_reduce(self)

    @property
    def board_cards(self) -> tuple[int, ...]:
        """All board cards of the hand, in dealing order."""
        # A loop, not itertools.chain: compiled, this is a few C calls (once per hand).
        cards: list[int] = []
        for round_cards in self.board:
            cards.extend(round_cards)
        return tuple(cards)

    def text(self) -> str:
        """Cards as a log line shows them: ``hole|hole/flop/turn/river``.

        Round 0's board cards, if the game has any, follow the last hole cards
        directly, as in the reference's lines.
        """
        holes = "|".join(cards_to_text(h) for h in self.hole)
        return holes + "/".join(cards_to_text(cards) for cards in self.board)


#: MT19937's state: 624 words of 32 bits.
_MT_WORDS = 624
#: Outputs drawn in one ``getrandbits`` call, at most (a long integer's shift costs its length).
_PIECE = 16
#: ``n`` little-endian 32-bit words, for n up to :data:`_PIECE`: one C call splits a piece.
_WORDS: Final = tuple(Struct(f"<{n}I") for n in range(_PIECE + 1))


#: protocol/_handnative.c's ``deal_cards`` (the loop of :meth:`DealSource.deal` in C), or None:
#: not built, or the pure variant asked for (``ACPC_LBR_PURE``). The loop below is its slow twin.
_NATIVE: Any = native_helper()


def init_genrand(seed: int) -> tuple[int, ...]:
    """MT19937's state after the standard ``init_genrand(seed)`` (Matsumoto and
    Nishimura's reference code; numpy's ``RandomState(seed)`` seeds so too).

    >>> init_genrand(5489)[:2]
    (5489, 1301868182)
    """
    state = [seed]
    previous = seed
    for i in range(1, _MT_WORDS):
        previous = (1812433253 * (previous ^ (previous >> 30)) + i) & 0xFFFFFFFF
        state.append(previous)
    return tuple(state)


class DealSource:
    """The match's card stream: an MT19937 generator seeded like the reference.

    Args:
        seed: the dealer's seed argument, any unsigned 32-bit integer.
    """

    def __init__(self, seed: int) -> None:
        if not 0 <= seed < 2**32:
            raise ValueError(f"seed must be an unsigned 32-bit integer, got {seed}")
        self.seed = seed
        # Python's generator is MT19937 too, and getrandbits(32) is one tempered
        # genrand_int32 output; only its seeding differs (init_by_array), so its
        # state is set to init_genrand(seed)'s, the next output to be generated
        # afresh (index 624). The same stream as numpy's RandomState(seed), whose
        # full-range uint32 draws the dealer used before and the reference's logs
        # were checked against (tests/protocol/test_deal.py), without numpy: a
        # plain dealer's start-up does not load it (docs/dealer.md, "Start-up").
        self._rng = Random()
        self._rng.setstate((3, (*init_genrand(seed), _MT_WORDS), None))
        self.hands_dealt = 0

    def draws(self, count: int) -> list[int]:
        """Return the next ``count`` raw 32-bit outputs of the stream.

        In one call: ``getrandbits(32 * count)`` is ``count`` outputs, the first in
        the lowest 32 bits (CPython fills its words from the least significant, on
        either byte order; tests/protocol/test_fast_paths.py checks the stream); its
        little-endian bytes are those words in order, unpacked by one ``struct`` call.
        """
        outputs: list[int] = []
        while count > 0:
            piece = min(count, _PIECE)
            bits = self._rng.getrandbits(32 * piece)
            outputs.extend(_WORDS[piece].unpack(bits.to_bytes(4 * piece, "little")))
            count -= piece
        return outputs

    def deal(self, game: GameDef) -> Deal:
        """Deal the next hand of ``game``."""
        table = game_table(game)  # native attributes, not the Python GameDef's (once per hand)
        if _NATIVE is not None:
            count = table.num_hole_cards * table.num_players + table.total_board_cards
            words = self._rng.getrandbits(32 * count).to_bytes(4 * count, "little")
            hole, board = _NATIVE.deal_cards(words, table.deck, table.num_hole_cards,
                                             table.num_players, table.num_board_cards)
            self.hands_dealt += 1
            return Deal(hole=hole, board=board)
        return self._deal_slowly(table)

    def _deal_slowly(self, table: GameTable) -> Deal:
        """:meth:`deal` in Python: the C loop's slow twin (tests/protocol/test_handnative.py)."""
        deck = list(table.deck)
        left = len(deck)
        hole_cards = table.num_hole_cards
        num_players = table.num_players
        cards = []
        for output in self.draws(hole_cards * num_players + table.total_board_cards):
            slot = output % left
            cards.append(deck[slot])
            left -= 1
            deck[slot] = deck[left]  # the last card still in the deck fills the hole
        hole = tuple([tuple(cards[p * hole_cards : (p + 1) * hole_cards]) for p in range(num_players)])
        board = []
        start = hole_cards * num_players
        for count in table.num_board_cards:
            board.append(tuple(cards[start : start + count]))
            start += count
        self.hands_dealt += 1
        return Deal(hole=hole, board=tuple(board))

    def skip(self, game: GameDef, hands: int) -> None:
        """Deal and discard ``hands`` hands (to resume a match)."""
        for _ in range(hands):
            self.deal(game)

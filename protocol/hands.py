"""Private hands: their numbering (the range-query hand order) and the cards that block them.

The one home of hand numbering. The dealer's relay, the SDK, LBR's ranges, the
equity tables and the exact tools all number hands and block them here (most
through :class:`protocol.gamedef.GameDef`'s ``hand_cards``, ``hand_of`` and
``hands_sharing``, which are this module's tables for the game's cards).

Hand order (range-query extension, "Hand order"): a card's *number* is its
position among the game's cards sorted by index; a hand's index is the
colexicographic rank of its sorted card numbers,
``sum(comb(n_i, i + 1))`` over the sorted numbers ``n_0 < n_1 < ...``. In
hold'em the number is the card index, so ``2c2d`` is hand 0, ``2c2h`` 1,
``2d2h`` 2, ... and ``AhAs`` 1325; for two cards ``c1 < c2`` the index is
``c2 * (c2 - 1) // 2 + c1``.

Two ways to the same numbers, compared by tests/protocol/test_hands.py over
every hand of Kuhn, Leduc and hold'em:

* the front door, :class:`HandNumbering` (:func:`numbering`, one per card set,
  built once): numpy tables, and vectorised look-ups (:meth:`~HandNumbering.hands_of`,
  :meth:`~HandNumbering.sharing`) for the callers that number or block many hands;
* the slow twin, :func:`hand_index` and :func:`all_hands`: the definition in
  plain Python with :func:`math.comb`.

No numba here: every look-up is a table read built once per game, which numpy
does at memory speed, and protocol/ stays free of the JIT (the dealer imports it
before its port line).

>>> holdem = numbering(tuple(range(52)), 2)  # also holdem()
>>> holdem.num_hands, holdem.cards[[0, 1, 2, 1325]].tolist()
(1326, [[0, 1], [0, 2], [1, 2], [50, 51]])
>>> holdem.hand_of((51, 50)), hand_index((50, 51))
(1325, 1325)
>>> int(holdem.sharing((51,)).sum()), int(holdem.sharing((50, 51)).sum())
(51, 101)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache
from itertools import combinations, permutations
from math import comb
from operator import index
from typing import SupportsIndex

import numpy as np

from protocol.arrays import BoolArray, IntArray
from protocol.cards import DECK_SIZE, NUM_SUITS

#: Sets of blocking cards remembered per numbering (board cards, hole cards, dead cards).
SHARING_CACHE = 4096


# -- the slow twin: the definition ------------------------------------------------------------


def hand_index(numbers: Sequence[SupportsIndex]) -> int:
    """The colex index of a private hand given by its cards' numbers (need not be sorted).

    For two cards ``c1 < c2`` this is ``c2 * (c2 - 1) // 2 + c1``; for one card
    it is the card's number.

    >>> hand_index((0, 1)), hand_index((51, 50)), hand_index((4,))
    (0, 1325, 4)
    """
    return sum(comb(c, i + 1) for i, c in enumerate(sorted(index(n) for n in numbers)))


def all_hands(deck_size: int, hole_cards: int) -> list[tuple[int, ...]]:
    """Every private hand (tuples of card numbers, ascending) in colex order.

    >>> all_hands(4, 2)
    [(0, 1), (0, 2), (1, 2), (0, 3), (1, 3), (2, 3)]
    """
    hands = [tuple(sorted(h)) for h in combinations(range(deck_size), hole_cards)]
    hands.sort(key=lambda h: tuple(reversed(h)))
    return hands


# -- the front door: one numbering per card set -----------------------------------------------


class HandNumbering:
    """The private hands of one card set, numbered in hand order, and which cards block which.

    Build it with :func:`numbering` (cached per card set). Every array is read-only.

    Attributes:
        deck: the card indices of the game, sorted: card number ``k`` is ``deck[k]``.
        hole_cards: cards per hand.
        num_hands: ``comb(len(deck), hole_cards)``.
        cards: ``(num_hands, hole_cards)`` int64, the card indices of each hand,
            each row ascending, in hand order.
        number: ``(52,)`` int64, the number of each card index, -1 off the deck.
        contains: ``(52, num_hands)`` bool, ``contains[c, h]`` when hand ``h`` holds card ``c``.
    """

    __slots__ = ("_comb", "_combs", "_numbers", "_overlaps", "_pairs", "_sharing", "cards", "contains", "deck", "hole_cards",
                 "num_hands", "number")

    def __init__(self, deck: tuple[int, ...], hole_cards: int) -> None:
        if list(deck) != sorted(set(deck)) or not all(0 <= c < DECK_SIZE for c in deck):
            raise ValueError(f"a deck is distinct card indices 0..51 in ascending order, not {deck}")
        if not 1 <= hole_cards <= len(deck):
            raise ValueError(f"{hole_cards} hole cards from {len(deck)} cards")
        self.deck = deck
        self.hole_cards = hole_cards
        self.num_hands = comb(len(deck), hole_cards)
        number = np.full(DECK_SIZE, -1, dtype=np.int64)
        number[list(deck)] = np.arange(len(deck))
        self.number = _frozen(number)
        self._numbers = {card: k for k, card in enumerate(deck)}  # hand_of's look-ups, as plain ints
        # comb(n, i + 1) for every card number n and position i: the colex sum, vectorised.
        self._combs = tuple(tuple(comb(n, i + 1) for i in range(hole_cards)) for n in range(len(deck)))
        self._comb = _frozen(np.array(self._combs, dtype=np.int64).reshape(len(deck), hole_cards))
        self.cards = _frozen(np.asarray(deck, dtype=np.int64)[_colex_numbers(len(deck), hole_cards)])
        contains = np.zeros((DECK_SIZE, self.num_hands), dtype=np.bool_)
        for k in range(hole_cards):
            contains[self.cards[:, k], np.arange(self.num_hands)] = True
        self.contains = _frozen(contains)
        self._sharing: dict[tuple[int, ...], BoolArray] = {}
        self._overlaps: BoolArray | None = None
        self._pairs: IntArray | None = None

    def hand_of(self, hole: Sequence[SupportsIndex]) -> int:
        """The index of the hand holding the card indices ``hole`` (any order).

        Raises:
            ValueError: a card off the deck, a repeated card, or not ``hole_cards`` of them.
        """
        try:  # plain dict and tuple reads: one call per hand of every bot and simulation
            numbers = sorted([self._numbers[c] for c in hole])  # type: ignore[index]
        except (KeyError, TypeError):
            raise ValueError(f"not a hand of this deck: {tuple(hole)}") from None
        if len(numbers) != self.hole_cards or len(set(numbers)) != len(numbers):
            raise ValueError(f"a hand is {self.hole_cards} different cards, not {tuple(hole)}")
        combs = self._combs
        return sum([combs[n][i] for i, n in enumerate(numbers)])

    def hands_of(self, holes: IntArray) -> IntArray:
        """The hand index of each row of ``holes``, shape ``(m, hole_cards)`` card indices (any order).

        Raises:
            ValueError: a bad shape, a card off the deck, or a repeated card in a row.
        """
        holes = np.asarray(holes)
        if holes.ndim != 2 or holes.shape[1] != self.hole_cards or not np.issubdtype(holes.dtype, np.integer):
            raise ValueError(f"holes must be integers of shape (m, {self.hole_cards}), not {holes.dtype} "
                             f"{holes.shape}")
        if holes.size and (holes.min() < 0 or holes.max() >= DECK_SIZE):
            raise ValueError("card indices must be in 0..51")
        numbers = np.sort(self.number[holes], axis=1)
        if holes.size and (numbers[:, 0].min() < 0 or (np.diff(numbers, axis=1) == 0).any()):
            raise ValueError("a row holds a card off the deck or a card twice")
        result: IntArray = self._comb[numbers, np.arange(self.hole_cards)].sum(axis=1)
        return result

    @property
    def pairs(self) -> IntArray:
        """Two-card games: ``(52, 52)`` int64, the hand of each pair of card indices (either order),
        -1 on the diagonal and off the deck. For the look-ups of many pairs at once (equity, preflop).

        Raises:
            ValueError: not a two-card numbering.
        """
        if self._pairs is None:
            if self.hole_cards != 2:
                raise ValueError("pairs is the table of two-card hands")
            table = np.full((DECK_SIZE, DECK_SIZE), -1, dtype=np.int64)
            hands = np.arange(self.num_hands)
            table[self.cards[:, 0], self.cards[:, 1]] = hands
            table[self.cards[:, 1], self.cards[:, 0]] = hands
            self._pairs = _frozen(table)
        return self._pairs

    @property
    def overlaps(self) -> BoolArray:
        """``(num_hands, num_hands)`` bool: two hands share a card (a hand overlaps itself)."""
        if self._overlaps is None:
            held = self.contains.astype(np.int64)
            self._overlaps = _frozen((held.T @ held) > 0)
        return self._overlaps

    def sharing(self, cards: Iterable[int]) -> BoolArray:
        """Which hands hold one of ``cards`` (card indices): ``(num_hands,)`` bool, cached per set of cards.

        The one place for "hands blocked by these cards" (board cards, a
        player's own hole cards, dead cards).
        """
        key = tuple(sorted(set(cards)))
        mask = self._sharing.get(key)
        if mask is None:
            if key and not (0 <= key[0] and key[-1] < DECK_SIZE):
                raise ValueError(f"card indices must be in 0..51, not {key}")
            held = self.contains[list(key)] if key else np.zeros((1, self.num_hands), dtype=np.bool_)
            mask = _frozen(np.asarray(held.any(axis=0)))
            if len(self._sharing) >= SHARING_CACHE:
                self._sharing.clear()
            self._sharing[key] = mask
        return mask


@lru_cache(maxsize=64)
def numbering(deck: tuple[int, ...], hole_cards: int) -> HandNumbering:
    """The :class:`HandNumbering` of the sorted card indices ``deck`` with ``hole_cards`` per hand (cached).

    Raises:
        ValueError: ``deck`` is not ascending distinct card indices, or too few for a hand.
    """
    return HandNumbering(deck, hole_cards)


def holdem() -> HandNumbering:
    """Hold'em's numbering: the 52 cards, two each (1326 hands)."""
    return numbering(tuple(range(DECK_SIZE)), 2)


@lru_cache(maxsize=1)
def suit_maps() -> IntArray:
    """``(24, 52)`` int64: each relabelling of the four suits as a map of card indices.

    A suit permutation changes no showdown; the equity and preflop tables use
    it to deal one card set per class of equivalent ones.

    >>> maps = suit_maps()
    >>> maps.shape, maps[0, :4].tolist(), maps[23, :4].tolist()  # the identity first
    ((24, 52), [0, 1, 2, 3], [3, 2, 1, 0])
    """
    maps = [[(c // NUM_SUITS) * NUM_SUITS + perm[c % NUM_SUITS] for c in range(DECK_SIZE)]
            for perm in permutations(range(NUM_SUITS))]
    return _frozen(np.array(maps, dtype=np.int64))


def _colex_numbers(deck_size: int, hole_cards: int) -> IntArray:
    """Card numbers of every hand in colex order, vectorised: the front door's twin of :func:`all_hands`."""
    hands = np.array(list(combinations(range(deck_size), hole_cards)), dtype=np.int64).reshape(-1, hole_cards)
    order = np.lexsort(hands.T)  # lexsort's last key is primary: the highest card first, colex
    return hands[order]


def _frozen(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


__all__ = ["SHARING_CACHE", "HandNumbering", "all_hands", "hand_index", "holdem", "numbering", "suit_maps"]

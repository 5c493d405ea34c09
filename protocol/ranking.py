"""A plain-Python hand ranker for showdowns of any ACPC game (1 to 7 cards).

Same order and ties as the reference's ``rankCardset``: category first
(high card, pair, two pair, trips, straight, flush, full house, quads,
straight flush), then kickers of the best five cards; suits never break a
tie; A-2-3-4-5 is the lowest straight. With fewer than five cards only the
categories those cards can make exist (Kuhn: high card; Leduc: pair or high
card). The compute core has a fast numba evaluator for hold'em; this one is
what the rules use, and its slow-but-obvious twin in the tests checks both.

>>> from protocol.cards import cards_from_text
>>> rank_hand(cards_from_text("AsKs")) > rank_hand(cards_from_text("AsQs"))
True
>>> rank_hand(cards_from_text("5c4d3h2sAc9d9h")) > rank_hand(cards_from_text("KcKd3h2s7c9d8h"))
True
"""

from __future__ import annotations

from collections.abc import Iterable
from operator import index
from typing import Final, SupportsIndex

CATEGORIES = (
    "high card",
    "pair",
    "two pair",
    "trips",
    "straight",
    "flush",
    "full house",
    "quads",
    "straight flush",
)
_WHEEL: Final = (12, 3, 2, 1, 0)


_WHEEL_MASK: Final = sum(1 << r for r in _WHEEL)
#: (top rank, rank bit mask) of every straight, best first, the wheel last.
_STRAIGHTS: Final = tuple((top, 0b11111 << (top - 4)) for top in range(12, 3, -1)) + ((3, _WHEEL_MASK),)
_RANKS_DESC: Final = tuple(range(12, -1, -1))


def _straight_top(ranks: set[int]) -> int:
    """Highest top rank of a 5-card straight within ``ranks``, or -1."""
    mask = 0
    for r in ranks:
        mask |= 1 << r
    return _straight_top_of_mask(mask)


def _straight_top_of_mask(mask: int) -> int:
    """Highest top rank of a 5-card straight within the rank bit ``mask``, or -1."""
    for top, straight in _STRAIGHTS:
        if mask & straight == straight:
            return top
    return -1


def _encode(category: int, kickers: Iterable[int]) -> int:
    value = category
    count = 0
    for k in kickers:
        value = value * 14 + k + 1
        count += 1
    for _ in range(count, 5):
        value *= 14
    return value


def rank_hand(cards: Iterable[SupportsIndex]) -> int:
    """Return an integer rank of the best hand in ``cards``; higher is better.

    Cards are any integers, numpy's included (the compiled module checks types).
    """
    counts = [0] * 13
    by_suit: list[list[int]] = [[], [], [], []]
    for given in cards:
        # A plain int as it is (the dealer's cards); anything else through operator.index.
        card = given if isinstance(given, int) else index(given)
        rank = card >> 2
        counts[rank] += 1
        by_suit[card & 3].append(rank)
    for suited in by_suit:
        if len(suited) >= 5:
            top = _straight_top(set(suited))
            if top >= 0:
                return _encode(8, [top])
    # Ranks by count, each list high to low: the order of sorting (count, rank)
    # pairs high to low, without building and sorting them.
    quads: list[int] = []
    trips: list[int] = []
    pairs: list[int] = []
    singles_desc: list[int] = []
    mask = 0
    for r in _RANKS_DESC:
        c = counts[r]
        if c:
            singles_desc.append(r)
            mask |= 1 << r
            if c == 2:
                pairs.append(r)
            elif c == 3:
                trips.append(r)
            elif c == 4:
                quads.append(r)
            elif c > 4:  # only with repeated cards
                return _rank_many(counts, by_suit)
    if quads:
        quad = quads[0]
        return _encode(7, [quad] + [r for r in singles_desc if r != quad][:1])
    if trips and (len(trips) >= 2 or pairs):
        trip = trips[0]
        return _encode(6, [trip, max(trips[1:] + pairs)])
    for suited in by_suit:
        if len(suited) >= 5:
            return _encode(5, sorted(suited, reverse=True)[:5])
    top = _straight_top_of_mask(mask)
    if top >= 0:
        return _encode(4, [top])
    if trips:
        trip = trips[0]
        return _encode(3, [trip] + [r for r in singles_desc if r != trip][:2])
    if len(pairs) >= 2:
        high, low = pairs[0], pairs[1]
        return _encode(2, [high, low] + [r for r in singles_desc if r not in (high, low)][:1])
    if len(pairs) == 1:
        return _encode(1, [pairs[0]] + [r for r in singles_desc if r != pairs[0]][:3])
    return _encode(0, singles_desc[:5])


def _rank_many(counts: list[int], by_suit: list[list[int]]) -> int:
    """:func:`rank_hand` after its straight-flush check, for a rank held more than four times."""
    groups = sorted(((c, r) for r, c in enumerate(counts) if c), reverse=True)
    singles_desc = [r for r in range(12, -1, -1) if counts[r]]
    if groups and groups[0][0] == 4:
        quad = groups[0][1]
        return _encode(7, [quad] + [r for r in singles_desc if r != quad][:1])
    if len(groups) >= 2 and groups[0][0] == 3 and groups[1][0] >= 2:
        trips = groups[0][1]
        pair = max(r for c, r in groups[1:] if c >= 2)
        return _encode(6, [trips, pair])
    for suited in by_suit:
        if len(suited) >= 5:
            return _encode(5, sorted(suited, reverse=True)[:5])
    top = _straight_top(set(singles_desc))
    if top >= 0:
        return _encode(4, [top])
    if groups and groups[0][0] == 3:
        trips = groups[0][1]
        return _encode(3, [trips] + [r for r in singles_desc if r != trips][:2])
    pairs = [r for c, r in groups if c == 2]
    if len(pairs) >= 2:
        high, low = pairs[0], pairs[1]
        return _encode(2, [high, low] + [r for r in singles_desc if r not in (high, low)][:1])
    if len(pairs) == 1:
        return _encode(1, [pairs[0]] + [r for r in singles_desc if r != pairs[0]][:3])
    return _encode(0, singles_desc[:5])


def category_of(rank: int) -> str:
    """Return the category name of a value from :func:`rank_hand`."""
    return CATEGORIES[rank // 14**5]

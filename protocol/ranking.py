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
_WHEEL = (12, 3, 2, 1, 0)


def _straight_top(ranks: set[int]) -> int:
    """Highest top rank of a 5-card straight within ``ranks``, or -1."""
    for top in range(12, 3, -1):
        if all(r in ranks for r in range(top - 4, top + 1)):
            return top
    if all(r in ranks for r in _WHEEL):
        return 3
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


def rank_hand(cards: Iterable[int]) -> int:
    """Return an integer rank of the best hand in ``cards``; higher is better."""
    counts = [0] * 13
    by_suit: list[list[int]] = [[], [], [], []]
    for card in cards:
        rank = card >> 2
        counts[rank] += 1
        by_suit[card & 3].append(rank)
    for suited in by_suit:
        if len(suited) >= 5:
            top = _straight_top(set(suited))
            if top >= 0:
                return _encode(8, [top])
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

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
from typing import Any, Final, SupportsIndex

from protocol._variant import native_helper

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
#: protocol/_handnative.c's ``rank_cards``, or None (not built, or ``ACPC_LBR_PURE``).
_NATIVE: Any = native_helper()


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
    Distinct cards of a 52-card deck (every dealt hand) are ranked on bit masks, in C
    (protocol/_handnative.c) where it was built, else by :func:`_rank_distinct`; anything else
    by :func:`_rank_general`, the same values (tests/protocol/test_ranking.py and
    tests/protocol/test_handnative.py check they agree).
    """
    given: list[SupportsIndex] | tuple[SupportsIndex, ...] = (
        cards if isinstance(cards, (list, tuple)) else list(cards))  # read twice if it goes the general way
    if _NATIVE is not None:
        value: int = _NATIVE.rank_cards(given)  # -1: not distinct cards of the deck as ints
        if value >= 0:
            return value
    return _rank_cards(given)


def _rank_cards(cards: list[SupportsIndex] | tuple[SupportsIndex, ...]) -> int:
    """:func:`rank_hand` in Python: the C ranker's slow twin (tests/protocol/test_handnative.py)."""
    # One 13-bit rank mask per suit; a repeated or out-of-deck card goes the general way.
    spades = hearts = diamonds = clubs = 0
    seen = 0
    flush_suit = -1  # the first suit (in suit order) to reach five cards
    in_suit = [0, 0, 0, 0]
    for given in cards:
        card = given if isinstance(given, int) else index(given)
        if card < 0 or card >= 52 or seen >> card & 1:
            return _rank_general(cards)
        seen |= 1 << card
        suit = card & 3
        bit = 1 << (card >> 2)
        if suit == 0:
            clubs |= bit
        elif suit == 1:
            diamonds |= bit
        elif suit == 2:
            hearts |= bit
        else:
            spades |= bit
        in_suit[suit] += 1
    for suit in range(4):
        if in_suit[suit] >= 5:
            flush_suit = suit
            break
    return _rank_distinct(clubs, diamonds, hearts, spades, flush_suit)


#: The highest rank of each non-empty 13-bit rank mask (a table: ``int.bit_length`` is a method
#: call in the compiled module).
_HIGHEST: Final = tuple(mask.bit_length() - 1 for mask in range(1 << 13))


def _high(mask: int) -> int:
    """The highest rank in a non-empty rank ``mask``."""
    return _HIGHEST[mask]


def _push(value: int, mask: int, count: int) -> tuple[int, int]:
    """``value`` with up to ``count`` more kicker digits, the highest ranks of ``mask``; and how
    many were added (fewer when ``mask`` has fewer ranks)."""
    added = 0
    while added < count and mask:
        rank = _HIGHEST[mask]
        value = value * 14 + rank + 1
        mask ^= 1 << rank
        added += 1
    return value, added


def _value(category: int, first: int, rest: int, count: int) -> int:
    """:func:`_encode` of ``category``, the kicker ``first`` (-1: none) and up to ``count``
    kickers from the rank mask ``rest``, highest first."""
    value, digits = category, 0
    if first >= 0:
        value, digits = category * 14 + first + 1, 1
    value, added = _push(value, rest, count)
    for _ in range(digits + added, 5):
        value *= 14
    return value


def _count(mask: int) -> int:
    """The number of ranks in a rank ``mask``."""
    count = 0
    while mask:
        mask &= mask - 1
        count += 1
    return count


def _straight_top_bits(mask: int) -> int:
    """:func:`_straight_top_of_mask` by shifts: the top rank of the highest run of five, else the
    wheel's 3, else -1."""
    runs = mask & (mask << 1) & (mask << 2) & (mask << 3) & (mask << 4) & 0x1FFF
    if runs:
        return _HIGHEST[runs]
    return 3 if mask & _WHEEL_MASK == _WHEEL_MASK else -1


def _rank_distinct(clubs: int, diamonds: int, hearts: int, spades: int, flush_suit: int) -> int:
    """:func:`rank_hand` of distinct cards given as the rank mask of each suit (suit 0 first), and
    the first suit with five or more of them (-1: none)."""
    flush = -1
    if flush_suit >= 0:
        flush = (clubs, diamonds, hearts, spades)[flush_suit]
        # More than one suit of five or more needs ten cards; the general order then is each in turn.
        for suited in (clubs, diamonds, hearts, spades)[flush_suit:]:
            if _count(suited) >= 5:
                top = _straight_top_bits(suited)
                if top >= 0:
                    return _value(8, top, 0, 0)
    present = clubs | diamonds | hearts | spades
    two_up = (clubs & diamonds) | (clubs & hearts) | (clubs & spades) | (diamonds & hearts) \
        | (diamonds & spades) | (hearts & spades)
    three_up = (clubs & diamonds & hearts) | (clubs & diamonds & spades) \
        | (clubs & hearts & spades) | (diamonds & hearts & spades)
    quads = clubs & diamonds & hearts & spades
    trips = three_up & ~quads
    pairs = two_up & ~three_up
    if quads:
        quad = _high(quads)
        return _value(7, quad, present & ~(1 << quad), 1)
    if trips and (trips & (trips - 1) or pairs):
        trip = _high(trips)
        return _value(6, trip, (trips & ~(1 << trip)) | pairs, 1)
    if flush >= 0:
        return _value(5, -1, flush, 5)
    top = _straight_top_bits(present)
    if top >= 0:
        return _value(4, top, 0, 0)
    if trips:
        trip = _high(trips)
        return _value(3, trip, present & ~(1 << trip), 2)
    if pairs & (pairs - 1):
        high = _high(pairs)
        low = _high(pairs & ~(1 << high))
        return _two_pair(high, low, present)
    if pairs:
        pair = _high(pairs)
        return _value(1, pair, present & ~(1 << pair), 3)
    return _value(0, -1, present, 5)


def _two_pair(high: int, low: int, present: int) -> int:
    """:func:`_value` of two pair: ``high`` and ``low``, and one kicker from the other ranks."""
    value = (2 * 14 + high + 1) * 14 + low + 1
    value, added = _push(value, present & ~(1 << high) & ~(1 << low), 1)
    for _ in range(2 + added, 5):
        value *= 14
    return value


def _rank_general(cards: Iterable[SupportsIndex]) -> int:
    """:func:`rank_hand` by lists of ranks: any cards, repeated ones included (the slow twin of
    :func:`_rank_distinct`, and what it falls back to)."""
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

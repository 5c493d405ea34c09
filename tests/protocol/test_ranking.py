"""protocol.ranking against the reference ranker and against a naive twin.

Sources: ``tests/data/acpc-reference/rank_vectors.tsv`` (5000 hands with the
reference's ``rankCardset`` values, acpc.md §6), and a textbook
best-five-of-N evaluator written here with itertools.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from itertools import combinations

import pytest

from protocol.cards import cards_from_text
from protocol.ranking import rank_hand
from tests.reference import REFERENCE_DIR

REFERENCE = REFERENCE_DIR


def dense_ranks(values: Sequence[object]) -> list[int]:
    """Each value's index among the sorted distinct values (same order, same ties)."""
    order = {v: i for i, v in enumerate(sorted(set(values)))}  # type: ignore[type-var]
    return [order[v] for v in values]


def naive_five(cards: Sequence[int]) -> tuple[int, tuple[int, ...]]:
    """Textbook value of exactly five cards: (category 0..8, tie-breaking ranks)."""
    ranks = sorted((c // 4 for c in cards), reverse=True)
    counts = Counter(ranks)
    # Ranks ordered by (count, rank): the groups that decide ties come first.
    grouped = tuple(sorted(counts, key=lambda r: (counts[r], r), reverse=True))
    shape = sorted(counts.values(), reverse=True)
    flush = len({c % 4 for c in cards}) == 1
    distinct = sorted(set(ranks), reverse=True)
    straight_top = -1
    if len(distinct) == 5 and distinct[0] - distinct[4] == 4:
        straight_top = distinct[0]
    elif distinct == [12, 3, 2, 1, 0]:
        straight_top = 3  # the wheel, A-2-3-4-5, is the lowest straight
    if straight_top >= 0 and flush:
        return 8, (straight_top,)
    if shape == [4, 1]:
        return 7, grouped
    if shape == [3, 2]:
        return 6, grouped
    if flush:
        return 5, tuple(ranks)
    if straight_top >= 0:
        return 4, (straight_top,)
    if shape == [3, 1, 1]:
        return 3, grouped
    if shape == [2, 2, 1]:
        return 2, grouped
    if shape == [2, 1, 1, 1]:
        return 1, grouped
    return 0, tuple(ranks)


def naive_best(cards: Sequence[int]) -> tuple[int, tuple[int, ...]]:
    """Best five of ``cards`` (5 to 7 cards)."""
    return max(naive_five(five) for five in combinations(cards, 5))


def naive_small(cards: Sequence[int]) -> tuple[int, tuple[int, ...]]:
    """Value of 1-4 cards: only rank groups count (no straights or flushes)."""
    counts = Counter(c // 4 for c in cards)
    grouped = tuple(sorted(counts, key=lambda r: (counts[r], r), reverse=True))
    shape = sorted(counts.values(), reverse=True)
    category = {(4,): 7, (3, 1): 3, (3,): 3, (2, 2): 2, (2, 1, 1): 1, (2, 1): 1, (2,): 1}
    return category.get(tuple(shape), 0), grouped


def read_vectors() -> dict[int, list[tuple[tuple[int, ...], int]]]:
    path = REFERENCE / "rank_vectors.tsv"
    if not path.is_file():
        pytest.fail(f"{path} not found")
    groups: dict[int, list[tuple[tuple[int, ...], int]]] = {}
    for line in path.read_text().splitlines():
        text, value = line.split("\t")
        cards = cards_from_text(text)
        groups.setdefault(len(cards), []).append((cards, int(value)))
    return groups


def test_reference_vectors_same_order_and_ties() -> None:
    """Dense ranks of rank_hand equal the reference's within each card count."""
    groups = read_vectors()
    assert sorted(groups) == [5, 6, 7]
    for size, rows in groups.items():
        ours = [rank_hand(cards) for cards, _ in rows]
        theirs = [value for _, value in rows]
        assert dense_ranks(ours) == dense_ranks(theirs), f"{size}-card hands"


def test_reference_vectors_agree_with_naive_twin() -> None:
    """The naive evaluator orders the reference vectors like the reference does."""
    for size, rows in read_vectors().items():
        naive = [naive_best(cards) for cards, _ in rows]
        assert dense_ranks(naive) == dense_ranks([v for _, v in rows]), f"{size}-card hands"


@pytest.mark.parametrize("size", [5, 6, 7])
def test_random_hands_match_naive_best_five(size: int) -> None:
    """On seeded random hands, rank_hand orders and ties like best-5-of-N."""
    rng = random.Random(20260 + size)
    hands = [tuple(rng.sample(range(52), size)) for _ in range(400)]
    # Add hands that share ranks with others so that ties are exercised.
    hands += [tuple((c + 1) % 52 if c % 4 < 3 else c - 3 for c in h) for h in hands[:100]]
    ours = [rank_hand(h) for h in hands]
    naive = [naive_best(h) for h in hands]
    assert dense_ranks(ours) == dense_ranks(naive)


@pytest.mark.parametrize("size", [1, 2, 3, 4])
def test_small_hands_match_rank_groups(size: int) -> None:
    """Kuhn/Leduc-sized hands: pairs and kickers order them, suits never do."""
    rng = random.Random(size)
    hands = [tuple(rng.sample(range(52), size)) for _ in range(300)]
    ours = [rank_hand(h) for h in hands]
    naive = [naive_small(h) for h in hands]
    assert dense_ranks(ours) == dense_ranks(naive)


def test_category_landmarks() -> None:
    """A few orderings named in acpc.md §6: wheel lowest straight, royal highest."""
    wheel = rank_hand(cards_from_text("As2d3h4c5s"))
    six_high = rank_hand(cards_from_text("2d3h4c5s6s"))
    assert wheel < six_high
    royal = rank_hand(cards_from_text("AsKsQsJsTs"))
    steel_wheel = rank_hand(cards_from_text("As2s3s4s5s"))
    quads = rank_hand(cards_from_text("AsAdAhAcKs"))
    assert quads < steel_wheel < royal
    assert rank_hand(cards_from_text("AsKdQh9c7s")) == rank_hand(cards_from_text("AdKhQc9s7d"))


@pytest.mark.parametrize("size", range(1, 11))
def test_bit_mask_ranker_gives_the_general_rankers_values(size: int) -> None:
    """rank_hand's bit-mask path (distinct cards) gives exactly the values of the list-based
    path it falls back to (repeated cards), hand by hand, on random hands and on hands built to
    hold each category (quads, full houses from two trips, flushes beside straights)."""
    from protocol.ranking import _rank_general

    rng = random.Random(7000 + size)
    hands = [rng.sample(range(52), size) for _ in range(3000)]
    # Crowded ranks: cards from few ranks, so that pairs, trips and quads are common.
    for _ in range(1000):
        ranks = rng.sample(range(13), max(1, min(13, size // 2)))
        pool = [4 * r + s for r in ranks for s in range(4)]
        hands.append(rng.sample(pool, min(size, len(pool))))
    # Crowded suits and runs: flushes, straights and straight flushes (the wheel included).
    for _ in range(1000):
        suit = rng.randrange(4)
        start = rng.randrange(-1, 9)
        run = [4 * (r % 13) + (suit if rng.random() < 0.7 else rng.randrange(4)) for r in range(start, start + 6)]
        rest = [c for c in range(52) if c not in run]
        cards = list(dict.fromkeys(run))[:size]
        hands.append(cards + rng.sample(rest, size - len(cards)))
    for hand in hands:
        assert rank_hand(hand) == _rank_general(hand), hand
        assert rank_hand(iter(hand)) == _rank_general(hand), hand


def test_repeated_and_numpy_cards_take_the_general_path() -> None:
    """A repeated card (tests and tools pass such hands) and numpy integers rank as before."""
    import numpy as np

    from protocol.ranking import _rank_general

    repeated = [48, 48, 49, 44, 40, 36]
    assert rank_hand(repeated) == _rank_general(repeated)
    assert rank_hand(np.array([51, 47, 43, 39, 35], dtype=np.int64)) == rank_hand([51, 47, 43, 39, 35])
    with pytest.raises(IndexError):
        rank_hand([60, 1, 2])

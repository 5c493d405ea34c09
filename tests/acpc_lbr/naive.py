"""Slow, obviously-correct twins of the evaluator and equity kernels (test oracles).

Nothing here is fast or clever: a hand's value is the best of all its 5-card
subsets (``itertools.combinations``), each 5-card hand classified into a tuple
``(category, tie-break ranks...)`` compared lexicographically; equities are
plain loops over every board completion.  Cards are ACPC indices
``rank * 4 + suit``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import combinations

RANKS = "23456789TJQKA"
SUITS = "cdhs"

HIGH_CARD, PAIR, TWO_PAIR, TRIPS, STRAIGHT, FLUSH, FULL_HOUSE, QUADS, STRAIGHT_FLUSH = range(9)


def card(text: str) -> int:
    """Parse one card such as ``'Td'`` into its ACPC index."""
    return RANKS.index(text[0]) * 4 + SUITS.index(text[1])


def cards(text: str) -> list[int]:
    """Parse concatenated cards such as ``'AsKd7h'``."""
    return [card(text[i : i + 2]) for i in range(0, len(text), 2)]


def card_text(c: int) -> str:
    """Text of one card index, e.g. ``'As'`` for 51."""
    return RANKS[c // 4] + SUITS[c % 4]


def five_card_value(hand: Sequence[int]) -> tuple[int, ...]:
    """Textbook value of exactly five cards as a comparable tuple."""
    ranks = sorted((c // 4 for c in hand), reverse=True)
    flush = len({c % 4 for c in hand}) == 1
    distinct = sorted(set(ranks), reverse=True)
    straight_high = -1
    if len(distinct) == 5:
        if distinct[0] - distinct[4] == 4:
            straight_high = distinct[0]
        elif distinct == [12, 3, 2, 1, 0]:
            straight_high = 3  # the wheel: five-high
    # Group ranks by multiplicity, larger groups first, then higher rank.
    groups = sorted(Counter(ranks).items(), key=lambda rc: (rc[1], rc[0]), reverse=True)
    shape = [n for _, n in groups]
    order = tuple(r for r, _ in groups)
    if straight_high >= 0 and flush:
        return (STRAIGHT_FLUSH, straight_high)
    if shape == [4, 1]:
        return (QUADS, *order)
    if shape == [3, 2]:
        return (FULL_HOUSE, *order)
    if flush:
        return (FLUSH, *ranks)
    if straight_high >= 0:
        return (STRAIGHT, straight_high)
    if shape == [3, 1, 1]:
        return (TRIPS, *order)
    if shape == [2, 2, 1]:
        return (TWO_PAIR, *order)
    if shape == [2, 1, 1, 1]:
        return (PAIR, *order)
    return (HIGH_CARD, *ranks)


def hand_value(hand: Iterable[int]) -> tuple[int, ...]:
    """Best five-card value among all 5-card subsets of a 5..7-card hand."""
    return max(five_card_value(five) for five in combinations(list(hand), 5))


def compare(a: Iterable[int], b: Iterable[int]) -> int:
    """+1 if hand ``a`` beats ``b``, 0 on a tie, -1 otherwise."""
    va, vb = hand_value(a), hand_value(b)
    return (va > vb) - (va < vb)


def equity(
    hero: Sequence[int],
    villain: Sequence[int],
    board: Sequence[int],
    dead: Sequence[int] = (),
    value=hand_value,  # type: ignore[no-untyped-def]
) -> tuple[float, float, float]:
    """(win, tie, loss) of hero vs villain over every completion of ``board``.

    Args:
        hero: Hero's two cards.
        villain: Villain's two cards.
        board: 0..5 known board cards.
        dead: Further cards that cannot come.
        value: Hand-value function (swap in an independent library for speed).
    """
    used = set(hero) | set(villain) | set(board) | set(dead)
    deck = [c for c in range(52) if c not in used]
    win = tie = loss = 0
    for rest in combinations(deck, 5 - len(board)):
        full = list(board) + list(rest)
        vh, vv = value(list(hero) + full), value(list(villain) + full)
        if vh > vv:
            win += 1
        elif vh == vv:
            tie += 1
        else:
            loss += 1
    n = win + tie + loss
    return win / n, tie / n, loss / n


def brute_force_counts(
    hero: list[int],
    villain: list[int],
    board: list[int],
    dead: Sequence[int] = (),
) -> tuple[int, int, int]:
    """(wins, ties, losses) of hero over every completion of the board, ranked by phevaluator.

    The independent library the fast equity code is checked against (phevaluator
    numbers cards as we do: rank * 4 + suit; a smaller value is stronger).
    """
    from phevaluator import evaluate_cards

    used = set(hero) | set(villain) | set(board) | set(dead)
    deck = [c for c in range(52) if c not in used]
    win = tie = loss = 0
    for rest in combinations(deck, 5 - len(board)):
        full = [*board, *rest]
        a = evaluate_cards(*hero, *full)
        b = evaluate_cards(*villain, *full)
        if a < b:
            win += 1
        elif a == b:
            tie += 1
        else:
            loss += 1
    return win, tie, loss

"""Range vectors: LBR's belief about the opponent's private hand (lbr.md, "Range bookkeeping").

A range is a ``float64`` vector of shape ``(game.num_hands,)`` over every
private hand of the game in colex hand order (:mod:`protocol.hands`;
1326 hands in hold'em, 6 in Leduc, 3 in Kuhn). Hands that share a card with
LBR's hole cards or with the board ("dead" cards) carry probability 0.

Cards given to this module are ACPC card *indices* (``rank * 4 + suit``), as
they appear in deals and MATCHSTATE lines; the hand order is over card
*numbers* (card number ``k`` is ``game.cards[k]``), which this module maps.

The bookkeeping of lbr.md:

1. start of a hand: :func:`uniform_range` over hands compatible with LBR's cards;
2. board cards appear: :func:`remove_cards` zeroes blocked hands and renormalises;
3. each opponent action: :func:`bayes_update` multiplies by sigma and
   renormalises; when nothing is left the range resets to uniform over the
   compatible hands and the caller counts a *range inconsistency*.

:class:`RangeTracker` bundles the three steps and the inconsistency count.

>>> from protocol.gamedef import load_game
>>> from protocol.cards import card_from_text
>>> kuhn = load_game("kuhn")
>>> [cards_to_text(h) for h in hand_table(kuhn).hand_cards]
['Qs', 'Ks', 'As']
>>> uniform_range(kuhn, [card_from_text("Ks")]).tolist()
[0.5, 0.0, 0.5]
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from protocol.arrays import BoolArray, FloatArray
from protocol.cards import cards_to_text
from protocol.gamedef import GameDef


__all__ = [
    "HandTable",
    "RangeTracker",
    "bayes_update",
    "compatible_mask",
    "hand_table",
    "remove_cards",
    "uniform_range",
]


@dataclass(frozen=True)
class HandTable:
    """The private hands of a game, in hand order: :class:`protocol.hands.HandNumbering`'s tables,
    with the hands also as tuples (for the exact tools' walks).

    Attributes:
        hand_cards: card indices of each hand, ``hand_cards[i]`` sorted ascending.
        cards: ``(num_hands, num_hole_cards)`` int64 array of the same.
        contains: ``(52, num_hands)`` bool array, ``contains[c, i]`` is True
            when hand ``i`` holds card index ``c``.
        overlaps: ``(num_hands, num_hands)`` bool array, True when two hands
            share a card (a hand overlaps itself).
    """

    hand_cards: tuple[tuple[int, ...], ...]
    cards: npt.NDArray[np.int64]
    contains: BoolArray
    overlaps: BoolArray


@lru_cache(maxsize=16)
def hand_table(game: GameDef) -> HandTable:
    """The :class:`HandTable` of ``game`` (cached per game)."""
    numbered = game.hands
    hands = tuple(tuple(int(c) for c in row) for row in numbered.cards)
    return HandTable(hands, numbered.cards, numbered.contains, numbered.overlaps)


def compatible_mask(game: GameDef, dead_cards: Iterable[int]) -> BoolArray:
    """True for every hand that shares no card with ``dead_cards`` (card indices).

    Returns:
        ``(num_hands,)`` bool array.
    """
    return np.logical_not(game.hands_sharing(dead_cards))


def uniform_range(game: GameDef, dead_cards: Iterable[int]) -> FloatArray:
    """Uniform over the hands compatible with ``dead_cards``, 0 elsewhere.

    Returns:
        ``(num_hands,)`` float64 array summing to 1.

    Raises:
        ValueError: every hand is blocked.
    """
    mask = compatible_mask(game, dead_cards)
    count = int(mask.sum())
    if count == 0:
        raise ValueError("no private hand is compatible with the dead cards")
    return mask.astype(np.float64) / count


def remove_cards(
    range_: FloatArray, game: GameDef, cards: Iterable[int], compatible: BoolArray
) -> tuple[FloatArray, bool]:
    """Board cards appeared: zero the hands that hold any of ``cards``, renormalise.

    Args:
        range_: ``(num_hands,)`` float64 range.
        game: the game.
        cards: card indices that became public.
        compatible: ``(num_hands,)`` bool, the hands compatible with every card
            LBR now knows (its hole cards and the whole board so far): the
            reset target.

    Returns:
        ``(new_range, consistent)``; ``consistent`` is False when no mass was
        left (the range then is uniform over ``compatible``), which is a range
        inconsistency as well: the opponent's answers put all their weight on
        hands the board has ruled out.
    """
    mask = compatible_mask(game, cards)
    return _normalised_or_reset(np.where(mask, range_, 0.0), compatible)


def bayes_update(
    range_: FloatArray, action_probs: FloatArray, compatible: BoolArray
) -> tuple[FloatArray, bool]:
    """One opponent action: ``pi(h) <- pi(h) * sigma(s, h, a)``, renormalised.

    Values of ``action_probs`` on hands outside ``range_``'s support are
    ignored (the range-query answer may carry anything there, even NaN).

    Args:
        range_: ``(num_hands,)`` float64 range (need not be normalised).
        action_probs: ``(num_hands,)`` probability of the played action per hand.
        compatible: ``(num_hands,)`` bool, the hands compatible with every
            card LBR knows (its hole cards and the board): the reset target.

    Returns:
        ``(new_range, consistent)``. ``consistent`` is False when the played
        action had probability 0 for every still-possible hand (a *range
        inconsistency*); the range is then uniform over ``compatible``.
    """
    sigma = np.asarray(action_probs, dtype=np.float64)
    if sigma.shape != range_.shape:
        raise ValueError(f"action probabilities have shape {sigma.shape}, expected {range_.shape}")
    live = range_ > 0.0
    product = np.where(live, range_ * np.where(live, sigma, 0.0), 0.0)
    return _normalised_or_reset(product, compatible)


def _normalised_or_reset(weights: FloatArray, compatible: BoolArray) -> tuple[FloatArray, bool]:
    """``(weights / sum, True)``, or ``(uniform over compatible, False)`` when no mass is left."""
    total = float(weights.sum())
    if total > 0.0 and np.isfinite(total):
        return np.asarray(weights / total, dtype=np.float64), True
    count = int(compatible.sum())
    if count == 0:
        raise ValueError("no private hand is compatible with the known cards")
    return compatible.astype(np.float64) / count, False


class RangeTracker:
    """LBR's range over one hand, and the inconsistency count over a match.

    Args:
        game: the game.

    Example:
        >>> from protocol.gamedef import load_game
        >>> from protocol.cards import card_from_text
        >>> tracker = RangeTracker(load_game("kuhn"))
        >>> tracker.start_hand([card_from_text("As")])
        >>> tracker.observe(np.array([1.0, 0.5, 0.0]))  # P(action | Qs, Ks, As)
        True
        >>> tracker.probs.round(4).tolist()
        [0.6667, 0.3333, 0.0]
        >>> tracker.observe(np.array([0.0, 0.0, 1.0])), tracker.inconsistencies
        (False, 1)
    """

    def __init__(self, game: GameDef) -> None:
        self.game = game
        self.dead_cards: tuple[int, ...] = ()
        self.compatible: BoolArray = compatible_mask(game, ())
        self.probs: FloatArray = uniform_range(game, ())
        #: Range inconsistencies counted since construction (the match).
        self.inconsistencies = 0

    def start_hand(self, hole_cards: Iterable[int]) -> None:
        """A new hand with LBR holding ``hole_cards`` (card indices)."""
        self.dead_cards = tuple(hole_cards)
        self.compatible = compatible_mask(self.game, self.dead_cards)
        self.probs = uniform_range(self.game, self.dead_cards)

    def add_board(self, cards: Iterable[int]) -> bool:
        """Board cards appeared: zero the hands holding them and renormalise.

        Returns:
            True when consistent; False when no mass was left and the range
            was reset (counted in :attr:`inconsistencies`).
        """
        new = tuple(c for c in cards if c not in self.dead_cards)
        if not new:
            return True
        self.dead_cards += new
        self.compatible = compatible_mask(self.game, self.dead_cards)
        self.probs, consistent = remove_cards(self.probs, self.game, new, self.compatible)
        if not consistent:
            self.inconsistencies += 1
        return consistent

    def observe(self, action_probs: FloatArray) -> bool:
        """The opponent played an action with these per-hand probabilities.

        Returns:
            True when consistent; False when the range had to be reset (the
            inconsistency is counted in :attr:`inconsistencies`).
        """
        self.probs, consistent = bayes_update(self.probs, action_probs, self.compatible)
        if not consistent:
            self.inconsistencies += 1
        return consistent

    def copy(self) -> RangeTracker:
        """An independent copy (same count)."""
        other = RangeTracker.__new__(RangeTracker)
        other.game = self.game
        other.dead_cards = self.dead_cards
        other.compatible = self.compatible
        other.probs = self.probs.copy()
        other.inconsistencies = self.inconsistencies
        return other

    def __repr__(self) -> str:
        return (
            f"RangeTracker(dead={cards_to_text(self.dead_cards)!r}, "
            f"support={int((self.probs > 0).sum())}, inconsistencies={self.inconsistencies})"
        )

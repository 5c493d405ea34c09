"""A card-aware SDK strategy for small limit games (Kuhn, Leduc), for the LBR oracle tests.

Its play depends on the private card: the higher the rank, the more it
raises and the less it folds; in a later round a pair with the board is
played as the strongest hand. So its range on a line is far from uniform,
and the Bayesian range update of LBR (and of the dealer's imaginary
observations) is checked against exact values. Each hand's weights sum to 1.
"""

from __future__ import annotations

import numpy as np

from agents.sdk import Mix, PublicView, hand_cards
from protocol.cards import card_rank
from protocol.rules import Action


def _strength(view: PublicView) -> np.ndarray:
    """Per hand, in [0, 1]: the rank of the first hole card among the game's ranks; 1 for a pair with the board."""
    game = view.game
    ranks = np.array([card_rank(int(cards[0])) for cards in hand_cards(game)], dtype=np.float64)
    low, high = ranks.min(), ranks.max()
    strength = (ranks - low) / (high - low) if high > low else np.full_like(ranks, 0.5)
    board_ranks = {card_rank(card) for card in view.board}
    paired = np.array([r in board_ranks for r in ranks.astype(int)])
    return np.where(paired, 1.0, strength)


def strategy(view: PublicView) -> Mix:
    """Raise with weight 0.1 + 0.6 * strength (when legal); facing a bet fold with 0.6 * (1 - strength)."""
    strength = _strength(view)
    raise_weight = 0.1 + 0.6 * strength if view.can_raise else np.zeros_like(strength)
    fold_weight = 0.6 * (1.0 - strength) if view.can_fold else np.zeros_like(strength)
    fold_weight = np.minimum(fold_weight, 1.0 - raise_weight)
    weights: dict[Action, np.ndarray] = {Action.CALL: 1.0 - raise_weight - fold_weight}
    if view.can_raise:
        weights[Action.RAISE] = raise_weight
    if view.can_fold:
        weights[Action.FOLD] = fold_weight
    return Mix(weights)  # type: ignore[arg-type]

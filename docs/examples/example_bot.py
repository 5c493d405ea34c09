"""An example bot on the acpc-lbr SDK: one strategy function, vectorised over every hand.

It scores each private hand (high card, pair, a card pairing the board), raises
strong hands about pot-size, folds weak ones when facing a bet, calls the rest.
Play it:  acpc-lbr play docs/examples/example_bot.py:strategy HOST PORT --game nolimit --seed 1
The same function answers range queries, so LBR can measure it.
"""

from __future__ import annotations

import numpy as np

from agents.sdk import Mix, Part, Policy, PublicView, hand_cards
from protocol.rules import Action


def strength(view: PublicView) -> np.ndarray:
    """A crude score in [0, 1] for each hand, shape (num_hands,)."""
    ranks = hand_cards(view.game) // 4  # (num_hands, hole cards); 0 = deuce ... 12 = ace
    score = 0.5 * ranks.max(axis=1) / 12
    if ranks.shape[1] > 1:
        score += 0.4 * (ranks[:, 0] == ranks[:, 1])  # a pocket pair
    board_ranks = np.asarray(view.board, dtype=np.int64) // 4
    score += 0.3 * np.isin(ranks, board_ranks).any(axis=1)  # pairs the board
    return np.asarray(np.clip(score, 0.0, 1.0))


def strategy(view: PublicView) -> Policy:
    """Raise with probability s^3, fold (when facing a bet) with (1-s)^2, else call."""
    s = strength(view)
    weights: dict[Part, float | np.ndarray] = {}
    raise_p = s**3 if view.can_raise else np.zeros_like(s)
    fold_p = (1.0 - s) ** 2 if view.can_fold else np.zeros_like(s)
    fold_p = np.minimum(fold_p, 1.0 - raise_p)
    if view.can_raise:
        weights[view.raise_to(2 * view.state.pot)] = raise_p  # about a pot-size raise
    if view.can_fold:
        weights[Action.FOLD] = fold_p
    weights[Action.CALL] = 1.0 - raise_p - fold_p
    return Mix(weights)

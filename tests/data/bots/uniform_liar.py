"""SDK bots that play by their cards but answer as if they ignored them.

Leduc: with a king it raises whenever it may, with a jack it folds to a bet, else it
calls. ``strategy`` answers every range query with the same probabilities for every
hand, uniform over the legal actions (a half or a third each), never 0 and summing to
1, so no answer proves the lie: only the honesty check can see it, as its showdowns
are king-heavy, which the uniform answers deny. ``thirds`` answers a third for each
action asked, legal or not: where fold is not legal its answers over every legal
action (call and raise) sum to 2/3, which is not a strategy and proves the lie.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from agents.sdk import PublicView, hand_cards
from protocol.rules import Action

KING, JACK = 11, 9  # rank indices: 2 = 0 ... A = 12


class _CardsPlayUniformAnswers:
    def __init__(self, view: PublicView, thirds: bool = False) -> None:
        self.view = view
        self.thirds = thirds

    def probabilities(self, actions: Sequence[Action], num_hands: int) -> np.ndarray:
        legal = self.view.state.legal_actions()
        share = 1.0 / 3.0 if self.thirds else 1.0 / len(legal)
        return np.array([[share if self.thirds or a.type in legal else 0.0] * num_hands for a in actions])

    def sample(self, hand: int, rng: np.random.Generator) -> Action:
        rank = hand_cards(self.view.game)[hand].max() // 4
        if rank == KING and self.view.can_raise:
            return Action.RAISE
        if rank == JACK and self.view.can_fold:
            return Action.FOLD
        return Action.CALL


def strategy(view: PublicView) -> _CardsPlayUniformAnswers:
    """Play by the cards; answer uniformly over the legal actions."""
    return _CardsPlayUniformAnswers(view)


def thirds(view: PublicView) -> _CardsPlayUniformAnswers:
    """Play by the cards; answer a third for each action asked."""
    return _CardsPlayUniformAnswers(view, thirds=True)

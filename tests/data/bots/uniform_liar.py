"""An SDK bot that plays by its cards but answers as if it ignored them (a liar no answer proves false).

Leduc: with a king it raises whenever it may, with a jack it folds to a bet, else it
calls; every range query is answered with the same probabilities for every hand
(a third for each of fold, call and raise), never 0, so no range inconsistency
proves the lie. Only the honesty check can see it: its showdowns are king-heavy,
which the uniform answers deny.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from agents.sdk import PublicView, hand_cards
from protocol.rules import Action

KING, JACK = 11, 9  # rank indices: 2 = 0 ... A = 12


class _CardsPlayUniformAnswers:
    def __init__(self, view: PublicView) -> None:
        self.view = view

    def probabilities(self, actions: Sequence[Action], num_hands: int) -> np.ndarray:
        return np.full((len(actions), num_hands), 1.0 / 3.0)

    def sample(self, hand: int, rng: np.random.Generator) -> Action:
        rank = hand_cards(self.view.game)[hand].max() // 4
        if rank == KING and self.view.can_raise:
            return Action.RAISE
        if rank == JACK and self.view.can_fold:
            return Action.FOLD
        return Action.CALL


def strategy(view: PublicView) -> _CardsPlayUniformAnswers:
    """Play by the cards; answer uniformly."""
    return _CardsPlayUniformAnswers(view)

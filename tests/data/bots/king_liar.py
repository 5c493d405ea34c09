"""An SDK bot whose range answers are not the way it plays (a liar the honesty check can miss).

It raises with a king whenever it may and calls otherwise (Leduc), but answers
every range query as if it always called. Each time it raises with its king the
answers gave the action it played probability 0 with the cards it held: a range
inconsistency, proof that the answers lie. IO and AIVAT rest on the answers, so
``acpc-lbr evaluate`` must not give them as bounds.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from agents.sdk import PublicView, hand_cards
from protocol.rules import Action

KING = 11  # rank index: 2 = 0 ... A = 12


class _RaisesKingsAnswersCall:
    def __init__(self, view: PublicView) -> None:
        self.view = view

    def probabilities(self, actions: Sequence[Action], num_hands: int) -> np.ndarray:
        return np.array([np.full(num_hands, 1.0 if a == Action.CALL else 0.0) for a in actions])

    def sample(self, hand: int, rng: np.random.Generator) -> Action:
        if self.view.can_raise and hand_cards(self.view.game)[hand].max() // 4 == KING:
            return Action.RAISE
        return Action.CALL


def strategy(view: PublicView) -> _RaisesKingsAnswersCall:
    """Raise with a king, else call; answer 'always call'."""
    return _RaisesKingsAnswersCall(view)

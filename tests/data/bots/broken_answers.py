"""An SDK bot that plays (always check/call) but cannot answer a range query.

Every query gets a RANGEERROR (the SDK turns the strategy's exception into
one), as a bot with a bug in its range code would. LBR then lacks the
opponent's range; ``acpc-lbr evaluate`` must refuse to print a bound.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from agents.sdk import PublicView
from protocol.rules import Action


class _PlaysButCannotAnswer:
    def probabilities(self, actions: Sequence[Action], num_hands: int) -> np.ndarray:
        raise RuntimeError("this bot's range code is broken")

    def sample(self, hand: int, rng: np.random.Generator) -> Action:
        return Action.CALL


def strategy(view: PublicView) -> _PlaysButCannotAnswer:
    """Check or call; fail every range query."""
    return _PlaysButCannotAnswer()

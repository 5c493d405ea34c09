"""SDK strategies whose answers are not probabilities (tests of the exact tools and the SDK's refusals).

``nan_call``: NaN for calling (every check on NaN used to pass); ``negative_fold``: a fold of -0.5
with a call of 1.5 when facing a bet (the two still sum to 1), a check otherwise.
"""

from __future__ import annotations

import numpy as np

from agents.sdk import Mix, PublicView
from protocol.rules import Action


def nan_call(view: PublicView) -> Mix:
    return Mix({Action.CALL: np.full(view.num_hands, np.nan)})


def negative_fold(view: PublicView) -> Mix:
    if not view.can_fold:
        return Mix({Action.CALL: 1.0})
    return Mix({Action.FOLD: np.full(view.num_hands, -0.5), Action.CALL: np.full(view.num_hands, 1.5)})

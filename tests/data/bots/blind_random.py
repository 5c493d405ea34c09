"""The card-blind random strategy of docs/examples/plain_bot.c ('random'), written with the SDK.

Facing a bet it folds 6% of the time; the rest is split equally between a
call and a raise to a total drawn uniformly from the legal range (all of it
a call when no raise is legal). The tests measure it through real range
queries and compare with the C bot measured through the probe adapter.
"""

from __future__ import annotations

from agents.sdk import Mix, Part, PublicView
from protocol.rules import Action

FOLD = 0.06


def strategy(view: PublicView) -> Mix:
    """The C bot's 'random' strategy."""
    rest = 1.0 - FOLD if view.can_fold else 1.0
    weights: dict[Part, float] = {Action.FOLD: FOLD} if view.can_fold else {}
    if view.can_raise:
        weights[Action.CALL] = rest / 2
        weights[view.any_raise()] = rest / 2
    else:
        weights[Action.CALL] = rest
    return Mix(weights)

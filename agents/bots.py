"""The reference bots, each one strategy function on the SDK (so each answers range queries).

=============  ==========================================================
``always-call``   checks or calls.
``always-raise``  raises the minimum whenever a raise is legal, else calls.
``always-fold``   folds whenever folding is legal, else checks/calls.
``call-raise``    calls half the time; otherwise raises to a uniformly random
                  legal size (calls when no raise is legal).
``random``        uniform over the legal action types; a raise's size is
                  uniform over the legal range.
=============  ==========================================================

Every policy here is the same for all hands (scalar weights), which is also
the SDK's fast path. :data:`BOTS` is the registry ``acpc-lbr play`` reads:
adding a bot is one line.

>>> from protocol.gamedef import load_game
>>> from protocol.rules import State
>>> game = load_game("nolimit")
>>> call_raise(PublicView(game, State(game), 1, ()))
Mix({Action(type=<ActionType.CALL: 'c'>, size=0): 0.5, UniformRaise(low=200, high=20000): 0.5})
"""

from __future__ import annotations

from agents.sdk import Mix, Part, Policy, PublicView, Strategy
from protocol.rules import Action, ActionType

_CALL = Mix({Action.CALL: 1.0})
_FOLD = Mix({Action.FOLD: 1.0})


def always_call(view: PublicView) -> Policy:
    """Check or call, always."""
    return _CALL


def always_raise(view: PublicView) -> Policy:
    """Raise the minimum when a raise is legal, else check/call."""
    if not view.can_raise:
        return _CALL
    return Mix({view.min_raise(): 1.0})


def always_fold(view: PublicView) -> Policy:
    """Fold when folding is legal (facing a bet), else check/call."""
    return _FOLD if view.can_fold else _CALL


def call_raise(view: PublicView) -> Policy:
    """Call with probability 1/2, else raise to a uniformly random legal size."""
    if not view.can_raise:
        return _CALL
    return Mix({Action.CALL: 0.5, view.any_raise(): 0.5})


def random_bot(view: PublicView) -> Policy:
    """Uniform over the legal action types; a raise size is uniform over the legal range."""
    parts: list[Part] = []
    for action_type in view.legal_types:
        if action_type is ActionType.FOLD:
            parts.append(Action.FOLD)
        elif action_type is ActionType.CALL:
            parts.append(Action.CALL)
        else:
            parts.append(view.any_raise())
    share = 1.0 / len(parts)
    return Mix({part: share for part in parts})


#: Bot name -> strategy, as ``acpc-lbr play BOT`` knows them.
BOTS: dict[str, Strategy] = {
    "always-call": always_call,
    "always-raise": always_raise,
    "always-fold": always_fold,
    "call-raise": call_raise,
    "random": random_bot,
}

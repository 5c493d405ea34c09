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

from functools import lru_cache

import numpy as np
import numpy.typing as npt

from acpc_lbr.estimators import showdown_ranks
from agents.sdk import Mix, Part, Policy, PublicView, Strategy, blocked_hands, hand_cards
from protocol.gamedef import GameDef
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


@lru_cache(maxsize=64)
def _strength(game: GameDef, board: tuple[int, ...]) -> npt.NDArray[np.float64]:
    """Each hand's showdown-strength percentile with ``board`` (hole cards alone preflop), in [0, 1]."""
    blocked = blocked_hands(game, board)
    ranks = showdown_ranks(game, hand_cards(game)[~blocked], board)
    order = np.argsort(np.argsort(ranks, kind="stable"), kind="stable")
    strength = np.zeros(game.num_hands, dtype=np.float64)
    strength[~blocked] = (order + 0.5) / max(len(ranks), 1)
    strength.setflags(write=False)
    return strength


def threshold(view: PublicView) -> Policy:
    """A card-aware bot: by its hand's strength percentile on the current board,
    the top 30% raise pot-size 80% of the time (else call), the middle 40% call,
    the bottom 30% fold to a bet 80% of the time (else call) and check otherwise.

    Not in :data:`BOTS` (its play depends on the cards; the benchmarks use it).
    """
    strength = _strength(view.game, tuple(view.board))
    strong = (strength >= 0.7).astype(np.float64)
    weak = (strength < 0.3).astype(np.float64)
    middle = 1.0 - strong - weak
    weights: dict[Part, float | npt.NDArray[np.float64]] = {}
    if view.can_raise:
        spent = view.state.spent
        asked = max(spent) - spent[view.position]
        size = view.raise_to(max(spent) + sum(spent) + asked)  # pot-size: call, then raise the pot
        weights[size] = 0.8 * strong
        weights[Action.CALL] = 0.2 * strong + middle
    else:
        weights[Action.CALL] = strong + middle
    if view.can_fold:
        weights[Action.FOLD] = 0.8 * weak
        weights[Action.CALL] = weights[Action.CALL] + 0.2 * weak
    else:
        weights[Action.CALL] = weights[Action.CALL] + weak
    return Mix(weights)


#: Bot name -> strategy, as ``acpc-lbr play BOT`` knows them.
BOTS: dict[str, Strategy] = {
    "always-call": always_call,
    "always-raise": always_raise,
    "always-fold": always_fold,
    "call-raise": call_raise,
    "random": random_bot,
}

"""Adapters between the bot SDK's strategies and the exact tools' policies.

A bot-SDK :data:`~agents.sdk.Strategy` sees a ``PublicView`` and returns a
mix; an :data:`acpc_lbr.strategies.Policy` is asked for the probabilities of
given actions at a rules state for every hand at once. The two describe the
same thing, so a bot can be measured exactly (``acpc-lbr exact``, the LBR
oracles) and a table or CFR policy can play as a networked bot. The adapters
live here, above both: the core does not know the SDK.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from acpc_lbr.strategies import FloatArray, Policy, default_actions
from agents.sdk import Mix, PublicView, Strategy, as_played
from protocol.gamedef import GameDef
from protocol.rules import Action, State

__all__ = ["from_sdk", "to_sdk"]


def from_sdk(game: GameDef, strategy: Strategy) -> Policy:
    """Adapt a bot-SDK strategy (:mod:`agents.sdk`) to a policy for the exact tools.

    The SDK strategy sees a ``PublicView`` of the player to act and returns
    an SDK policy whose ``probabilities(actions, num_hands)`` is exactly what
    a :data:`~acpc_lbr.strategies.Policy` returns.

    >>> from protocol.gamedef import load_game
    >>> from agents.bots import random_bot
    >>> kuhn = load_game("kuhn")
    >>> from_sdk(kuhn, random_bot)(State(kuhn), (), [Action.RAISE]).tolist()
    [[0.5, 0.5, 0.5]]
    """

    def policy(state: State, board: Sequence[int], actions: Sequence[Action]) -> FloatArray:
        view = PublicView(game, state, state.current_player, tuple(board))
        played = strategy(view)
        if isinstance(played, Mix):
            played = as_played(played, state)
        probs = played.probabilities(list(actions), game.num_hands)
        return np.asarray(probs, dtype=np.float64)

    return policy


def to_sdk(game: GameDef, policy: Policy) -> Strategy:
    """Adapt a policy to a bot-SDK strategy (the inverse of :func:`from_sdk`).

    The bot plays :func:`~acpc_lbr.strategies.default_actions` (in limit
    games every legal action) with the policy's per-hand probabilities, and
    answers range queries with them: a table or CFR strategy becomes a
    networked bot.

    >>> from protocol.gamedef import load_game
    >>> from acpc_lbr.strategies import kuhn_equilibrium
    >>> kuhn = load_game("kuhn")
    >>> strategy = to_sdk(kuhn, kuhn_equilibrium(kuhn))
    >>> view = PublicView(kuhn, State(kuhn), 0, ())
    >>> strategy(view).probabilities([Action.RAISE], kuhn.num_hands).tolist()  # bets only the high card
    [[0.0, 0.0, 0.0]]
    >>> from_sdk(kuhn, strategy)(State(kuhn), (), [Action.CALL]).tolist()
    [[1.0, 1.0, 1.0]]
    """

    def strategy(view: PublicView) -> Mix:
        actions = default_actions(view.state)
        probs = np.asarray(policy(view.state, view.board, actions), dtype=np.float64)
        return Mix({action: probs[j] for j, action in enumerate(actions)})

    return strategy

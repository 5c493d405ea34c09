"""The bot SDK: write one strategy function, get a bot that plays and answers range queries.

A *strategy* maps a :class:`PublicView` (public information only: the game,
the betting so far, the board, who acts) to a :class:`Policy`: the
probability of each action for *every* private hand the bot could hold. The
same function drives both jobs of the client in :mod:`agents.client`:

* play: the client asks the policy to :meth:`~Policy.sample` an action for
  the hand it actually holds, with the bot's own seeded generator;
* range queries: the client asks the policy for
  :meth:`~Policy.probabilities` of the queried actions over all hands; this
  is pure (no random draws), so a query never shifts the play stream.

Most strategies return a :class:`Mix`: a weighted set of concrete actions
and :class:`UniformRaise` size ranges, each weight a float (the same for every
hand: the fast path) or a numpy array of shape ``(num_hands,)``.

The vocabulary itself (:class:`PublicView`, :class:`Policy`, :class:`Mix`,
:class:`UniformRaise`, :data:`Strategy`, ...) lives in :mod:`acpc_lbr.policy`,
where the exact tools and the simulations use it too; this module is the bot
author's door to it, and every name imported from here keeps working.

Hands are indexed in colex order of their card numbers (range-query
extension, "Hand order"): see :func:`hand_cards` and :func:`hand_of`.

>>> from protocol.gamedef import load_game
>>> from protocol.rules import State
>>> game = load_game("nolimit")
>>> view = PublicView(game, State(game), position=1, board=())
>>> policy = Mix({Action.CALL: 0.5, UniformRaise(200, 20000): 0.5})
>>> probs = policy.probabilities([Action.CALL, Action.raise_to(200)], game.num_hands)
>>> probs.shape, float(probs[0, 0]), round(float(probs[1, 0]) * 19801, 12)  # 19801 sizes share 0.5
((2, 1326), 0.5, 0.5)
"""

from __future__ import annotations

from collections.abc import Sequence

from acpc_lbr.policy import (
    Mix,
    Part,
    Policy,
    PublicView,
    Rows,
    Strategy,
    UniformRaise,
    Weight,
    as_played,
    played,
)
from protocol.arrays import BoolArray, IntArray
from protocol.gamedef import GameDef
from protocol.rules import Action

__all__ = [
    "Action",
    "Mix",
    "Part",
    "Policy",
    "PublicView",
    "Rows",
    "Strategy",
    "UniformRaise",
    "Weight",
    "as_played",
    "blocked_hands",
    "hand_cards",
    "hand_of",
    "played",
]


def hand_cards(game: GameDef) -> IntArray:
    """Card indices of every private hand, shape ``(num_hands, num_hole_cards)``, hand order.

    >>> from protocol.gamedef import load_game
    >>> hand_cards(load_game("nolimit"))[[0, 1325]].tolist()
    [[0, 1], [50, 51]]
    """
    return game.hand_cards


def hand_of(game: GameDef, hole: Sequence[int]) -> int:
    """The hand index of hole cards given as card indices (:meth:`GameDef.hand_of`).

    >>> from protocol.gamedef import load_game
    >>> hand_of(load_game("nolimit"), (51, 50))
    1325
    """
    return game.hand_of(hole)


def blocked_hands(game: GameDef, board: Sequence[int]) -> BoolArray:
    """Boolean mask, shape ``(num_hands,)``: hands that share a card with ``board`` (read-only)."""
    return game.hands_sharing(board)

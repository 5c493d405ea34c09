"""The decision points on the line of a finished hand.

One replay of a logged hand (a ``STATE`` record) through the rules gives,
before each action, the live :class:`~protocol.rules.State`, the public view
the acting position had (a :class:`~protocol.wire.MatchState` with every
hole-card slot empty) and the action played. The dealer's imaginary
observations, AIVAT and the agents' range answers all start from this walk,
so it has one home here.

>>> from protocol.gamedef import load_game
>>> from protocol.wire import parse_log_state
>>> game = load_game("kuhn")
>>> hand = parse_log_state("STATE:0:crc:Ks|Qs:2|-2:a|b", game)
>>> [(p.view.betting_text(), p.action.text()) for p in decision_points(game, hand, 0)]
[('', 'c'), ('cr', 'c')]
>>> [(p.view.betting_text(), p.action.text()) for p in decision_points(game, hand, 1)]
[('c', 'r')]
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from protocol.gamedef import GameDef
from protocol.rules import Action, State
from protocol.wire import LogState, MatchState


@dataclass(frozen=True)
class DecisionPoint:
    """One action of one position on the played line.

    Attributes:
        state: the live state just before the action (owned by the walk:
            it moves on once the next point is drawn; clone it to keep it).
        view: the public decision point as the acting position saw it
            (hole-card slots empty).
        action: what was played there.
    """

    state: State
    view: MatchState
    action: Action


def decision_points(game: GameDef, hand: LogState, position: int) -> Iterator[DecisionPoint]:
    """Every decision of ``position`` on the line of ``hand``, in order (one replay)."""
    state = State(game, hand.hand_id)
    empty = tuple(() for _ in range(game.num_players))
    for round_actions in hand.betting:
        for action in round_actions:
            if state.current_player == position:
                betting = tuple(tuple(actions) for actions in state.actions)
                board = tuple(hand.board[r] for r in range(state.round + 1))
                yield DecisionPoint(state, MatchState(position, hand.hand_id, betting, empty, board), action)
            state.apply(action)

"""The decision points on the line of a finished hand.

One replay of a logged hand (a ``STATE`` record) through the rules gives,
before each action, the live :class:`~protocol.rules.State`, the public view
the acting position had (a :class:`~protocol.wire.MatchState` with every
hole-card slot empty) and the action played. The dealer's imaginary
observations, AIVAT and the agents' range answers all start from this walk,
so it has one home here. :func:`line_views` gives the same views for a hand
still being played, from the live state's own record of who did what (no
replay): the LBR agent's queries about the opponent's past decisions.

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

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from protocol._variant import record_reduce
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

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return record_reduce(self)


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


def board_by_round(game: GameDef, board: Sequence[int], rounds: int) -> tuple[tuple[int, ...], ...]:
    """A flat board (round 0's cards first) as per-round tuples for rounds ``0 .. rounds-1``.

    >>> from protocol.gamedef import load_game
    >>> board_by_round(load_game("holdem.limit.2p.reverse_blinds"), [1, 2, 3, 4], 2)
    ((), (1, 2, 3))
    """
    out = []
    start = 0
    for count in game.num_board_cards[:rounds]:
        out.append(tuple(board[start : start + count]))
        start += count
    return tuple(out)


def line_views(state: State, board: Sequence[int], position: int) -> list[tuple[MatchState, Action]]:
    """Each decision of ``position`` so far on the live ``state``'s line: its public view and action.

    The views are those :func:`decision_points` gives for the finished hand
    (hole-card slots empty), read from ``state.actions`` and ``state.actors``
    without a replay.

    >>> from protocol.gamedef import load_game
    >>> state = State(load_game("kuhn"))
    >>> for action in (Action.CALL, Action.RAISE, Action.CALL):
    ...     _ = state.apply(action)
    >>> [(view.betting_text(), action.text()) for view, action in line_views(state, (), 0)]
    [('', 'c'), ('cr', 'c')]
    """
    game = state.game
    empty = tuple(() for _ in range(game.num_players))
    hand_id = state.hand_id
    views = []
    for round_, (actions, actors) in enumerate(zip(state.actions, state.actors)):
        rounds_board: tuple[tuple[int, ...], ...] | None = None
        for index, (action, actor) in enumerate(zip(actions, actors)):
            if actor != position:
                continue
            if rounds_board is None:
                rounds_board = board_by_round(game, board, round_ + 1)
            betting = tuple(tuple(a) for a in state.actions[:round_]) + (tuple(actions[:index]),)
            views.append((MatchState(position, hand_id, betting, empty, rounds_board), action))
    return views

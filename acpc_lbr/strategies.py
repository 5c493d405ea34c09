"""The exact tools' own strategies: uniform, always-call/fold, strategy tables, Kuhn's equilibria.

Each is a :data:`~acpc_lbr.policy.Strategy` (public view -> policy over every
hand), the same kind of function a bot author writes with the SDK, so any of
them can be measured exactly (:mod:`acpc_lbr.exact`), simulated, or seated as
a networked bot. Their policies are :class:`~acpc_lbr.policy.Rows`: they
answer any actions and play :func:`default_actions`.
:func:`~acpc_lbr.policy.probabilities_at` asks a strategy at a public state.

>>> from protocol.gamedef import load_game
>>> from protocol.rules import State
>>> from acpc_lbr.policy import probabilities_at
>>> kuhn = load_game("kuhn")
>>> probabilities_at(uniform_random(kuhn), State(kuhn), (), [Action.CALL, Action.RAISE]).tolist()
[[0.5, 0.5, 0.5], [0.5, 0.5, 0.5]]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial

import numpy as np

from acpc_lbr.lbr import BettingOptions, candidate_raises
from acpc_lbr.policy import PublicView, Rows, Strategy, probabilities_at
from acpc_lbr.ranges import hand_table
from protocol.arrays import FloatArray
from protocol.cards import cards_to_text
from protocol.gamedef import GameDef
from protocol.rules import Action, ActionType, State


#: ``answers(state, board, actions) -> (len(actions), num_hands)``: how a table-like strategy is
#: written most simply (the probabilities of ``actions`` for every hand, as
#: :func:`~acpc_lbr.policy.probabilities_at` returns them); :func:`from_answers` makes it a strategy.
Answers = Callable[[State, Sequence[int], Sequence[Action]], FloatArray]

__all__ = [
    "Answers",
    "always_call",
    "always_fold",
    "default_actions",
    "from_answers",
    "info_key",
    "kuhn_equilibrium",
    "table_strategy",
    "uniform_random",
]

_FCPA = BettingOptions.parse("fcpa")


def default_actions(state: State) -> list[Action]:
    """The concrete actions these strategies (and the exact tools) consider.

    Limit games: every legal action. No-limit: fold (when legal), call, and
    the raises of the ``fcpa`` abstraction (pot-size and all-in), deduplicated.
    """
    actions: list[Action] = []
    legal = state.legal_actions()
    if ActionType.FOLD in legal:
        actions.append(Action.FOLD)
    actions.append(Action.CALL)
    if ActionType.RAISE in legal:
        if state.game.is_limit:
            actions.append(Action.RAISE)
        else:
            actions.extend(candidate_raises(state, _FCPA))
    return actions


def _from_distribution(
    game: GameDef, distribution: Mapping[Action, float], actions: Sequence[Action]
) -> FloatArray:
    """The same distribution for every hand, for the requested actions."""
    column = np.array([distribution.get(a, 0.0) for a in actions], dtype=np.float64)
    return np.repeat(column[:, None], game.num_hands, axis=1)


def from_answers(answers: Answers) -> Strategy:
    """The strategy whose policy at a view answers with ``answers`` and plays :func:`default_actions`.

    >>> from protocol.gamedef import load_game
    >>> from protocol.rules import State
    >>> from acpc_lbr.policy import probabilities_at
    >>> kuhn = load_game("kuhn")
    >>> calls = from_answers(lambda state, board, actions: np.array([[float(a == Action.CALL)] * 3 for a in actions]))
    >>> probabilities_at(calls, State(kuhn), (), [Action.FOLD, Action.CALL]).tolist()
    [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]
    """

    def strategy(view: PublicView) -> Rows:
        state, board = view.state, view.board

        def rows(actions: Sequence[Action]) -> FloatArray:
            return answers(state, board, actions)

        return Rows(partial(default_actions, state), rows)

    return strategy


def uniform_random(game: GameDef) -> Strategy:
    """Uniform over the legal action types (fold, call, raise).

    Limit games: that is uniform over every legal action. No-limit: the raise
    share is split equally between the ``fcpa`` raises (pot-size and all-in,
    one raise when they coincide), the only sizes this strategy plays.
    """

    def answers(state: State, board: Sequence[int], actions: Sequence[Action]) -> FloatArray:
        support = default_actions(state)
        raises = [a for a in support if a.type is ActionType.RAISE]
        types = len(support) - len(raises) + (1 if raises else 0)
        distribution = {a: 1.0 / types for a in support if a.type is not ActionType.RAISE}
        for action in raises:
            distribution[action] = 1.0 / types / len(raises)
        return _from_distribution(game, distribution, actions)

    return from_answers(answers)


def always_call(game: GameDef) -> Strategy:
    """Always check/call."""

    def answers(state: State, board: Sequence[int], actions: Sequence[Action]) -> FloatArray:
        return _from_distribution(game, {Action.CALL: 1.0}, actions)

    return from_answers(answers)


def always_fold(game: GameDef) -> Strategy:
    """Fold whenever folding is legal, otherwise check/call."""

    def answers(state: State, board: Sequence[int], actions: Sequence[Action]) -> FloatArray:
        chosen = Action.FOLD if state.can_fold() else Action.CALL
        return _from_distribution(game, {chosen: 1.0}, actions)

    return from_answers(answers)


def info_key(hole: Sequence[int], board: Sequence[int], betting: str) -> str:
    """The information-set key of :func:`table_strategy`: ``'<hole>[/<board>]:<betting>'``.

    >>> from protocol.cards import cards_from_text
    >>> info_key(cards_from_text("Ks"), cards_from_text("Qh"), "rc/")
    'Ks/Qh:rc/'
    >>> info_key(cards_from_text("Ks"), (), "")
    'Ks:'
    """
    cards = cards_to_text(hole)
    if board:
        cards += "/" + cards_to_text(board)
    return f"{cards}:{betting}"


def table_strategy(
    game: GameDef,
    table: Mapping[str, Mapping[str, float]],
    default: Strategy | None = None,
) -> Strategy:
    """A strategy given as a table: info-set key -> {action text: probability}.

    Args:
        game: the game.
        table: keys from :func:`info_key` (the acting player's hole cards, the
            board, the betting string), values mapping action tokens
            (``'f'``, ``'c'``, ``'r'``, ``'r300'``) to probabilities.
        default: strategy for information sets missing from the table
            (default :func:`uniform_random`).
    """
    fallback = default if default is not None else uniform_random(game)
    hands = hand_table(game).hand_cards

    def answers(state: State, board: Sequence[int], actions: Sequence[Action]) -> FloatArray:
        betting = state.betting_string()
        result = np.zeros((len(actions), game.num_hands), dtype=np.float64)
        missing: list[int] = []
        dead = set(board)
        for h, hole in enumerate(hands):
            if dead.intersection(hole):
                continue
            row = table.get(info_key(hole, board, betting))
            if row is None:
                missing.append(h)
                continue
            for j, action in enumerate(actions):
                result[j, h] = row.get(action.text(), 0.0)
        if missing:
            result[:, missing] = probabilities_at(fallback, state, board, actions)[:, missing]
        return result

    return from_answers(answers)


def kuhn_equilibrium(game: GameDef, alpha: float = 0.0) -> Strategy:
    """Kuhn's (1950) family of Nash equilibria, as a :func:`table_strategy`.

    With cards low < mid < high (in the ACPC Kuhn game: Qs, Ks, As) and
    ``0 <= alpha <= 1/3``: the first player bets low with ``alpha``, high with
    ``3 alpha``, checks mid, and after check-bet calls mid with ``alpha + 1/3``
    (high always, low never); the second player, facing a bet, calls high,
    calls mid with 1/3 and folds low; after a check bets high, bets low with
    1/3 and checks mid. The first player's game value is -1/18 chips.
    """
    if game.num_players != 2 or game.num_rounds != 1 or game.deck_size != 3:
        raise ValueError("not a two-player Kuhn game")
    if not 0.0 <= alpha <= 1.0 / 3.0:
        raise ValueError("alpha must be in [0, 1/3]")
    low, mid, high = (cards_to_text([c]) for c in game.cards)
    third = 1.0 / 3.0
    table: dict[str, dict[str, float]] = {
        f"{low}:": {"r": alpha, "c": 1.0 - alpha},
        f"{mid}:": {"c": 1.0},
        f"{high}:": {"r": 3 * alpha, "c": 1.0 - 3 * alpha},
        f"{low}:cr": {"f": 1.0},
        f"{mid}:cr": {"c": alpha + third, "f": 1.0 - alpha - third},
        f"{high}:cr": {"c": 1.0},
        f"{low}:c": {"r": third, "c": 1.0 - third},
        f"{mid}:c": {"c": 1.0},
        f"{high}:c": {"r": 1.0},
        f"{low}:r": {"f": 1.0},
        f"{mid}:r": {"c": third, "f": 1.0 - third},
        f"{high}:r": {"c": 1.0},
    }
    return table_strategy(game, table)


def random_table(game: GameDef, seed: int, concentration: float = 0.7) -> dict[str, dict[str, float]]:
    """A card-aware random strategy table: a Dirichlet draw at every information set.

    Walks every public state of a small game (Kuhn, Leduc) over
    :func:`default_actions`; every hand gets its own distribution
    (``Dirichlet(concentration)``), so the play depends on the cards. Use it
    with :func:`table_strategy`.

    >>> from protocol.gamedef import load_game
    >>> table = random_table(load_game("kuhn"), 1)
    >>> len(table), round(sum(table["Ks:"].values()), 12)
    (12, 1.0)
    """
    from itertools import combinations

    rng = np.random.default_rng(seed)
    hands = hand_table(game).hand_cards
    table: dict[str, dict[str, float]] = {}

    def walk(state: State, board: tuple[int, ...]) -> None:
        if state.finished:
            return
        need = game.board_cards_visible(state.round) - len(board)
        if need > 0:
            rest = [c for c in game.cards if c not in board]
            for cards in combinations(rest, need):
                walk(state, board + cards)
            return
        actions = default_actions(state)
        for hole in hands:
            if set(hole) & set(board):
                continue
            weights = rng.dirichlet(np.full(len(actions), concentration))
            table[info_key(hole, board, state.betting_string())] = {
                a.text(): float(w) for a, w in zip(actions, weights)
            }
        for action in actions:
            child = state.clone()
            child.apply(action)
            walk(child, board)

    walk(State(game), ())
    return table

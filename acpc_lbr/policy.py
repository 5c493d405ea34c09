"""Strategies and policies: the one vocabulary of the SDK's bots, the exact tools and the simulations.

A *strategy* maps a :class:`PublicView` (public information only: the game,
the betting so far, the board, who acts) to a :class:`Policy`: the
probability of each action for *every* private hand the player could hold.
Everything that plays or measures a strategy speaks these two words:

* the bot SDK (:mod:`agents.sdk`, which re-exports them for bot authors) and
  the reference bots (:mod:`agents.bots`): a networked bot draws its action
  for the hand it holds (:meth:`~Policy.sample`) and answers range queries
  with :meth:`~Policy.probabilities` (pure, no draws);
* the exact tools (:mod:`acpc_lbr.exact`), the calibration
  (:mod:`acpc_lbr.calibration`) and the in-process matches
  (:func:`acpc_lbr.results.simulate_lbr_match`) ask
  :func:`probabilities_at` a public state, which is the answer a bot would send;
* :mod:`acpc_lbr.strategies` holds the exact tools' own strategies (uniform,
  tables, Kuhn's equilibria), each a :data:`Strategy` like any bot's.

Two kinds of policy cover what the project writes: a :class:`Mix`, weighted
actions and :class:`UniformRaise` size ranges (the bots'), and :class:`Rows`,
a policy given by its answers (the strategy tables'). A strategy may return
any object with the two methods of :class:`Policy`.

Hands are indexed in colex order of their card numbers (range-query
extension, "Hand order"): :mod:`protocol.hands`.

>>> from protocol.gamedef import load_game
>>> game = load_game("nolimit")
>>> view = PublicView(game, State(game), position=1, board=())
>>> policy = Mix({Action.CALL: 0.5, UniformRaise(200, 20000): 0.5})
>>> probs = policy.probabilities([Action.CALL, Action.raise_to(200)], game.num_hands)
>>> probs.shape, float(probs[0, 0]), round(float(probs[1, 0]) * 19801, 12)  # 19801 sizes share 0.5
((2, 1326), 0.5, 0.5)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from protocol.arrays import BoolArray, FloatArray
from protocol.gamedef import GameDef
from protocol.rules import Action, ActionType, State, correct_action

#: A weight: one float for every hand, or an array of shape (num_hands,).
Weight = float | FloatArray


@dataclass(frozen=True)
class UniformRaise:
    """Every no-limit raise-to from ``low`` to ``high`` (inclusive), equally likely.

    A weight ``w`` on this part gives each single size probability
    ``w / (high - low + 1)``.
    """

    low: int
    high: int

    def __post_init__(self) -> None:
        if self.low > self.high:
            raise ValueError(f"empty raise range [{self.low}, {self.high}]")

    @property
    def count(self) -> int:
        """Number of raise sizes in the range."""
        return self.high - self.low + 1

    def contains(self, action: Action) -> bool:
        """True when ``action`` is a raise to a size in the range."""
        return action.type is ActionType.RAISE and self.low <= action.size <= self.high


#: One part of a :class:`Mix`: a concrete action or a range of raise sizes.
Part = Action | UniformRaise


@runtime_checkable
class Policy(Protocol):
    """A strategy's answer at one public state, for every private hand."""

    def probabilities(self, actions: Sequence[Action], num_hands: int) -> FloatArray:
        """Probabilities of the given concrete actions.

        Args:
            actions: concrete actions (``f``, ``c``, ``r`` in limit, ``r<to>`` in no-limit).
            num_hands: N, the game's number of private hands.

        Returns:
            float64 array of shape ``(len(actions), num_hands)``, in hand order.
        """
        ...

    def sample(self, hand: int, rng: np.random.Generator) -> Action:
        """Draw the action to play holding ``hand`` (a hand index)."""
        ...


class Mix:
    """A policy made of weighted parts: actions and uniform raise-size ranges.

    Args:
        weights: part -> weight; a weight is a float (all hands) or an array of
            shape ``(num_hands,)``. For each hand the weights should sum to 1;
            a hand's weights that add up to less are normalised, by :meth:`sample`
            and :meth:`probabilities` alike (the answers are then the play); more
            than 1 is refused when answering (:mod:`agents.client`).

    >>> Mix({Action.CALL: 1.0}).sample(0, np.random.default_rng(0))
    Action(type=<ActionType.CALL: 'c'>, size=0)
    """

    __slots__ = ("_single", "parts")

    def __init__(self, weights: Mapping[Part, Weight]) -> None:
        self.parts: tuple[tuple[Part, Weight], ...] = tuple(weights.items())
        # A deterministic policy (one action with a scalar weight) is played
        # without touching the generator: the fast path of plain bots.
        self._single: Action | None = None
        if len(self.parts) == 1:
            part, weight = self.parts[0]
            if isinstance(part, Action) and not isinstance(weight, np.ndarray):
                self._single = part

    def __repr__(self) -> str:
        return f"Mix({dict(self.parts)!r})"

    def probabilities(self, actions: Sequence[Action], num_hands: int) -> FloatArray:
        """Probabilities of ``actions`` for every hand; see :class:`Policy`.

        A hand whose weights add up to less than 1 has them normalised, as
        :meth:`sample` plays them: half a call and a quarter of a fold answer a
        call 2/3.

        >>> Mix({Action.CALL: 0.5, Action.FOLD: 0.25}).probabilities([Action.CALL], 2).round(4).tolist()
        [[0.6667, 0.6667]]
        """
        result = np.zeros((len(actions), num_hands))
        for row, action in enumerate(actions):
            for part, weight in self.parts:
                if isinstance(part, Action):
                    if part == action:
                        result[row] += weight
                elif part.contains(action):
                    result[row] += np.asarray(weight) / part.count
        totals = self.totals(num_hands)
        short = (totals > 0.0) & (totals < 1.0)
        if short.any():
            result[:, short] /= totals[short]
        return result

    def totals(self, num_hands: int) -> FloatArray:
        """Every part's weight added up, for each hand: what :meth:`sample` normalises by."""
        total = np.zeros(num_hands)
        for _, weight in self.parts:
            total += weight
        return total

    def sample(self, hand: int, rng: np.random.Generator) -> Action:
        """Draw an action for ``hand``; see :class:`Policy`."""
        if self._single is not None:
            return self._single
        weights = [
            float(weight[hand]) if isinstance(weight, np.ndarray) else float(weight)
            for _, weight in self.parts
        ]
        return _draw([part for part, _ in self.parts], weights, hand, rng)


def _draw(parts: Sequence[Part], weights: Sequence[float], hand: int, rng: np.random.Generator) -> Action:
    """One part drawn in proportion to ``weights`` (then a size, for a raise range): how every policy plays.

    Raises:
        ValueError: no weight is positive.
    """
    total = sum(weights)
    if not total > 0.0:
        raise ValueError(f"policy has no positive weight for hand {hand}")
    chosen: Part = parts[-1]
    threshold = rng.random() * total
    for part, weight in zip(parts, weights):
        if threshold < weight:
            chosen = part
            break
        threshold -= weight
    if isinstance(chosen, Action):
        return chosen
    if chosen.low == chosen.high:
        return Action.raise_to(chosen.low)
    return Action.raise_to(int(rng.integers(chosen.low, chosen.high + 1)))


def as_played(policy: Mix, state: State) -> Mix:
    """``policy`` with each illegal action part replaced by the action it is played as.

    :meth:`agents.client.StrategyBot.choose_action` corrects an illegal sample the way the
    reference dealer would (an illegal fold or a raise past the cap is a call);
    the answers must give that action the part's weight, not an action never played.

    >>> from protocol.gamedef import load_game
    >>> opening = State(load_game("leduc"))  # nothing to call: a fold is a check
    >>> as_played(Mix({Action.FOLD: 0.25, Action.CALL: 0.75}), opening)
    Mix({Action(type=<ActionType.CALL: 'c'>, size=0): 1.0})
    """
    if all(not isinstance(part, Action) or state.is_legal(part) for part, _ in policy.parts):
        return policy
    weights: dict[Part, Weight] = {}
    for part, weight in policy.parts:
        if isinstance(part, Action) and not state.is_legal(part):
            part = correct_action(state, part)[0]
        weights[part] = weights[part] + weight if part in weights else weight
    return Mix(weights)


class PublicView:
    """Everything public at one decision point: what a strategy may look at.

    Args:
        game: the game definition.
        state: the public state (betting replayed through the rules); do not
            mutate it, use ``state.clone()`` to explore.
        position: the position to act (the bot's own position).
        board: every board card shown so far (card indices).
    """

    __slots__ = ("_legal", "_raise_range", "board", "game", "position", "state")

    def __init__(self, game: GameDef, state: State, position: int, board: tuple[int, ...]) -> None:
        self.game = game
        self.state = state
        self.position = position
        self.board = board
        self._raise_range: tuple[int, int] | None | bool = False
        self._legal: list[ActionType] | None = None

    @property
    def round(self) -> int:
        """The betting round (0 = preflop)."""
        return self.state.round

    @property
    def num_hands(self) -> int:
        """N, the number of private hands of the game."""
        return self.game.num_hands

    @property
    def legal_types(self) -> list[ActionType]:
        """The legal action types, in the order fold, call, raise."""
        if self._legal is None:
            self._legal = self.state.legal_actions()
        return self._legal

    @property
    def can_fold(self) -> bool:
        """True when folding is legal (the bot faces a bet)."""
        return ActionType.FOLD in self.legal_types

    @property
    def raise_range(self) -> tuple[int, int] | None:
        """The smallest and largest legal raise-to, or None when no raise is legal."""
        if self._raise_range is False:
            self._raise_range = self.state.raise_range()
        result = self._raise_range
        assert result is not True
        return result

    @property
    def can_raise(self) -> bool:
        """True when a raise is legal."""
        return self.raise_range is not None

    def min_raise(self) -> Action:
        """The smallest legal raise (``r`` in limit).

        Raises:
            ValueError: no raise is legal here.
        """
        low, _ = self._raise_bounds()
        return Action.RAISE if self.game.is_limit else Action.raise_to(low)

    def any_raise(self) -> Part:
        """Every legal raise size, equally likely: a part for :class:`Mix`.

        In limit this is the one raise ``r``.

        Raises:
            ValueError: no raise is legal here.
        """
        bounds = self._raise_bounds()
        return Action.RAISE if self.game.is_limit else UniformRaise(*bounds)

    def raise_to(self, size: int) -> Action:
        """A raise to ``size`` clamped into the legal range (``r`` in limit).

        Raises:
            ValueError: no raise is legal here.
        """
        low, high = self._raise_bounds()
        return Action.RAISE if self.game.is_limit else Action.raise_to(min(max(size, low), high))

    def _raise_bounds(self) -> tuple[int, int]:
        bounds = self.raise_range
        if bounds is None:
            raise ValueError("no raise is legal here")
        return bounds

    def board_blocked(self) -> BoolArray:
        """Boolean mask, shape ``(num_hands,)``: hands sharing a card with the board (read-only)."""
        return self.game.hands_sharing(self.board)


#: A strategy: public view -> policy over every private hand (a bot's, or one of the exact tools').
Strategy = Callable[[PublicView], Policy]


class Rows:
    """A policy given by its answers: the rows of any actions, and the actions it plays.

    What a strategy table or a solver's output is: a probability per action
    and hand, looked up rather than built from parts. Answers are returned as
    the function gives them (no normalisation); :meth:`sample` draws among
    ``support`` with the weights of their rows, as a :class:`Mix` of those rows would.

    Args:
        support: the actions the policy plays (e.g. :func:`acpc_lbr.strategies.default_actions`),
            or a function of no argument giving them.
        rows: ``rows(actions) -> (len(actions), num_hands)`` float64 probabilities.

    >>> rows = Rows([Action.FOLD, Action.CALL], lambda actions: np.array([[0.25, 1.0] if a == Action.CALL
    ...                                                              else [0.75, 0.0] for a in actions]))
    >>> rows.probabilities([Action.CALL], 2).tolist(), rows.sample(1, np.random.default_rng(0)).text()
    ([[0.25, 1.0]], 'c')
    """

    __slots__ = ("_support", "rows")

    def __init__(self, support: Sequence[Action] | Callable[[], Sequence[Action]],
                 rows: Callable[[Sequence[Action]], FloatArray]) -> None:
        self._support = support
        self.rows = rows

    @property
    def support(self) -> tuple[Action, ...]:
        """The actions the policy plays (a function giving them is called here, once: the
        exact tools only ask for answers, and never pay for it)."""
        if callable(self._support):
            self._support = tuple(self._support())
        return tuple(self._support)

    def __repr__(self) -> str:
        return f"Rows(support={[a.text() for a in self.support]})"

    def probabilities(self, actions: Sequence[Action], num_hands: int) -> FloatArray:
        """The rows of ``actions``; see :class:`Policy`."""
        return np.asarray(self.rows(actions), dtype=np.float64)

    def sample(self, hand: int, rng: np.random.Generator) -> Action:
        """Draw one of :attr:`support` for ``hand``; see :class:`Policy`."""
        support = self.support
        column = np.asarray(self.rows(support), dtype=np.float64)[:, hand]
        return _draw(support, [float(w) for w in column], hand, rng)


def played(strategy: Strategy, view: PublicView) -> Policy:
    """``strategy``'s policy at ``view``, a :class:`Mix`'s illegal actions replaced by what they are played as.

    The one rule for answers, whoever asks: a networked bot's range answers
    (:class:`agents.client.StrategyBot`) and :func:`probabilities_at`.
    """
    policy = strategy(view)
    if isinstance(policy, Mix):
        return as_played(policy, view.state)
    return policy


def probabilities_at(
    strategy: Strategy, state: State, board: Sequence[int], actions: Sequence[Action]
) -> FloatArray:
    """What ``strategy``, to act at ``state`` with ``board`` shown, answers for ``actions``.

    The range query of docs/range-query.md asked in process: ``[j, h]`` is the
    probability that the player to act plays ``actions[j]`` holding hand ``h``
    (lbr.md's ``sigma(s, h, a)``). ``board`` holds the board cards dealt so
    far (a :class:`~protocol.rules.State` carries betting only). Entries for
    hands that share a card with the board are ignored by every consumer and may be anything.

    Returns:
        float64 array of shape ``(len(actions), num_hands)``.

    >>> from protocol.gamedef import load_game
    >>> kuhn = load_game("kuhn")
    >>> probabilities_at(lambda view: Mix({Action.CALL: 1.0}), State(kuhn), (), [Action.CALL, Action.RAISE]).tolist()
    [[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]
    """
    game = state.game
    policy = played(strategy, PublicView(game, state, state.current_player, tuple(board)))
    return np.asarray(policy.probabilities(list(actions), game.num_hands), dtype=np.float64)


__all__ = [
    "Mix",
    "Part",
    "Policy",
    "PublicView",
    "Rows",
    "Strategy",
    "UniformRaise",
    "Weight",
    "as_played",
    "played",
    "probabilities_at",
]

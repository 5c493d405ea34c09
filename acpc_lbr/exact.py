"""Exact best response and exact LBR value on small two-player games (Kuhn, Leduc).

Both walk the whole *public* tree (betting sequences and board cards) of a
heads-up game with vectors over private hands, written only against
:class:`protocol.rules.State` (``current_player``, ``legal_actions``,
``raise_range``, ``apply``, ``finished``, ``values``, ``clone``), so they run
unchanged on any game small enough to enumerate.

Conventions (those of OpenSpiel's ``exploitability`` module, which is the
source of the test oracles): the strategy plays both seats; the value of the
best response for a seat is its expected winnings in chips per hand over
every deal; ``exploitability = (BR value as seat 0 + BR value as seat 1) / 2``
and ``NashConv = 2 * exploitability`` (two-player zero-sum). Uniform random
has exploitability 0.458333 in Kuhn and 2.373611 in Leduc (OpenSpiel 2.0.2,
``pyspiel`` ``exploitability``).

How the vectors work. Chance deals hole cards uniformly (every ordered pair
of disjoint hands equally likely) and each round's board cards uniformly from
the rest. At a public node the walk carries the opponent's *reach*
``r_o[h]``: the product of its policy's probabilities of the actions on the
line, zeroed on hands blocked by the board. A terminal's value for the
measured player holding ``h_i`` is ``sum_h r_o[h] * [h, h_i disjoint] * u(h_i, h)``;
a board deal of ``n`` cards averages its children over the
``C(D - 2k - |board|, n)`` possible card sets (children whose cards collide
with ``h_i`` or ``h`` are masked, which leaves exactly the right count); the
root divides by the number of ordered hand pairs ``C(D, k) * C(D - k, k)``.
A best response maximises per (own hand, public node), which is its
information set; LBR's play is deterministic given its hand and the public
node, so its value is the same walk with LBR's one action per node.

The opponent's actions considered at each node are :func:`default_actions`
(limit games: every legal action, so the result is exact). In no-limit games
the walk covers only those actions (a policy must put all its mass on them)
and the best response is the best response *within* them.

>>> from protocol.gamedef import load_game
>>> from acpc_lbr.strategies import uniform_random
>>> kuhn = load_game("kuhn")
>>> round(best_response_value(kuhn, uniform_random(kuhn)), 6)
0.458333
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import combinations
from math import comb

import numpy as np
import numpy.typing as npt

from acpc_lbr.aivat import correction_actions, hand_aivat
from acpc_lbr.lbr import (
    ActiveRounds,
    BettingOptions,
    EquityFunction,
    candidate_raises,
    decide,
    equity_function,
    equity_vector_small,
)
from acpc_lbr.ranges import bayes_update, compatible_mask, hand_table, remove_cards, uniform_range
from acpc_lbr.policy import Strategy, probabilities_at
from acpc_lbr.strategies import default_actions
from protocol.arrays import FloatArray
from protocol.gamedef import GameDef
from protocol.ranking import rank_hand
from protocol.rules import Action, State, showdown_values

ActionsFunction = Callable[[State], list[Action]]

__all__ = [
    "BestResponse",
    "LbrHistory",
    "LbrValue",
    "aivat_moments",
    "best_response",
    "best_response_value",
    "lbr_expected_value",
    "lbr_histories",
    "lbr_value",
    "strategy_value",
]

#: Tolerance on a policy's probabilities summing to 1 over the walked actions.
SUM_TOLERANCE = 1e-6

#: The largest game walked: boards times hand pairs (Leduc 144, Kuhn 9; hold'em about 6e13,
#: which would run for ever).
MAX_WORK = 10**8


def check_walkable(game: GameDef) -> None:
    """Refuse a game whose tree is too large to walk (hold'em) rather than walk it for ever.

    Raises:
        ValueError: not heads-up, or more than :data:`MAX_WORK` boards times hand pairs.
    """
    if game.num_players != 2:
        raise ValueError("the exact tools handle two-player games only")
    boards, left = 1, game.deck_size - 2 * game.num_hole_cards
    for count in game.num_board_cards[: game.num_rounds]:
        boards *= comb(left, count)
        left -= count
    work = boards * game.num_hands**2
    if work > MAX_WORK:
        raise ValueError(f"the game is too large to walk exactly ({boards:,} boards times "
                         f"{game.num_hands**2:,} hand pairs; at most {MAX_WORK:,}): "
                         "the exact tools are for small games such as Kuhn and Leduc")


@dataclass(frozen=True)
class BestResponse:
    """The best response to one strategy.

    Attributes:
        seat_values: expected chips per hand of the best response in seat 0 and seat 1.
    """

    seat_values: tuple[float, float]

    @property
    def exploitability(self) -> float:
        """``(seat 0 + seat 1) / 2`` chips per hand."""
        return (self.seat_values[0] + self.seat_values[1]) / 2.0

    @property
    def nash_conv(self) -> float:
        """``seat 0 + seat 1`` chips per hand."""
        return self.seat_values[0] + self.seat_values[1]


@dataclass(frozen=True)
class LbrValue:
    """LBR's exact expected winnings against one strategy.

    Attributes:
        seat_values: chips per hand with LBR in seat 0 and seat 1.
        inconsistencies: range inconsistencies met on lines of positive probability
            (0 whenever the policy is a proper distribution).
    """

    seat_values: tuple[float, float]
    inconsistencies: int = 0

    @property
    def value(self) -> float:
        """The mean over both seats (the match average of a duplicate LBR match)."""
        return (self.seat_values[0] + self.seat_values[1]) / 2.0


class _Tree:
    """Shared machinery: chance deals, terminal payoffs, policy checks."""

    def __init__(self, game: GameDef, actions: ActionsFunction) -> None:
        check_walkable(game)
        self.game = game
        self.actions = actions
        self.table = hand_table(game)
        self.disjoint: npt.NDArray[np.bool_] = ~self.table.overlaps
        self.hand_pairs = comb(game.deck_size, game.num_hole_cards) * comb(
            game.deck_size - game.num_hole_cards, game.num_hole_cards
        )
        self._showdown_cache: dict[tuple[tuple[int, ...], tuple[int, ...]], FloatArray] = {}

    def cards_to_deal(self, state: State, board: tuple[int, ...]) -> int:
        """Board cards chance must deal before play (or the showdown) goes on."""
        if state.finished and not state.is_showdown:
            return 0
        return self.game.board_cards_visible(state.round) - len(board)

    def deals(self, board: tuple[int, ...], count: int) -> tuple[list[tuple[int, ...]], int]:
        """Every set of ``count`` new board cards, and the per-pair number of them."""
        rest = [c for c in self.game.cards if c not in board]
        remaining = self.game.deck_size - 2 * self.game.num_hole_cards - len(board)
        return list(combinations(rest, count)), comb(remaining, count)

    def payoff_matrix(self, state: State, board: tuple[int, ...], seat: int) -> FloatArray:
        """``U[h_seat, h_other]``: seat's winnings at a finished state, 0 where hands collide."""
        spent = tuple(state.spent)
        if not state.is_showdown:
            value = state.values(((), ()), board)[seat]
            return np.where(self.disjoint, value, 0.0)
        key = (spent, board)
        if key not in self._showdown_cache:
            ranks = np.array([rank_hand(list(h) + list(board)) for h in self.table.hand_cards])
            win = showdown_values(spent, (1, 0) if seat == 0 else (0, 1))[seat]
            tie = showdown_values(spent, (0, 0))[seat]
            lose = showdown_values(spent, (0, 1) if seat == 0 else (1, 0))[seat]
            mine = ranks[:, None]
            theirs = ranks[None, :]
            matrix = np.where(mine > theirs, win, np.where(mine == theirs, tie, lose))
            self._showdown_cache[key] = np.where(self.disjoint, matrix, 0.0)
        return self._showdown_cache[(spent, board)]

    def play(
        self, strategy: Strategy, state: State, board: tuple[int, ...], reach: FloatArray
    ) -> tuple[list[Action], FloatArray]:
        """The policy's actions and probabilities at ``state``, checked to sum to 1."""
        actions = self.actions(state)
        probs = probabilities_at(strategy, state, board, actions)
        if probs.shape != (len(actions), self.game.num_hands):
            raise ValueError(
                f"policy returned shape {probs.shape}, expected {(len(actions), self.game.num_hands)}"
            )
        live = reach > 0
        given = probs[:, live]
        if given.size and not (np.isfinite(given).all() and given.min() >= 0.0 and given.max() <= 1.0):
            raise ValueError(
                f"at {state.betting_string()!r} the policy's probabilities over "
                f"{[a.text() for a in actions]} are not all finite and in [0, 1] "
                f"(from {np.nanmin(given) if not np.isnan(given).all() else 'nan'} to "
                f"{np.nanmax(given) if not np.isnan(given).all() else 'nan'}"
                f"{', with NaN' if np.isnan(given).any() else ''})"
            )
        sums = given.sum(axis=0)
        if sums.size and not np.max(np.abs(sums - 1.0)) <= SUM_TOLERANCE:
            raise ValueError(
                f"at {state.betting_string()!r} the policy's probabilities over "
                f"{[a.text() for a in actions]} sum to {sums.min():.6g}..{sums.max():.6g}, not 1"
            )
        return actions, probs


def _child(state: State, action: Action) -> State:
    child = state.clone()
    child.apply(action)
    return child


# -- best response -------------------------------------------------------------------


class _BestResponseWalk(_Tree):
    def __init__(self, game: GameDef, strategy: Strategy, seat: int, actions: ActionsFunction) -> None:
        super().__init__(game, actions)
        self.strategy = strategy
        self.seat = seat

    def value(self) -> float:
        values = self.node(State(self.game), (), np.ones(self.game.num_hands))
        return float(values.sum()) / self.hand_pairs

    def node(self, state: State, board: tuple[int, ...], reach: FloatArray) -> FloatArray:
        """Values for every own hand: sum over opponent hands of reach * payoff."""
        count = self.cards_to_deal(state, board)
        if count > 0:
            total = np.zeros(self.game.num_hands)
            deals, outcomes = self.deals(board, count)
            for cards in deals:
                unblocked = compatible_mask(self.game, cards)
                child = self.node(state, board + cards, np.where(unblocked, reach, 0.0))
                total += np.where(unblocked, child, 0.0)
            return total / outcomes
        if state.finished:
            return self.payoff_matrix(state, board, self.seat) @ reach
        if not reach.any():
            return np.zeros(self.game.num_hands)
        if state.current_player == self.seat:
            children = [self.node(_child(state, a), board, reach) for a in self.actions(state)]
            return np.asarray(np.max(np.array(children), axis=0), dtype=np.float64)
        actions, probs = self.play(self.strategy, state, board, reach)
        total = np.zeros(self.game.num_hands)
        for action, row in zip(actions, probs):
            branch = reach * row
            if branch.any():
                total += self.node(_child(state, action), board, branch)
        return total


def best_response(
    game: GameDef, strategy: Strategy, actions: ActionsFunction = default_actions
) -> BestResponse:
    """The exact best response to ``strategy`` (playing both seats) in a small game.

    Args:
        game: a two-player game small enough to walk (Kuhn, Leduc).
        strategy: a bot's strategy or one of :mod:`acpc_lbr.strategies` (:data:`acpc_lbr.policy.Strategy`).
        actions: the actions walked at each node (both players).

    Raises:
        ValueError: the policy's probabilities over the walked actions do not sum to 1.
    """
    seat0 = _BestResponseWalk(game, strategy, 0, actions).value()
    seat1 = _BestResponseWalk(game, strategy, 1, actions).value()
    return BestResponse((seat0, seat1))


def best_response_value(
    game: GameDef, strategy: Strategy, actions: ActionsFunction = default_actions
) -> float:
    """Exploitability of ``strategy``: the mean of the two seats' best-response values (chips/hand)."""
    return best_response(game, strategy, actions).exploitability


# -- LBR -----------------------------------------------------------------------------


class _LbrWalk(_Tree):
    def __init__(
        self,
        game: GameDef,
        strategy: Strategy,
        seat: int,
        options: BettingOptions,
        active_rounds: ActiveRounds,
        equity: EquityFunction,
        actions: ActionsFunction,
    ) -> None:
        super().__init__(game, actions)
        self.strategy = strategy
        self.seat = seat
        self.options = options
        self.active_rounds = active_rounds
        self.equity = equity
        self.inconsistencies = 0

    def value(self) -> float:
        total = 0.0
        for i, hole in enumerate(self.table.hand_cards):
            reach = np.where(self.disjoint[i], 1.0, 0.0)
            belief = uniform_range(self.game, hole)
            total += self.node(State(self.game), (), i, reach, belief)
        return total / self.hand_pairs

    def node(
        self,
        state: State,
        board: tuple[int, ...],
        hand: int,
        reach: FloatArray,
        belief: FloatArray,
    ) -> float:
        """LBR's value holding ``hand``: sum over opponent hands of reach * payoff."""
        hole = self.table.hand_cards[hand]
        count = self.cards_to_deal(state, board)
        if count > 0:
            total = 0.0
            deals, outcomes = self.deals(board, count)
            for cards in deals:
                if set(cards).intersection(hole):
                    continue
                new_board = board + cards
                known = compatible_mask(self.game, hole + new_board)
                child_belief, consistent = remove_cards(belief, self.game, cards, known)
                child_reach = np.where(known, reach, 0.0)
                if not child_reach.any():
                    continue
                self.inconsistencies += not consistent
                total += self.node(state, new_board, hand, child_reach, child_belief)
            return total / outcomes
        if state.finished:
            return float(self.payoff_matrix(state, board, self.seat)[hand] @ reach)
        if state.current_player == self.seat:
            active = self.active_rounds.is_active(state.round)
            raises = candidate_raises(state, self.options) if active else []
            fold_probs = {
                a: probabilities_at(self.strategy, after, board, [Action.FOLD])[0]
                for a in raises
                for after in (_child(state, a),)
            }
            equity = self.equity(hole, board) if active else np.zeros(0)
            decision = decide(state, self.seat, equity, belief, fold_probs, active=active)
            return self.node(_child(state, decision.action), board, hand, reach, belief)
        actions, probs = self.play(self.strategy, state, board, reach)
        known = compatible_mask(self.game, hole + board)
        total = 0.0
        for action, row in zip(actions, probs):
            branch = reach * row
            if not branch.any():
                continue
            child_belief, consistent = bayes_update(belief, row, known)
            self.inconsistencies += not consistent
            total += self.node(_child(state, action), board, hand, branch, child_belief)
        return total


def lbr_value(
    game: GameDef,
    strategy: Strategy,
    options: BettingOptions,
    active_rounds: ActiveRounds | None = None,
    *,
    equity: EquityFunction | None = None,
    actions: ActionsFunction = default_actions,
) -> LbrValue:
    """LBR's exact expected winnings against ``strategy``, per seat, over every deal.

    LBR's range follows the policy's answers along each line and every
    decision goes through :func:`acpc_lbr.lbr.decide` with
    :func:`acpc_lbr.lbr.equity_vector_small` (unless ``equity`` is given).

    Args:
        game: a two-player game small enough to walk.
        strategy: the opponent's strategy; it is also asked, after each candidate
            raise, for its fold probabilities (LBR's range query).
        options: LBR's betting options.
        active_rounds: LBR's active rounds (default: all).
        equity: LBR's equity function.
        actions: the opponent's actions walked at each node.
    """
    rounds = active_rounds if active_rounds is not None else ActiveRounds()

    def small(hero: Sequence[int], board: Sequence[int]) -> FloatArray:
        return equity_vector_small(game, hero, board)

    equity_fn = equity if equity is not None else small
    values = []
    inconsistencies = 0
    for seat in (0, 1):
        walk = _LbrWalk(game, strategy, seat, options, rounds, equity_fn, actions)
        values.append(walk.value())
        inconsistencies += walk.inconsistencies
    return LbrValue((values[0], values[1]), inconsistencies)


def lbr_expected_value(
    game: GameDef,
    strategy: Strategy,
    options: BettingOptions,
    active_rounds: ActiveRounds | None = None,
) -> float:
    """LBR's exact expected winnings (chips/hand) against ``strategy``, averaged over both seats."""
    return lbr_value(game, strategy, options, active_rounds).value


# -- every history of an LBR hand, with its probability ----------------------------------


@dataclass(frozen=True)
class LbrHistory:
    """One complete hand of LBR against a strategy, with its exact probability.

    Attributes:
        probability: probability of the deal, the boards and the opponent's
            actions (LBR's own play is deterministic).
        position: LBR's position.
        hole: each position's hole cards.
        board: the board cards of each round reached (as in a ``STATE`` line).
        betting: the actions of each round reached.
        values: each position's winnings.
        rows: per opponent decision, ``{action text: σ(s, ·, action)}`` as the
            opponent *answers* it, for every action of
            :func:`acpc_lbr.aivat.correction_actions` and the played one.
    """

    probability: float
    position: int
    hole: tuple[tuple[int, ...], ...]
    board: tuple[tuple[int, ...], ...]
    betting: tuple[tuple[Action, ...], ...]
    values: tuple[float, ...]
    rows: tuple[dict[str, FloatArray], ...]


def lbr_histories(
    game: GameDef,
    strategy: Strategy,
    options: BettingOptions,
    position: int,
    active_rounds: ActiveRounds | None = None,
    *,
    answers: Strategy | None = None,
    equity: EquityFunction | None = None,
) -> Iterator[LbrHistory]:
    """Every hand LBR (at ``position``) can play against ``strategy``, with its probability.

    Chance deals every ordered pair of hole hands and every board uniformly;
    the opponent plays ``strategy`` over :func:`default_actions`; LBR plays as
    :func:`lbr_value` (its range and fold probabilities from ``answers``,
    default ``strategy``: a different ``answers`` is a bot that lies). The
    probabilities sum to 1, so the expectation of any per-hand estimator is
    an exact sum over the histories.
    """
    walk = _LbrHistoryWalk(
        game, strategy, answers if answers is not None else strategy, options, position,
        active_rounds if active_rounds is not None else ActiveRounds(),
        equity if equity is not None else (lambda hero, board: equity_vector_small(game, hero, board)),
    )
    hands = walk.table.hand_cards
    pairs = [(a, b) for a in hands for b in hands if not set(a) & set(b)]
    for mine, theirs in pairs:
        hole = (mine, theirs) if position == 0 else (theirs, mine)
        yield from walk.walk(State(game), (), hole, 1.0 / len(pairs), uniform_range(game, mine), ())


class _LbrHistoryWalk(_Tree):
    """The walk behind :func:`lbr_histories`: one node per call, its histories yielded in order.

    Each node carries the betting ``state``, the ``board`` so far, both
    positions' ``hole`` cards, the probability ``prob`` of getting there, LBR's
    ``belief`` (its range over the opponent's hands, as the answers tell it)
    and the opponent's answered ``rows`` so far.
    """

    def __init__(
        self, game: GameDef, strategy: Strategy, told: Strategy, options: BettingOptions, position: int,
        rounds: ActiveRounds, equity: EquityFunction,
    ) -> None:
        super().__init__(game, default_actions)
        self.strategy = strategy
        self.told = told
        self.options = options
        self.position = position
        self.rounds = rounds
        self.equity = equity
        self.index = {cards: h for h, cards in enumerate(self.table.hand_cards)}

    def walk(
        self, state: State, board: tuple[int, ...], hole: tuple[tuple[int, ...], ...], prob: float,
        belief: FloatArray, rows: tuple[dict[str, FloatArray], ...],
    ) -> Iterator[LbrHistory]:
        count = self.cards_to_deal(state, board)
        if count > 0:
            yield from self._deal(count, state, board, hole, prob, belief, rows)
        elif state.finished:
            values = state.values(hole, board)
            betting = tuple(tuple(actions) for actions in state.actions)
            yield LbrHistory(prob, self.position, hole, self._by_round(board, state.round), betting, values, rows)
        elif state.current_player == self.position:
            yield from self.walk(_child(state, self._lbr_action(state, board, hole, belief)),
                                 board, hole, prob, belief, rows)
        else:
            yield from self._opponent_acts(state, board, hole, prob, belief, rows)

    def _deal(
        self, count: int, state: State, board: tuple[int, ...], hole: tuple[tuple[int, ...], ...], prob: float,
        belief: FloatArray, rows: tuple[dict[str, FloatArray], ...],
    ) -> Iterator[LbrHistory]:
        """Each of the ``count`` board cards chance can deal next, equally likely; LBR's belief drops blocked hands."""
        mine = hole[self.position]
        rest = [c for c in self.game.cards if c not in board and c not in hole[0] and c not in hole[1]]
        deals = list(combinations(rest, count))
        for cards in deals:
            known = compatible_mask(self.game, mine + board + cards)
            child_belief, _ = remove_cards(belief, self.game, cards, known)
            yield from self.walk(state, board + cards, hole, prob / len(deals), child_belief, rows)

    def _lbr_action(
        self, state: State, board: tuple[int, ...], hole: tuple[tuple[int, ...], ...], belief: FloatArray,
    ) -> Action:
        """LBR's deterministic choice (:func:`acpc_lbr.lbr.decide`), fold probabilities from the answers."""
        active = self.rounds.is_active(state.round)
        raises = candidate_raises(state, self.options) if active else []
        folds = {a: probabilities_at(self.told, _child(state, a), board, [Action.FOLD])[0] for a in raises}
        equity_vec = self.equity(hole[self.position], board) if active else np.zeros(0)
        return decide(state, self.position, equity_vec, belief, folds, active=active).action

    def _opponent_acts(
        self, state: State, board: tuple[int, ...], hole: tuple[tuple[int, ...], ...], prob: float,
        belief: FloatArray, rows: tuple[dict[str, FloatArray], ...],
    ) -> Iterator[LbrHistory]:
        """Each action the opponent plays with positive probability; LBR updates its belief on the answer."""
        actions = default_actions(state)
        true = probabilities_at(self.strategy, state, board, actions)[:, self.index[hole[1 - self.position]]]
        listed = correction_actions(state)
        known = compatible_mask(self.game, hole[self.position] + board)
        for action, p in zip(actions, true):
            if p <= 0.0:
                continue
            # The answer covers AIVAT's correction actions as well as the played one.
            asked = list({a.text(): a for a in [*listed, action]}.values())
            said = probabilities_at(self.told, state, board, asked)
            answer = {a.text(): said[j] for j, a in enumerate(asked)}
            child_belief, _ = bayes_update(belief, answer[action.text()], known)
            yield from self.walk(_child(state, action), board, hole, prob * float(p), child_belief, (*rows, answer))

    def _by_round(self, board: tuple[int, ...], last: int) -> tuple[tuple[int, ...], ...]:
        """The board cards split by the round that dealt them (as a ``STATE`` line shows them)."""
        game = self.game
        return tuple(
            board[game.board_cards_visible(r) - game.num_board_cards[r] : game.board_cards_visible(r)]
            for r in range(last + 1)
        )


# -- two strategies ---------------------------------------------------------------------


class _PairWalk(_Tree):
    def __init__(
        self, game: GameDef, strategies: tuple[Strategy, Strategy], actions: ActionsFunction
    ) -> None:
        super().__init__(game, actions)
        self.strategies = strategies

    def value(self) -> float:
        ones = np.ones(self.game.num_hands)
        return self.node(State(self.game), (), ones, ones) / self.hand_pairs

    def node(
        self, state: State, board: tuple[int, ...], reach0: FloatArray, reach1: FloatArray
    ) -> float:
        """Seat 0's value: sum over hand pairs of reach0 * reach1 * payoff."""
        count = self.cards_to_deal(state, board)
        if count > 0:
            total = 0.0
            deals, outcomes = self.deals(board, count)
            for cards in deals:
                unblocked = compatible_mask(self.game, cards)
                total += self.node(
                    state,
                    board + cards,
                    np.where(unblocked, reach0, 0.0),
                    np.where(unblocked, reach1, 0.0),
                )
            return total / outcomes
        if state.finished:
            return float(reach0 @ self.payoff_matrix(state, board, 0) @ reach1)
        player = state.current_player
        reach = reach0 if player == 0 else reach1
        actions, probs = self.play(self.strategies[player], state, board, reach)
        total = 0.0
        for action, row in zip(actions, probs):
            branch = reach * row
            if not branch.any():
                continue
            child = _child(state, action)
            if player == 0:
                total += self.node(child, board, branch, reach1)
            else:
                total += self.node(child, board, reach0, branch)
        return total


def strategy_value(
    game: GameDef, strategy_a: Strategy, strategy_b: Strategy, actions: ActionsFunction = default_actions
) -> float:
    """Expected chips per hand ``strategy_a`` wins from ``strategy_b``, averaged over both seatings."""
    a_first = _PairWalk(game, (strategy_a, strategy_b), actions).value()
    b_first = _PairWalk(game, (strategy_b, strategy_a), actions).value()
    # Zero-sum: seat 1's value is minus seat 0's.
    return (a_first - b_first) / 2.0


def aivat_moments(
    game: GameDef,
    strategy: Strategy,
    options: BettingOptions,
    position: int,
    active_rounds: ActiveRounds | None = None,
    *,
    answers: Strategy | None = None,
) -> dict[str, float]:
    """Exact E and standard deviation of raw and AIVAT (and of AIVAT − raw) for LBR at ``position``.

    Every hand of :func:`lbr_histories` goes through :func:`acpc_lbr.aivat.hand_aivat`
    with LBR's equity function.
    """
    equity = equity_function(game)
    raw = aivat = raw2 = aivat2 = diff2 = 0.0
    for h in lbr_histories(game, strategy, options, position, active_rounds, answers=answers):
        value = hand_aivat(game, h.betting, h.board, h.hole[position], position, h.rows, equity).chips
        outcome = h.values[position]
        p = h.probability
        raw += p * outcome
        aivat += p * value
        raw2 += p * outcome * outcome
        aivat2 += p * value * value
        diff2 += p * (value - outcome) ** 2
    return {"raw": raw, "aivat": aivat, "raw_std": math.sqrt(max(raw2 - raw**2, 0.0)),
            "aivat_std": math.sqrt(max(aivat2 - aivat**2, 0.0)),
            "diff_std": math.sqrt(max(diff2 - (aivat - raw) ** 2, 0.0))}


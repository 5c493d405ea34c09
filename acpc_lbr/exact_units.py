"""The exact distribution of a match's units (hands, duplicate pairs) against a strategy.

:func:`acpc_lbr.exact.lbr_histories` lists every hand LBR can play against a
policy with its probability. Each hand's raw, IO and AIVAT values (computed by
the same functions as the dealer's) then give the exact joint distribution of
one unit of a match:

* a **hand** with LBR at position 0 or 1 (a match without ``--duplicate``
  alternates the positions hand by hand);
* a **duplicate pair**: one deal played twice, LBR at position 0 and then at
  position 1 holding the other player's cards, with the same board. Given the
  deal the two halves are independent (LBR's play is a function of what it
  sees, the bot samples afresh), so the pair's law is the product of the two
  halves' laws given each deal.

Sampling matches from these laws (:func:`sample_match`) costs nothing next to
playing them, so the error rates of the intervals and of the honesty checks
can be measured on hundreds of thousands of matches (``bench/bench_honesty.py``
and the slow calibration test).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import numpy.typing as npt

from acpc_lbr.aivat import hand_aivat
from acpc_lbr.estimators import imaginary_observation
from acpc_lbr.exact import LbrHistory, lbr_histories
from acpc_lbr.lbr import ActiveRounds, BettingOptions, equity_function
from acpc_lbr.strategies import Policy
from protocol.gamedef import GameDef
from protocol.rules import State

FloatArray = npt.NDArray[np.float64]

#: Columns of a unit's values: what each estimator adds for it.
COLUMNS = ("raw", "io", "aivat")


@dataclass(frozen=True)
class UnitLaw:
    """A discrete law of one unit: ``probability[k]`` of the values ``values[k]`` (columns :data:`COLUMNS`)."""

    probability: FloatArray
    values: FloatArray

    def mean(self) -> FloatArray:
        """E of each column."""
        return np.asarray(self.probability @ self.values, dtype=np.float64)

    def std(self) -> FloatArray:
        """Standard deviation of each column."""
        centred = self.values - self.mean()
        return np.sqrt(np.asarray(self.probability @ (centred * centred), dtype=np.float64))


@dataclass(frozen=True)
class MatchLaws:
    """The laws of a match's units: a hand with LBR at each position, and a duplicate pair."""

    hands: tuple[UnitLaw, UnitLaw]
    pair: UnitLaw
    #: LBR's exact expected winnings per hand (both positions averaged): every estimator's target.
    value: float


def hand_values(game: GameDef, history: LbrHistory, position: int) -> tuple[float, float, float]:
    """(raw, IO, AIVAT) of one history, from LBR's seat at ``position``."""
    raw = float(history.values[position])
    state = State(game)
    played: list[FloatArray] = []
    row = 0
    for actions in history.betting:
        for action in actions:
            if state.current_player != position:
                played.append(history.rows[row][action.text()])
                row += 1
            state.apply(action)
    io = raw
    if state.is_showdown:
        weights = np.prod(np.asarray(played), axis=0) if played else np.ones(game.num_hands)
        board = [card for cards in history.board for card in cards]
        value = imaginary_observation(game, position, history.hole[position], board, state.spent, weights)
        io = raw if math.isnan(value) else value
    aivat = hand_aivat(game, history.betting, history.board, history.hole[position], position, history.rows,
                       equity_function(game)).chips
    return raw, io, aivat


def _full_boards(game: GameDef, hole: tuple[tuple[int, ...], ...]) -> list[tuple[int, ...]]:
    """Every complete board chance can deal after ``hole``, round by round (each combination sorted)."""
    rest = [c for c in game.cards if c not in hole[0] and c not in hole[1]]
    boards: list[tuple[int, ...]] = [()]
    for count in game.num_board_cards[1:]:
        boards = [b + cards for b in boards for cards in combinations([c for c in rest if c not in b], count)]
    return boards


def match_laws(game: GameDef, policy: Policy, options: BettingOptions, *, answers: Policy | None = None,
               active_rounds: ActiveRounds | None = None) -> MatchLaws:
    """The exact laws of a hand (each position) and of a duplicate pair of LBR against ``policy``.

    ``answers`` (default ``policy``) is what the bot says in its range answers:
    another policy makes a liar, whose IO and AIVAT are biased.
    """
    # by_deal[position][(hole, complete board)] = [(conditional probability, values)]
    by_deal: list[dict[tuple[tuple[tuple[int, ...], ...], tuple[int, ...]], list[tuple[float, tuple[float, float, float]]]]]
    by_deal = [defaultdict(list), defaultdict(list)]
    hands: list[UnitLaw] = []
    for position in (0, 1):
        probability, values = [], []
        for history in lbr_histories(game, policy, options, position, active_rounds, answers=answers):
            unit = hand_values(game, history, position)
            probability.append(history.probability)
            values.append(unit)
            seen = tuple(card for cards in history.board for card in cards)
            boards = _full_boards(game, history.hole)
            extending = [b for b in boards if b[: len(seen)] == seen]
            # P(history | hole, board) = P(history) / (P(hole) · P(board prefix | hole))
            for board in extending:
                by_deal[position][(history.hole, board)].append(
                    (history.probability * len(boards) / len(extending), unit))
        hands.append(UnitLaw(np.asarray(probability), np.asarray(values, dtype=np.float64)))
    pair_probability, pair_values = [], []
    deals = sorted(by_deal[0])
    for deal in deals:
        for p0, first in by_deal[0][deal]:
            for p1, second in by_deal[1][deal]:
                pair_probability.append(p0 * p1)
                pair_values.append([(a + b) / 2.0 for a, b in zip(first, second)])
    probability = np.asarray(pair_probability)
    pair = UnitLaw(probability / probability.sum(), np.asarray(pair_values, dtype=np.float64))
    value = float((hands[0].mean()[0] + hands[1].mean()[0]) / 2.0)
    return MatchLaws((hands[0], hands[1]), pair, value)


def sample_units(law: UnitLaw, shape: tuple[int, ...], rng: np.random.Generator) -> FloatArray:
    """Units drawn from ``law``: an array of ``shape + (len(COLUMNS),)``."""
    cumulative = np.cumsum(law.probability)
    index = np.searchsorted(cumulative, rng.random(shape) * cumulative[-1], side="right")
    return law.values[np.minimum(index, len(law.values) - 1)]


def sample_match(laws: MatchLaws, matches: int, deals: int, duplicate: bool,
                 rng: np.random.Generator) -> FloatArray:
    """``matches`` matches of ``deals`` deals: (matches, units, columns), a unit a hand or a pair.

    Without duplicate play LBR's position alternates hand by hand, as the dealer seats it.
    """
    if duplicate:
        return sample_units(laws.pair, (matches, deals), rng)
    first = sample_units(laws.hands[0], (matches, (deals + 1) // 2), rng)
    second = sample_units(laws.hands[1], (matches, deals // 2), rng)
    return np.concatenate([first, second], axis=1)


__all__ = ["COLUMNS", "MatchLaws", "UnitLaw", "hand_values", "match_laws", "sample_match", "sample_units"]

"""Calibration of the intervals and honesty checks from the exact law of a match's units.

:func:`acpc_lbr.exact.lbr_histories` lists every hand LBR can play against a
strategy with its probability. Each hand's raw, IO and AIVAT values (computed by
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
(:func:`check_p_values`, the vectorised twin of
:meth:`acpc_lbr.stats.CheckMean.honesty_test`) can be measured on hundreds of
thousands of matches (``bench/bench_honesty.py`` and the slow calibration test).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from acpc_lbr.aivat import hand_aivat
from acpc_lbr.estimators import imaginary_observation_spread
from acpc_lbr.stats import Z95, skew_corrected_interval, skew_corrected_p_value, stratified_shape
from acpc_lbr.exact import LbrHistory, lbr_histories
from acpc_lbr.lbr import ActiveRounds, BettingOptions, equity_function
from acpc_lbr.policy import Strategy
from protocol.arrays import FloatArray
from protocol.gamedef import GameDef
from protocol.rules import State


#: Columns of a unit's values: what each estimator adds for it, and the variance of IO − raw
#: under the answered range (:attr:`acpc_lbr.estimators.HandOutcome.io_variance`).
COLUMNS = ("raw", "io", "aivat", "io_variance")
RAW, IO, AIVAT, IO_VARIANCE = range(4)
#: The columns of a pair's two hands (raw, IO, AIVAT each), after :data:`COLUMNS`.
PAIR_HALVES = (slice(4, 7), slice(7, 10))


@dataclass(frozen=True)
class UnitLaw:
    """A discrete law of one unit: ``probability[k]`` of the values ``values[k]`` (columns :data:`COLUMNS`).

    A pair's values are the means of its two hands, then the first hand's raw,
    IO and AIVAT values, then the second's (:data:`PAIR_HALVES`).
    """

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


def hand_values(game: GameDef, history: LbrHistory, position: int) -> tuple[float, float, float, float]:
    """(raw, IO, AIVAT, IO's variance) of one history, from LBR's seat at ``position``."""
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
    io, variance = raw, 0.0
    if state.is_showdown:
        weights = np.prod(np.asarray(played), axis=0) if played else np.ones(game.num_hands)
        board = [card for cards in history.board for card in cards]
        value, spread = imaginary_observation_spread(game, position, history.hole[position], board, state.spent,
                                                     weights)
        if not math.isnan(value):
            io, variance = value, spread
    aivat = hand_aivat(game, history.betting, history.board, history.hole[position], position, history.rows,
                       equity_function(game)).chips
    return raw, io, aivat, variance


def _full_boards(game: GameDef, hole: tuple[tuple[int, ...], ...]) -> list[tuple[int, ...]]:
    """Every complete board chance can deal after ``hole``, round by round (each combination sorted)."""
    rest = [c for c in game.cards if c not in hole[0] and c not in hole[1]]
    boards: list[tuple[int, ...]] = [()]
    for count in game.num_board_cards[1:]:
        boards = [b + cards for b in boards for cards in combinations([c for c in rest if c not in b], count)]
    return boards


def match_laws(game: GameDef, strategy: Strategy, options: BettingOptions, *, answers: Strategy | None = None,
               active_rounds: ActiveRounds | None = None) -> MatchLaws:
    """The exact laws of a hand (each position) and of a duplicate pair of LBR against ``strategy``.

    ``answers`` (default ``strategy``) is what the bot says in its range answers:
    another strategy makes a liar, whose IO and AIVAT are biased.
    """
    # by_deal[position][(hole, complete board)] = [(conditional probability, values)]
    by_deal: list[dict[tuple[tuple[tuple[int, ...], ...], tuple[int, ...]], list[tuple[float, tuple[float, ...]]]]]
    by_deal = [defaultdict(list), defaultdict(list)]
    hands: list[UnitLaw] = []
    for position in (0, 1):
        probability, values = [], []
        for history in lbr_histories(game, strategy, options, position, active_rounds, answers=answers):
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
                # the halves are independent given the deal: the pair's IO variance is the mean's
                pair_values.append([(first[RAW] + second[RAW]) / 2.0, (first[IO] + second[IO]) / 2.0,
                                    (first[AIVAT] + second[AIVAT]) / 2.0,
                                    (first[IO_VARIANCE] + second[IO_VARIANCE]) / 4.0,
                                    *first[:IO_VARIANCE], *second[:IO_VARIANCE]])
    weights = np.asarray(pair_probability, dtype=np.float64)
    pair = UnitLaw(weights / weights.sum(), np.asarray(pair_values, dtype=np.float64))
    value = float((hands[0].mean()[0] + hands[1].mean()[0]) / 2.0)
    return MatchLaws((hands[0], hands[1]), pair, value)


def sample_units(law: UnitLaw, shape: tuple[int, ...], rng: np.random.Generator) -> FloatArray:
    """Units drawn from ``law``: an array of ``shape + (len(COLUMNS),)``."""
    cumulative = np.cumsum(law.probability)
    index = np.searchsorted(cumulative, rng.random(shape) * cumulative[-1], side="right")
    return np.asarray(law.values[np.minimum(index, len(law.values) - 1)], dtype=np.float64)


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


def check_p_values(differences: FloatArray, null_variances: FloatArray | None = None) -> FloatArray:
    """The honesty check's p-value of each match (a row of units' differences), as a document gives it.

    With ``null_variances`` (IO − raw) the normal test of Σx / √Σvar, else the
    skew-corrected t test (:func:`acpc_lbr.stats.skew_corrected_p_value`):
    :meth:`acpc_lbr.stats.CheckMean.honesty_test` in floating point, row by row.
    """
    from scipy.special import erfc  # lazy: only calibration runs come here

    n = differences.shape[1]
    total = differences.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        if null_variances is not None:
            variance = null_variances.sum(axis=1)
            z = total / np.sqrt(variance)
            p = erfc(np.abs(z) / math.sqrt(2.0))
            return np.where(variance > 0.0, p, np.where(total == 0.0, 1.0, 0.0))
        mean = total / n
        centred = differences - mean[:, None]
        m2 = (centred**2).mean(axis=1)
        m3 = (centred**3).mean(axis=1)
        m4 = (centred**4).mean(axis=1)
        z = mean / np.sqrt(m2 * n / (n - 1) / n)
        p = skew_corrected_p_value(z, float(n), m3 / m2**1.5, m4 / (m2 * m2))
    return np.where(m2 > 0.0, p, np.where(mean == 0.0, 1.0, 0.0))


def interval_misses(units: FloatArray, target: float, plain: bool = False,
                    first_seat: int | None = None) -> tuple[FloatArray, FloatArray]:
    """Per match (a row of units), whether the printed 95% interval lies wholly above / below ``target``.

    Above: the lower bound overstates (the one-sided miss of a lower bound). The
    printed interval is the skewness-corrected one
    (:func:`acpc_lbr.stats.skew_corrected_interval`, as :meth:`acpc_lbr.stats.RunningMean.interval`
    computes it from the exact sums, here in floating point); ``plain``: the symmetric normal interval
    mean ± 1.96·s/√n printed before it (docs/results.md, "The intervals' miss rates").
    ``first_seat``: the units are hands, the first ``first_seat`` of each row from one seat and the
    rest from the other, and the interval is taken within seats, as :class:`acpc_lbr.stats.SeatedMean`
    does (:func:`acpc_lbr.stats.stratified_shape`).
    """
    n = units.shape[1]
    mean = units.mean(axis=1)
    s = units.std(axis=1, ddof=1)
    if plain:
        half = Z95 * s / math.sqrt(n)
        return mean - half > target, mean + half < target
    strata = [units] if first_seat is None else [units[:, :first_seat], units[:, first_seat:]]
    counts, m2s, m3s, m4s = [], [], [], []
    for stratum in strata:
        centred = stratum - stratum.mean(axis=1)[:, None]
        counts.append(float(stratum.shape[1]))
        m2s.append((centred**2).mean(axis=1))
        m3s.append((centred**3).mean(axis=1))
        m4s.append((centred**4).mean(axis=1))
    std, skew, kurtosis = stratified_shape(counts, m2s, m3s, m4s)
    low, high = skew_corrected_interval(mean, std, float(n), skew, kurtosis)
    return low > target, high < target


#: The estimators a match prints, by its play: (name, column, over what).
PRINTED = {False: (("raw", RAW), ("io", IO), ("aivat", AIVAT)),
           True: (("duplicate", RAW), ("duplicate_io", IO), ("duplicate_aivat", AIVAT),
                  ("raw", RAW), ("io", IO), ("aivat", AIVAT))}
#: The levels whose rates are counted: the check's flag and the usual 5%.
LEVELS = (0.001, 0.05)


def error_counts(laws: MatchLaws, deals: int, duplicate: bool, matches: int, rng: np.random.Generator,
                 chunk: int = 200_000, per_hand_rows: bool = False) -> dict[str, int]:
    """Count, over ``matches`` sampled matches, each check's flags and each printed interval's misses.

    Keys: ``"<check> p<level>"`` for ``io_minus_raw`` and ``aivat_minus_raw``
    (p below 0.001 and 0.05; the check's units are pairs in duplicate, as
    :meth:`acpc_lbr.estimators.MatchEstimates.check_unit` has it), and
    ``"<estimator> above"`` / ``"<estimator> below"`` (the interval wholly above or
    below LBR's exact value), the same with `` plain`` for the symmetric normal
    interval printed before (:func:`interval_misses`); ``"matches"``. The estimators are
    the play's (:data:`PRINTED`); in duplicate with ``per_hand_rows``, also ``raw``, ``io`` and
    ``aivat`` as a document prints them, over the 2 × ``deals`` hands as if independent.
    """
    counts: dict[str, int] = {"matches": 0}
    done = 0
    while done < matches:
        size = min(matches - done, max(chunk // deals, 1))
        units = sample_match(laws, size, deals, duplicate, rng)
        checks = (("io_minus_raw", IO, units[:, :, IO_VARIANCE]), ("aivat_minus_raw", AIVAT, None))
        for check, column, variance in checks:
            p = check_p_values(units[:, :, column] - units[:, :, RAW], variance)
            for level in LEVELS:
                counts[f"{check} p<{level:g}"] = counts.get(f"{check} p<{level:g}", 0) + int((p < level).sum())
        for k, (name, column) in enumerate(PRINTED[duplicate][:6 if per_hand_rows else 3]):
            sample = units[:, :, column]
            first_seat: int | None = None if duplicate else (deals + 1) // 2  # over hands: within seats
            if duplicate and k >= 3:  # the per-hand rows of a duplicate match: both halves of every pair
                first, second = PAIR_HALVES
                sample = np.concatenate([units[:, :, first][:, :, column], units[:, :, second][:, :, column]], axis=1)
                first_seat = deals
            for suffix, plain in (("", False), (" plain", True)):
                above, below = interval_misses(sample, laws.value, plain, first_seat)
                counts[f"{name} above{suffix}"] = counts.get(f"{name} above{suffix}", 0) + int(above.sum())
                counts[f"{name} below{suffix}"] = counts.get(f"{name} below{suffix}", 0) + int(below.sum())
        counts["matches"] += size
        done += size
    return counts


__all__ = ["COLUMNS", "LEVELS", "PAIR_HALVES", "PRINTED", "MatchLaws", "UnitLaw", "check_p_values", "error_counts",
           "hand_values", "interval_misses", "match_laws", "sample_match", "sample_units"]

"""The estimators of a match: raw, duplicate, imaginary observations, AIVAT, and pairs of them.

Each estimator is a :class:`~acpc_lbr.stats.RunningMean` over independent
units: hands for raw and IO, duplicate pairs (the mean of a deal's two
seatings) for the duplicate ones. :class:`MatchEstimates` accumulates them
online from :class:`HandOutcome` records and merges exactly across batches,
keeping the duplicate halves still waiting for their partner so that a pair
split across two batches is still counted once, in full.

Imaginary observations (Bowling et al., ICML 2008) replace a showdown's
outcome by its expectation over every hand the opponent could have held on
the observed line (:func:`imaginary_observation`); folds stay as they are.
The honesty check is the mean of (IO − raw): 0 in expectation when the
opponent's range answers are its real strategy. It is tested over the units
the data is independent in: duplicate pairs when the match is played in
duplicate (the two hands of a deal are correlated), hands otherwise, with a
z statistic and a two-sided p-value calibrated for skewed, sparse units
(:meth:`~acpc_lbr.stats.CheckMean.honesty_test`), and flagged below
:data:`HONESTY_ALPHA` (docs/results.md says what it can and cannot detect).
AIVAT (:mod:`acpc_lbr.aivat`) adds control variates at chance nodes and at the
opponent's decisions; it has its own check, the mean of (AIVAT − raw), over the same
units. IO's check knows each unit's variance under honest answers (the outcome's
spread over the answered range, :func:`imaginary_observation_spread`); AIVAT's
estimates it, with a t test corrected for skewness and kurtosis.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal, NotRequired, TypedDict

import numpy as np

from acpc_lbr.stats import CheckMean, LiveMean, MeanFigures, RunningMean, SeatedMean
from acpc_lbr.trajectory import NoTrajectory, Trajectory
from protocol.gamedef import GameDef
from protocol.ranking import rank_hand
from protocol.rules import showdown_values

#: The honesty check flags at p < 0.001: an honest bot is flagged about once in
#: a thousand matches (at 5%, an honest SDK bot was flagged one run in twenty).
HONESTY_ALPHA = 0.001

EstimatorName = Literal["raw", "duplicate", "io", "duplicate_io", "aivat", "duplicate_aivat"]
CheckName = Literal["io_minus_raw", "aivat_minus_raw"]

PairCheckName = Literal["pair_io_minus_raw", "pair_aivat_minus_raw"]

#: Names of the estimators, in the order they are reported.
ESTIMATORS: tuple[EstimatorName, ...] = ("raw", "duplicate", "io", "duplicate_io", "aivat", "duplicate_aivat")
#: The honesty checks: (estimator − raw) per hand, 0 in expectation for honest answers.
CHECKS: tuple[CheckName, ...] = ("io_minus_raw", "aivat_minus_raw")
#: Each check's sample over duplicate pairs (what it tests in a duplicate match).
PAIR_CHECKS: dict[CheckName, PairCheckName] = {"io_minus_raw": "pair_io_minus_raw",
                                               "aivat_minus_raw": "pair_aivat_minus_raw"}
#: The estimators over hands: the measured player's seat alternates among their units, so their
#: intervals are taken within seats (:class:`~acpc_lbr.stats.SeatedMean`). The checks' units have
#: mean 0 in both seats when the answers are honest, so no seat effect widens their test.
OVER_HANDS: tuple[EstimatorName, ...] = ("raw", "io", "aivat")
#: The figures that rest on AIVAT's value function (``config.aivat`` in a results document).
AIVAT_NAMES: tuple[EstimatorName | CheckName, ...] = ("aivat", "duplicate_aivat", "aivat_minus_raw")


class EstimatorFigures(TypedDict):
    """One estimator in a results document: its units in chips (with the exact sums), mbb/g and bb/hand."""

    chips: MeanFigures
    mbb_per_game: MeanFigures
    bb_per_hand: MeanFigures


class CheckFigures(EstimatorFigures):
    """An honesty check: its figures per hand, and the test that its true mean is 0.

    ``unit`` says what the test's units are: ``"pair"`` (the match was played
    in duplicate: ``pairs`` holds the figures of the pairs' differences, which
    the test and the printed interval use) or ``"hand"``. Older documents have
    neither: their test was a normal z-test per hand.
    """

    #: None below two units; ±1e308 for an infinite z (JSON has no infinity).
    z: float | None
    p_value: float | None
    flagged: bool
    unit: NotRequired[Literal["hand", "pair"]]
    pairs: NotRequired[EstimatorFigures]


class PendingHalf(TypedDict):
    """A duplicate half whose partner was not played (yet): merged with it when it comes."""

    deal: int
    half: int
    chips: float
    io_chips: float | None
    aivat_chips: float | None
    io_variance: NotRequired[float | None]


class EstimatorsSection(TypedDict):
    """``estimators`` of a results document (:meth:`MatchEstimates.to_dict`), in this key order.

    The AIVAT entries are absent from version 1 and 2 documents.
    """

    raw: EstimatorFigures
    duplicate: EstimatorFigures
    io: EstimatorFigures
    duplicate_io: EstimatorFigures
    aivat: NotRequired[EstimatorFigures]
    duplicate_aivat: NotRequired[EstimatorFigures]
    io_minus_raw: CheckFigures
    aivat_minus_raw: NotRequired[CheckFigures]
    pending_halves: list[PendingHalf]


def _fresh(name: str) -> RunningMean:
    """An empty estimator: within seats for those over hands."""
    return SeatedMean() if name in OVER_HANDS else RunningMean()


def estimator_figures(stat: RunningMean, big_blind: int) -> EstimatorFigures:
    """A sample's figures in chips (with the exact sums: documents merge exactly), mbb/g and bb/hand."""
    return {
        "chips": stat.to_dict(),
        "mbb_per_game": stat.scaled(1000.0 / big_blind).to_dict(exact=False),
        "bb_per_hand": stat.scaled(1.0 / big_blind).to_dict(exact=False),
    }


#: A duplicate half waiting for its partner: (chips, IO, AIVAT, IO's variance).
PendingValues = tuple[float, float | None, float | None, float | None]


def _add_check(check: RunningMean, difference: float, variance: float | None) -> None:
    """One unit of IO's check, with the variance its answers give it when the sample keeps it."""
    if isinstance(check, CheckMean):
        check.add(difference, variance)
    else:
        check.add(difference)


def _add_seated(stat: RunningMean, value: float, seat: int | None) -> None:
    """One hand of an estimator over hands, with its seat when the sample keeps seats."""
    if isinstance(stat, (SeatedMean, LiveMean)):
        stat.add(value, seat)
    else:
        stat.add(value)


@dataclass(frozen=True, slots=True)
class HandOutcome:
    """One played hand, from the measured player's seat.

    Attributes:
        deal: the deal's index (the hand number); a duplicate pair shares it.
        half: 0 for the first seating, 1 for the reversed one.
        chips: what the measured player won.
        io_chips: the imaginary-observation value, or None when the opponent
            gave no (usable) range answers for this hand.
        aivat_chips: the AIVAT value, or None when not computed.
        io_variance: the variance of the outcome over the opponent's hands the
            answers leave possible on the line (:func:`imaginary_observation_spread`):
            Var(IO − raw | what the measured player saw) when the answers are
            honest; 0 after a fold or a fallback; None when unknown.
    """

    deal: int
    half: int
    chips: float
    io_chips: float | None = None
    aivat_chips: float | None = None
    io_variance: float | None = None
    #: False: the hand's seat is not kept (games of three or more players, whose results
    #: are each player's figures over all hands: player_results).
    seated: bool = True

    @property
    def seat(self) -> int | None:
        """The measured player's position in this hand, up to relabelling: ``(deal + half) % 2``
        (None when not :attr:`seated`).

        The dealer moves every player one position on each hand, and a duplicate pair's
        second half swaps the seats, so this splits the hands by the measured player's
        position (which position is called 0 does not matter: :class:`~acpc_lbr.stats.SeatedMean`
        only groups by it). With fixed seats it is an arbitrary split in two, under which the
        interval within seats is still an honest one.
        """
        return (self.deal + self.half) % 2 if self.seated else None


@dataclass
class MatchEstimates:
    """All estimators of one measured player, accumulated online."""

    #: Over hands, each seat's units kept (:class:`~acpc_lbr.stats.SeatedMean`: the interval within seats).
    raw: RunningMean = field(default_factory=SeatedMean)
    duplicate: RunningMean = field(default_factory=RunningMean)
    io: RunningMean = field(default_factory=SeatedMean)
    duplicate_io: RunningMean = field(default_factory=RunningMean)
    aivat: RunningMean = field(default_factory=SeatedMean)
    duplicate_aivat: RunningMean = field(default_factory=RunningMean)
    #: IO − raw per hand (the honesty check).
    io_minus_raw: RunningMean = field(default_factory=CheckMean)
    #: AIVAT − raw per hand (AIVAT's honesty check).
    aivat_minus_raw: RunningMean = field(default_factory=CheckMean)
    #: IO − raw per duplicate pair (the mean of its two hands): what the check tests in duplicate.
    pair_io_minus_raw: RunningMean = field(default_factory=CheckMean)
    #: AIVAT − raw per duplicate pair.
    pair_aivat_minus_raw: RunningMean = field(default_factory=CheckMean)
    #: Duplicate halves waiting for their partner: (deal, half) -> (chips, io, aivat, io variance).
    pending: dict[tuple[int, int], PendingValues] = field(default_factory=dict)
    #: Thinned running figures of every estimator, by hands (acpc_lbr/trajectory.py).
    trajectory: Trajectory = field(default_factory=Trajectory, compare=False)
    #: Keep each half in ``pending`` until its partner comes. False where no partner
    #: will come and nothing merges these figures (the live display of a single match):
    #: then nothing is kept per hand.
    pairs: bool = field(default=True, compare=False)

    def add(self, outcome: HandOutcome) -> None:
        """Account for one hand."""
        seat = outcome.seat
        _add_seated(self.raw, outcome.chips, seat)
        if outcome.io_chips is not None:
            _add_seated(self.io, outcome.io_chips, seat)
            _add_check(self.io_minus_raw, outcome.io_chips - outcome.chips, outcome.io_variance)
        if outcome.aivat_chips is not None:
            _add_seated(self.aivat, outcome.aivat_chips, seat)
            self.aivat_minus_raw.add(outcome.aivat_chips - outcome.chips)
        if self.pairs:
            self._pair(outcome.deal, outcome.half,
                       (outcome.chips, outcome.io_chips, outcome.aivat_chips, outcome.io_variance))
        self.trajectory.observe(self.raw.n, self.stats)

    @classmethod
    def live_only(cls, pairs: bool = True) -> MatchEstimates:
        """Estimators that keep only the running (Welford) figures: for live displays, read with
        ``live()`` after every hand (:class:`~acpc_lbr.stats.LiveMean`; exact figures are refused).
        ``pairs``: see :attr:`pairs`."""
        estimates = cls(pairs=pairs, trajectory=NoTrajectory())  # a document's figures have one
        for name in (*ESTIMATORS, *CHECKS, *PAIR_CHECKS.values()):
            setattr(estimates, name, LiveMean())
        return estimates

    def stats(self) -> dict[str, RunningMean]:
        """Every estimator and the honesty checks, by name (the figures a document reports)."""
        return {name: self.estimator(name) for name in (*ESTIMATORS, *CHECKS)}

    def _pair(self, deal: int, half: int, values: PendingValues) -> None:
        partner = self.pending.pop((deal, 1 - half), None)
        if partner is None:
            self.pending[(deal, half)] = values
            return
        pair_raw = (values[0] + partner[0]) / 2.0
        self.duplicate.add(pair_raw)
        for k, stat, check in ((1, self.duplicate_io, self.pair_io_minus_raw),
                               (2, self.duplicate_aivat, self.pair_aivat_minus_raw)):
            mine, theirs = values[k], partner[k]
            if mine is not None and theirs is not None:
                pair = (mine + theirs) / 2.0
                stat.add(pair)
                if k == 1:  # the two halves are independent given the deal: their variances add
                    mine_var, theirs_var = values[3], partner[3]
                    known = None if mine_var is None or theirs_var is None else (mine_var + theirs_var) / 4.0
                    _add_check(check, pair - pair_raw, known)
                else:
                    check.add(pair - pair_raw)

    def merge(self, other: MatchEstimates) -> None:
        """Fold another batch's estimates into these (played after them, for the trajectory)."""
        self.trajectory.merge(self.raw.n, self.stats(),
                              other.trajectory, other.raw.n, other.stats())
        self.raw.merge(other.raw)
        self.duplicate.merge(other.duplicate)
        self.io.merge(other.io)
        self.duplicate_io.merge(other.duplicate_io)
        self.aivat.merge(other.aivat)
        self.duplicate_aivat.merge(other.duplicate_aivat)
        self.io_minus_raw.merge(other.io_minus_raw)
        self.aivat_minus_raw.merge(other.aivat_minus_raw)
        self.pair_io_minus_raw.merge(other.pair_io_minus_raw)
        self.pair_aivat_minus_raw.merge(other.pair_aivat_minus_raw)
        for (deal, half), values in other.pending.items():
            self._pair(deal, half, values)

    def drop_aivat(self) -> None:
        """Forget every AIVAT figure, trajectory included (batches whose AIVAT values cannot be merged)."""
        for name in AIVAT_NAMES:
            setattr(self, name, CheckMean() if name in CHECKS else _fresh(name))
        self.pair_aivat_minus_raw = CheckMean()
        self.pending = {key: (chips, io, None, var) for key, (chips, io, _, var) in self.pending.items()}
        for _, snapshot in self.trajectory.points:
            for name in AIVAT_NAMES:
                snapshot.pop(name, None)

    def estimator(self, name: str) -> RunningMean:
        """One estimator by name (see :data:`ESTIMATORS`)."""
        stat: RunningMean = getattr(self, name)
        return stat

    def to_dict(self, big_blind: int) -> EstimatorsSection:
        """Every estimator in chips, mbb/g and bb/hand, plus the mergeable state."""
        return {
            "raw": self.figures("raw", big_blind),
            "duplicate": self.figures("duplicate", big_blind),
            "io": self.figures("io", big_blind),
            "duplicate_io": self.figures("duplicate_io", big_blind),
            "aivat": self.figures("aivat", big_blind),
            "duplicate_aivat": self.figures("duplicate_aivat", big_blind),
            "io_minus_raw": self.check_figures("io_minus_raw", big_blind),
            "aivat_minus_raw": self.check_figures("aivat_minus_raw", big_blind),
            "pending_halves": [
                {"deal": deal, "half": half, "chips": chips, "io_chips": io, "aivat_chips": aivat, "io_variance": var}
                for (deal, half), (chips, io, aivat, var) in sorted(self.pending.items())
            ],
        }

    def figures(self, name: EstimatorName | CheckName | PairCheckName, big_blind: int) -> EstimatorFigures:
        """One estimator's figures in chips (with the exact sums: documents merge exactly), mbb/g and bb/hand."""
        return estimator_figures(self.estimator(name), big_blind)

    def check_unit(self, name: CheckName) -> Literal["hand", "pair"]:
        """What ``name`` is tested over: duplicate pairs once the match has any, else hands.

        The two hands of a deal played in duplicate are correlated (AIVAT − raw
        at about −0.6 to −0.75 within a pair); a test that took them as
        independent would misstate its own error rate. Pairs are the
        independent units there, as for the duplicate estimators.
        """
        return "pair" if self.estimator(PAIR_CHECKS[name]).n > 0 else "hand"

    def check_figures(self, name: CheckName, big_blind: int) -> CheckFigures:
        """An honesty check's figures, with z, the two-sided p-value and whether it is flagged.

        The test runs over :meth:`check_unit`'s units; the figures per hand stay
        (what the documents of every version have), and in duplicate the pairs'
        figures come as ``pairs``.
        """
        figures = self.figures(name, big_blind)
        unit = self.check_unit(name)
        tested = self.estimator(PAIR_CHECKS[name] if unit == "pair" else name)
        z, p_value = (tested.honesty_test() if isinstance(tested, CheckMean) else tested.z_test(0.0))
        check: CheckFigures = {
            "chips": figures["chips"],
            "mbb_per_game": figures["mbb_per_game"],
            "bb_per_hand": figures["bb_per_hand"],
            "z": None if math.isnan(z) else (z if math.isfinite(z) else math.copysign(1e308, z)),
            "p_value": None if math.isnan(p_value) else p_value,
            "flagged": bool(p_value < HONESTY_ALPHA),
            "unit": unit,
        }
        if unit == "pair":
            check["pairs"] = self.figures(PAIR_CHECKS[name], big_blind)
        return check

    @classmethod
    def from_dict(cls, data: EstimatorsSection) -> MatchEstimates:
        """Rebuild from :meth:`to_dict` output (reads the chip figures).

        Estimators a document lacks (AIVAT in a version-1 document) are empty.
        """
        estimates = cls()
        for name in ESTIMATORS:
            figures = data.get(name)
            if figures is not None:
                kind = SeatedMean if name in OVER_HANDS else RunningMean
                setattr(estimates, name, kind.from_dict(figures["chips"]))
        for check in CHECKS:
            block = data.get(check)
            if block is not None:
                setattr(estimates, check, CheckMean.from_dict(block["chips"]))
                pairs = block.get("pairs")
                if pairs is not None:
                    setattr(estimates, PAIR_CHECKS[check], CheckMean.from_dict(pairs["chips"]))
        for item in data.get("pending_halves", []):
            io, aivat, var = item.get("io_chips"), item.get("aivat_chips"), item.get("io_variance")
            estimates.pending[(int(item["deal"]), int(item["half"]))] = (
                float(item["chips"]),
                None if io is None else float(io),
                None if aivat is None else float(aivat),
                None if var is None else float(var),
            )
        return estimates


def showdown_ranks(game: GameDef, hands: np.ndarray, board: Sequence[int]) -> np.ndarray:
    """Rank of each hand (rows of card indices) combined with the board; higher is better.

    Uses the numba evaluator when hand plus board make 5 to 7 cards, the
    plain ranker otherwise (the two agree on order and ties; only ranks from
    the same call are compared).
    """
    total = hands.shape[1] + len(board)
    if 5 <= total <= 7 and game.deck_size <= 52:
        from acpc_lbr.evaluator import (
            evaluate_batch,  # lazy: numba kernels, loaded on first use only
        )

        full = np.empty((len(hands), total), dtype=np.uint8)  # the evaluator's own dtype: no copy
        full[:, : hands.shape[1]] = hands
        full[:, hands.shape[1] :] = np.asarray(board, dtype=np.uint8)
        return np.asarray(evaluate_batch(full), dtype=np.int64)
    return np.array([rank_hand(list(h) + list(board)) for h in hands], dtype=np.int64)


def imaginary_observation(
    game: GameDef,
    measured_position: int,
    measured_cards: Sequence[int],
    board: Sequence[int],
    spent: Sequence[int],
    opponent_weights: np.ndarray,
    equity: np.ndarray | None = None,
) -> float:
    """The measured player's expected showdown value over the opponent's possible hands.

    Args:
        game: a heads-up game.
        measured_position: the measured player's position in this hand.
        measured_cards: the measured player's hole cards.
        board: every board card of the hand.
        spent: each position's commitment at the showdown.
        opponent_weights: shape (num_hands,): Π of σ(s, h, a) over the
            opponent's actions on the line, for every private hand h (any value
            for hands that collide with known cards: they get weight 0 here).
        equity: the measured player's equity against every hand on this
            complete board (LBR's equity vector, :func:`acpc_lbr.lbr.equity_function`:
            exactly 1, 1/2 or 0 for a win, a tie or a loss), if the caller has
            it; else the hands are ranked here. The value is the same to the bit.

    Returns:
        Σ_h w(h)·u(h) / Σ_h w(h), or NaN when no possible hand has weight.
    """
    return imaginary_observation_spread(game, measured_position, measured_cards, board, spent, opponent_weights,
                                        equity)[0]


def imaginary_observation_spread(
    game: GameDef,
    measured_position: int,
    measured_cards: Sequence[int],
    board: Sequence[int],
    spent: Sequence[int],
    opponent_weights: np.ndarray,
    equity: np.ndarray | None = None,
) -> tuple[float, float]:
    """:func:`imaginary_observation` and the variance of the outcome around it, over the same weights.

    When the weights are the bot's real strategy, the opponent's hand given
    what the measured player saw is drawn from them, so IO − raw has mean 0
    and exactly this variance: the honesty check's null law needs no estimate
    of its spread (:meth:`~acpc_lbr.stats.CheckMean.honesty_test`).

    Returns:
        (Σ_h w(h)·u(h) / Σ_h w(h), Σ_h w(h)·(u(h) − IO)² / Σ_h w(h)), NaN twice when no hand has weight.
    """
    hands = game.hand_cards
    possible = ~game.hands_sharing([*measured_cards, *board])
    weights = np.where(possible, np.asarray(opponent_weights, dtype=np.float64), 0.0)
    total = weights.sum()
    if not total > 0.0:
        return float("nan"), float("nan")
    win, tie, loss = _showdown_outcomes(tuple(spent), measured_position)
    # A hand that is not possible has weight 0: its value is the win's, as if ranked 0.
    if equity is not None:
        values = np.where(possible, np.where(equity > 0.5, win, np.where(equity == 0.5, tie, loss)), win)
    else:
        # One ranking call: the opponent's possible hands, then the measured hand.
        ranks = showdown_ranks(game, np.concatenate([hands[possible], np.asarray([measured_cards], dtype=hands.dtype)]),
                               board)
        hero_rank = ranks[-1]
        values = np.full(len(hands), win, dtype=np.float64)
        opponent_ranks = ranks[:-1]
        values[possible] = np.where(hero_rank > opponent_ranks, win, np.where(hero_rank == opponent_ranks, tie, loss))
    mean = float((weights * values).sum() / total)
    return mean, float((weights * (values - mean) ** 2).sum() / total)


@lru_cache(maxsize=1024)
def _showdown_outcomes(spent: tuple[int, ...], measured_position: int) -> tuple[float, float, float]:
    """The measured player's value at a heads-up showdown it wins, ties and loses."""
    opponent = 1 - measured_position
    outcome: list[float] = []
    for order in ((1, 0), (0, 0), (0, 1)):
        by_position = [0, 0]
        by_position[measured_position], by_position[opponent] = order
        outcome.append(showdown_values(spent, by_position)[measured_position])
    return outcome[0], outcome[1], outcome[2]

"""From a finished hand to its outcome: raw value, imaginary observation, AIVAT value.

The pure half of the dealer's results pipeline. :class:`HandAccountant` is the
one step from a finished hand (its ``STATE`` record and the opponent's rows) to
its :class:`~acpc_lbr.estimators.HandOutcome` and counts, taken by the live
dealer (``dealer/results.py``, as each hand ends), the offline ``acpc-lbr
results`` (:func:`acpc_lbr.results.files.results_from_files`, over a log's
hands) and the in-process simulation (:func:`acpc_lbr.simulation.simulate_lbr_match`),
so that the three compute every estimate with the same functions in the same order.

* :func:`opponent_decisions` lists the opponent's decisions on the played
  line (one replay through the rules, :func:`protocol.lines.decision_points`);
* :func:`line_weights` multiplies the opponent's σ rows along the line:
  w(h) = Π σ(s, h, a);
* :func:`hand_io` is the measured player's imaginary observation (IO): its
  raw value after a fold, its expected value over the opponent's weighted
  hands at a showdown (:func:`acpc_lbr.estimators.imaginary_observation`);
* :func:`aivat_requests` and :func:`hand_aivat_value` do the same for AIVAT
  (:mod:`acpc_lbr.aivat`);
* :func:`log_values` rounds values as the ``.log`` writes them, so live and
  offline figures agree bit for bit;
* :class:`Tally` counts what the document reports besides the estimators
  (showdowns, fallbacks, range inconsistencies, the dealer's queries).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from acpc_lbr.aivat import AivatSetup, correction_actions, first_opponent_round, hand_aivat
from acpc_lbr.estimators import HandOutcome, imaginary_observation_spread
from acpc_lbr.lbr import EquityFunction, equity_function, has_fast_equity
from protocol.arrays import FloatArray
from protocol.gamedef import GameDef
from protocol.lines import decision_points, line_views
from protocol.rules import Action, State
from protocol.wire import LogState, MatchState, format_chips, parse_chips


__all__ = [
    "HandAccountant",
    "HandIO",
    "OpponentDecision",
    "Tally",
    "aivat_requests",
    "hand_aivat_value",
    "hand_io",
    "line_weights",
    "log_values",
    "opponent_decisions",
]


# -- the pure pipeline: hand -> decisions -> weights -> IO ------------------------------


@dataclass(frozen=True)
class OpponentDecision:
    """One opponent action on the played line.

    Attributes:
        state: the public decision point (hole-card slots empty), as the
            opponent would have received it; its position is the opponent's.
        action: what the opponent played there.
    """

    state: MatchState
    action: Action

    @property
    def key(self) -> tuple[str, str]:
        """(betting, action) -- unique within a hand."""
        return (self.state.betting_text(), self.action.text())


def opponent_decisions(game: GameDef, hand: LogState, opponent_position: int,
                       state: State | None = None) -> list[OpponentDecision]:
    """Every decision of ``opponent_position`` on the line of a finished hand, in order.

    ``state``: the hand's finished state, when the caller has it (the live
    dealer): the views are then read from it without a replay (the same views).
    """
    if state is not None:
        board = [card for cards in hand.board for card in cards]
        return [OpponentDecision(view, action) for view, action in line_views(state, board, opponent_position)]
    return [OpponentDecision(p.view, p.action) for p in decision_points(game, hand, opponent_position)]


def line_weights(game: GameDef, rows: Sequence[FloatArray]) -> FloatArray:
    """w(h) = Π over the line of σ(s, h, a), multiplied in line order; ones for no rows."""
    weights = np.ones(game.num_hands, dtype=np.float64)
    for row in rows:
        weights = weights * np.asarray(row, dtype=np.float64)
    return weights


@dataclass(frozen=True)
class HandIO:
    """The IO figures of one hand.

    Attributes:
        chips: the measured player's raw outcome.
        io_chips: its IO value (``chips`` after a fold or a fallback).
        showdown: the hand reached a showdown.
        fallback: a showdown whose IO could not be computed (no rows, or
            every weight 0), so ``io_chips == chips``.
        inconsistencies: opponent actions whose row gives the opponent's
            real hand probability 0.
        io_variance: the outcome's variance over the answered range at the
            showdown (what IO − raw varies by when the answers are honest);
            0 after a fold or a fallback.
    """

    chips: float
    io_chips: float
    showdown: bool
    fallback: bool
    inconsistencies: int
    io_variance: float = 0.0


def hand_io(
    game: GameDef, hand: LogState, measured_position: int, rows: Sequence[FloatArray] | None,
    state: State | None = None,
    equity: EquityFunction | None = None,
) -> HandIO:
    """IO of one finished hand.

    Args:
        game: a heads-up game.
        hand: the hand's ``STATE`` record (values as written to the ``.log``).
        measured_position: the measured player's position in this hand.
        rows: σ(s, ·, a) for each of :func:`opponent_decisions` (in order),
            or None when they are not available.
        state: the hand's finished state, if the caller has it (else ``hand`` is replayed).
        equity: LBR's equity function of the game, when it is the compute
            core's (:func:`acpc_lbr.lbr.has_fast_equity`): on a complete board
            its vector says which hands the measured player beats, and its cache
            is shared with the LBR agents of the process (no ranking again).
    """
    chips = float(hand.values[measured_position])
    opponent = 1 - measured_position
    inconsistencies = 0
    if rows is not None:
        true_hand = game.hand_of(hand.hole[opponent])
        inconsistencies = sum(1 for row in rows if not row[true_hand] > 0.0)
    if state is None:
        state = hand.to_state(game)
    if not state.is_showdown:
        return HandIO(chips, chips, False, False, inconsistencies)
    if rows is None:
        return HandIO(chips, chips, True, True, inconsistencies)
    board = [card for cards in hand.board for card in cards]
    mine = hand.hole[measured_position]
    vector = equity(mine, board) if equity is not None and len(board) == game.total_board_cards else None
    io, variance = imaginary_observation_spread(game, measured_position, mine, board, state.spent,
                                                line_weights(game, rows), vector)
    if math.isnan(io):  # no hand of the opponent has weight
        return HandIO(chips, chips, True, True, inconsistencies)
    return HandIO(chips, io, True, False, inconsistencies, variance)


# -- AIVAT: rows of every listed action at every opponent decision ----------------------


def aivat_requests(game: GameDef, hand: LogState, opponent_position: int) -> list[tuple[OpponentDecision, list[Action]]]:
    """Every opponent decision on the line with the actions whose rows AIVAT needs there.

    Those are :func:`acpc_lbr.aivat.correction_actions` and the played one,
    in that order, from :func:`acpc_lbr.aivat.first_opponent_round` on; the
    played one alone before (one replay of the hand).
    """
    first = first_opponent_round(game)
    requests = []
    for point in decision_points(game, hand, opponent_position):
        wanted = {a.text(): a for a in correction_actions(point.state)} if point.state.round >= first else {}
        wanted.setdefault(point.action.text(), point.action)
        requests.append((OpponentDecision(point.view, point.action), list(wanted.values())))
    return requests


def hand_aivat_value(
    game: GameDef,
    hand: LogState,
    measured_position: int,
    rows: Sequence[Mapping[str, FloatArray]] | None,
    equity: EquityFunction,
    setup: AivatSetup | None = None,
    seed: int = 0,
) -> tuple[float, bool]:
    """(AIVAT value, fallback) of one finished hand, with ``setup`` (None: this version's for ``game``).

    A hand without usable rows (a failed query, a missing row) keeps its raw
    value, as IO does, and is counted as an AIVAT fallback.
    """
    chips = float(hand.values[measured_position])
    if rows is None:
        return chips, True
    how = AivatSetup.for_game(game) if setup is None else setup
    try:
        value = hand_aivat(game, hand.betting, hand.board, hand.hole[measured_position],
                           measured_position, rows, equity, hand.hand_id, how.samples, seed,
                           opponent_from=how.opponent_from, value=how.value)
    except (KeyError, ValueError):
        return chips, True
    if not math.isfinite(value.chips):
        return chips, True
    return value.chips, False


# -- values as the .log writes them ---------------------------------------------------------


def log_values(values: Sequence[float]) -> tuple[float, ...]:
    """Values as they read back from the ``.log`` (written with 6 decimals)."""
    return tuple(
        float(v) if float(v).is_integer() and abs(v) < 2.0**52 else parse_chips(format_chips(v))
        for v in values
    )


# -- the one step from a finished hand to its outcome, live, offline and simulated ----------


@dataclass
class Tally:
    """The counts of one match's results besides the estimators (see
    :data:`acpc_lbr.results.document.COUNT_KEYS`)."""

    showdowns: int = 0
    io_fallbacks: int = 0
    range_inconsistencies: int = 0
    dealer_queries: int = 0
    query_errors: int = 0
    aivat_fallbacks: int = 0


@dataclass
class HandAccountant:
    """Turns each finished hand of one match (one half of a duplicate pair) into its outcome.

    The live dealer, ``acpc-lbr results`` and the simulation all take this step,
    so a hand's IO value, AIVAT value and counts come from the same calls in the
    same order wherever its rows come from (relayed or asked during the match,
    read from the query log, or answered in process).

    Attributes:
        game: a heads-up game (more players: :meth:`plain` only).
        measured: the measured player's name.
        half: 0, or 1 for the mirrored match of a duplicate pair.
        io: the hands get IO figures (the opponent's σ rows were asked for or recorded);
            else their outcomes have no IO value.
        aivat: the hands get AIVAT figures, with ``aivat_setup`` (None: this version's
            for ``game``) and the match's deal ``seed`` (AIVAT's sampling stream).
        equity: LBR's equity function of the game, made on first need (AIVAT's values;
            IO's on a complete board when ``io_equity`` and it is the compute core's).
        io_equity: IO reads the equity function's vectors on a complete board (the live
            dealer: its cache is shared with the LBR agents of the process).
        tally: the counts, added to as hands come.
        timings: when given, the seconds of AIVAT's computation go to ``aivat_compute``.
    """

    game: GameDef
    measured: str
    half: int = 0
    io: bool = True
    aivat: bool = False
    aivat_setup: AivatSetup | None = None
    seed: int = 0
    equity: EquityFunction | None = None
    io_equity: bool = False
    tally: Tally = field(default_factory=Tally)
    timings: dict[str, float] | None = None

    @property
    def seated(self) -> bool:
        """Whether the hands keep their seat (HandOutcome.seated: the spread within seats):
        heads-up; not with more players, whose results are each player's over all hands."""
        return self.game.num_players == 2

    def position(self, hand: LogState) -> int:
        """The measured player's position in ``hand``.

        Raises:
            ValueError: the measured player did not play it.
        """
        if self.measured not in hand.names:
            raise ValueError(f"hand {hand.hand_id}: {self.measured!r} did not play it ({'|'.join(hand.names)})")
        return hand.names.index(self.measured)

    def outcome(self, hand: LogState, rows: Sequence[FloatArray] | None,
                aivat_rows: Sequence[Mapping[str, FloatArray]] | None = None,
                state: State | None = None, *, asked: bool = True) -> tuple[HandOutcome, HandIO]:
        """The outcome of one finished hand, counted in :attr:`tally`; and its IO figures.

        Args:
            hand: the hand's ``STATE`` record (values as written to the ``.log``).
            rows: σ(s, ·, a) for each of :func:`opponent_decisions` (None: not
                available: a fold, a failed query, a match without IO).
            aivat_rows: per opponent decision, AIVAT's rows by action text (None: failed).
            state: the hand's finished state, if the caller has it (else ``hand`` is replayed).
            asked: the opponent could be asked this hand (False: the live dealer could not
                query it, so the hand has no IO or AIVAT value, as in a match without them).
        """
        io, aivat = self.io and asked, self.aivat and asked
        position = self.position(hand)
        # Only a hand with rows can read the equity: one without (a fold, a failed or late query)
        # must not load the compute core (numba, about half a second of the dealer's one thread,
        # once): a bot whose every query fails would make the process pay it for nothing.
        equity = self._io_equity() if rows is not None else None
        result = hand_io(self.game, hand, position, rows, state, equity)
        tally = self.tally
        tally.showdowns += result.showdown
        tally.io_fallbacks += result.fallback and io
        tally.range_inconsistencies += result.inconsistencies
        aivat_chips = self._aivat_value(hand, position, aivat_rows) if aivat else None
        outcome = HandOutcome(hand.hand_id, self.half, result.chips, result.io_chips if io else None,
                              aivat_chips, result.io_variance if io else None, self.seated)
        return outcome, result

    def plain(self, hand_id: int, chips: float, showdown: bool = False) -> HandOutcome:
        """The outcome of a hand without IO or AIVAT (the live dealer's cheap path: no record, no replay)."""
        self.tally.showdowns += showdown
        return HandOutcome(hand_id, self.half, chips, None, seated=self.seated)

    def needs_compute_core(self) -> bool:
        """Whether the hands' IO or AIVAT values will first load the compute core (numba, about
        a second: :func:`acpc_lbr.lbr.equity_function` of hold'em), not loaded yet by this accountant."""
        return (self.equity is None and (self.aivat or (self.io and self.io_equity))
                and has_fast_equity(self.game))

    def equity_function(self) -> EquityFunction:
        """LBR's equity function of the game (one per process: the LBR agents' cache)."""
        if self.equity is None:
            self.equity = equity_function(self.game)
        return self.equity

    def _io_equity(self) -> EquityFunction | None:
        """The equity function for IO: the compute core's, when asked for and the game has it."""
        return self.equity_function() if self.io_equity and has_fast_equity(self.game) else None

    def _aivat_value(self, hand: LogState, position: int,
                     rows: Sequence[Mapping[str, FloatArray]] | None) -> float:
        """The hand's AIVAT value (its raw value, counted as a fallback, without usable rows)."""
        began = time.perf_counter()
        chips, fallback = hand_aivat_value(self.game, hand, position, rows, self.equity_function(),
                                           self.aivat_setup, self.seed)
        self.tally.aivat_fallbacks += fallback
        if self.timings is not None:
            self.timings["aivat_compute"] = self.timings.get("aivat_compute", 0.0) + time.perf_counter() - began
        return chips

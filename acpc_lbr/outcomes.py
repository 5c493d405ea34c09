"""From a finished hand to its outcome: raw value, imaginary observation, AIVAT value.

The pure half of the dealer's results pipeline, shared by the live dealer
(:mod:`dealer.results`), the offline ``acpc-lbr results`` and the in-process
simulation (:func:`acpc_lbr.results.simulate_lbr_match`), so that the three
compute every estimate with the same functions in the same order.

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
  offline figures agree bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from acpc_lbr.aivat import AivatSetup, correction_actions, first_opponent_round, hand_aivat
from acpc_lbr.estimators import imaginary_observation_spread
from acpc_lbr.lbr import EquityFunction
from protocol.arrays import FloatArray
from protocol.gamedef import GameDef
from protocol.lines import decision_points, line_views
from protocol.rules import Action, State
from protocol.wire import LogState, MatchState, format_chips, parse_chips


__all__ = [
    "HandIO",
    "OpponentDecision",
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

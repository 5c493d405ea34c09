"""Exact best response against OpenSpiel's ``exploitability`` for card-aware strategies.

OpenSpiel 2.0.2's built-in ``kuhn_poker`` and ``leduc_poker`` are independent
implementations of our bundled ``kuhn`` and ``leduc`` games; the same
card-aware strategy is given to both (tests/acpc_lbr/openspiel_twin.py), and
:func:`acpc_lbr.exact.best_response` must give OpenSpiel's exploitability
(chips per hand, NashConv / 2) to rounding.
"""

from __future__ import annotations

import pyspiel
import pytest
from open_spiel.python.algorithms import exploitability

from acpc_lbr.exact import best_response
from protocol.gamedef import load_game
from tests.acpc_lbr.openspiel_twin import (
    fixed_table,
    openspiel_policy,
    our_policy,
    random_table,
    table_of,
)

GAMES = [("kuhn", "kuhn_poker"), ("leduc", "leduc_poker")]


@pytest.mark.parametrize(("ours", "theirs"), GAMES)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_exact_best_response_equals_openspiel_for_random_card_aware_strategies(ours: str, theirs: str, seed: int) -> None:
    """A seeded random strategy per (card, board, betting): our exploitability is OpenSpiel's."""
    game, spiel = load_game(ours), pyspiel.load_game(theirs)
    table = random_table(seed)
    expected = exploitability.exploitability(spiel, openspiel_policy(spiel, table))
    assert expected > 0.1  # a card-aware strategy far from equilibrium
    assert best_response(game, our_policy(game, table)).exploitability == pytest.approx(expected, abs=1e-12)


class _Average:
    """OpenSpiel's C++ CFR average policy behind the Python policy interface used by ``table_of``."""

    def __init__(self, policy: pyspiel.TabularPolicy) -> None:
        self.policy = policy

    def action_probabilities(self, state: pyspiel.State) -> dict[int, float]:
        return dict(self.policy.get_state_policy(state))


def leduc_cfr_table(iterations: int) -> dict:
    """OpenSpiel's CFR average strategy for Leduc after ``iterations`` iterations, as a table."""
    spiel = pyspiel.load_game("leduc_poker")
    solver = pyspiel.CFRSolver(spiel)
    for _ in range(iterations):
        solver.evaluate_and_update_policy()
    return table_of(spiel, _Average(solver.average_policy()))


def test_exact_best_response_equals_openspiel_for_a_cfr_strategy() -> None:
    """A CFR strategy (near equilibrium, strongly card-dependent): the same exploitability on both sides."""
    spiel, game = pyspiel.load_game("leduc_poker"), load_game("leduc")
    table = fixed_table(leduc_cfr_table(50))
    expected = exploitability.exploitability(spiel, openspiel_policy(spiel, table))
    assert 0.0 < expected < 0.3  # CFR is closing in on equilibrium (0 exploitability)
    assert best_response(game, our_policy(game, table)).exploitability == pytest.approx(expected, abs=1e-12)

"""Sampled LBR over the network agrees with exact LBR on Kuhn and Leduc poker.

The oracle is :func:`acpc_lbr.exact.lbr_value`: LBR's exact expected winnings
against a strategy, walking every deal and every opponent action, with the
opponent given by :func:`acpc_lbr.strategies.from_sdk` on the very SDK
strategy function that the networked bot plays and answers queries with. The
networked pipeline (dealer, relay, LBR agent, SDK bot over loopback TCP,
duplicate seating) must land within its own 95% interval of that value.

Every run is deterministic for its seed (deals, bots' generators, LBR), so a
95% interval misses the true value for about one seed in twenty; the fast
tests use seed 1 throughout, the slow ones 5000 deals and seed 21.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_twisted

from acpc_lbr.commands.evaluate import EvaluationConfig, run_evaluation
from acpc_lbr.exact import lbr_value
from acpc_lbr.lbr import ActiveRounds, BettingOptions
from acpc_lbr.strategies import from_sdk
from agents.bots import BOTS
from protocol.gamedef import load_game

BOT_NAMES = ["random", "always-call", "call-raise"]


async def check_against_exact(tmp_path: Path, game_name: str, bot: str, deals: int, seed: int) -> None:
    """Play ``deals`` duplicate deals of LBR (fcpa, every round) vs ``bot``; compare with the exact value."""
    from twisted.internet import reactor

    game = load_game(game_name)
    bets, rounds = BettingOptions.parse("fcpa"), ActiveRounds.parse("1-4")
    exact = lbr_value(game, from_sdk(game, BOTS[bot]), bets, rounds)
    assert exact.inconsistencies == 0
    config = EvaluationConfig(
        game_arg=game_name, game=game, opponent=bot, opponent_cmd=None, bets=bets,
        rounds=rounds, hands=deals, seed=seed, out=tmp_path / f"{game_name}-{bot}",
    )
    evaluation = await run_evaluation(config, reactor)
    assert evaluation.exit_code == 0
    assert evaluation.inconsistencies == 0
    duplicate = evaluation.estimates.duplicate
    assert duplicate.n == deals
    low, high = duplicate.interval()
    assert low <= exact.value <= high, (
        f"{game_name} vs {bot}: sampled {duplicate.mean:.4f} ± {duplicate.half_width:.4f} "
        f"chips/hand, exact {exact.value:.4f}"
    )


@pytest.mark.parametrize("bot", BOT_NAMES)
@pytest_twisted.ensureDeferred
async def test_kuhn_sampled_lbr_matches_exact(tmp_path: Path, bot: str) -> None:
    """Kuhn, 1000 duplicate deals: the exact LBR value lies in the 95% interval of the sampled one."""
    await check_against_exact(tmp_path, "kuhn", bot, deals=1000, seed=1)


@pytest.mark.parametrize("bot", BOT_NAMES)
@pytest_twisted.ensureDeferred
async def test_leduc_sampled_lbr_matches_exact(tmp_path: Path, bot: str) -> None:
    """Leduc, 400 duplicate deals: the exact LBR value lies in the 95% interval of the sampled one."""
    await check_against_exact(tmp_path, "leduc", bot, deals=400, seed=1)


@pytest.mark.slow
@pytest.mark.parametrize("game_name", ["kuhn", "leduc"])
@pytest.mark.parametrize("bot", BOT_NAMES)
@pytest_twisted.ensureDeferred
async def test_sampled_lbr_matches_exact_with_many_hands(tmp_path: Path, game_name: str, bot: str) -> None:
    """5000 duplicate deals per case: a tight interval still contains the exact value."""
    await check_against_exact(tmp_path, game_name, bot, deals=5000, seed=21)

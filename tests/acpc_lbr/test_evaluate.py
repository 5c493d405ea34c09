"""``acpc-lbr evaluate`` end to end: dealer, relay, LBR agent and bots over loopback TCP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import pytest_twisted

from acpc_lbr.commands.evaluate import (
    EXIT_NOT_QUERYABLE,
    EXIT_USAGE,
    Evaluation,
    EvaluationConfig,
    format_report,
    main,
    run_evaluation,
)
from acpc_lbr.lbr import ActiveRounds, BettingOptions
from acpc_lbr.stats import RunningMean
from agents.bots import always_call
from agents.client import AcpcClient, StrategyBot
from agents.tracking import SeatView
from protocol.gamedef import load_game
from protocol.rules import Action

REPO = Path(__file__).resolve().parents[2]
NOLIMIT = load_game("nolimit")


def config(tmp_path: Path, opponent: str, bets: str = "fcpa", rounds: str = "3-4",
           hands: int = 50, seed: int = 1, game: str = "nolimit", duplicate: bool = True) -> EvaluationConfig:
    """An evaluation writing its logs under ``tmp_path``."""
    return EvaluationConfig(
        game_arg=game, game=load_game(game), opponent=opponent, opponent_cmd=None,
        bets=BettingOptions.parse(bets), rounds=ActiveRounds.parse(rounds), hands=hands,
        seed=seed, duplicate=duplicate, out=tmp_path / f"{opponent}-{bets}-{rounds}-{hands}",
    )


async def evaluate(cfg: EvaluationConfig, **kwargs: Any) -> Evaluation:
    """Run one evaluation on the test reactor."""
    from twisted.internet import reactor

    return await run_evaluation(cfg, reactor, **kwargs)


@pytest_twisted.ensureDeferred
async def test_every_duplicate_pair_against_always_fold_is_worth_750_mbb(tmp_path: Path) -> None:
    """fcpa, rounds 3-4 vs always-fold: +50 as big blind, +100 as small blind: 750 mbb/g per pair (lbr.md)."""
    evaluation = await evaluate(config(tmp_path, "always-fold", hands=60))
    assert evaluation.exit_code == 0
    assert len(evaluation.pairs) == 60
    for deal, (first, second) in evaluation.pairs.items():
        assert first is not None and second is not None
        assert (first + second) / 2 * 1000 / NOLIMIT.big_blind == 750.0, deal
    mean, half, n = evaluation.mbb("duplicate")
    assert (mean, half, n) == (750.0, 0.0, 60)
    # Imaginary observations are on by default; no hand reaches a showdown, so IO is the raw value.
    assert evaluation.io_estimates is not None
    io = evaluation.io_estimates.estimator("io")
    assert (io.mean * 1000 / NOLIMIT.big_blind, io.n) == (750.0, 120)
    paired = evaluation.io_estimates.estimator("duplicate_io")
    assert (paired.mean * 1000 / NOLIMIT.big_blind, paired.half_width, paired.n) == (750.0, 0.0, 60)
    assert evaluation.timing["queries_sent"] > 0
    assert evaluation.inconsistencies == 0
    report = format_report(evaluation)
    assert "+750.0" in report and "range inconsistencies" in report
    assert "duplicate_io" in report and "--no-io" not in report
    # Whose time it was: every part measured, none beyond the seatings' wall time.
    split = evaluation.breakdown
    assert split["opponent_answering_seconds"] > 0 and split["lbr_turn_seconds"] > 0
    assert split["channel_check_seconds"] > 0 and split["channel_decode_seconds"] > 0
    parts = split["opponent_acting_seconds"] + split["lbr_turn_seconds"] + split["dealer_other_seconds"]
    assert parts == pytest.approx(2 * evaluation.seconds, rel=0.05)
    assert evaluation.document["timings"]["opponent_answering_seconds"] == split["opponent_answering_seconds"]
    assert "opponent, as the dealer saw it" in report and "channel:" in report


@pytest_twisted.ensureDeferred
async def test_fold_call_wins_nothing_against_always_call(tmp_path: Path) -> None:
    """LBR with fc never raises: against always-call, every hand is checked down; 0 is in the interval."""
    evaluation = await evaluate(config(tmp_path, "always-call", bets="fc", rounds="1-4", hands=150))
    mean, half, _ = evaluation.mbb("duplicate")
    assert mean - half <= 0.0 <= mean + half


@pytest_twisted.ensureDeferred
async def test_fcpa_wins_big_and_rounds_3_4_beat_1_4_against_always_call(tmp_path: Path) -> None:
    """fcpa vs always-call wins several big blinds a hand; held back to rounds 3-4 it wins more than from round 1."""
    late = await evaluate(config(tmp_path, "always-call", rounds="3-4", hands=150, seed=3))
    early = await evaluate(config(tmp_path, "always-call", rounds="1-4", hands=150, seed=3))
    late_mean, late_half, _ = late.mbb("duplicate")
    assert late_mean - late_half > 2000.0  # > 2 big blinds per hand, with 95% confidence
    # The same deals in both runs: compare pair by pair (a paired difference
    # has far less variance than two separate estimates).
    difference = RunningMean()
    for deal, pair in late.pairs.items():
        late_pair = sum(v for v in pair if v is not None) / 2
        early_pair = sum(v for v in early.pairs[deal] if v is not None) / 2
        difference.add((late_pair - early_pair) * 1000 / NOLIMIT.big_blind)
    assert difference.n == 150
    print(f"rounds 3-4 minus 1-4: {difference.mean:.0f} ± {difference.half_width:.0f} mbb/g")
    assert difference.interval()[0] > 0.0


@pytest.mark.slow
@pytest_twisted.ensureDeferred
async def test_rounds_3_4_beat_1_4_by_a_significant_margin(tmp_path: Path) -> None:
    """With 1000 deals each, rounds 3-4 beats 1-4 against always-call beyond both intervals."""
    late = await evaluate(config(tmp_path, "always-call", rounds="3-4", hands=1000, seed=5))
    early = await evaluate(config(tmp_path, "always-call", rounds="1-4", hands=1000, seed=5))
    late_mean, late_half, _ = late.mbb("duplicate")
    early_mean, early_half, _ = early.mbb("duplicate")
    assert late_mean - late_half > early_mean + early_half


class _PlainCaller(AcpcClient):
    """An ACPC bot that always calls and does not answer range queries (no announcement)."""

    def choose_action(self, view: SeatView) -> Action:
        """Check or call."""
        return Action.CALL


@pytest_twisted.ensureDeferred
async def test_an_opponent_that_does_not_answer_queries_stops_the_evaluation(tmp_path: Path) -> None:
    """LBR's first query is refused as 'not queryable': the agent stops, the evaluation says why."""
    cfg = config(tmp_path, "always-call", hands=20)
    evaluation = await evaluate(cfg, make_opponent=lambda half: _PlainCaller(NOLIMIT))
    assert evaluation.not_queryable
    assert evaluation.exit_code == EXIT_NOT_QUERYABLE
    assert all(result.cause == "disconnect" for result in evaluation.results)


class _VersionOneBot(StrategyBot):
    """An SDK bot that announces version 1 only, as bots written before version 2 do."""

    def connectionMade(self) -> None:
        """VERSION, then '# range-query 1'."""
        AcpcClient.connectionMade(self)
        self.out.write(b"# range-query 1\r\n")


@pytest_twisted.ensureDeferred
async def test_a_version_1_bot_is_measured_exactly_as_a_version_2_bot(tmp_path: Path) -> None:
    """Same deals, same always-call bot: a v1 (decimal) and a v2 (compact) channel give identical results."""
    results = {}
    for version in (1, 2):
        cfg = config(tmp_path / f"v{version}", "always-call", rounds="1-4", hands=40)
        make = (lambda half: _VersionOneBot(NOLIMIT, always_call, np.random.default_rng(half))) \
            if version == 1 else (lambda half: StrategyBot(NOLIMIT, always_call, np.random.default_rng(half)))
        evaluation = await evaluate(cfg, make_opponent=make)
        assert evaluation.exit_code == 0 and evaluation.document["counts"]["query_errors"] == 0
        log = cfg.out / "lbr-vs-always-call.events.jsonl"
        events = [json.loads(line) for line in log.read_text().splitlines()]
        assert [e["version"] for e in events if e["event"] == "seat_queryable"] == [version]
        assert evaluation.io_estimates is not None
        results[version] = (evaluation.pairs, evaluation.io_estimates.estimator("duplicate_io").mean)
    assert results[1] == results[2]


def test_unknown_opponent_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """A bot name that does not exist is refused before anything starts (exit 2)."""
    assert main(["--opponent", "nobody"]) == EXIT_USAGE
    assert "unknown bot" in capsys.readouterr().err


def test_opponent_cmd_needs_a_port_placeholder(capsys: pytest.CaptureFixture[str]) -> None:
    """--opponent-cmd without {port} is a usage error."""
    assert main(["--opponent-cmd", "./bot localhost 1"]) == EXIT_USAGE
    assert "{port}" in capsys.readouterr().err


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "acpc_lbr.cli", "evaluate", *args], check=False, cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=120)


def test_cli_with_an_external_opponent_command_writes_json(tmp_path: Path) -> None:
    """--opponent-cmd launches the bot once per half; --json writes the results document."""
    bot = f"{sys.executable} -m acpc_lbr.cli play always-fold {{host}} {{port}} --game nolimit"
    out = tmp_path / "logs"
    done = _run(["--opponent-cmd", bot, "--hands", "20", "--out", str(out),
                 "--json", str(tmp_path / "r.json"), "--progress-every", "10"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "+750.0" in done.stdout
    assert "20/40 hands" in done.stderr  # a progress line every 10 hands, not a bar
    document = json.loads((tmp_path / "r.json").read_text())
    assert document["config"]["lbr"] == {"bets": "fcpa", "rounds": "3-4"}
    assert document["counts"]["hands"] == 40
    assert (out / "lbr-vs-python3.log").exists() or any(out.glob("*.log"))
    assert len(list(out.glob("opponent*.out"))) == 2


def test_opponent_cmd_naming_no_program_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """A command whose program does not exist is refused before any match starts."""
    assert main(["--opponent-cmd", "/nonexistent/bot {host} {port}"]) == EXIT_USAGE
    assert "no such program" in capsys.readouterr().err

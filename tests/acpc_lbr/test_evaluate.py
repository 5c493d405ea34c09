"""``acpc-lbr evaluate`` end to end: dealer, relay, LBR agent and bots over loopback TCP."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import pytest_twisted

from acpc_lbr.app.evaluate.evaluation import Evaluation, EvaluationConfig
from acpc_lbr.app.evaluate.output import format_report
from acpc_lbr.app.evaluate.run import run_evaluation
from acpc_lbr.cli.evaluate import _parser, config_from_args, main
from acpc_lbr.lbr import ActiveRounds, BettingOptions
from acpc_lbr.runtime.exit_codes import EXIT_NO_BOUND, EXIT_NOT_QUERYABLE, EXIT_USAGE
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
    assert evaluation.timing.queries_sent > 0
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
async def test_the_seatings_share_one_count_that_counts_the_agent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both seatings of an evaluation in one process share one count of matches playing, which
    starts at one for the LBR agent playing in the process: the time it thinks is its own, and
    no match makes the next state ready ahead of its reply (dealer/turns.py)."""
    from acpc_lbr.app.evaluate import run
    from dealer.match import Match

    built: list[Match] = []

    class Recorded(Match):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            built.append(self)

    monkeypatch.setattr(run, "Match", Recorded)
    evaluation = await evaluate(config(tmp_path, "always-fold", hands=4), split=False)
    assert evaluation.exit_code == 0 and len(built) == 2
    playing = built[0].playing
    assert built[1].playing is playing and playing.count == 1  # the agent's, once both ended
    assert all(match.policy.playing is playing for match in built)


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


def test_unknown_game_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """A misspelt --game is one line and exit 2, as in the other commands (a traceback before)."""
    assert main(["--game", "nolimt"]) == EXIT_USAGE
    assert "nolimt: neither a game file nor a bundled game" in capsys.readouterr().err


@pytest.mark.parametrize("option", ["--json", "--report"])
def test_an_output_file_in_a_missing_folder_is_refused_before_playing(
        option: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--json into a folder that does not exist is refused at once, not after the whole run
    (the run played to the end, then died on the write with a traceback)."""
    target = tmp_path / "missing" / "r.out"
    assert main([option, str(target)]) == EXIT_USAGE
    assert f"cannot write {target}: no such folder" in capsys.readouterr().err


def test_an_out_folder_that_cannot_be_made_is_a_usage_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--out naming a file is refused before anything starts (an 'internal error' traceback before)."""
    taken = tmp_path / "a-file"
    taken.write_text("")
    assert main(["--out", str(taken)]) == EXIT_USAGE
    assert f"--out {taken}: cannot make the log folder" in capsys.readouterr().err


def test_a_metrics_port_in_use_is_one_line(tmp_path: Path) -> None:
    """--metrics-port on a port another program holds: one line naming it, exit 1 (was an
    'internal error' with a traceback)."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _run(["--hands", "2", "--metrics-port", str(port), "--quiet", "--out", str(tmp_path / "logs")],
                    tmp_path)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    assert f"127.0.0.1:{port}" in done.stderr and "in use" in done.stderr


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
    assert "ETA 0:" in done.stderr and "\x1b[" not in done.stderr
    document = json.loads((tmp_path / "r.json").read_text())
    assert document["config"]["lbr"] == {"bets": "fcpa", "rounds": "3-4"}
    assert document["counts"]["hands"] == 40
    assert (out / "lbr-vs-python3.log").exists() or any(out.glob("*.log"))
    assert len(list(out.glob("opponent*.out"))) == 2


def test_opponent_cmd_naming_no_program_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """A command whose program does not exist is refused before any match starts."""
    assert main(["--opponent-cmd", "/nonexistent/bot {host} {port}"]) == EXIT_USAGE
    assert "no such program" in capsys.readouterr().err


def test_an_opponent_program_that_exits_at_start_ends_the_matches_at_once(tmp_path: Path) -> None:
    """Not after the 60 s start timeout, and not blamed on LBR: the one-line refusal names the
    exit and quotes the program's last words (its own error: the cause, where the user looks)."""
    out = tmp_path / "logs"
    bot = (f"{sys.executable} -c 'import sys; print(\"my_bot: cannot open model.bin\", file=sys.stderr); "
           f"sys.exit(3)' {{host}} {{port}}")
    done = _run(["--opponent-cmd", bot, "--hands", "10", "--out", str(out)], tmp_path)
    assert done.returncode != 0
    refusal = done.stderr.strip().splitlines()[-1]
    assert "no bound: no hand was played: the opponent program exited (status 3) before it connected" \
        in refusal, done.stderr
    assert "it said: 'my_bot: cannot open model.bin'" in refusal
    assert "the opponent program said" not in refusal  # quoted once
    assert "took no active decision" not in done.stderr
    assert "Traceback" not in done.stderr
    assert (out / "opponent0.out").exists() and (out / "opponent1.out").exists()


def test_an_opponent_program_started_for_another_game_is_pointed_to_its_output(tmp_path: Path) -> None:
    """A bot started with the wrong --game reads the first state, says why in its output and
    leaves; the refusal names that output (it said only 'seat 2 disconnected while acting')."""
    out = tmp_path / "logs"
    bot = f"{sys.executable} -m acpc_lbr.cli play call-raise {{host}} {{port}} --game leduc"
    done = _run(["--opponent-cmd", bot, "--hands", "10", "--out", str(out), "--quiet"], tmp_path)
    assert done.returncode != 0
    refusal = done.stderr.strip().splitlines()[-1]
    assert "no bound: no hand was played: seat" in refusal, done.stderr
    shown = re.search(r"the opponent program's output: (\S+\.out)\)", refusal)
    assert shown is not None, refusal
    assert "start the bot with the dealer's game (--game)" in Path(shown.group(1)).read_text()
    # ... and the refusal itself quotes it (the cause sat only in opponent0.out).
    assert "the opponent program said: " in refusal and "start the bot with the dealer's game (--game)" in refusal


# -- numbers that must be refused, and counts that must agree (issue 13) ----------------------

LEDUC = load_game("leduc")
BROKEN_BOT = REPO / "tests" / "data" / "bots" / "broken_answers.py"
LIAR_BOT = REPO / "tests" / "data" / "bots" / "king_liar.py"


def test_default_rounds_are_the_games_last_two() -> None:
    """--rounds defaults to the game's last two rounds: 3-4 in hold'em, 1-2 (all) in Leduc."""
    assert config_from_args(_parser().parse_args([])).rounds == ActiveRounds(2, 3)
    assert config_from_args(_parser().parse_args(["--game", "leduc"])).rounds == ActiveRounds(0, 1)
    assert config_from_args(_parser().parse_args(["--game", "kuhn"])).rounds == ActiveRounds(0, 0)


def test_rounds_outside_the_game_are_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """Leduc has two rounds: --rounds 3-4 is refused before anything starts."""
    assert main(["--game", "leduc", "--rounds", "3-4"]) == EXIT_USAGE
    assert "beyond the last round" in capsys.readouterr().err


@pytest_twisted.ensureDeferred
async def test_no_active_decision_is_no_bound(tmp_path: Path) -> None:
    """LBR active only in a round the hands never reach (as the old default in Leduc): no bound (EXIT_NO_BOUND)."""
    cfg = config(tmp_path, "random", hands=30, game="leduc")
    cfg = EvaluationConfig(**{**cfg.__dict__, "rounds": ActiveRounds(3, 3)})
    evaluation = await evaluate(cfg)
    assert evaluation.timing.decisions == 0
    assert evaluation.refusal is not None and "no active decision" in evaluation.refusal
    assert evaluation.exit_code == EXIT_NO_BOUND
    report = format_report(evaluation)
    assert "NO BOUND" in report and "lower bound" not in report


@pytest_twisted.ensureDeferred
async def test_failed_lbr_queries_are_no_bound(tmp_path: Path) -> None:
    """An opponent that plays but fails every range query: the failures are reported, no bound (EXIT_NO_BOUND)."""
    import importlib.util

    from agents.client import StrategyBot, seeded_rng

    spec = importlib.util.spec_from_file_location("broken_answers", BROKEN_BOT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    cfg = config(tmp_path, "always-call", hands=20, game="leduc", rounds="1-2")
    evaluation = await evaluate(cfg, make_opponent=lambda half: StrategyBot(LEDUC, module.strategy, seeded_rng(half)))
    sent, failed = evaluation.lbr_queries
    assert sent > 0 and failed == sent
    assert evaluation.exit_code == EXIT_NO_BOUND
    assert evaluation.refusal is not None and f"{failed} of {sent} LBR range queries failed" in evaluation.refusal
    report = format_report(evaluation)
    assert f"LBR range queries: {sent} sent, {failed} failed (100.0%)" in report
    assert "NO BOUND" in report and "lower bound" not in report


def test_cli_refuses_a_bound_for_a_bot_whose_queries_fail(tmp_path: Path) -> None:
    """The CLI: EXIT_NO_BOUND, the reason on stderr, no JSON, the logs kept; the bot is named after its file
    and the header shows the command as launched (ports filled in)."""
    bot = f"{sys.executable} -m acpc_lbr.cli play {BROKEN_BOT}:strategy {{host}} {{port}} --game leduc"
    out = tmp_path / "logs"
    done = _run(["--game", "leduc", "--opponent-cmd", bot, "--hands", "20", "--out", str(out),
                 "--json", str(tmp_path / "r.json"), "--quiet"], tmp_path)
    assert done.returncode == EXIT_NO_BOUND, done.stderr
    assert "no bound" in done.stderr and "LBR range queries failed" in done.stderr
    assert "NO BOUND" in done.stdout and "lower bound" not in done.stdout
    assert not (tmp_path / "r.json").exists()
    assert (out / "lbr-vs-broken_answers.log").exists() and (out / "lbr-vs-broken_answers.dup.log").exists()
    assert "vs broken_answers in leduc" in done.stdout
    launched = [l for l in done.stdout.splitlines() if "command:" in l]
    assert len(launched) == 2 and all("{port}" not in l and "127.0.0.1" in l for l in launched)


async def _evaluate_test_bot(tmp_path: Path, bot_file: Path, hands: int, name: str = "strategy") -> Any:
    """An in-process Leduc evaluation with AIVAT (rounds 1-2) against the SDK strategy ``name`` of ``bot_file``."""
    import importlib.util

    from agents.client import StrategyBot, seeded_rng

    spec = importlib.util.spec_from_file_location(bot_file.stem, bot_file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    cfg = config(tmp_path, "always-call", hands=hands, game="leduc", rounds="1-2")
    cfg = EvaluationConfig(**{**cfg.__dict__, "aivat": True})
    strategy = getattr(module, name)
    return await evaluate(cfg, make_opponent=lambda half: StrategyBot(LEDUC, strategy, seeded_rng(half)))


@pytest_twisted.ensureDeferred
async def test_answers_proven_false_give_no_io_or_aivat_bound(tmp_path: Path) -> None:
    """Before: against a bot that raises with kings but answers 'always call', evaluate printed AIVAT
    +757 ± 98 mbb/g (300 deals, seed 1) beside duplicate +1530 ± 324, the report's headline was
    AIVAT, and the honesty check (p = 0.0012) did not flag it, though the dealer had counted 224
    range inconsistencies: proof that the answers IO and AIVAT rest on are not the bot's play."""
    from acpc_lbr.app.report import headline

    evaluation = await _evaluate_test_bot(tmp_path, LIAR_BOT, hands=60)
    assert evaluation.document is not None and evaluation.document["counts"]["range_inconsistencies"] > 0
    report = format_report(evaluation)
    assert "proven false" in report
    assert not any(line.strip().startswith(("io ", "duplicate_io", "aivat ", "duplicate_aivat")) for line in
                   report.splitlines())
    assert headline(evaluation.document) in ("raw", "duplicate")


@pytest_twisted.ensureDeferred
async def test_answers_refused_as_not_a_strategy_prove_the_answers_false(tmp_path: Path) -> None:
    """A bot that answers a third for each action, fold included when it is not legal, gives
    answers over every legal action that sum to 2/3: refused as not a strategy, they were
    query errors only, and IO (honesty p = 0.1) stayed a bound on the same bot's answers.
    Each hand so refused is a proof, counted with the range inconsistencies, live and from
    the files alike, and IO and AIVAT are no bound."""
    from acpc_lbr.results import results_from_files

    evaluation = await _evaluate_test_bot(tmp_path, REPO / "tests" / "data" / "bots" / "uniform_liar.py", hands=60,
                                          name="thirds")
    assert evaluation.document is not None
    counts = evaluation.document["counts"]
    assert counts["range_inconsistencies"] > 0 and counts["query_errors"] >= counts["range_inconsistencies"]
    offline = results_from_files(sorted(evaluation.config.out.glob("*.log")))
    assert offline["counts"]["range_inconsistencies"] == counts["range_inconsistencies"]
    report = format_report(evaluation)
    assert "proven false" in report
    assert not any(line.strip().startswith(("io ", "duplicate_io", "aivat ", "duplicate_aivat"))
                   for line in report.splitlines())


@pytest_twisted.ensureDeferred
async def test_an_estimator_whose_honesty_check_is_flagged_is_no_bound(tmp_path: Path) -> None:
    """Before: with AIVAT's check flagged (p = 4e-9: a bot that plays by its cards and answers
    uniformly), evaluate still listed AIVAT +2,000 mbb/g, twice the duplicate figure, as a lower bound."""
    evaluation = await _evaluate_test_bot(tmp_path, REPO / "tests" / "data" / "bots" / "uniform_liar.py", hands=800)
    assert evaluation.document is not None
    estimators = evaluation.document["estimators"]
    assert estimators["aivat_minus_raw"]["flagged"] and not estimators["io_minus_raw"]["flagged"]
    lines = format_report(evaluation).splitlines()
    assert [line.split()[0] for line in lines if "no bound: its honesty check is flagged" in line] == [
        "aivat", "duplicate_aivat"]
    assert any(line.strip().startswith("io ") and "[" in line for line in lines)


def test_opponent_name_option(tmp_path: Path) -> None:
    """--opponent-name names the files; a bad name is a usage error."""
    assert config_from_args(_parser().parse_args(["--opponent-name", "champ"])).opponent_name == "champ"
    for bad in ("lbr", "a b", "x|y", ""):
        with pytest.raises(ValueError, match="--opponent-name"):
            config_from_args(_parser().parse_args(["--opponent-name", bad]))


@pytest.mark.parametrize("io", [True, False])
@pytest_twisted.ensureDeferred
async def test_document_counts_equal_the_results_command_on_the_same_files(tmp_path: Path, io: bool) -> None:
    """evaluate's JSON and `acpc-lbr results` on its logs agree on hands, showdowns, dealer queries,
    IO fallbacks and range inconsistencies, and on every estimator; the printed query total is the JSON's."""
    from acpc_lbr.results import dumps
    from acpc_lbr.results import results_from_files

    cfg = config(tmp_path, "random", hands=120, game="leduc", rounds="1-2")
    cfg = EvaluationConfig(**{**cfg.__dict__, "io": io})
    evaluation = await evaluate(cfg)
    assert evaluation.exit_code == 0
    doc = evaluation.document
    offline = results_from_files(sorted(cfg.out.glob("*.log")))
    for key in ("hands", "showdowns", "dealer_queries", "io_fallbacks", "range_inconsistencies"):
        assert doc["counts"][key] == offline["counts"][key], key
    assert doc["counts"]["showdowns"] > 20
    assert (doc["counts"]["dealer_queries"] > 0) == io
    assert dumps(doc["estimators"]) == dumps(offline["estimators"])
    report = format_report(evaluation)
    assert f"counts: {doc['counts']['queries']} range queries reached the opponent" in report
    assert f"{doc['counts']['showdowns']} showdowns" in report
    # evaluate --io prints the honesty check, with its statistic and p-value.
    honesty = [l for l in report.splitlines() if l.startswith("honesty check")]
    assert len(honesty) == (1 if io else 0)
    if io:
        assert "z = " in honesty[0] and "p = " in honesty[0]


@pytest_twisted.ensureDeferred
async def test_report_columns_line_up_with_aivat(tmp_path: Path) -> None:
    """Every estimator line, ``duplicate_aivat`` (the longest name) included, has its ± in the same column."""
    cfg = dataclasses.replace(config(tmp_path, "always-fold", hands=6), aivat=True)
    evaluation = await evaluate(cfg)
    assert evaluation.exit_code == 0
    report = format_report(evaluation)
    lines = [line for line in report.splitlines() if " ± " in line and line.startswith("  ")]
    assert [line.split()[0] for line in lines] == ["raw", "duplicate", "io", "duplicate_io", "aivat", "duplicate_aivat"]
    assert len({line.index(" ± ") for line in lines}) == 1, report


@pytest.mark.parametrize("aivat", [False, True])
@pytest_twisted.ensureDeferred
async def test_the_mirror_in_its_own_process_gives_the_same_figures(tmp_path: Path, aivat: bool) -> None:
    """split=True (the mirrored seating in a process of its own, the CLI's default) measures exactly
    what one process measures: estimators, pairs, counts and LBR's query counts, to the last bit."""
    from acpc_lbr.results import dumps

    base = dataclasses.replace(config(tmp_path, "call-raise", hands=40, rounds="2-4"), aivat=aivat)
    one = await evaluate(dataclasses.replace(base, out=tmp_path / "one"))
    two = await evaluate(dataclasses.replace(base, out=tmp_path / "two"), split=True)
    assert one.exit_code == two.exit_code == 0
    assert one.pairs == two.pairs and len(two.pairs) == 40
    assert dumps(one.document["estimators"]) == dumps(two.document["estimators"])
    # The running estimate in the canonical order too, though the mirror's hands come from afar.
    assert dumps(one.document["trajectory"]) == dumps(two.document["trajectory"])
    assert one.document["counts"] == two.document["counts"]
    assert one.document["counts"]["dealer_queries"] > 0 and one.document["counts"]["queries"] > 100
    assert one.document["config"]["matches"] == [str(tmp_path / "one" / m) for m in
                                                 ("lbr-vs-call-raise", "lbr-vs-call-raise.dup")]
    assert [Path(m).name for m in two.document["config"]["matches"]] == ["lbr-vs-call-raise", "lbr-vs-call-raise.dup"]
    for key in ("queries_sent", "decisions", "passive", "query_errors", "errors"):
        assert getattr(one.timing, key) == getattr(two.timing, key), key
    assert two.timing.queries_sent > 100
    def relay_counts(evaluation: Evaluation) -> list[list[tuple[int, int, int, dict[str, int]]]]:
        return [[(c.answered, c.relayed, c.refused, c.failed) for c in seats] for seats in evaluation.relay]

    assert relay_counts(one) == relay_counts(two) and len(two.relay) == 2
    assert [r.hand_values for r in one.results] == [r.hand_values for r in two.results]
    assert (tmp_path / "two" / "lbr-vs-call-raise.dup.log").read_text().splitlines()[-1] == \
        (tmp_path / "one" / "lbr-vs-call-raise.dup.log").read_text().splitlines()[-1]
    assert set(two.breakdown) == set(one.breakdown) and two.breakdown["lbr_compute_seconds"] > 0


@pytest_twisted.ensureDeferred
async def test_a_mirror_process_that_dies_is_a_failed_match_named_as_such(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A mirror process that exits without its results fails the evaluation (no bound), saying so;
    the seating played here is kept."""
    from acpc_lbr.app import seating

    monkeypatch.setattr(seating, "CHILD", [sys.executable, "-c", "import sys; sys.exit(3)"])
    evaluation = await evaluate(config(tmp_path, "call-raise", hands=10), split=True)
    assert evaluation.exit_code != 0
    mirror = evaluation.results[1]
    assert mirror.exit_code != 0 and "mirrored seating's process ended (status 3)" in (mirror.message or "")
    assert evaluation.results[0].hands_played == 10
    assert "ended early" in format_report(evaluation)


#: ``acpc-lbr evaluate --hands 200 --seed 5 --json`` as written before the results
#: document's sections got their types (commit d51766b): the estimators and counts
#: in full, the trajectory by the SHA-256 of its JSON text (it is 350 KB). The honesty
#: checks' blocks were recorded again when they came to test duplicate pairs with their
#: exact sums (issue 34): every other figure is the one of d51766b. Every sample's printed
#: interval (``low_95``, ``high_95``, skewness-corrected) and exact Σx³, Σx⁴ were added later
#: (issue 34); with them left out the estimators are the same JSON text as before. Recorded again
#: (``acpc-lbr evaluate --hands 200 --seed 5 --json``) when the estimators over hands took their
#: interval within seats (issue 34): raw, IO and AIVAT gained ``by_seat`` and their ``half_width_95``,
#: ``low_95`` and ``high_95`` changed (and the trajectory's hash with them); every other figure is the same.
GOLDEN_DOCUMENT = REPO / "tests" / "data" / "results" / "evaluate-hands200-seed5.json"


def test_evaluate_json_is_byte_identical_to_the_recorded_document(tmp_path: Path) -> None:
    """The typed estimator and trajectory sections write the same JSON text as the untyped ones did."""
    done = _run(["--hands", "200", "--seed", "5", "--out", str(tmp_path / "logs"),
                 "--json", str(tmp_path / "r.json"), "--quiet"], tmp_path)
    assert done.returncode == 0, done.stderr
    written = json.loads((tmp_path / "r.json").read_text())
    golden = json.loads(GOLDEN_DOCUMENT.read_text())
    trajectory_text = json.dumps(written["trajectory"], indent=2, allow_nan=False)
    for key in ("schema", "version", "big_blind", "estimators", "counts"):
        assert json.dumps(written[key], indent=2) == json.dumps(golden[key], indent=2), key
    assert hashlib.sha256(trajectory_text.encode()).hexdigest() == golden["trajectory_sha256"]


class _FakeProcess:
    """An opponent process for _wind_down: its seat connected or not; it exits when stopped
    (SIGTERM) or killed at the end of the grace."""

    def __init__(self, clock: Any, connected: bool) -> None:
        from twisted.internet import defer

        self.clock = clock
        self.was_connected = connected
        self.ended: Any = defer.Deferred()
        self.stopped_at: float | None = None
        self.ended_at: float | None = None

    def connected(self) -> bool:
        return self.was_connected

    def stop(self) -> None:
        self.stopped_at = self.clock.seconds()
        self.clock.callLater(0.1, self._end)

    def _end(self) -> None:
        if not self.ended.called:
            self.ended_at = self.clock.seconds()
            self.ended.callback(0)

    async def finish(self, reactor: Any, grace: float) -> None:
        reactor.callLater(grace, self._end)  # the kill
        await self.ended


def test_wind_down_stops_a_program_that_never_connected_and_waits_for_all_at_once() -> None:
    """An opponent program that never connected would not see the match end: it is asked to
    stop at once, not given the grace; the others' graces run side by side (an evaluation
    whose opponent never connected took the start timeout plus one grace per program)."""
    from twisted.internet import defer
    from twisted.internet.task import Clock

    from acpc_lbr.app.evaluate.run import EXIT_GRACE_SECONDS, _wind_down

    clock = Clock()
    silent, slow, other_slow = _FakeProcess(clock, False), _FakeProcess(clock, True), _FakeProcess(clock, True)
    done = defer.Deferred.fromCoroutine(_wind_down(clock, [slow, silent, other_slow], []))  # type: ignore[arg-type]
    assert silent.stopped_at == 0 and slow.stopped_at is None and other_slow.stopped_at is None
    clock.advance(0.1)
    assert silent.ended_at == 0.1 and not done.called
    clock.advance(EXIT_GRACE_SECONDS)
    assert slow.ended_at == other_slow.ended_at == EXIT_GRACE_SECONDS + 0.1
    assert done.called


@pytest.mark.parametrize("keep", [False, True])
def test_the_default_log_folder_goes_after_a_bound_unless_kept(tmp_path: Path, keep: bool) -> None:
    """Without --out the logs go to $TMPDIR/acpc-lbr-evaluate-*: removed after a run that gave its
    bound (each run left several MB in /tmp forever), kept with --keep-logs; the last line says
    which, with the path. (A failed run keeps them: the tests above read opponent0.out there.)"""
    env = dict(os.environ, PYTHONPATH=str(REPO), TMPDIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-m", "acpc_lbr.cli", "evaluate", "--game", "leduc", "--hands", "20",
                           "--quiet", *(["--keep-logs"] if keep else [])],
                          check=False, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    last = done.stdout.strip().splitlines()[-1]
    folders = list(tmp_path.glob("acpc-lbr-evaluate-*"))
    if keep:
        assert len(folders) == 1 and last == f"logs: {folders[0]}"
        assert list(folders[0].glob("*.log"))
    else:
        assert folders == [] and last.startswith(f"logs: removed ({tmp_path}/acpc-lbr-evaluate-")
        assert "--keep-logs" in last

"""-T transaction log and -a resume: a broken match, resumed, ends as an unbroken one."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest_twisted

from acpc_lbr.runtime.exit_codes import EXIT_BOT_FAILURE, EXIT_FAILED, EXIT_OK
from tests.dealer.bots import REFERENCE, Misbehave, TestBot, actions_from_log, replay_strategy
from tests.dealer.harness import MemoryTable, call_bots, log_lines, make_config, play

NL_GAME = "holdem.nolimit.2p.reverse_blinds.game"


@pytest_twisted.ensureDeferred
async def test_resume_reproduces_reference_probe(in_tmp: Path) -> None:
    """Resuming the reference's broken R_resume run gives the reference's final .log byte for byte."""
    probes = REFERENCE / "probes"
    shutil.copy(probes / "R_resume.log.firstrun", "R_resume.log")
    shutil.copy(probes / "R_resume.tlog.firstrun", "R_resume.tlog")
    config = make_config("R_resume", NL_GAME, hands=4, seed=7, t_response_ms=300,
                         write_tlog=True, resume=True)
    bots = call_bots(config)
    result = await play(config, bots)
    assert result.exit_code == EXIT_OK
    assert Path("R_resume.log").read_text() == (probes / "R_resume.log").read_text()
    # The first states sent are mid-hand, as in the reference's resumed trace.
    assert bots[0].received[0] == "MATCHSTATE:1:1:cc/r300c/:|7h5d/As5cAh/Qh"
    assert bots[1].received[0] == "MATCHSTATE:0:1:cc/r300c/:Jc6c|/As5cAh/Qh"
    ours = [line.split()[:2] for line in Path("R_resume.tlog").read_text().splitlines()]
    theirs = [line.split()[:2] for line in (probes / "R_resume.tlog").read_text().splitlines()]
    assert ours == theirs


def _mid_hand_break(actions: dict[int, list[str]]) -> int:
    """An even hand (seat 1 is the big blind) that seat 1 joins after the button acted."""
    return next(h for h in range(10, 40, 2) if actions[h][0] != "f")


@pytest_twisted.ensureDeferred
async def test_broken_and_resumed_match_scores_as_unbroken(in_tmp: Path) -> None:
    """A match broken mid-hand by a disconnect and resumed with -a -T gives the straight run's SCORE."""
    actions = actions_from_log(REFERENCE / "logs" / "nl1000.log")
    hands = 40
    straight = make_config("straight", NL_GAME, hands=hands, seed=42, names=("p1", "p2"))
    expected = await play(straight, [TestBot(straight.game, replay_strategy(actions)) for _ in range(2)])
    assert expected.exit_code == EXIT_OK

    broken_at = _mid_hand_break(actions)
    config = make_config("m", NL_GAME, hands=hands, seed=42, names=("p1", "p2"), write_tlog=True)
    bots = [TestBot(config.game, replay_strategy(actions), misbehave_at={(broken_at, "turn"): Misbehave("close")}),
            TestBot(config.game, replay_strategy(actions))]
    first = await play(config, bots)
    assert first.exit_code == EXIT_BOT_FAILURE and first.hands_played == broken_at
    tlog_hands = {int(line.split()[1]) for line in Path("m.tlog").read_text().splitlines()}
    assert broken_at in tlog_hands  # the tlog stopped mid-hand

    resumed_config = make_config("m", NL_GAME, hands=hands, seed=42, names=("p1", "p2"),
                                 write_tlog=True, resume=True)
    resumed_bots = [TestBot(config.game, replay_strategy(actions)) for _ in range(2)]
    resumed = await play(resumed_config, resumed_bots)
    assert resumed.exit_code == EXIT_OK
    assert resumed.score_line() == expected.score_line()
    assert log_lines(resumed_config)[-1] == expected.score_line()
    states = [line for line in log_lines(resumed_config) if line.startswith("STATE:")]
    assert states == [line for line in log_lines(straight) if line.startswith("STATE:")]
    assert resumed_bots[0].received[0].split(":")[2] == str(broken_at)


@pytest_twisted.ensureDeferred
async def test_resume_of_a_finished_hand_boundary(in_tmp: Path) -> None:
    """A tlog that ends between hands resumes at the next hand; nothing is logged twice."""
    config = make_config("b", hands=8, write_tlog=True)
    bots = [TestBot(config.game), TestBot(config.game, misbehave_at={(5, "any"): Misbehave("close")})]
    first = await play(config, bots)
    assert first.hands_played == 5
    resumed_config = make_config("b", hands=8, write_tlog=True, resume=True)
    resumed = await play(resumed_config, call_bots(resumed_config))
    assert resumed.exit_code == EXIT_OK and resumed.hands_played == 8
    ids = [int(line.split(":")[1]) for line in log_lines(resumed_config) if line.startswith("STATE:")]
    assert ids == list(range(8))



def test_resume_refuses_a_tlog_with_a_bad_action(in_tmp: Path) -> None:
    """A tlog line whose action is not one action of the game is a startup failure naming file and line."""
    Path("m.tlog").write_text("c 0 1.0 1.1\nr 0 1.2 1.3\n")
    table = MemoryTable(make_config("m", NL_GAME, hands=4, seed=42, write_tlog=True, resume=True))
    assert table.done.called
    result = table.done.result
    assert (result.exit_code, result.cause) == (EXIT_FAILED, "startup")
    assert "m.tlog:2:" in result.message and "raise" in result.message

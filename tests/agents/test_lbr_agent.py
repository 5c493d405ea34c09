"""The networked LBR agent in memory: what it asks, when it answers, how its range follows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from twisted.internet.testing import StringTransport

from acpc_lbr.lbr import ActiveRounds, BettingOptions, LbrPlayer
from acpc_lbr.runtime.exit_codes import EXIT_NOT_QUERYABLE
from agents.client import BotFactory
from agents.lbr import LbrAgent, make_lbr_player
from agents.players import PLAYERS
from protocol.cards import cards_from_text
from protocol.gamedef import load_game
from protocol.rules import Action, State

LEDUC = load_game("leduc")
REPO = Path(__file__).resolve().parents[2]


def agent(rounds: str = "1-4", bets: str = "fcpa") -> tuple[LbrAgent, StringTransport]:
    """An LBR agent on an in-memory transport (VERSION cleared). In Leduc position 0 acts first."""
    lbr = LbrAgent(LEDUC, BettingOptions.parse(bets), ActiveRounds.parse(rounds), announce_fatal=False)
    transport = StringTransport()
    lbr.makeConnection(transport)
    transport.clear()
    return lbr, transport


def written(transport: StringTransport) -> list[str]:
    """Lines the agent wrote since the last call."""
    data = transport.value().decode()
    transport.clear()
    return data.split("\r\n")[:-1] if data else []


def send(lbr: LbrAgent, *lines: str) -> None:
    """Lines from the dealer."""
    lbr.dataReceived("".join(f"{line}\r\n" for line in lines).encode())


def row(values: list[float]) -> str:
    """One answer row."""
    return ",".join(repr(v) for v in values)


def test_outside_the_active_rounds_it_calls_without_asking() -> None:
    """Rounds 2-2 only: in round 1 the agent calls at once and sends no query."""
    lbr, transport = agent(rounds="2")
    send(lbr, "MATCHSTATE:1:4:r:|Ks")
    assert written(transport) == ["MATCHSTATE:1:4:r:|Ks:c"]
    assert lbr.timing.passive == 1 and lbr.timing.queries_sent == 0


def test_an_active_decision_asks_one_batch_then_decides_like_lbr_player() -> None:
    """One pipelined batch (the opponent's raise; fold after the re-raise); the action equals LbrPlayer's."""
    lbr, transport = agent()
    send(lbr, "MATCHSTATE:1:4:r:|Ks")
    queries = written(transport)
    assert queries == ["QUERY:l1:0:4::|:r", "QUERY:l2:0:4:rr:|:f"]
    raise_sigma = [0.0, 0.2, 0.9, 0.0, 0.5, 0.5]  # hand 3 (Ks) is LBR's own card
    fold_sigma = [1.0, 0.8, 0.1, 0.0, 0.0, 0.0]
    send(lbr, f"RANGE:l2:f={row(fold_sigma)}")  # answers may come in any order
    assert written(transport) == []  # still waiting for the first answer
    send(lbr, f"RANGE:l1:r={row(raise_sigma)}")
    (reply,) = written(transport)
    # The slow twin: the same decision from LbrPlayer fed by hand.
    twin = LbrPlayer(LEDUC, BettingOptions.parse("fcpa"), ActiveRounds.parse("1-4"))
    twin.start_hand(1, cards_from_text("Ks"))
    twin.observe_opponent(raise_sigma)
    state = State(LEDUC, 4)
    state.apply(Action.RAISE)
    expected = twin.decide(state, (), {Action.RAISE: np.array(fold_sigma)})
    assert reply == f"MATCHSTATE:1:4:r:|Ks:{expected.action.text()}"
    np.testing.assert_allclose(lbr.player.range, twin.range)
    assert lbr.player.range[0] == 0.0 and lbr.player.range[3] == 0.0
    assert lbr.timing.decisions == 1 and lbr.timing.queries_sent == 2


def test_passive_rounds_are_caught_up_at_the_next_active_decision() -> None:
    """Rounds 2-2: the round-1 opponent actions are asked (as prefixes) when LBR first acts in round 2."""
    lbr, transport = agent(rounds="2")
    send(lbr, "MATCHSTATE:1:4:r:|Ks")
    assert written(transport) == ["MATCHSTATE:1:4:r:|Ks:c"]
    send(lbr, "MATCHSTATE:1:4:rc/:|Ks/Qh", "MATCHSTATE:1:4:rc/r:|Ks/Qh")
    queries = written(transport)
    assert queries == ["QUERY:l1:0:4::|:r", "QUERY:l2:0:4:rc/:|/Qh:r", "QUERY:l3:0:4:rc/rr:|/Qh:f"]
    send(lbr, f"RANGE:l1:r={row([0, 1, 1, 0, 0.5, 0.5])}",
         f"RANGE:l2:r={row([0, 1, 0.5, 0, 1, 1])}",
         f"RANGE:l3:f={row([0] * 6)}")
    (reply,) = written(transport)
    assert reply.startswith("MATCHSTATE:1:4:rc/r:|Ks/Qh:")
    # Range: uniform over {Qs, Kh, Ah, As} (Qh on the board, Ks held) times both answers.
    expected = np.array([0, 1, 0.5, 0, 0.5, 0.5])
    np.testing.assert_allclose(lbr.player.range, expected / expected.sum())


def test_a_new_hand_starts_a_fresh_range() -> None:
    """The next hand's first state resets the range to uniform over hands compatible with the new card."""
    lbr, transport = agent(rounds="2")
    send(lbr, "MATCHSTATE:1:4:r:|Ks")
    written(transport)
    send(lbr, "MATCHSTATE:0:5::Ah|")
    assert lbr.player.range[4] == 0.0
    assert lbr.player.range.sum() == pytest.approx(1.0)
    assert np.count_nonzero(lbr.player.range) == 5


def test_a_query_error_drops_that_raise_and_play_goes_on() -> None:
    """A QUERYERROR for a candidate raise's query: the raise is not considered; LBR still answers."""
    lbr, transport = agent()
    send(lbr, "MATCHSTATE:1:4:r:|Ks")
    written(transport)
    send(lbr, f"RANGE:l1:r={row([0, 1, 1, 0, 1, 1])}", "QUERYERROR:l2:no answer within t_query 10000 ms")
    (reply,) = written(transport)
    assert reply.rsplit(":", 1)[1] in ("c", "f")  # no raise without its fold probabilities
    assert lbr.timing.query_errors == 1 and lbr.fatal is None


def test_many_failed_queries_are_counted_not_logged_one_by_one(caplog: pytest.LogCaptureFixture) -> None:
    """Hands where every query fails: all are counted, only the first few are logged."""
    from agents.lbr import LOGGED_QUERY_FAILURES

    lbr, transport = agent()
    for hand in range(6):
        send(lbr, f"MATCHSTATE:1:{hand}:r:|Ks")
        queries = [line.split(":")[1] for line in written(transport)]
        send(lbr, *(f"QUERYERROR:{qid}:the bot could not answer: broken" for qid in queries))
        written(transport)
    assert lbr.timing.query_errors == 12
    assert lbr.timing.errors == {"the bot could not answer": 12}
    logged = [r for r in caplog.records if "range query failed" in r.getMessage()]
    assert len(logged) == LOGGED_QUERY_FAILURES


def test_an_opponent_that_does_not_answer_queries_ends_the_agent_with_status_3() -> None:
    """QUERYERROR 'not queryable': the agent gives up, closes, and its factory reports EXIT_NOT_QUERYABLE."""
    lbr, transport = agent()
    factory = BotFactory(lambda: lbr)
    lbr.factory = factory
    statuses: list[Any] = []
    factory.done.addCallback(statuses.append)
    send(lbr, "MATCHSTATE:1:4:r:|Ks")
    written(transport)
    send(lbr, "QUERYERROR:l1:not queryable", "QUERYERROR:l2:not queryable")
    assert lbr.fatal is not None and "range queries" in lbr.fatal
    assert statuses == [EXIT_NOT_QUERYABLE]
    assert transport.disconnecting


def test_play_registry_knows_lbr_and_its_options() -> None:
    """'acpc-lbr play lbr … --bets B --rounds R' builds an LbrAgent; unknown options are refused."""
    assert PLAYERS["lbr"] is make_lbr_player
    built = make_lbr_player(LEDUC, None, ["--bets", "fc", "--rounds", "2-2"])
    assert built.player.options.name == "fc"
    assert built.player.active_rounds == ActiveRounds(1, 1)
    with pytest.raises(ValueError, match="unrecognised"):
        make_lbr_player(LEDUC, None, ["--colour", "red"])
    with pytest.raises(ValueError):
        make_lbr_player(LEDUC, None, ["--rounds", "9"])


def test_play_lbr_as_a_process_against_the_dealer_and_always_fold(tmp_path: Path) -> None:
    """'acpc-lbr play lbr' beside 'play always-fold' under 'acpc-lbr dealer': +50 as big blind, +100 as small."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    cli = [sys.executable, "-m", "acpc_lbr.cli"]
    dealer = subprocess.Popen([*cli, "dealer", "m", "nolimit", "20", "1", "lbr", "bot", "-q"],
                              cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    try:
        assert dealer.stdout is not None
        ports = dealer.stdout.readline().split()
        lbr = subprocess.Popen([*cli, "play", "lbr", "127.0.0.1", ports[0], "--game", "nolimit",
                                "--bets", "fcpa", "--rounds", "3-4", "--timing", "t.json"],
                               cwd=tmp_path, env=env)
        bot = subprocess.Popen([*cli, "play", "always-fold", "127.0.0.1", ports[1], "--game", "nolimit"],
                               cwd=tmp_path, env=env)
        output, errors = dealer.communicate(timeout=120)
        assert lbr.wait(timeout=30) == 0 and bot.wait(timeout=30) == 0
    finally:
        for process in (dealer,):
            if process.poll() is None:
                process.kill()
    assert dealer.returncode == 0, errors
    assert output.strip().splitlines()[-1] == "SCORE:1500|-1500:lbr|bot"  # 10 x 50 + 10 x 100
    timing = json.loads((tmp_path / "t.json").read_text())
    assert timing["active_decisions"] == 10 and timing["queries_sent"] > 0

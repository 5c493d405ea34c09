"""The probe adapter: answers built from probing copies of a plain bot.

A scripted dealer (loopback, 127.0.0.1) sends the adapter one state and
queries; the bot copies are SDK bots connected in-process, so the exact
answer is known: a deterministic card-aware bot's probed answer must equal
its exact one, a random bot's must lie within sampling error of it, the
playing copy's replies reach the dealer verbatim, and a copy that dies on a
probe turns the query into a RANGEERROR while the adapter goes on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import pytest_twisted
from twisted.internet import defer, protocol
from twisted.internet.endpoints import TCP4ClientEndpoint, TCP4ServerEndpoint
from twisted.protocols.basic import LineReceiver

from agents.bots import BOTS
from agents.client import StrategyBot
from agents.probe import ProbeAdapter, fill_command, run_adapter
from agents.sdk import Mix, Policy, PublicView
from protocol.gamedef import GameDef, load_game
from protocol.rangecodec import decode_answer
from protocol.rangequery import parse_query
from protocol.rules import Action

LEDUC = load_game("leduc")
REPO = Path(__file__).resolve().parents[2]


def threshold(view: PublicView) -> Policy:
    """Card-aware and deterministic: raise with an ace, call with a king, fold a queen to a bet."""
    ranks = LEDUC.hand_cards[:, 0] // 4 - 10  # Q=0, K=1, A=2 in Leduc's 6-card deck
    raise_ok = view.can_raise
    ace = (ranks == 2).astype(float)
    king = (ranks == 1).astype(float)
    queen = (ranks == 0).astype(float)
    weights: dict[Any, Any] = {}
    if raise_ok:
        weights[Action.RAISE] = ace
        weights[Action.CALL] = king + (0.0 if view.can_fold else queen)
    else:
        weights[Action.CALL] = ace + king + (0.0 if view.can_fold else queen)
    if view.can_fold:
        weights[Action.FOLD] = queen
    return Mix(weights)


class ScriptedDealer(LineReceiver):
    """Sends the adapter a state and then queries; collects what comes back."""

    delimiter = b"\n"
    MAX_LENGTH = 1 << 20  # hold'em answers are long

    def __init__(self, script: list[str], expected_replies: int) -> None:
        self.script = script
        self.replies: list[str] = []
        self.expected = expected_replies
        self.done: defer.Deferred[list[str]] = defer.Deferred()

    def lineReceived(self, line: bytes) -> None:
        text = line.rstrip(b"\r").decode()
        if text.startswith("# range-query "):
            self.sendLine(b"# range-query-version 2")
            for item in self.script:
                self.sendLine(item.encode())
            return
        if text.startswith(("VERSION", "#")):
            return
        self.replies.append(text)
        if len(self.replies) == self.expected and not self.done.called:
            self.done.callback(self.replies)
            self.transport.loseConnection()  # type: ignore[attr-defined]


async def run_probe(strategies: list[Any], script: list[str], expected: int,
                    samples: int = 40, game: GameDef = LEDUC,
                    launch: Callable[[int], Any] | None = None,
                    probe_timeout: float = 20.0) -> tuple[list[str], ProbeAdapter]:
    """Run the adapter in front of a scripted dealer; the copies are ``strategies`` (SDK
    strategies or ready protocols, connected in-process) or whatever ``launch(port)`` starts."""
    from twisted.internet import reactor

    dealer = ScriptedDealer(script, expected)
    listening = await TCP4ServerEndpoint(reactor, 0, interface="127.0.0.1").listen(
        protocol.Factory.forProtocol(lambda: dealer))
    adapter = ProbeAdapter(game, samples=samples, instances=len(strategies), reactor=reactor,
                           probe_timeout=probe_timeout)

    def connect(port: int) -> None:
        for index, strategy in enumerate(strategies):
            bot = strategy if isinstance(strategy, protocol.Protocol) else \
                StrategyBot(game, strategy, np.random.default_rng(index))
            defer.ensureDeferred(TCP4ClientEndpoint(reactor, "127.0.0.1", port).connect(
                protocol.Factory.forProtocol(lambda bot=bot: bot)))

    finished = defer.ensureDeferred(run_adapter(adapter, "127.0.0.1",
                                                listening.getHost().port, launch or connect))
    # Bounded: a lost reply fails the test in 60 s instead of hanging it.
    replies = await dealer.done.addTimeout(60, reactor)
    await finished.addTimeout(60, reactor)
    await listening.stopListening()
    return replies, adapter


def exact_rows(strategy: Any, query_line: str) -> np.ndarray:
    bot = StrategyBot(LEDUC, strategy, np.random.default_rng(0))
    query = parse_query(query_line, LEDUC)
    return decode_answer(bot.answer_query(query_line), query.actions, LEDUC.num_hands).rows


QUERY_PREFLOP = "QUERY:q1:1:0:r:|:f,c,r"
QUERY_FLOP = "QUERY:q2:0:0:cc/:|/Kh:c,r"


@pytest_twisted.ensureDeferred
async def test_deterministic_card_aware_bot_is_answered_exactly() -> None:
    state = "MATCHSTATE:0:0::Ah|"  # position 0 acts first in Leduc; the playing copy answers
    replies, adapter = await run_probe([threshold, threshold], [state, QUERY_PREFLOP, QUERY_FLOP],
                                       expected=3)
    action_reply = next(r for r in replies if r.startswith("MATCHSTATE"))
    assert action_reply == state + ":r"  # the playing copy's own action, verbatim
    for query_line in (QUERY_PREFLOP, QUERY_FLOP):
        query = parse_query(query_line, LEDUC)
        answer = next(r for r in replies if r.startswith(f"RANGE:{query.qid}:"))
        probed = decode_answer(answer, query.actions, LEDUC.num_hands)
        assert probed.version == 2
        np.testing.assert_array_equal(probed.rows, exact_rows(threshold, query_line))
    assert adapter.stats.probes == 40 * (6 + 5)  # the flop's Kh blocks one hand
    assert adapter.stats.max_standard_error == 0.0


@pytest_twisted.ensureDeferred
async def test_random_bot_is_answered_within_sampling_error() -> None:
    samples = 400
    replies, adapter = await run_probe([BOTS["random"]] * 3, [QUERY_PREFLOP], expected=1,
                                       samples=samples)
    query = parse_query(QUERY_PREFLOP, LEDUC)
    probed = decode_answer(replies[0], query.actions, LEDUC.num_hands).rows
    exact = exact_rows(BOTS["random"], QUERY_PREFLOP)
    error = np.sqrt(exact * (1 - exact) / samples)
    assert np.all(np.abs(probed - exact) <= 5 * error + 1e-12)
    assert not np.array_equal(probed, exact)  # sampled, not copied
    assert 0 < adapter.stats.max_standard_error <= 0.5 / np.sqrt(samples)


class DiesOnProbe(StrategyBot):
    """A copy that drops its connection on the first state it is sent."""

    def lineReceived(self, line: bytes) -> None:
        if line.startswith(b"MATCHSTATE"):
            self.transport.loseConnection()  # type: ignore[union-attr]
            return
        super().lineReceived(line)


@pytest_twisted.ensureDeferred
async def test_a_copy_that_crashes_on_a_probe_fails_the_query_not_the_match() -> None:
    dying = DiesOnProbe(LEDUC, BOTS["always-call"], np.random.default_rng(0))
    state = "MATCHSTATE:0:0::Ah|"
    replies, adapter = await run_probe([BOTS["always-call"], dying],
                                       [QUERY_PREFLOP, QUERY_FLOP, state], expected=3)
    replies.sort()
    assert replies[0] == state + ":c"  # the playing copy still plays
    # Each query is refused: in flight when the copy died, or asked after it.
    for reply, qid in zip(replies[1:], ("q1", "q2"), strict=True):
        assert reply in (f"RANGEERROR:{qid}:a probed copy of the bot disconnected",
                         f"RANGEERROR:{qid}:no probe copy of the bot is left")
    assert adapter.stats.copy_failures == 1 and adapter.stats.refused == 2


def test_a_query_where_the_bot_does_not_act_is_refused_without_probing() -> None:
    adapter = ProbeAdapter(LEDUC, samples=5, instances=2, reactor=None)
    sent: list[str] = []

    class Link:
        def send(self, text: str) -> None:
            sent.append(text)

    adapter.dealer = Link()  # type: ignore[assignment]
    adapter.dealer_line("QUERY:q9:0:0:r:|:f,c")  # position 1 acts after 'r' preflop
    assert sent == ["RANGEERROR:q9:the bot is not to act at this state"]
    assert adapter.stats.probes == 0


def test_options() -> None:
    with pytest.raises(ValueError, match="instances"):
        ProbeAdapter(LEDUC, samples=5, instances=1, reactor=None)
    assert fill_command(["bot", "--to={host}:{port}"], "127.0.0.1", 9) == ["bot", "--to=127.0.0.1:9"]


PLAIN_BOT = f"{sys.executable} {Path(__file__).parents[1] / 'data' / 'bots' / 'plain_call.py'}"


def evaluate_cli(tmp_path: Path, name: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "acpc_lbr.cli", "evaluate", "--game", "leduc", "--hands", "30",
         "--seed", "4", "--out", str(tmp_path / name), "--json", str(tmp_path / f"{name}.json"),
         "--quiet", *args],
        capture_output=True, text=True, timeout=300, check=False, env=dict(os.environ, PYTHONPATH=str(REPO)))


def test_evaluate_probe_measures_a_plain_bot_exactly_as_its_queried_twin(tmp_path: Path) -> None:
    """A deterministic plain bot probed gives the very outcomes the same strategy gives queried."""
    probed = evaluate_cli(tmp_path, "probed", "--opponent-cmd",
                          f"{PLAIN_BOT} leduc {{host}} {{port}}", "--probe", "5")
    assert probed.returncode == 0, probed.stderr[-2000:]
    queried = evaluate_cli(tmp_path, "queried", "--opponent", "always-call")
    assert queried.returncode == 0, queried.stderr[-2000:]
    a, b = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("probed", "queried"))
    for estimator in ("raw", "duplicate", "io", "duplicate_io"):
        assert a["estimators"][estimator]["chips"] == b["estimators"][estimator]["chips"]
    assert a["counts"]["lbr_active_decisions"] > 0
    assert a["counts"]["query_errors"] == 0
    assert a["config"]["opponent"].count(" probe ") == 1
    probe = a["probe"]
    assert (probe["samples"], probe["instances"], probe["reports"]) == (5, 2, 2)
    # K probes per hand that can be held: 6 preflop, 5 with the board card out.
    assert 5 * 5 * probe["answered"] <= probe["probes"] <= 5 * 6 * probe["answered"]
    assert probe["consistency"]["verdict"] == "consistent" and probe["consistency"]["decisions"] > 0
    assert probe["sampled_answers"] == probe["answered"] > 0 and probe["largest_standard_error"] == 0.0


def test_evaluate_says_what_to_do_for_a_plain_bot_without_probe(tmp_path: Path) -> None:
    plain = evaluate_cli(tmp_path, "plain", "--opponent-cmd", f"{PLAIN_BOT} leduc {{host}} {{port}}")
    assert plain.returncode == 3
    message = [line for line in plain.stderr.splitlines() if "does not answer range queries" in line]
    assert len(message) == 1 and "--probe" in message[0] and "docs/range-query.md" in message[0]

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

from acpc_lbr.runtime.exit_codes import EXIT_NO_BOUND, EXIT_NOT_QUERYABLE
from agents.bots import BOTS
from agents.client import StrategyBot
from agents.probe import ProbeAdapter, fill_command, run_adapter
from agents.sdk import Mix, Policy, PublicView
from protocol.gamedef import GameDef, load_game
from protocol.rangecodec import decode_answer
from protocol.rangequery import parse_query, read_query
from protocol.rules import Action
from protocol.wire import parse_matchstate

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


class GarblesOnProbe(StrategyBot):
    """A copy that answers the first state it is sent with a line that is no reply."""

    def lineReceived(self, line: bytes) -> None:
        if line.startswith(b"MATCHSTATE"):
            self.transport.write(b"Segmentation fault\r\n")  # type: ignore[union-attr]
            return
        super().lineReceived(line)


@pytest.mark.parametrize(("broken", "reason"), [
    (DiesOnProbe, "disconnected"),
    (GarblesOnProbe, "sent a line that answers no probe: 'Segmentation fault'"),
])
@pytest_twisted.ensureDeferred
async def test_a_copy_that_crashes_on_a_probe_fails_the_query_not_the_match(
        broken: type[StrategyBot], reason: str) -> None:
    """Each query is refused with the reason; the playing copy goes on; the failure is counted."""
    copy = broken(LEDUC, BOTS["always-call"], np.random.default_rng(0))
    state = "MATCHSTATE:0:0::Ah|"
    replies, adapter = await run_probe([BOTS["always-call"], copy],
                                       [QUERY_PREFLOP, QUERY_FLOP, state], expected=3)
    replies.sort()
    assert replies[0] == state + ":c"  # the playing copy still plays
    # Each query is refused: in flight when the copy died, or asked after it.
    for reply, qid in zip(replies[1:], ("q1", "q2"), strict=True):
        assert reply in (f"RANGEERROR:{qid}:a probed copy of the bot {reason}",
                         f"RANGEERROR:{qid}:no probe copy of the bot is left")
    assert adapter.stats.copy_failures == 1 and adapter.stats.refused == 2
    assert set(adapter.stats.refusals) <= {"copy_failed", "no_copy"}


class ChangesItsMind(StrategyBot):
    """Calls for the first 20 lines it is sent, then raises: its play depends on more than the line."""

    def __init__(self) -> None:
        super().__init__(LEDUC, BOTS["always-call"], np.random.default_rng(0))
        self.seen = 0

    def lineReceived(self, line: bytes) -> None:
        if line.startswith(b"MATCHSTATE"):
            self.seen += 1
            if self.seen > 20:
                self.strategy = BOTS["always-raise"]
        super().lineReceived(line)


# Position 0 faces a raise in Leduc's first round, at hands 0..11.
FACING = [f"MATCHSTATE:0:{hand}:cr:{card}|" for hand, card in enumerate(["Ah", "Kh", "Qs"] * 4)]


@pytest.mark.parametrize("bot", ["consistent", "changes-its-mind"])
@pytest_twisted.ensureDeferred
async def test_the_playing_copy_is_compared_with_probes_of_its_own_lines(bot: str) -> None:
    """A bot that plays unlike its probes is flagged; a random but memoryless one is not."""
    copies = ([BOTS["random"]] * 2 if bot == "consistent" else
              [ChangesItsMind(), ChangesItsMind()])
    # The query comes last: its answer arrives after every check's probes (one probed copy, in order).
    replies, adapter = await run_probe(copies, [*FACING, QUERY_PREFLOP], expected=13, samples=10)
    assert adapter.stats.checks == 12 and adapter.stats.check_probes == 120
    if bot == "consistent":
        assert adapter.stats.verdict == "consistent"
    else:  # the playing copy always called; its probes raised after the first 20 lines
        assert sorted({r.rpartition(":")[2] for r in replies if r.startswith("MATCHSTATE")}) == ["c"]
        assert adapter.stats.verdict == "inconsistent" and adapter.stats.largest_z > 5
        assert adapter.stats.to_dict()["consistency"]["observed"]["c"] == 12


class SlowBot(protocol.Protocol):
    """A plain bot that answers one line at a time, ``delay`` seconds each (always calls)."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.queue: list[str] = []
        self.buffer = b""

    def connectionMade(self) -> None:
        self.transport.write(b"VERSION:2.0.0\r\n")  # type: ignore[union-attr]

    def dataReceived(self, data: bytes) -> None:
        from twisted.internet import reactor

        *lines, self.buffer = (self.buffer + data).split(b"\n")
        idle = not self.queue
        self.queue.extend(line.decode().rstrip("\r") for line in lines if line.startswith(b"MATCH"))
        if idle and self.queue:
            reactor.callLater(self.delay, self.answer_one)  # type: ignore[attr-defined]

    def answer_one(self) -> None:
        from twisted.internet import reactor

        if self.transport is None or not self.queue:
            return
        line = self.queue.pop(0)
        view = parse_matchstate(line, LEDUC)
        state = view.to_state(LEDUC)
        if not state.finished and state.current_player == view.position:
            self.transport.write(f"{line}:c\r\n".encode())
        if self.queue:
            reactor.callLater(self.delay, self.answer_one)  # type: ignore[attr-defined]


@pytest_twisted.ensureDeferred
async def test_a_slow_bot_is_answered_in_time_or_refused_after_the_limit() -> None:
    """Slow but within --probe-timeout: exact answers. Past it: RANGEERROR, the copy is dropped, play goes on."""
    replies, adapter = await run_probe([BOTS["always-call"], SlowBot(0.002)], [QUERY_PREFLOP],
                                       expected=1, samples=3, probe_timeout=5.0)
    query = parse_query(QUERY_PREFLOP, LEDUC)
    np.testing.assert_array_equal(decode_answer(replies[0], query.actions, LEDUC.num_hands).rows,
                                  exact_rows(BOTS["always-call"], QUERY_PREFLOP))
    state = "MATCHSTATE:0:0::Ah|"
    replies, adapter = await run_probe([BOTS["always-call"], SlowBot(0.05)],
                                       [QUERY_PREFLOP, state, QUERY_FLOP], expected=3,
                                       samples=20, probe_timeout=0.5)
    assert replies[0] == state + ":c"  # the playing copy is not held up by the probes
    # q1 ran out of time; q2, queued behind it on the stalled copy, fails with the copy.
    assert replies[1:] == [
        "RANGEERROR:q1:the probes took over 0.5 s",
        "RANGEERROR:q2:a probed copy of the bot stalled (a probe unanswered after 0.5 s)"]
    assert adapter.stats.copy_failures == 1
    assert adapter.stats.refusals == {"timeout": 1, "copy_failed": 1}


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
    assert a["config"]["opponent_cmd"].count(" probe ") == 1  # the command, the short name apart
    assert a["config"]["opponent"] == "plain_call"
    probe = a["probe"]
    assert (probe["samples"], probe["instances"], probe["reports"]) == (5, 2, 2)
    # K probes per hand that can be held: 6 preflop, 5 with the board card out.
    assert 5 * 5 * probe["answered"] <= probe["probes"] <= 5 * 6 * probe["answered"]
    assert probe["consistency"]["verdict"] == "consistent" and probe["consistency"]["decisions"] > 0
    assert probe["sampled_answers"] == probe["answered"] > 0 and probe["largest_standard_error"] == 0.0


def test_evaluate_says_what_to_do_for_a_plain_bot_without_probe(tmp_path: Path) -> None:
    plain = evaluate_cli(tmp_path, "plain", "--opponent-cmd", f"{PLAIN_BOT} leduc {{host}} {{port}}")
    assert plain.returncode == EXIT_NOT_QUERYABLE
    message = [line for line in plain.stderr.splitlines() if "does not answer range queries" in line]
    assert len(message) == 1 and "--probe" in message[0] and "docs/range-query.md" in message[0]


def test_evaluate_probe_reports_the_sampling_error_and_the_consistency_check(tmp_path: Path) -> None:
    """A random plain bot: the results carry K, N, the probes and the answers' standard errors (the se= parts the dealer relayed)."""
    done = evaluate_cli(tmp_path, "mixed", "--opponent-cmd",
                        f"{PLAIN_BOT} leduc {{host}} {{port}} --raise-share 0.5", "--probe", "8")
    assert done.returncode == 0, done.stderr[-2000:]
    probe = json.loads((tmp_path / "mixed.json").read_text())["probe"]
    assert (probe["samples"], probe["instances"]) == (8, 2)
    assert probe["sampled_answers"] == probe["answered"] > 0 and probe["refused"] == 0
    # A share from 8 draws has a standard error of at most 0.5 / sqrt(8).
    assert 0 < probe["mean_standard_error"] < probe["largest_standard_error"] <= 0.5 / 8 ** 0.5 + 1e-12
    assert probe["consistency"]["verdict"] == "consistent"
    assert probe["consistency"]["decisions"] > 0
    report = done.stdout
    assert "probe adapter: K 8, N 2" in report and "consistency check: consistent" in report


def test_evaluate_refuses_a_bound_on_a_bot_that_plays_unlike_its_probes(tmp_path: Path) -> None:
    """A bot with memory (it raises once it has seen 30 lines) is flagged, and evaluate gives no bound."""
    done = evaluate_cli(tmp_path, "memory", "--opponent-cmd",
                        f"{PLAIN_BOT} leduc {{host}} {{port}} --raise-after 30", "--probe", "5")
    assert done.returncode == EXIT_NO_BOUND, done.stderr[-2000:]
    assert "does not play as its probes answer" in done.stderr
    assert "consistency check: inconsistent" in done.stdout
    assert not (tmp_path / "memory.json").exists()


def test_a_reply_with_a_huge_raise_is_read_as_the_dealer_would() -> None:
    """'r' and 5,000 digits (beyond int()'s default limit) counts as the raise the dealer makes
    of it: glibc's %d keeps the low 32 bits of the saturated long, -1, raised to the minimum
    (tests/data/acpc-reference/probes/V_raise_overflow); and 2**32 + 20000 is 20000."""
    from agents.probe import _Probe

    game = load_game("nolimit")
    adapter = ProbeAdapter(game, samples=1, instances=2, reactor=None)
    query, state = read_query("QUERY:q:1:0::|:c,r200,r20000", game)
    probe = _Probe(state, 3, game.num_hands, 1, lambda probe: None, query=query)
    assert adapter._offset_of(probe, "r" + "9" * 5000) == game.num_hands  # row 1: r200
    assert adapter._offset_of(probe, f"r{2**32 + 20000}") == 2 * game.num_hands  # row 2: r20000
    assert adapter._offset_of(probe, "r300") == -1 and adapter._offset_of(probe, "c") == 0


@pytest_twisted.ensureDeferred
async def test_a_copy_that_exits_at_start_fails_the_start_at_once_and_the_others_are_stopped(
        ) -> None:
    """Not after the 60 s connect limit: the exit is seen, named, and no copy is left running."""
    from twisted.internet import reactor

    started: list[subprocess.Popen[bytes]] = []

    def launch(port: int) -> list[subprocess.Popen[bytes]]:
        started.append(subprocess.Popen([sys.executable, "-c", "import sys; sys.exit(3)"]))
        started.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"]))
        return started

    adapter = ProbeAdapter(LEDUC, samples=5, instances=2, reactor=reactor)
    running = defer.ensureDeferred(run_adapter(adapter, "127.0.0.1", 9, launch))
    with pytest.raises(RuntimeError, match=r"exited \(status 3\) before it connected"):
        await running.addTimeout(20, reactor)
    assert started[1].wait(timeout=10) is not None  # killed, not orphaned


def test_the_closing_line_gives_no_mass_or_error_when_nothing_was_answered() -> None:
    """A run whose every query failed must not read as 'smallest answer mass 1.0000'."""
    from agents.probe import ProbeStats, summary

    stats = ProbeStats(samples=5, instances=2, queries=3)
    stats.refuse("copy_failed")
    stats.refuse("no_copy")
    stats.refuse("no_copy")
    assert "no query answered" in summary(stats) and "mass" not in summary(stats)
    assert "3 refused, 1 copy_failed, 2 no_copy" in summary(stats)
    stats.queries += 1
    stats.smallest_mass, stats.sum_mean_mass = 0.25, 0.5
    assert "smallest answer mass 0.2500" in summary(stats)


@pytest_twisted.ensureDeferred
async def test_an_opponent_program_that_floods_its_output_gets_a_bounded_log(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bot (or its probed copies, whose output the adapter passes on) writing without end
    must not fill the disk through ``opponent<half>.out``: the log keeps a head and a note."""
    from twisted.internet import reactor

    from acpc_lbr.app.evaluate import processes

    monkeypatch.setattr(processes, "OPPONENT_LOG_LIMIT", 1000)
    flood = "import sys\nfor _ in range(50): sys.stdout.write('z' * 4000); sys.stdout.flush()"
    process = processes.OpponentProcess(reactor, [sys.executable, "-c", flood],
                                        tmp_path / "opponent0.out")
    assert await process.ended.addTimeout(60, reactor) == 0
    log = (tmp_path / "opponent0.out").read_bytes()
    assert log.startswith(b"z" * 1000) and b"z" * 1001 not in log
    assert log.endswith(b"# acpc-lbr: output beyond 1000 bytes dropped\n")


def test_evaluate_probe_refuses_a_bot_program_that_does_not_exist(tmp_path: Path) -> None:
    """At once, as for a bot run without --probe (the adapter itself always exists)."""
    missing = evaluate_cli(tmp_path, "missing", "--opponent-cmd",
                           f"{tmp_path / 'no-such-bot'} {{host}} {{port}}", "--probe", "5")
    assert missing.returncode == 2
    assert "no such program" in missing.stderr and "no-such-bot" in missing.stderr
    assert "Traceback" not in missing.stderr


class AnswersOnlyFlopLines(StrategyBot):
    """Answers a line only once the board is out: the check's preflop probes stay unanswered."""

    def __init__(self) -> None:
        super().__init__(LEDUC, BOTS["always-call"], np.random.default_rng(0))

    def lineReceived(self, line: bytes) -> None:
        if b"MATCHSTATE" in line and b"/" not in line:
            return
        super().lineReceived(line)


@pytest_twisted.ensureDeferred
async def test_check_probes_left_unanswered_drop_the_copy_after_the_probe_timeout() -> None:
    """Check probes have the queries' time limit too: else they would pile up, K lines a decision."""
    from twisted.internet import reactor
    from twisted.internet.task import deferLater

    state = "MATCHSTATE:0:0::Ah|"
    dealer = ScriptedDealer([state, QUERY_FLOP], expected_replies=3)  # the match goes on
    listening = await TCP4ServerEndpoint(reactor, 0, interface="127.0.0.1").listen(
        protocol.Factory.forProtocol(lambda: dealer))
    adapter = ProbeAdapter(LEDUC, samples=5, instances=2, reactor=reactor, probe_timeout=0.3)
    copies = [StrategyBot(LEDUC, BOTS["always-call"], np.random.default_rng(1)), AnswersOnlyFlopLines()]

    def connect(port: int) -> None:
        for bot in copies:
            defer.ensureDeferred(TCP4ClientEndpoint(reactor, "127.0.0.1", port).connect(
                protocol.Factory.forProtocol(lambda bot=bot: bot)))

    finished = defer.ensureDeferred(run_adapter(adapter, "127.0.0.1", listening.getHost().port, connect))
    await deferLater(reactor, 1.5, lambda: None)
    try:
        assert state + ":c" in dealer.replies and any(r.startswith("RANGE:q2:") for r in dealer.replies)
        assert adapter.stats.checks == 0 and adapter.stats.check_probes == 5
        assert adapter.stats.copy_failures == 1  # the copy that owed the check's probes
    finally:
        dealer.transport.loseConnection()  # type: ignore[union-attr]
        await finished.addTimeout(30, reactor)
        await listening.stopListening()

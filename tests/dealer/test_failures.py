"""Bot failures end one match cleanly (message, exit code, hands on disk, SCORE) and no other.

The matches run in memory (:class:`tests.dealer.harness.MemoryRun`: iosim
connections and a ``task.Clock``), so timeouts cost no real time; one test
that needs a real reactor (a connection that leaves on its own timer) keeps
a socket.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest_twisted
from twisted.internet import task
from twisted.internet.protocol import Protocol

from acpc_lbr.runtime.exit_codes import EXIT_BOT_FAILURE, EXIT_OK
from dealer.budget import BotBudget
from dealer.match import Match, MatchConfig, MatchResult
from protocol.wire import parse_log_state, parse_score
from tests.dealer.bots import Misbehave, TestBot, connect
from tests.dealer.harness import MemoryRun, call_bots, log_lines, make_config

BYSTANDER_HANDS = 60


def play_beside_bystander(config: MatchConfig, bots: list[Any]) -> MatchResult:
    """Play ``config`` while a healthy match runs on the same clock; check the healthy one."""
    run = MemoryRun()
    bystander = make_config("bystander", hands=BYSTANDER_HANDS, seed=11)
    healthy = run.start(bystander, call_bots(bystander))
    done = run.start(config, bots)
    run.run(done, healthy)
    result: MatchResult = done.result
    healthy_result: MatchResult = healthy.result
    assert healthy_result.exit_code == EXIT_OK and healthy_result.completed
    lines = log_lines(bystander)
    assert sum(line.startswith("STATE:") for line in lines) == BYSTANDER_HANDS
    assert lines[-1] == healthy_result.score_line()
    return result


def play(config: MatchConfig, bots: list[Any]) -> MatchResult:
    """Play ``config`` alone, in memory."""
    return MemoryRun().play(config, bots)


def assert_ended_early(config: MatchConfig, result: MatchResult, cause: str, hands: int,
                       words: str) -> None:
    """The match ended with ``cause``; ``hands`` finished hands are logged with their SCORE."""
    assert result.exit_code == EXIT_BOT_FAILURE
    assert not result.completed
    assert result.cause == cause
    assert result.message is not None and words in result.message, result.message
    lines = log_lines(config)
    states = [parse_log_state(line, config.game) for line in lines if line.startswith("STATE:")]
    assert [s.hand_id for s in states] == list(range(hands))
    assert lines[-2] == f"# ERROR: {result.message}"
    score = parse_score(lines[-1])
    totals = [0.0] * len(config.names)
    for s in states:
        for name, value in zip(s.names, s.values):
            totals[config.names.index(name)] += value
    assert list(score.totals) == totals
    assert result.hands_played == hands


def test_disconnect_while_acting(in_tmp: Path) -> None:
    """A bot that closes when it is to act ends the match at once, naming the seat."""
    config = make_config("m", hands=10)
    bots = [TestBot(config.game), TestBot(config.game, misbehave_at={(3, "turn"): Misbehave("close")})]
    result = play_beside_bystander(config, bots)
    assert_ended_early(config, result, "disconnect", 3, "seat 2 (s2) disconnected while acting")
    assert result.seat == 1


def test_disconnect_while_waiting(in_tmp: Path) -> None:
    """A bot that closes while the other one is to act ends the match (no SIGPIPE death)."""
    config = make_config("m", hands=10)
    # Seat 2 opens hand 2 and takes its time; seat 1 leaves meanwhile.
    bots = [TestBot(config.game, misbehave_at={(2, "any"): Misbehave("close")}),
            TestBot(config.game, misbehave_at={(2, "turn"): Misbehave("silent")})]
    result = play_beside_bystander(config, bots)
    assert_ended_early(config, result, "disconnect", 2, "seat 1 (s1) disconnected while not acting")


class _ConnectAndClose(Protocol):
    def connectionMade(self) -> None:
        assert self.transport is not None
        self.transport.loseConnection()


def test_disconnect_before_version(in_tmp: Path) -> None:
    """A connection that closes without VERSION never held the seat: the seat waits on (to --start_timeout)."""
    config = make_config("m", hands=10, start_timeout_ms=600)
    result = play_beside_bystander(config, [_ConnectAndClose(), TestBot(config.game)])
    assert_ended_early(config, result, "no_connection", 0, "timed out waiting for seat 1 (s1) to connect")


def test_never_sends_version(in_tmp: Path) -> None:
    """A connection that never sends VERSION is closed after the handshake limit, naming the connection."""
    config = make_config("m", hands=10, start_timeout_ms=1000, budget=BotBudget(handshake_s=0.3))
    bots = [TestBot(config.game), TestBot(config.game, version=None)]
    result = play_beside_bystander(config, bots)
    assert_ended_early(config, result, "no_connection", 0, "timed out waiting for seat 2 (s2) to connect")
    assert re.search(r"last refused: connection 127\.0\.0\.1:\d+ to seat 2 \(s2\) sent no VERSION "
                     r"line within 0\.3 s", result.message or ""), result.message
    assert bots[1].closed.called


def test_invalid_version_string(in_tmp: Path) -> None:
    """'HELLO' instead of VERSION closes that connection (it does not get the seat), naming it."""
    config = make_config("m", hands=10, start_timeout_ms=600)
    bots = [TestBot(config.game, version="HELLO"), TestBot(config.game)]
    result = play_beside_bystander(config, bots)
    assert_ended_early(config, result, "no_connection", 0, "timed out waiting for seat 1 (s1)")
    assert re.search(r"connection 127\.0\.0\.1:\d+ to seat 1 \(s1\) sent an invalid version "
                     r"string HELLO", result.message or ""), result.message


def test_old_version_only_warns(in_tmp: Path) -> None:
    """VERSION:1.0.0 is warned about and the match is played (as by the reference)."""
    config = make_config("m", hands=5)
    result = play(config, [TestBot(config.game, version="VERSION:1.0.0"), TestBot(config.game)])
    assert result.exit_code == EXIT_OK and result.hands_played == 5


def test_version_numbers_of_any_length_are_read(in_tmp: Path) -> None:
    """A VERSION with more digits than int() reads (leading zeros or not) is read, not a dealer crash:
    a huge major is warned about, a zero-padded 2 is not; both matches are played."""
    config = make_config("m", hands=5, max_line=20_000, events=True)
    huge, padded = "VERSION:" + "9" * 5000 + ".0.0", "VERSION:" + "0" * 5000 + "2.0.0"
    result = play(config, [TestBot(config.game, version=huge), TestBot(config.game, version=padded)])
    assert result.exit_code == EXIT_OK and result.hands_played == 5
    warned = [line for line in Path("m.events.jsonl").read_text().splitlines() if "version_mismatch" in line]
    assert len(warned) == 1 and '"seat": 1' in warned[0], warned


def test_version_numbers_are_read_as_the_reference_reads_them(in_tmp: Path) -> None:
    """VERSION is read as the reference's sscanf("VERSION:%u.%u.%u"): a sign is taken and the
    number kept to 32 bits. '-2' is 4294967294 (the seat is taken, with the reference's ERROR
    line), 2**32 + 2 is 2 (no ERROR line); both matches are played."""
    config = make_config("m", hands=5, events=True)
    versions = "VERSION:-2.0.0", f"VERSION:{2**32 + 2}.+0. 0"
    stderr = io.StringIO()
    match = Match(config, reactor=None, clock=task.Clock(), stderr=stderr)
    run = MemoryRun()
    run.clock = match.clock
    done = match.start()
    for factory, version in zip(match.seating.factories, versions):
        run.connect(factory.buildProtocol(None), TestBot(config.game, version=version))
    run.run(done)
    result = done.result
    assert result.exit_code == EXIT_OK and result.hands_played == 5
    assert stderr.getvalue().count("ERROR: this server is currently using version 2.0.0") == 1
    warned = [line for line in Path("m.events.jsonl").read_text().splitlines() if "version_mismatch" in line]
    assert len(warned) == 1 and '"seat": 1' in warned[0], warned


def test_timeout_while_acting(in_tmp: Path) -> None:
    """A bot that stops answering is given up after t_response; earlier hands are kept."""
    config = make_config("m", hands=10, t_response_ms=300)
    bots = [TestBot(config.game), TestBot(config.game, misbehave_at={(4, "turn"): Misbehave("silent")})]
    result = play_beside_bystander(config, bots)
    assert_ended_early(config, result, "timeout", 4, "could not get action from seat 2 (s2)")
    assert "timeout 0.3" in (result.message or "")


def test_garbage_over_the_limit(in_tmp: Path) -> None:
    """An unparsable reply beyond --max_ignored ends the match, naming the problem."""
    config = make_config("m", hands=10, max_ignored=0)
    bots = [TestBot(config.game, misbehave_at={(2, "turn"): Misbehave("raw", "hello there")}),
            TestBot(config.game)]
    result = play_beside_bystander(config, bots)
    assert_ended_early(config, result, "garbage", 2, "bad state format in response")


def test_garbage_then_reply_is_tolerated(in_tmp: Path) -> None:
    """Like the reference, an unparsable line is ignored and counted, and play goes on."""
    config = make_config("m", hands=6)
    bots = [TestBot(config.game, misbehave_at={(2, "turn"): Misbehave("raw", "c", then_reply=True)}),
            TestBot(config.game)]
    result = play(config, bots)
    assert result.exit_code == EXIT_OK and result.hands_played == 6
    assert result.ignored == [1, 0]


def test_over_long_line(in_tmp: Path) -> None:
    """A line longer than the seat's limit ends the match, even when sent out of turn."""
    config = make_config("m", hands=10)
    bots = [TestBot(config.game), TestBot(config.game, misbehave_at={(5, "any"): Misbehave("long", size=5000)})]
    result = play_beside_bystander(config, bots)
    assert_ended_early(config, result, "line_too_long", 5, "seat 2 (s2) sent a line longer than 4096")


def test_raised_line_limit_accepts_long_lines(in_tmp: Path) -> None:
    """With a larger per-seat limit a long (then ignored) line is tolerated."""
    config = make_config("m", hands=4, max_line=1 << 20)
    bots = [TestBot(config.game, misbehave_at={(1, "turn"): Misbehave("long", size=20000, then_reply=True)}),
            TestBot(config.game)]
    result = play(config, bots)
    assert result.exit_code == EXIT_OK and result.ignored == [1, 0]


def test_stale_reply_is_ignored(in_tmp: Path) -> None:
    """A reply to an old state is ignored with the reference's warning; the real one counts."""
    config = make_config("m", hands=6)
    bots = [TestBot(config.game), TestBot(config.game, misbehave_at={(3, "turn"): Misbehave("stale", then_reply=True)})]
    result = play(config, bots)
    assert result.exit_code == EXIT_OK and result.ignored == [0, 1]


def test_stale_reply_over_the_limit(in_tmp: Path) -> None:
    """With --max_ignored 0 a stale reply ends the match, saying it was un-requested."""
    config = make_config("m", hands=10, max_ignored=0)
    bots = [TestBot(config.game), TestBot(config.game, misbehave_at={(3, "turn"): Misbehave("stale")})]
    result = play_beside_bystander(config, bots)
    assert_ended_early(config, result, "garbage", 3, "ignoring un-requested response")


class _RespondToAll(TestBot):
    """Answers every state, its turn or not (acpc-reference/probes/O_respond_all)."""

    def lineReceived(self, line: bytes) -> None:
        text = line.decode("ascii").rstrip("\r")
        self.received.append(text)
        self.send(f"{text}:c")


def test_answers_out_of_turn_are_stale(in_tmp: Path) -> None:
    """Lines sent out of turn wait in the buffer and are rejected as stale, as in the reference."""
    config = make_config("m", hands=5)
    result = play(config, [_RespondToAll(make_config("x").game), TestBot(config.game)])
    assert result.exit_code == EXIT_OK and result.hands_played == 5
    assert result.ignored[0] > 0 and result.ignored[1] == 0


def test_seat_never_connects(in_tmp: Path) -> None:
    """--start_timeout: a seat that never connects ends the match, naming it."""
    config = make_config("m", hands=10, start_timeout_ms=300)
    result = play_beside_bystander(config, [TestBot(config.game), None])
    assert_ended_early(config, result, "no_connection", 0, "timed out waiting for seat 2 (s2) to connect")


class _ConnectThenCloseLater(Protocol):
    """Connects, says nothing, and leaves after a moment (while its VERSION is awaited)."""

    def connectionMade(self) -> None:
        from twisted.internet import reactor

        assert self.transport is not None
        reactor.callLater(0.2, self.transport.loseConnection)


@pytest_twisted.ensureDeferred
async def test_disconnect_while_version_awaited(in_tmp: Path) -> None:
    """A connection that leaves before its VERSION line frees the port for the real bot."""
    from twisted.internet import reactor

    config = make_config("m", hands=10)
    match = Match(config, reactor)
    ports = match.listen()
    finished = match.start()
    leaver = _ConnectThenCloseLater()
    await connect(reactor, ports[0], leaver)
    await connect(reactor, ports[1], TestBot(config.game))
    await connect(reactor, ports[0], TestBot(config.game))
    result = await finished
    assert result.exit_code == EXIT_OK and result.hands_played == 10


def test_idle_timeout_ends_a_silent_bot_early(in_tmp: Path) -> None:
    """--idle_timeout (opt-in): a bot that sends nothing while it is due ends the match long
    before t_response, with a message that names the likely causes; healthy bots are not hurt."""
    config = make_config("m", hands=10, idle_timeout_ms=300)
    bots = [TestBot(config.game), TestBot(config.game, misbehave_at={(4, "turn"): Misbehave("silent")})]
    result = play_beside_bystander(config, bots)
    assert config.t_response_ms == 600_000
    assert_ended_early(config, result, "idle", 4, "seat 2 (s2) sent nothing for 0.3 s")
    assert "another game" in (result.message or "")
    healthy = make_config("h", hands=20, idle_timeout_ms=300)
    done = play(healthy, call_bots(healthy))
    assert done.exit_code == EXIT_OK and done.completed


def test_idle_timeout_covers_the_version_line(in_tmp: Path) -> None:
    """A connection that never sends VERSION is closed after --idle_timeout too (when shorter than
    the handshake limit); the seat then waits for another connection, up to --start_timeout."""
    config = make_config("m", hands=5, idle_timeout_ms=300, start_timeout_ms=1500)
    result = play(config, [TestBot(config.game), TestBot(config.game, version=None)])
    assert_ended_early(config, result, "no_connection", 0, "timed out waiting for seat 2 (s2)")
    assert "sent no VERSION line within 0.3 s" in (result.message or "")

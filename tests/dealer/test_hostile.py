"""Hostile bots and hostile disks (issue 14): every attack bounded, ended cleanly, and felt by no other match.

Each test reproduces one attack, bounded in count and time, in memory
(StringTransport, task.Clock) unless the attack is about sockets, and checks
the dealer's answer: the message names the bot (or the connection) and the
limit, the other matches go on. docs/reliability.md's table names these
tests (tests/test_readme_reliability.py keeps it honest).

Match of the in-memory tables: no-limit hold'em, seed 42; in hand 0 seat 2
(position 1, the button) acts first and seat 1 waits (transcripts/nl1000.trace).
"""

from __future__ import annotations

import errno
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from twisted.internet import defer
from twisted.internet.protocol import Protocol
from twisted.internet.testing import StringTransport

from acpc_lbr.runtime.exit_codes import EXIT_BOT_FAILURE, EXIT_FAILED, EXIT_INTERNAL, EXIT_OK
from dealer.budget import BotBudget
from dealer.config import LARGEST_MAX_LINE
from dealer.events import RecordFile, WriteFailed
from dealer.match import Match, MatchResult
from protocol.wire import parse_log_state
from tests.dealer.bots import TestBot, connect
from tests.dealer.harness import MemoryTable, call_bots, log_lines, make_config, play
from tests.dealer.test_relay import bot_calls, rows, table

# -- helpers -------------------------------------------------------------------


def autoplay(t: MemoryTable, seats: range | None = None, rounds: int = 10_000) -> None:
    """Play always-call for ``seats`` (default: all) of an in-memory table until nothing moves."""
    t.play_turns(lambda seat, line, view: f"{line}:c\r\n", rounds, seats)


def started(config_name: str = "m", **options: Any) -> MemoryTable:
    """An in-memory table with both seats past VERSION (seat 2 to act in hand 0)."""
    t = MemoryTable(make_config(config_name, seed=42, **options))
    t.feed(0, "VERSION:2.0.0\r\n")
    t.feed(1, "VERSION:2.0.0\r\n")
    return t


def ended(t: MemoryTable) -> MatchResult:
    assert t.done.called, "the match should have ended"
    result: MatchResult = t.done.result
    return result


# -- 2. non-ASCII bot text -------------------------------------------------------


def test_non_ascii_rangeerror_becomes_an_ascii_queryerror(in_tmp: Path) -> None:
    """A RANGEERROR carrying a non-ASCII byte is relayed as an ASCII QUERYERROR; the match goes on."""
    t = table(in_tmp)
    t.feed(0, "QUERY:a:1:0::|:c\r\n")
    (forwarded,) = t.take(1)
    t.feed(1, b"RANGEERROR:" + forwarded.split(":")[1].encode() + b":caf\xe9 \xff\r\n")
    (line,) = t.take(0)
    assert line.startswith("QUERYERROR:a:") and line.isascii() and "caf?" in line
    assert t.match.relay.counts[1].failed == {"range_error": 1}
    t.feed(1, "MATCHSTATE:1:0::|2hAc:f\r\n")
    assert t.take(0)[0] == "MATCHSTATE:0:0:f:7d3d|"
    assert not t.done.called


def test_non_ascii_query_is_refused_and_the_agent_stays(in_tmp: Path) -> None:
    """A QUERY with non-ASCII bytes gets a QUERYERROR; the agent keeps its connection."""
    t = table(in_tmp)
    t.feed(0, b"QUERY:a:1:0::|\xe9\xff:c\r\n")
    (line,) = t.take(0)
    assert line.startswith("QUERYERROR:a:malformed query") and line.isascii()
    assert not t.transports[0].disconnecting and not t.done.called
    t.feed(1, "MATCHSTATE:1:0::|2hAc:f\r\n")
    assert t.take(0)[0] == "MATCHSTATE:0:0:f:7d3d|"


@pytest.mark.parametrize("trace", [False, True])
def test_a_finished_hand_is_recorded_even_if_the_next_one_cannot_begin(
        in_tmp: Path, trace: bool) -> None:
    """Without the trace the dealer records a hand right after the next hand's first states
    are out (with it, before). If sending them fails -- a dealer bug -- the match ends as an
    internal error and the finished hand is still in the .log, the SCORE and the result; the
    console shows the error with its traceback, as plain text."""
    stderr = io.StringIO()
    t = MemoryTable(make_config("next", hands=3, seed=42, names=("p1", "p2"), trace_messages=trace),
                    stderr=stderr)
    t.feed(0, "VERSION:2.0.0\r\n")
    t.feed(1, "VERSION:2.0.0\r\n")
    assert t.take(1) == ["MATCHSTATE:1:0::|2hAc"]

    sends: list[bytes] = []

    def broken_once(data: bytes, write: Any = t.transports[1].write) -> None:
        sends.append(data)
        if len(sends) == 1:  # the next hand's first state; the close's flush goes out
            raise RuntimeError("the send broke")
        write(data)

    t.transports[1].write = broken_once  # type: ignore[method-assign]
    t.feed(1, "MATCHSTATE:1:0::|2hAc:f\r\n")
    result = ended(t)
    assert (result.exit_code, result.cause) == (EXIT_INTERNAL, "internal")
    assert result.hands_played == 1
    (state,) = [line for line in log_lines(t.match.config) if line.startswith("STATE:")]
    assert state.startswith("STATE:0:f:7d3d|2hAc:")
    values = state.split(":")[4].split("|")
    assert list(result.totals) == [float(v) for v in values]
    assert log_lines(t.match.config)[-1] == f"SCORE:{values[0]}|{values[1]}:p1|p2"
    console = stderr.getvalue()
    assert "internal_error" in console and "RuntimeError: the send broke" in console
    assert ("TO 2 at" in console) is trace


def test_a_long_zero_padded_reply_from_a_range_query_seat_is_read(in_tmp: Path) -> None:
    """A seat that announced range queries may send 1 MiB lines: a reply whose hand id has more
    leading zeros than int() reads is the state it names (as scanf reads it), not a dealer error."""
    t = table(in_tmp)
    t.feed(1, "MATCHSTATE:1:" + "0" * 5000 + "0::|2hAc:f\r\n")
    assert t.take(0)[0] == "MATCHSTATE:0:0:f:7d3d|"
    assert not t.done.called


def test_a_handler_error_ends_the_match_not_the_connection(in_tmp: Path) -> None:
    """Defence in depth: if handling a line raises, the match ends as an internal error, naming the seat."""
    t = started()

    def broken(line: str) -> None:
        raise UnicodeEncodeError("ascii", line, 0, 1, "test")

    t.protocols[1].prefix_handlers["QUERY"] = broken
    t.feed(1, "QUERY:x\r\n")
    result = ended(t)
    assert (result.exit_code, result.cause) == (EXIT_INTERNAL, "internal")
    assert result.message == "internal error on a line from seat 2 (s2): UnicodeEncodeError"


# -- 3. query floods and stalls ---------------------------------------------------


def test_too_many_outstanding_queries_end_the_match_charged_to_the_agent(in_tmp: Path) -> None:
    """An agent over max_queries ends its match; it is charged, the bot it queried is not."""
    t = table(in_tmp, budget=BotBudget(max_queries=4))
    t.feed(0, "QUERY:a:1:0::|:c\r\n" * 4)
    assert len(t.take(1)) == 4 and not t.done.called
    t.feed(0, "QUERY:a:1:0::|:c\r\n" * 2000)
    result = ended(t)
    assert (result.exit_code, result.cause, result.seat) == (EXIT_BOT_FAILURE, "over_budget", 0)
    assert result.message == ("seat 1 (agent) sent a range query with 4 already outstanding "
                              "(limit max_queries 4)")
    assert t.match.relay.counts[1].failed == {}  # nothing charged to the queried bot


def test_query_pause_is_capped_per_decision(in_tmp: Path) -> None:
    """Queries out pause the agent's clock for at most query_pause_decision_s; then t_response runs out."""
    t = table(in_tmp, t_response_ms=1000, t_query_ms=60_000,
              budget=BotBudget(query_pause_decision_s=2.0))
    bot_calls(t)  # the agent (seat 1) is to act
    t.feed(0, "QUERY:a:1:0:cr300:|:f\r\n")  # never answered
    assert len(t.take(1)) == 1
    t.clock.advance(2.95)  # 2 s paused + 0.95 s charged
    assert not t.done.called
    t.clock.advance(0.1)
    result = ended(t)
    assert (result.cause, result.seat) == ("timeout", 0)
    assert t.match.relay.counts[1].failed == {}


def test_query_pause_is_capped_per_hand(in_tmp: Path) -> None:
    """A pause used in one decision is gone for the rest of the hand (query_pause_hand_s)."""
    t = table(in_tmp, t_response_ms=1000, budget=BotBudget(query_pause_hand_s=2.0))
    bot_calls(t)
    t.feed(0, "QUERY:a:1:0:cr300:|:f\r\n")
    (forwarded,) = t.take(1)
    t.clock.advance(1.5)  # paused, not charged
    t.feed(1, f"RANGE:{forwarded.split(':')[1]}:{rows('f=1')}\r\n")
    t.take(0)
    t.feed(0, "MATCHSTATE:0:0:c:7d3d|:c\r\n")  # the agent checks: flop, the agent first
    (flop,) = (line for line in t.take(0) if line.startswith("MATCHSTATE:0:0:cc/"))
    t.take(1)
    board = flop.split(":")[4].split("/", 1)[1]
    t.feed(0, f"QUERY:b:1:0:cc/c:|/{board}:f,c\r\n")  # never answered
    assert len(t.take(1)) == 1
    t.clock.advance(1.45)  # 0.5 s pause left in the hand + 0.95 s charged
    assert not t.done.called
    t.clock.advance(0.1)
    result = ended(t)
    assert (result.cause, result.seat) == ("timeout", 0)


# -- 4. full disks and read-only folders -------------------------------------------


class FullDisk:
    """An unbuffered binary file on a disk with ``room`` bytes: writes past it fail with ENOSPC."""

    def __init__(self, room: int) -> None:
        self.data = bytearray()
        self.room = room
        self.closed = False

    def write(self, data: bytes) -> int:
        left = self.room - len(self.data)
        if left <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        taken = bytes(data[:left])
        self.data += taken
        return len(taken)

    def seek(self, offset: int, whence: int = 0) -> int:
        return len(self.data)

    def truncate(self, size: int) -> int:
        del self.data[size:]
        return size

    def close(self) -> None:
        self.closed = True


def disk_opener(disks: dict[str, FullDisk], rooms: dict[str, int]) -> Any:
    def opener(path: Path, append: bool) -> RecordFile:
        disk = disks.setdefault(path.name, FullDisk(rooms.get(path.name, 1 << 30)))
        return RecordFile(path, disk)  # type: ignore[arg-type]

    return opener


class SlowDisk(FullDisk):
    """A disk on which writing a hand's STATE line takes ``seconds`` of a fake clock."""

    def __init__(self, clocks: list[Any], seconds: float) -> None:
        super().__init__(1 << 30)
        self.clocks = clocks
        self.seconds = seconds

    def write(self, data: bytes) -> int:
        if data.startswith(b"STATE:"):
            for clock in self.clocks:
                clock.advance(self.seconds)
        return super().write(data)


def test_a_slow_disk_is_never_charged_to_the_bot(in_tmp: Path) -> None:
    """Without the trace a finished hand is written after the next hand's first states are out;
    the bot to act is not charged for that write: its clock starts after it. Here each write
    takes 5 s of the fake clock against a 1 s hand budget, and bots that answer at once play on."""
    clocks: list[Any] = []
    disks: dict[str, SlowDisk] = {}

    def opener(path: Path, append: bool) -> RecordFile:
        disk = disks[path.name] = SlowDisk(clocks, 5.0)
        return RecordFile(path, disk)  # type: ignore[arg-type]

    t = MemoryTable(make_config("slow", hands=5, t_hand_ms=1000, t_per_hand_ms=100_000), opener=opener)
    clocks.append(t.clock)
    t.feed(0, "VERSION:2.0.0\r\n")
    t.feed(1, "VERSION:2.0.0\r\n")
    autoplay(t)
    result = ended(t)
    assert (result.exit_code, result.hands_played) == (EXIT_OK, 5)
    assert disks["slow.log"].data.count(b"\nSTATE:") == 5
    assert t.clock.seconds() >= 25.0  # the writes did take the time


def test_record_file_never_keeps_half_a_record() -> None:
    """A flush that fails part-way leaves the file as it was after the last good flush."""
    disk = FullDisk(25)
    file = RecordFile(Path("x.log"), disk)  # type: ignore[arg-type]
    file.write("first line\n")
    file.flush()
    file.write("second line, too long\n")
    with pytest.raises(WriteFailed) as failure:
        file.flush()
    assert failure.value.message == "cannot write x.log: No space left on device"
    assert bytes(disk.data) == b"first line\n"
    file.write("ignored\n")
    file.flush()  # a dead file drops what it is given
    assert bytes(disk.data) == b"first line\n"


@pytest.mark.parametrize(("failing", "room"), [("a.log", 400), ("a.tlog", 400), ("a.events.jsonl", 3000)])
def test_full_disk_ends_only_the_match_whose_file_failed(in_tmp: Path, failing: str, room: int) -> None:
    """ENOSPC mid-match: 'ERROR: cannot write <file>', seats closed, whole records only; match b plays on."""
    disks: dict[str, FullDisk] = {}
    stderr = io.StringIO()
    a = MemoryTable(make_config("a", hands=30, write_tlog=True, events=True),
                    stderr=stderr, opener=disk_opener(disks, {failing: room}))
    b = MemoryTable(make_config("b", hands=30, write_tlog=True, events=True),
                    opener=disk_opener(disks, {}))
    for t in (a, b):
        t.feed(0, "VERSION:2.0.0\r\n")
        t.feed(1, "VERSION:2.0.0\r\n")
    autoplay(a)
    autoplay(b)
    result = ended(a)
    message = f"cannot write {failing}: No space left on device"
    assert (result.exit_code, result.cause, result.message) == (EXIT_INTERNAL, "write_failed", message)
    assert 0 < result.hands_played < 30
    assert f"ERROR: {message}" in stderr.getvalue()
    assert all(transport.disconnecting for transport in a.transports)
    failed = bytes(disks[failing].data)
    assert failed.endswith(b"\n")
    lines = failed.decode().splitlines()
    if failing == "a.log":
        states = [parse_log_state(line, a.match.game) for line in lines[4:]]
        assert [s.hand_id for s in states] == list(range(result.hands_played))
    elif failing == "a.tlog":
        assert all(len(line.split()) == 4 for line in lines)
        log = bytes(disks["a.log"].data).decode().splitlines()
        assert log[-2] == f"# ERROR: {message}" and log[-1] == result.score_line()
        assert sum(line.startswith("STATE:") for line in log) == result.hands_played
    else:
        assert [json.loads(line)["match"] for line in lines] == ["a"] * len(lines)
    other = ended(b)
    assert other.exit_code == EXIT_OK and other.hands_played == 30
    assert bytes(disks["b.log"].data).decode().splitlines()[-1] == other.score_line()


def test_read_only_folder_is_a_clean_startup_failure(in_tmp: Path) -> None:
    """An events file that cannot be created ends that match at start with 'cannot write', no traceback."""

    def read_only(path: Path, append: bool) -> RecordFile:
        raise WriteFailed(path, OSError(errno.EROFS, os.strerror(errno.EROFS)))

    stderr = io.StringIO()
    t = MemoryTable(make_config("m", events=True), stderr=stderr, opener=read_only)
    result = ended(t)
    assert (result.exit_code, result.cause) == (EXIT_FAILED, "startup")
    assert result.message == "cannot write m.events.jsonl: Read-only file system"
    assert "Traceback" not in stderr.getvalue()
    other = started("n", events=False)
    autoplay(other)
    assert ended(other).exit_code == EXIT_OK


def test_resume_drops_a_cut_last_line(in_tmp: Path) -> None:
    """A tlog and a log cut mid-line by a kill are repaired on resume, which then plays to the same SCORE."""
    whole = started("w", hands=6, write_tlog=True)
    autoplay(whole)
    expected = ended(whole).score_line()
    cut = started("c", hands=6, write_tlog=True)
    autoplay(cut)
    tlog = Path("c.tlog").read_bytes()
    keep = tlog.index(b" 3 ")  # the first action of hand 3
    Path("c.tlog").write_bytes(tlog[: keep + 5])
    log = Path("c.log").read_text().splitlines(keepends=True)
    Path("c.log").write_text("".join(log[:7]) + log[7][:12])  # header, hands 0-2, a cut hand 3
    resumed = MemoryTable(make_config("c", hands=6, seed=42, write_tlog=True, resume=True))
    resumed.feed(0, "VERSION:2.0.0\r\n")
    resumed.feed(1, "VERSION:2.0.0\r\n")
    autoplay(resumed)
    assert ended(resumed).score_line() == expected
    lines = Path("c.log").read_text().splitlines()
    assert [line.split(":")[1] for line in lines if line.startswith("STATE:")] == [str(h) for h in range(6)]
    assert all(len(line.split()) == 4 for line in Path("c.tlog").read_text().splitlines())


# -- 5-9. per-bot budgets ---------------------------------------------------------


def test_comment_flood_while_acting_counts_as_ignored_lines(in_tmp: Path) -> None:
    """'#' lines while acting count against --max_ignored, and the trace of them is bounded."""
    comment = "# " + "x" * 98 + "\n"
    within = started(max_ignored=50)
    state = within.take(1)[0]
    within.feed(1, comment * 50 + f"{state}:c\n")  # at the limit: the reply still counts
    assert not within.done.called and within.take(0)[-1] == "MATCHSTATE:0:0:c:7d3d|"
    stderr = io.StringIO()
    t = MemoryTable(make_config("m", seed=42, max_ignored=50,
                                budget=BotBudget(trace_bytes_per_hand=2000)), stderr=stderr)
    t.feed(0, "VERSION:2.0.0\r\n")
    t.feed(1, "VERSION:2.0.0\r\n")
    t.feed(1, comment * 1000)  # over the limit: ends at the 51st
    result = ended(t)
    assert (result.cause, result.seat) == ("garbage", 1)
    assert "limit --max_ignored 50; last: a comment line" in (result.message or "")
    traced = [line for line in stderr.getvalue().splitlines() if line.startswith("FROM 2")]
    assert 0 < len(traced) <= 2000 // 100 + 1  # the trace budget, not the 51 lines read


class NeverReads(Protocol):
    """Sends VERSION, then stops reading and floods ``QUERY`` lines (each gets a QUERYERROR)."""

    def __init__(self, lines: int, watch: Any) -> None:
        self.lines = lines
        self.watch = watch
        self.done: defer.Deferred[None] = defer.Deferred()

    def connectionMade(self) -> None:
        import socket

        assert self.transport is not None
        handle = self.transport.getHandle()  # type: ignore[attr-defined]
        handle.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.transport.write(b"VERSION:2.0.0\r\n")
        self.transport.pauseProducing()  # never read
        self.sent = 0
        self.step()

    def step(self) -> None:
        from twisted.internet import reactor

        assert self.transport is not None
        if self.sent >= self.lines or self.done.called:
            return
        self.transport.write(b"QUERY:a:0:0::|:c\r\n" * 200)
        self.sent += 200
        self.watch()
        reactor.callLater(0.001, self.step)

    def connectionLost(self, reason: object = None) -> None:
        if not self.done.called:
            self.done.callback(None)


#: Budgets of unusable lines out of the way, for the tests of what a bot that does not read
#: costs (its flood is 40,000 refused queries, which these budgets alone would end).
UNBOUNDED_LINES = {"max_unusable_decision": 10**9, "max_unusable_hand": 10**9, "unusable_line_hold_s": 0.0}


async def _flood(budget: BotBudget, t_response_ms: int) -> tuple[MatchResult, list[int], list[bool]]:
    from twisted.internet import reactor

    config = make_config("m", hands=5, seed=42, t_response_ms=t_response_ms, budget=budget)
    match = Match(config, reactor)
    ports = match.listen()
    finished = match.start()
    unsent: list[int] = []
    paused: list[bool] = []

    def watch() -> None:
        protocol = match.seats[1].protocol
        if protocol is not None:
            unsent.append(protocol.unsent_bytes())
            paused.append(protocol.reading_paused)

    await connect(reactor, ports[0], TestBot(config.game))
    flooder = NeverReads(40_000, watch)
    await connect(reactor, ports[1], flooder)
    result = await finished
    assert flooder.transport is not None
    flooder.transport.resumeProducing()  # read again, to see the dealer close
    await flooder.done
    return result, unsent, paused


@pytest_twisted.ensureDeferred
async def test_a_bot_that_does_not_read_is_not_read_from(in_tmp: Path) -> None:
    """Output piling up for a bot that never reads: the dealer stops reading from it; t_response ends it."""
    result, unsent, paused = await _flood(BotBudget(send_buffer_bytes=16384, close_grace_s=0.2, **UNBOUNDED_LINES), t_response_ms=1500)
    assert (result.cause, result.seat) == ("timeout", 1)
    assert any(paused), "reading should have been paused"
    assert max(unsent) <= 64 * 1024 + 4096  # Twisted's bufferSize, plus one write


@pytest_twisted.ensureDeferred
async def test_a_bot_whose_unsent_output_passes_the_limit_is_dropped(in_tmp: Path) -> None:
    """Past max_unsent_bytes the bot is dropped, and the message names it and the limit."""
    result, _, _ = await _flood(BotBudget(send_buffer_bytes=16384, max_unsent_bytes=20_000,
                                          close_grace_s=0.2, **UNBOUNDED_LINES),
                                     t_response_ms=30_000)
    assert (result.exit_code, result.cause, result.seat) == (EXIT_BOT_FAILURE, "not_reading", 1)
    assert "seat 2 (s2) does not read what it is sent" in (result.message or "")
    assert "(limit max_unsent_bytes 20000)" in (result.message or "")


def test_out_of_turn_bytes_are_bounded(in_tmp: Path) -> None:
    """1 MiB lines from an announced bot while it is not its turn end its match at max_queued_bytes."""
    t = started(budget=BotBudget(max_queued_bytes=300_000))
    t.feed(0, "# range-query 1\r\n")  # seat 1 waits in hand 0; its line limit is now 1 MiB
    assert t.protocols[0].MAX_LENGTH == LARGEST_MAX_LINE
    for _ in range(400):
        t.feed(0, b"y" * (1 << 20) + b"\n")
        if t.done.called:
            break
    result = ended(t)
    assert (result.cause, result.seat) == ("over_budget", 0)
    assert "seat 1 (s1) sent" in (result.message or "")
    assert "while it was not its turn (limit max_queued_bytes 300000)" in (result.message or "")
    assert sum(map(len, t.match.seats[0].queue)) <= 300_000 + (1 << 20)


def test_out_of_turn_lines_are_bounded(in_tmp: Path) -> None:
    """Short lines out of turn are bounded in number too (max_queued_lines)."""
    t = started(budget=BotBudget(max_queued_lines=20))
    t.feed(0, "junk\r\n" * 100)
    result = ended(t)
    assert result.cause == "over_budget"
    assert result.message == ("seat 1 (s1) sent more than 20 lines while it was not its turn "
                              "(limit max_queued_lines 20)")


def test_unsolicited_range_lines_are_logged_up_to_a_budget(in_tmp: Path) -> None:
    """200 unsolicited RANGE lines in a hand (within max_unusable_hand): 10 events logged, the rest
    counted in one summary; play goes on."""
    t = started(events=True)
    t.feed(1, "RANGE:zz:c=1\r\n" * 200)
    assert not t.done.called
    autoplay(t)
    assert ended(t).exit_code == EXIT_OK
    events = [json.loads(line) for line in Path("m.events.jsonl").read_text().splitlines()]
    dropped = [e for e in events if e["event"] == "query_answer_dropped"]
    assert len(dropped) == BotBudget().logged_drops
    (summary,) = [e for e in events if e["event"] == "query_answers_dropped"]
    assert (summary["seat"], summary["dropped"]) == (2, 200)
    assert Path("m.events.jsonl").stat().st_size < 50_000


def test_an_unsolicited_range_flood_ends_the_match_at_the_hand_budget(in_tmp: Path) -> None:
    """80,000 unsolicited RANGE lines (logged up to a budget and played on, before): the match ends
    at max_unusable_hand, charged to the bot, and the events file stays small."""
    t = started(events=True)
    t.feed(1, "RANGE:zz:c=1\r\n" * 80_000)
    result = ended(t)
    assert (result.cause, result.seat) == ("over_budget", 1)
    assert "257 unusable lines in hand 0 (257 answer_dropped; limit max_unusable_hand 256)" in result.message
    assert Path("m.events.jsonl").stat().st_size < 50_000


def test_oversized_query_is_rejected_before_any_parse(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A QUERY line over max_query_bytes is refused without being parsed, and play goes on
    (it ended the agent's match before); a flood of them meets the budget of unusable lines."""

    def no_parse(*args: Any) -> Any:
        raise AssertionError("an oversized query must not be parsed")

    import protocol.rangequery  # the relay imports its parser when the first query comes

    monkeypatch.setattr(protocol.rangequery, "read_query", no_parse)
    t = table(in_tmp)
    t.feed(0, "# range-query 1\r\n")  # the agent may now send 1 MiB lines
    t.feed(0, "QUERY:a:1:0::|:" + ",".join(["c"] * 500_000) + "\r\n")
    assert not t.done.called
    assert "QUERYERROR:a:query of 1000014 bytes is longer than max_query_bytes 4096" in t.take(0)
    t.feed(0, ("QUERY:a:1:0::|:" + ",".join(["c"] * 5_000) + "\r\n") * 100)
    result = ended(t)
    assert (result.cause, result.seat) == ("over_budget", 0)
    assert "limit max_unusable_decision 64" in result.message


def test_a_5000_digit_raise_in_a_query_is_refused_and_play_goes_on(in_tmp: Path) -> None:
    """Before: the match ended, where the README says such a query is refused and play goes on."""
    t = table(in_tmp)
    t.feed(0, "# range-query 1\r\n")
    t.feed(0, "QUERY:q1:1:0::|:f,c,r" + "9" * 5000 + "\r\n")
    assert not t.done.called
    assert any(line.startswith("QUERYERROR:q1:") for line in t.take(0))
    t.feed(1, "MATCHSTATE:1:0::|2hAc:c\r\n")  # the bot, first to act, calls; then both play on
    autoplay(t)
    assert ended(t).exit_code == EXIT_OK


# -- 10. seat squatting --------------------------------------------------------------


def candidate(t: MemoryTable, seat: int, host: str) -> tuple[Any, StringTransport]:
    """One more connection to ``seat``'s port, from ``host``."""
    from twisted.internet.address import IPv4Address

    protocol = t.match.seating.factories[seat].buildProtocol(None)
    transport = StringTransport(peerAddress=IPv4Address("TCP", host, 40000))
    protocol.makeConnection(transport)
    return protocol, transport


def test_first_valid_version_gets_the_seat_and_silent_ones_are_closed(in_tmp: Path) -> None:
    """Squatters on a seat's port: silent ones closed after handshake_s, HELLO refused, VERSION wins."""
    stderr = io.StringIO()
    config = make_config("m", hands=3, seed=42, budget=BotBudget(handshake_s=2.0))
    t = MemoryTable(config, stderr=stderr)  # its own two connections stay silent for now
    squatters = [candidate(t, 0, f"10.0.0.{i}") for i in range(5)]
    hello, hello_transport = candidate(t, 0, "10.0.1.1")
    hello.dataReceived(b"HELLO\r\n")
    assert hello_transport.disconnecting and not hello.accepted
    real, real_transport = candidate(t, 0, "10.0.2.2")
    real.dataReceived(b"VERSION:2.0.0\r\n")
    assert real.accepted and not real_transport.disconnecting
    assert all(transport.disconnecting for _, transport in squatters)  # the seat is taken
    assert t.transports[0].disconnecting
    t.clock.advance(1.9)
    assert not t.transports[1].disconnecting
    t.clock.advance(0.2)  # seat 2's silent connection passes its handshake limit
    assert t.transports[1].disconnecting
    text = stderr.getvalue()
    assert "WARNING: connection 10.0.1.1:40000 to seat 1 (s1) sent an invalid version string HELLO" in text
    assert "WARNING: connection 192.168.1.1:54321 to seat 2 (s2) sent no VERSION line within 2 s" in text
    late, late_transport = candidate(t, 1, "10.0.3.3")
    late.dataReceived(b"VERSION:2.0.0\r\n")
    assert late.accepted and not t.done.called
    assert late_transport.value().startswith(b"MATCHSTATE:1:0::|2hAc")  # the match started


def test_a_squatters_bytes_are_shown_escaped(in_tmp: Path) -> None:
    """A first line with control and non-ASCII bytes (a terminal escape, NUL, 0xff) is quoted
    escaped, in printable ASCII: on stderr, in the events and in the .log's '# ERROR' line."""
    stderr = io.StringIO()
    config = make_config("m", hands=3, seed=42, start_timeout_ms=5000, events=True)
    t = MemoryTable(config, stderr=stderr)
    squatter, transport = candidate(t, 0, "10.0.1.1")
    squatter.dataReceived(b"\x1b[2J\x00HI\xff\r\n")
    assert transport.disconnecting
    t.clock.advance(6)
    result = ended(t)
    shown = r"sent an invalid version string \x1b[2J\x00HI\xff"
    assert result.exit_code == EXIT_BOT_FAILURE and shown in result.message
    assert shown in stderr.getvalue()
    for path in (config.log_path, config.events_path):
        data = Path(path).read_bytes()
        assert all(32 <= byte < 127 or byte == 10 for byte in data), path
    assert shown in Path(config.log_path).read_text()


def test_an_over_long_first_line_is_refused_saying_so(in_tmp: Path) -> None:
    """A 5,013-byte VERSION line (a silent reset before, and a timeout that did not quote it):
    the connection is refused with a line that says why and shows its start; the timeout quotes it."""
    stderr = io.StringIO()
    t = MemoryTable(make_config("m", hands=3, seed=42, start_timeout_ms=5000), stderr=stderr)
    squatter, transport = candidate(t, 0, "10.0.1.2")
    squatter.dataReceived(b"VERSION:2.0." + b"0" * 5000 + b"\r\n")
    assert transport.disconnecting
    why = "sent a first line longer than 4096 bytes, which no VERSION line is: VERSION:2.0.000"
    assert why in stderr.getvalue()
    t.clock.advance(6)
    result = ended(t)
    assert result.exit_code == EXIT_BOT_FAILURE
    assert "timed out waiting for seat 1" in result.message and why in result.message


def test_candidates_are_capped_per_seat(in_tmp: Path) -> None:
    """More than max_candidates silent connections: the oldest is closed, a newcomer can still win."""
    t = MemoryTable(make_config("m", budget=BotBudget(max_candidates=3)))
    crowd = [candidate(t, 0, f"10.0.0.{i}") for i in range(6)]
    assert t.transports[0].disconnecting  # the table's own, oldest, connection
    open_ones = [transport for _, transport in crowd if not transport.disconnecting]
    assert len(open_ones) == 3
    crowd[-1][0].dataReceived(b"VERSION:2.0.0\r\n")
    assert crowd[-1][0].accepted


class Silent(Protocol):
    """Connects and says nothing."""

    def __init__(self) -> None:
        self.lost: defer.Deferred[None] = defer.Deferred()

    def connectionLost(self, reason: object = None) -> None:
        self.lost.callback(None)


@pytest_twisted.ensureDeferred
async def test_squatters_on_a_real_port_do_not_keep_the_bot_out(in_tmp: Path) -> None:
    """40 silent connections held on seat 1's port before the real bot: the bot plays, squatters are closed."""
    from twisted.internet import reactor

    config = make_config("m", hands=10, budget=BotBudget(handshake_s=0.5))
    bystander = make_config("bystander", hands=20, seed=11)
    healthy = defer.ensureDeferred(play(bystander, call_bots(bystander)))
    match = Match(config, reactor)
    ports = match.listen()
    finished = match.start()
    squatters = [Silent() for _ in range(40)]
    for squatter in squatters:
        await connect(reactor, ports[0], squatter)
    await connect(reactor, ports[0], TestBot(config.game))
    await connect(reactor, ports[1], TestBot(config.game))
    result = await finished
    assert result.exit_code == EXIT_OK and result.hands_played == 10
    await defer.gatherResults([s.lost for s in squatters])
    assert (await healthy).exit_code == EXIT_OK
    assert sum(line.startswith("STATE:") for line in log_lines(config)) == 10


# -- 11. the over-long-line message -------------------------------------------------


def test_over_long_line_names_the_limit_that_applied(in_tmp: Path) -> None:
    """A line over 1 MiB from a seat whose limit is 1 MiB is reported against 1 MiB, not 4096."""
    t = started()
    t.feed(0, "# range-query 1\r\n")
    t.feed(0, b"z" * (LARGEST_MAX_LINE + 10))
    result = ended(t)
    assert (result.cause, result.seat) == ("line_too_long", 0)
    assert result.message == f"seat 1 (s1) sent a line longer than {LARGEST_MAX_LINE} bytes (its line limit)"



# -- 4, end to end: a full device and an unwritable folder under the real CLI --------


def test_cli_full_disk_mid_match_keeps_the_other_match(tmp_path: Path) -> None:
    """A tlog on a full device (/dev/full): that match ends with 'ERROR: cannot write', exit 4; the other prints SCORE."""
    from tests.dealer.test_cli import finish, start_bot, start_dealer

    (tmp_path / "full.tlog").symlink_to("/dev/full")
    args = ["--match", "full nolimit 40 1 a b", "--match", "ok nolimit 40 2 c d", "-q", "-T"]
    proc, port_lines = start_dealer(args, tmp_path)
    bots = [start_bot(port, "nolimit") for ports in port_lines for port in ports]
    code, out = finish(proc, bots)
    assert code == EXIT_INTERNAL
    message = "cannot write full.tlog: No space left on device"
    assert f"ERROR: {message}" in (tmp_path / "dealer.err").read_text()
    assert "Traceback" not in (tmp_path / "dealer.err").read_text()
    full = (tmp_path / "full.log").read_text().splitlines()
    assert full[-2] == f"# ERROR: {message}" and not any(line.startswith("STATE:") for line in full)
    assert f"full {full[-1]}" in out
    ok = (tmp_path / "ok.log").read_text().splitlines()
    assert sum(line.startswith("STATE:") for line in ok) == 40
    assert f"ok {ok[-1]}" in out


def test_cli_unwritable_folder_is_a_clean_message(tmp_path: Path) -> None:
    """A match whose logs cannot be created: one 'ERROR: cannot write' line, exit 1; the other match plays."""
    from tests.dealer.test_cli import finish, start_bot, start_dealer

    blocked = tmp_path / "blocked"
    blocked.write_text("a file, not a folder\n")
    args = ["--match", "blocked/m nolimit 20 1 a b", "--match", "ok nolimit 20 2 c d", "-q"]
    proc, port_lines = start_dealer(args, tmp_path)
    code, out = finish(proc, [start_bot(port, "nolimit") for port in port_lines[1]])
    assert code == EXIT_FAILED
    err = (tmp_path / "dealer.err").read_text()
    assert "ERROR: cannot write blocked/m.events.jsonl: Not a directory" in err
    assert "Traceback" not in err
    ok = (tmp_path / "ok.log").read_text().splitlines()
    assert sum(line.startswith("STATE:") for line in ok) == 20 and f"ok {ok[-1]}" in out

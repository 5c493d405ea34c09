"""Whole matches over loopback TCP: byte compatibility with the reference, games, options."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import pytest_twisted

from dealer.events import ActionPlayed, EventRecord, HandFinished, MatchFinished
from protocol.wire import Score, parse_log_state, parse_score
from tests.dealer.bots import (
    REFERENCE,
    TestBot,
    actions_from_log,
    reference_lines,
    replay_strategy,
)
from tests.dealer.harness import call_bots, log_lines, make_config, play

GAME_FILES = {
    "nl1000": "holdem.nolimit.2p.reverse_blinds.game",
    "lim1000": "holdem.limit.2p.reverse_blinds.game",
    "nl3p_100": "holdem.nolimit.3p.game",
}
HEADERS = {"nl1000": (1000, 42, ("p1", "p2")), "lim1000": (1000, 42, ("p1", "p2")),
           "nl3p_100": (100, 5, ("p1", "p2", "p3"))}


@pytest.mark.parametrize("log_name", ["nl1000", "lim1000", "nl3p_100"])
@pytest_twisted.ensureDeferred
async def test_replayed_reference_match_gives_identical_log(in_tmp: Path, log_name: str) -> None:
    """Bots replaying the reference log's actions produce the reference .log byte for byte."""
    reference = REFERENCE / "logs" / f"{log_name}.log"
    actions = actions_from_log(reference)
    hands, seed, names = HEADERS[log_name]
    config = make_config(log_name, GAME_FILES[log_name], hands=hands, seed=seed,
                         names=names, trace_messages=False)
    bots = [TestBot(config.game, replay_strategy(actions)) for _ in names]
    result = await play(config, bots)
    assert result.completed and result.exit_code == 0
    assert reference_lines(Path(config.log_path)) == reference_lines(reference)
    # The header is the reference's too, since the game is given as the reference was.
    assert log_lines(config) == reference.read_text().splitlines()
    assert sum(result.corrections) == 0


@pytest.mark.parametrize("game", ["nolimit", "limit", "kuhn.limit.3p", "leduc.limit.2p",
                                  "holdem.nolimit.3p"])
@pytest_twisted.ensureDeferred
async def test_always_call_match_completes_with_consistent_log(in_tmp: Path, game: str) -> None:
    """Always-call bots play a whole match; STATE lines parse and SCORE sums them per seat."""
    config = make_config("m", game, hands=30, seed=3,
                         names=tuple(f"b{i}" for i in range(3 if "3p" in game else 2)))
    bots = call_bots(config)
    result = await play(config, bots)
    assert result.exit_code == 0 and result.hands_played == 30
    lines = log_lines(config)
    states = [parse_log_state(line, config.game) for line in lines if line.startswith("STATE:")]
    assert [s.hand_id for s in states] == list(range(30))
    totals = {name: 0.0 for name in config.names}
    for s in states:
        for name, value in zip(s.names, s.values):
            totals[name] += value
    score = parse_score(lines[-1])
    assert score.names == config.names
    assert score.totals == tuple(totals[n] for n in config.names)
    # Every bot saw the final state of every hand: the last line it got is hand 29's end.
    for bot in bots:
        assert bot.received[-1].split(":")[2] == "29"


@pytest_twisted.ensureDeferred
async def test_fixed_seats_keep_positions(in_tmp: Path) -> None:
    """With -f, seat s is always position s: the names column never alternates."""
    config = make_config("f", hands=6, fixed_seats=True)
    await play(config, call_bots(config))
    names = {line.rsplit(":", 1)[1] for line in log_lines(config) if line.startswith("STATE:")}
    assert names == {"s1|s2"}


@pytest_twisted.ensureDeferred
async def test_rotation_alternates_positions(in_tmp: Path) -> None:
    """Without -f, the first-named seat is position 0 in even hands, position 1 in odd ones."""
    config = make_config("r", hands=4)
    bots = call_bots(config)
    await play(config, bots)
    names = [line.rsplit(":", 1)[1] for line in log_lines(config) if line.startswith("STATE:")]
    assert names == ["s1|s2", "s2|s1", "s1|s2", "s2|s1"]
    first_states = [line for line in bots[0].received if line.split(":")[3] == ""]
    assert [line.split(":")[1] for line in first_states[:4]] == ["0", "1", "0", "1"]


@pytest_twisted.ensureDeferred
async def test_invalid_actions_are_corrected_and_counted(in_tmp: Path) -> None:
    """Fold when free, unknown letters, small and huge raises are corrected as the reference does."""
    replies = iter(["f", "x", "r150", "r50000", "r", "c"] * 100)
    config = make_config("c", hands=5, trace_messages=False)
    bots = [TestBot(config.game, lambda v, s: next(replies)), TestBot(config.game)]
    result = await play(config, bots)
    assert result.exit_code == 0
    assert result.corrections[0] > 0 and result.corrections[1] == 0
    for line in log_lines(config):
        if line.startswith("STATE:"):
            parse_log_state(line, config.game)  # every logged betting string is legal


@pytest_twisted.ensureDeferred
async def test_trace_has_reference_shape(in_tmp: Path) -> None:
    """The stderr trace has the header, STARTED, TO/FROM with \\r\\n, warnings and the SCORE."""
    import io

    stream = io.StringIO()
    config = make_config("t", hands=2)
    replies = iter(["f", "c", "c", "c", "c", "c", "c", "c", "c", "c"])
    bots = [TestBot(config.game, lambda v, s: next(replies)), TestBot(config.game)]
    result = await play(config, bots, stderr=stream)
    text = stream.getvalue()
    lines = text.splitlines()
    assert lines[0] == "# name/game/hands/seed t nolimit 2 7"
    assert lines[4].startswith("STARTED at ")
    assert "TO 1 at " in text and "FROM 2 at " in text
    assert any(line.startswith("TO 2 at ") and line.endswith("\r") for line in text.split("\n"))
    assert "WARNING: invalid action, changed to call" in text
    assert result.score_line() in lines


@pytest_twisted.ensureDeferred
async def test_events_log_is_json_lines(in_tmp: Path) -> None:
    """MATCH.events.jsonl holds one JSON object per line: connections, hands, the ending."""
    config = make_config("e", hands=3, events=True)
    await play(config, call_bots(config))
    events = [json.loads(line) for line in Path("e.events.jsonl").read_text().splitlines()]
    kinds = [e["event"] for e in events]
    assert kinds.count("seat_connected") == 2
    assert kinds.count("hand_finished") == 3
    assert kinds[-1] == "match_finished"
    assert all(e["match"] == "e" and "timestamp" in e for e in events)
    # Hole cards never go to the event log.
    deal_text = log_lines(config)[4].split(":")[3]
    assert deal_text.split("|")[0] not in Path("e.events.jsonl").read_text()


@pytest_twisted.ensureDeferred
async def test_score_line_of_result_matches_log(in_tmp: Path) -> None:
    """The result's SCORE equals the last .log line."""
    config = make_config("s", game="limit", hands=12)
    result = await play(config, call_bots(config))
    assert log_lines(config)[-1] == result.score_line()
    assert Score(tuple(result.totals), config.names).text() == result.score_line()


@pytest_twisted.ensureDeferred
async def test_event_hook_sees_actions_and_hands(in_tmp: Path) -> None:
    """A subscriber (the metrics seam) gets every action with its latency and every hand."""
    from twisted.internet import reactor

    from dealer.match import Match
    from tests.dealer.bots import connect

    config = make_config("h", hands=4)
    match = Match(config, reactor)
    seen: list[EventRecord] = []
    match.events.subscribe(seen.append)
    ports = match.listen()
    finished = match.start()
    for bot, port in zip(call_bots(config), ports):
        await connect(reactor, port, bot)
    await finished
    actions = [e for e in seen if isinstance(e, ActionPlayed)]
    assert len(actions) == 4 * 8  # always-call hold'em: 8 actions a hand
    assert all(isinstance(e.seconds, float) and e.seconds >= 0 for e in actions)
    assert [e.hand for e in seen if isinstance(e, HandFinished)] == [0, 1, 2, 3]
    assert isinstance(seen[-1], MatchFinished) and seen[-1].EVENT == "match_finished"


@pytest_twisted.ensureDeferred
async def test_internal_error_traceback_has_no_locals(in_tmp: Path) -> None:
    """A dealer bug ends the match with exit 4; its traceback is logged without locals (no cards).

    The bug: the .log's write raises an unexpected error on the first hand's STATE line
    (injected through the opener, so that it reaches the compiled Match too); the
    frames it passes through hold that line, the deal and the hand's state."""
    from dealer.events import RecordFile, open_record_file

    class BuggyLog(RecordFile):
        def write(self, text: str) -> None:
            if text.startswith("STATE:"):
                raise RuntimeError("simulated dealer bug")
            super().write(text)

    def opener(path: Path, append: bool) -> RecordFile:
        if path.suffix != ".log":
            return open_record_file(path, append)
        return BuggyLog(path, open(path, "ab" if append else "wb", buffering=0))

    config = make_config("bug", hands=3, events=True)
    result = await play(config, call_bots(config), opener=opener)
    assert result.exit_code == 4 and result.cause == "internal"
    events = [json.loads(line) for line in Path("bug.events.jsonl").read_text().splitlines()]
    error = next(e for e in events if e["event"] == "internal_error")
    frames = [frame for exc in error["exception"] for frame in exc["frames"]]
    assert frames and all("locals" not in frame for frame in frames)
    assert "simulated dealer bug" in json.dumps(error)
    from protocol.cards import cards_to_text
    from protocol.deal import DealSource

    hole = DealSource(config.seed).deal(config.game).hole
    text = Path("bug.events.jsonl").read_text()
    assert all(cards_to_text(cards) not in text for cards in hole)


@pytest_twisted.ensureDeferred
async def test_tlog_lines_and_no_log_option(in_tmp: Path) -> None:
    """-T writes one '<action> <hand> <sent> <received>' line per action; -l writes no .log."""
    import re

    config = make_config("t", hands=3, write_tlog=True, write_log=False)
    replies = iter(["r300", "c"] * 100)
    bots = [TestBot(config.game, lambda v, s: next(replies)), TestBot(config.game)]
    await play(config, bots)
    assert not Path("t.log").exists()
    lines = Path("t.tlog").read_text().splitlines()
    assert lines and all(re.fullmatch(r"(f|c|r\d+) [0-2] \d+\.\d{6} \d+\.\d{6}", line) for line in lines)
    assert any(line.startswith("r300 ") for line in lines)
    for line in lines:
        _, _, sent, received = line.split()
        assert float(sent) <= float(received)


@pytest_twisted.ensureDeferred
async def test_seat_sockets_have_nodelay(in_tmp: Path) -> None:
    """Every accepted seat socket has TCP_NODELAY set."""
    import socket

    from twisted.internet import reactor

    from dealer.match import Match
    from tests.dealer.bots import connect

    config = make_config("n", hands=50)
    match = Match(config, reactor)
    ports = match.listen()
    finished = match.start()
    bots = call_bots(config)
    for bot, port in zip(bots, ports):
        await connect(reactor, port, bot)
    from twisted.internet import task

    while not all(seat.protocol for seat in match.seats):
        await task.deferLater(reactor, 0.01, lambda: None)
    handles = [seat.protocol.transport.getHandle() for seat in match.seats]  # type: ignore[union-attr]
    assert all(h.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) for h in handles)
    await finished


@pytest.mark.parametrize("log_name", ["nl1000", "lim1000"])
@pytest_twisted.ensureDeferred
async def test_matchstate_traffic_equals_reference_trace(in_tmp: Path, log_name: str) -> None:
    """Every message sent (seat and MATCHSTATE line, in order) equals the reference's trace."""
    import io
    import re

    # Bytes, not text: universal newlines would drop the '\r' of every TO line.
    reference_trace = (REFERENCE / "transcripts" / f"{log_name}.trace").read_bytes().decode()
    stamp = re.compile(r"^(TO|FROM) (\d+) at \d+\.\d+ ", re.MULTILINE)
    expected = [line for line in stamp.sub(r"\1 \2 ", reference_trace).split("\n") if line.startswith("TO ")]
    actions = actions_from_log(REFERENCE / "logs" / f"{log_name}.log")
    config = make_config(log_name, GAME_FILES[log_name], hands=1000, seed=42, names=("p1", "p2"))
    stream = io.StringIO()
    await play(config, [TestBot(config.game, replay_strategy(actions)) for _ in range(2)], stderr=stream)
    ours = [line for line in stamp.sub(r"\1 \2 ", stream.getvalue()).split("\n") if line.startswith("TO ")]
    assert len(ours) == len(expected)
    assert ours == expected

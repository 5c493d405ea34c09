"""Typed events: one frozen record per event kind; the JSON lines keep their names and order."""

from __future__ import annotations

import dataclasses
import io
import json
import re
from pathlib import Path

import pytest

from dealer import events as ev
from dealer.events import Cause, Event, EventLog, EventRecord, QueryCause

#: Every kind with a sample record, and the keys of its JSON line in order (the JSON
#: lines as the dealer has always written them: ``match``, the fields, ``event``,
#: ``level``, ``timestamp``), its level, and whether it shows on the console.
SAMPLES: list[tuple[EventRecord, list[str], str, bool]] = [
    (ev.Listening(ports=(1, 2), bind="127.0.0.1"), ["ports", "bind"], "info", False),
    (ev.ConnectionOpened(seat=1, peer="p"), ["seat", "peer"], "info", False),
    (ev.ConnectionClosed(seat=1, peer="p", reason="r"), ["seat", "peer", "reason"], "info", False),
    (ev.ConnectionRefused(seat=1, peer="p", reason="r"), ["seat", "peer", "reason"], "warning", False),
    (ev.VersionMismatch(seat=1, line="VERSION:3.0.0"), ["seat", "line"], "warning", True),
    (ev.SeatConnected(seat=1, name="a", peer="p"), ["seat", "name", "peer"], "info", False),
    (ev.SeatReady(seat=1, name="a"), ["seat", "name"], "info", False),
    (ev.SeatQueryable(seat=2, line="# range-query 1", version=1), ["seat", "line", "version"], "info", False),
    (ev.SeatAnnounceRefused(seat=2, line="# range-query 9", supported=(1, 2)),
     ["seat", "line", "supported"], "warning", False),
    (ev.Resumed(actions=3, hands_finished=1, mid_hand=True), ["actions", "hands_finished", "mid_hand"],
     "info", True),
    (ev.MatchStarted(hands=5, seed=1, names=("a", "b"), first_hand=0),
     ["hands", "seed", "names", "first_hand"], "info", True),
    (ev.ActionPlayed(seat=1, hand=0, action="c", seconds=0.1, corrected=False),
     ["seat", "hand", "action", "seconds", "corrected"], "debug", False),
    (ev.ActionCorrected(seat=1, hand=0, correction="x"), ["seat", "hand", "correction"], "warning", False),
    (ev.ReplyIgnored(seat=1, hand=0, problem="x"), ["seat", "hand", "problem"], "warning", False),
    (ev.PartialLineDropped(file="m.log"), ["file"], "warning", True),
    (ev.HandFinished(hand=0, betting="cc/", values=(1.0, -1.0)), ["hand", "betting", "values"], "debug", False),
    (ev.QueryAnswered(seat=2, seconds=0.1, actions=1), ["seat", "seconds", "actions"], "debug", False),
    (ev.QueryErrored(seat=2, cause=QueryCause.TIMEOUT, reason="late", seconds=1.0),
     ["seat", "cause", "reason", "seconds"], "warning", False),
    (ev.QueryRefused(seat=1, reason="no valid qid", line="QUERY"), ["seat", "reason", "line"], "warning", False),
    (ev.QueryRefused(seat=1, reason="too many"), ["seat", "reason"], "warning", False),
    (ev.QueryAnswerDropped(seat=2, qid="q", line="RANGE:q"), ["seat", "qid", "line"], "warning", False),
    (ev.QueryAnswersDropped(seat=2, dropped=9, not_logged=4), ["seat", "dropped", "not_logged"], "warning", False),
    (ev.LinesNotLogged(seat=2, hand=3, kind="reply_ignored", count=94), ["seat", "hand", "kind", "count"],
     "warning", False),
    (ev.RangeInconsistency(hand=0, count=1), ["hand", "count"], "debug", False),
    (ev.InternalError(error="boom", seat=1), ["error", "seat"], "error", True),
    (ev.InternalError(error="boom"), ["error"], "error", True),
    (ev.MatchAborted(cause=Cause.TIMEOUT, seat=2, error="x", hands_finished=1),
     ["cause", "seat", "error", "hands_finished"], "error", True),
    (ev.MatchAborted(cause=Cause.STARTUP, seat=None, error="x", hands_finished=0),
     ["cause", "seat", "error", "hands_finished"], "error", True),
    (ev.MatchAborted(cause=Cause.WRITE_FAILED, error="x", hands_finished=0),
     ["cause", "error", "hands_finished"], "error", True),
    (ev.MatchFinished(score="SCORE:1|-1:a|b", hands=1, corrections=(0, 0), ignored=(0, 0), exit_code=0,
                      totals={"a": "1", "b": "-1"}),
     ["score", "hands", "corrections", "ignored", "exit_code", "totals"], "info", True),
    (ev.MatchEndedEarly(score="SCORE:0|0:a|b", hands=0, corrections=(0, 0), ignored=(0, 0), exit_code=3,
                        totals={"a": "0", "b": "0"}),
     ["score", "hands", "corrections", "ignored", "exit_code", "totals"], "error", True),
]


def _kinds() -> set[type[EventRecord]]:
    return {kind for kind in vars(ev).values()
            if isinstance(kind, type) and issubclass(kind, EventRecord) and "EVENT" in vars(kind)}


def test_every_event_name_has_one_record_kind() -> None:
    """Each :class:`Event` is carried by exactly one record class, and every class is sampled here."""
    kinds = _kinds()
    assert sorted(kind.EVENT for kind in kinds) == sorted(Event)
    assert {type(record) for record, *_ in SAMPLES} == kinds


@pytest.mark.parametrize(("record", "keys", "level", "console"), SAMPLES,
                         ids=[f"{type(s[0]).__name__}-{i}" for i, s in enumerate(SAMPLES)])
def test_json_line_keeps_the_names_and_order(tmp_path: Path, record: EventRecord, keys: list[str],
                                             level: str, console: bool) -> None:
    """A record's JSON line has the names and the order the log has always had, at its level;
    it reaches the console only when its kind says so (and at INFO or above)."""
    screen = io.StringIO()
    log = EventLog("m", tmp_path / "m.events.jsonl", console=screen)
    seen: list[EventRecord] = []
    log.subscribe(seen.append)
    log.emit(record)
    log.close()
    (line,) = (tmp_path / "m.events.jsonl").read_text().splitlines()
    data = json.loads(line)
    assert list(data) == ["match", *keys, "event", "level", "timestamp"]
    assert data["event"] == record.EVENT.value and data["level"] == level
    assert seen == [record]
    assert (record.EVENT.value in screen.getvalue()) == (console and level != "debug")


def test_a_misspelt_field_fails_at_construction() -> None:
    """A typo in a field name is a TypeError (and a mypy error), not a silently missing field."""
    with pytest.raises(TypeError):
        ev.HandFinished(hand=0, betting="", valeus=(0.0, 0.0))  # type: ignore[call-arg]
    record = ev.SeatReady(seat=1, name="a")
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.seat = 2  # type: ignore[misc]


def test_events_off_cost_nothing(tmp_path: Path) -> None:
    """``wants`` says whether a kind would go anywhere, so the hot path builds no record for
    nobody: not with events off (``--no_events``), nor for a debug kind with only a console."""
    log = EventLog("m", None)
    assert not log.wants(ev.HandFinished) and not log.wants(ev.MatchStarted)
    console = EventLog("m", None, console=io.StringIO())
    assert not console.wants(ev.HandFinished) and console.wants(ev.MatchStarted)
    log.subscribe(lambda event: None)
    assert log.wants(ev.HandFinished)
    written = EventLog("m", tmp_path / "m.events.jsonl")
    assert written.wants(ev.HandFinished)
    written.close()


def _structlog_line(record: EventRecord) -> str:
    """The line structlog's chain (``json_processors``, how the file was written before
    ``json_line``) renders for ``record``."""
    import structlog

    out = io.StringIO()
    logger = structlog.wrap_logger(structlog.WriteLogger(out), processors=ev.json_processors()).bind(match="m")
    getattr(logger, record.LEVEL)(record.EVENT.value, **record.fields())
    return out.getvalue()


_STAMP = re.compile(r'"timestamp": "[^"]*"')


@pytest.mark.parametrize("record", [s[0] for s in SAMPLES], ids=[f"{type(s[0]).__name__}-{i}" for i, s in enumerate(SAMPLES)])
def test_json_line_is_what_structlog_wrote(record: EventRecord) -> None:
    """``json_line`` writes the bytes structlog's chain wrote, the timestamp's form included."""
    ours = ev.json_line("m", record, ev._utc_stamp())
    theirs = _structlog_line(record)
    assert _STAMP.sub("T", ours) == _STAMP.sub("T", theirs)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?Z", json.loads(ours)["timestamp"])


def test_json_line_of_an_internal_error_carries_its_traceback() -> None:
    """An ``exc_info=True`` event gets structlog's traceback dict (no locals), as before."""
    try:
        raise ValueError("boom")
    except ValueError:
        record = ev.InternalError(error="boom", exc_info=True)
        ours = ev.json_line("m", record, ev._utc_stamp())
        theirs = _structlog_line(record)
    assert _STAMP.sub("T", ours) == _STAMP.sub("T", theirs)
    data = json.loads(ours)
    assert list(data)[-1] == "exception" and "exc_info" not in data
    assert data["exception"][0]["exc_type"] == "ValueError"
    assert "locals" not in json.dumps(data["exception"])


def test_hand_lines_are_written_in_batches(tmp_path: Path) -> None:
    """``hand_finished`` lines wait until BATCH_BYTES are pending; any other event, and the
    close, write them at once, in order."""
    path = tmp_path / "m.events.jsonl"
    log = EventLog("m", path)
    hand = ev.HandFinished(hand=0, betting="cc/", values=(1.0, -1.0))
    log.emit(hand)
    assert path.read_text() == ""  # waiting
    size = len(ev.json_line("m", hand, ev._utc_stamp()))
    for _ in range(ev.BATCH_BYTES // size - 1):
        log.emit(hand)
    assert path.read_text() == ""
    log.emit(hand)  # BATCH_BYTES reached
    written = path.read_text().splitlines()
    assert len(written) == ev.BATCH_BYTES // size + 1
    log.emit(hand)
    log.emit(ev.SeatReady(seat=1, name="a"))  # not a debug event: everything goes out
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [d["event"] for d in lines[-2:]] == ["hand_finished", "seat_ready"]
    log.emit(hand)
    log.close()
    assert json.loads(path.read_text().splitlines()[-1])["event"] == "hand_finished"


def test_hand_lines_wait_at_most_batch_seconds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A slow match's hand lines do not wait for BATCH_BYTES: BATCH_SECONDS after the first."""
    now = [100.0]
    monkeypatch.setattr(ev.time, "monotonic", lambda: now[0])
    path = tmp_path / "m.events.jsonl"
    log = EventLog("m", path)
    hand = ev.HandFinished(hand=0, betting="cc/", values=(1.0, -1.0))
    log.emit(hand)
    now[0] += ev.BATCH_SECONDS / 2
    log.emit(hand)
    assert path.read_text() == ""
    now[0] += ev.BATCH_SECONDS / 2
    log.emit(hand)
    assert len(path.read_text().splitlines()) == 3
    log.close()


def test_json_line_without_the_c_encoder(monkeypatch: pytest.MonkeyPatch) -> None:
    """On an interpreter without json's C accelerator the lines are json.dumps's: the same bytes."""
    records = [s[0] for s in SAMPLES]
    fast = [ev.json_line("m", record, "T") for record in records]
    monkeypatch.setattr(ev, "_ENCODE", None)
    assert [ev.json_line("m", record, "T") for record in records] == fast


@pytest.mark.parametrize("now_ns", [0, 1_764_338_103_123_456_789, 1_764_338_103_000_000_999,
                                    1_764_338_103_999_999_000, 1_764_338_104_000_001_000, 4_102_444_800_500_000_000])
def test_utc_stamp_is_isoformat(now_ns: int) -> None:
    """The cached-second stamp is ``datetime.isoformat()``'s text with ``Z`` (structlog's form),
    fraction or none, across second boundaries."""
    import datetime

    moment = datetime.datetime.fromtimestamp(now_ns // 10**9, datetime.timezone.utc).replace(
        microsecond=now_ns // 1000 % 10**6)
    assert ev.utc_stamp(now_ns) == moment.isoformat().replace("+00:00", "Z")


@pytest.mark.parametrize(("match", "betting", "values"), [
    ("m", "cc/", (1.0, -1.0)),
    ("bench", "r300c/cr600c/r1200f", (600.0, -600.0)),
    ("dir/ä \"q\"", "", (0.5, -0.25, -0.25)),
    ("x", "r20000c///", (-20000.0, 20000.0, 0.0)),
    ("y", "f", (1e21, -1e21)),
    ("y", "f", (1e21, -1e21)),  # again: the values' text kept from the line before
    ("z", "cc/", (0.0, -0.0)),
    ("z", "cc/", (-0.0, 0.0)),  # equal to the tuple before, not the same text
    ("z", "r300f", (150.5, -150.5)),
])
def test_hand_finished_line_is_json_line(match: str, betting: str, values: tuple[float, ...],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The per-hand line built without a record has json_line's bytes (names, order, number
    and string forms), with and without json's C encoder."""
    record = ev.HandFinished(hand=17, betting=betting, values=values)
    stamp = "2026-11-28T19:00:00.123456Z"
    expected = ev.json_line(match, record, stamp)
    assert ev.hand_finished_line(json.dumps(match), 17, betting, values, stamp) == expected
    monkeypatch.setattr(ev, "_ENCODE", None)
    assert ev.hand_finished_line(json.dumps(match), 17, betting, values, stamp) == expected


def test_hand_finished_writes_the_record_line_and_tells_subscribers(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """``EventLog.hand_finished`` writes what ``emit(HandFinished(...))`` writes, batched the same
    way; with a subscriber, the subscriber gets the record."""
    monkeypatch.setattr(ev, "_utc_stamp", lambda: "T")
    direct, emitted = tmp_path / "a.events.jsonl", tmp_path / "b.events.jsonl"
    fast, slow = EventLog("m", direct), EventLog("m", emitted)
    for hand in range(60):  # past BATCH_BYTES: some batches written before the close
        fast.hand_finished(hand, "r300c/f", (300.0, -300.0))
        slow.emit(ev.HandFinished(hand=hand, betting="r300c/f", values=(300.0, -300.0)))
        assert direct.read_bytes() == emitted.read_bytes()
    fast.close()
    slow.close()
    assert direct.read_bytes() == emitted.read_bytes() and direct.read_text().count("\n") == 60
    seen: list[EventRecord] = []
    told = EventLog("m", None)
    told.subscribe(seen.append)
    told.hand_finished(3, "cc/", (1.0, -1.0))
    assert seen == [ev.HandFinished(hand=3, betting="cc/", values=(1.0, -1.0))]


def test_the_values_text_cache_stays_within_its_bound_and_keeps_the_bytes() -> None:
    """A no-limit match meets many distinct values: the kept texts stop at their bound, and a
    tuple past it is still written as json.dumps writes it."""
    ev._VALUES_TEXT.clear()
    try:
        for chips in range(1, ev._VALUES_TEXTS + 500):
            values = (float(chips), -float(chips))
            assert ev._json_values(values) == json.dumps(list(values))
        assert len(ev._VALUES_TEXT) == ev._VALUES_TEXTS
    finally:
        ev._VALUES_TEXT.clear()

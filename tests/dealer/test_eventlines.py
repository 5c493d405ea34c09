"""The events file's per-hand lines as the compiled hand loop adds them (dealer/eventlines.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dealer import eventlines
from dealer import events as ev
from dealer.events import EventLog


def _without_stamps(text: str) -> list[dict[str, object]]:
    """The lines of an events file, read, without their time stamps (two runs differ there)."""
    lines = [json.loads(line) for line in text.splitlines()]
    for line in lines:
        line.pop("timestamp")
    return lines


def test_added_lines_are_the_records_lines_in_order(tmp_path: Path) -> None:
    """Lines added by the hand loop (``PendingLines.add``) reach the file as ``emit`` of the
    record writes them, in the events' order: before a later event, and at the close."""
    added, emitted = tmp_path / "a.events.jsonl", tmp_path / "b.events.jsonl"
    fast, slow = EventLog("m", added), EventLog("m", emitted)
    assert fast.pending.open
    for hand in range(3):
        assert not fast.pending.add(hand, "r300c/f", (300.0, -300.0))  # waits: far from a batch
        slow.emit(ev.HandFinished(hand=hand, betting="r300c/f", values=(300.0, -300.0)))
    assert added.read_text() == ""
    for log in (fast, slow):
        log.emit(ev.SeatReady(seat=1, name="a"))  # not a debug event: everything goes out
    assert _without_stamps(added.read_text()) == _without_stamps(emitted.read_text())
    assert [line["event"] for line in _without_stamps(added.read_text())] == ["hand_finished"] * 3 + ["seat_ready"]
    fast.pending.add(3, "cc/", (1.0, -1.0))
    slow.emit(ev.HandFinished(hand=3, betting="cc/", values=(1.0, -1.0)))
    fast.close()
    slow.close()
    assert _without_stamps(added.read_text()) == _without_stamps(emitted.read_text())
    assert not fast.pending.open and not fast.pending.lines


def test_add_says_when_the_batch_is_due_and_flush_writes_it(tmp_path: Path) -> None:
    """``add`` returns True once BATCH_BYTES are pending; the event log's flush writes the lines."""
    path = tmp_path / "m.events.jsonl"
    log = EventLog("m", path)
    due = [log.pending.add(hand, "cc/", (1.0, -1.0)) for hand in range(200)]
    first = due.index(True)
    line = len(log.pending.lines[0])
    assert first == -(-eventlines.BATCH_BYTES // line) - 1  # the line that reaches BATCH_BYTES
    log.flush()
    assert len(path.read_text().splitlines()) == 200 and not log.pending.lines
    assert log.pending.pending == 0
    log.close()


def test_without_a_file_nothing_is_open() -> None:
    """With no events file (--no_events) the hand loop adds nothing (``open`` is False)."""
    assert not EventLog("m", None).pending.open


@pytest.mark.parametrize("values", [(1.0, -1.0), (0.0, -0.0), (150.5, -150.5), (1e21, -1e21)])
def test_the_stamp_and_line_are_the_record_line(values: tuple[float, ...]) -> None:
    """A line added has json_line's bytes for its record, with a stamp of now."""
    pending = eventlines.PendingLines(json.dumps("m"))
    pending.add(7, "r300f", values)
    line = pending.take()
    stamp = json.loads(line)["timestamp"]
    assert line == ev.json_line("m", ev.HandFinished(hand=7, betting="r300f", values=values), stamp)
    assert pending.take() == ""


def test_numbers_are_written_as_json_dumps_writes_them() -> None:
    """Whole chip counts take a short path (their integer and ``.0``); every number, whole or
    not, signed zero, huge, tiny or not finite, has json.dumps's text."""
    import random

    rng = random.Random(3)
    values = [0.0, -0.0, 1.0, -1.0, 0.5, 150.5, 1e15, 1e16, 1e21, -1e21, 2.0**53, 2.0**53 - 1,
              -(2.0**53) + 1, 9007199254740993.0, 1e-7, float("inf"), float("-inf"), float("nan"), 7, True]
    values += [float(rng.randint(-20000, 20000)) for _ in range(500)]
    values += [rng.uniform(-1e17, 1e17) for _ in range(200)]
    values += [float(rng.randint(-(2**60), 2**60)) for _ in range(200)]
    for value in values:
        assert eventlines._json_number(value) == json.dumps(value), value


def test_values_are_written_as_json_dumps_writes_them() -> None:
    """A hand's values, whole chip counts or not, mixed with zeros, ints, huge or odd numbers:
    json.dumps's text of the list, whichever path writes it."""
    import random

    rng = random.Random(5)
    odd = [0.0, -0.0, 0.5, 1e21, -1e21, 2.0**53, 9007199254740993.0, float("inf"), float("nan"), 7, True]
    for _ in range(3000):
        size = rng.choice([2, 2, 3, 6])
        values = tuple(float(rng.randint(-20000, 20000)) if rng.random() < 0.9 else rng.choice(odd)
                       for _ in range(size))
        assert eventlines._json_values(values) == json.dumps(list(values)), values
    # A tuple equal to a kept one, but of ints or bools, is not given the floats' text.
    for kept, equal in [((7.0, -7.0), (7, -7)), ((1.0, -1.0), (True, -1.0))]:
        assert eventlines._json_values(kept) == json.dumps(list(kept))
        assert eventlines._json_values(equal) == json.dumps(list(equal)), equal

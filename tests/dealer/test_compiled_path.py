"""On a compiled build, the dealer's per-action path makes no call into Python code of its own.

A function or property of a Python class called from compiled code is a frame of the
interpreter, a few thousand instructions: the hand loop once read the state made ready
through a property of the connection (19 calls a hand) and asked the busy poll and the way
of sending states, then pure Python, at every decision point (docs/architecture.md,
"The compiled protocol core"). This plays a match in memory as the CLI's read step does,
the .log and the events file on and the measure of the way of sending states at its
default, and counts the Python frames of ``dealer/`` and ``protocol/`` entered from anywhere
but the test: a few per hand (the .log's write), none per action.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

import protocol
from tests.dealer.harness import MemoryTable, make_config
from tests.dealer.test_ahead import _example_mix
from tests.dealer.test_memory import _play_out

ROOT = Path(__file__).resolve().parents[2]
#: The packages whose Python frames count, and the tests' own folder (the caller not counted).
COUNTED = (str(ROOT / "dealer") + "/", str(ROOT / "protocol") + "/")
TESTS = str(ROOT / "tests") + "/"
HANDS = 300


@pytest.mark.skipif(not protocol.COMPILED, reason="the pure sources run every step as Python frames")
def test_no_python_call_of_the_dealer_per_decision_point(in_tmp: Path) -> None:
    config = make_config("compiled", hands=HANDS, seed=5, events=True)
    table = MemoryTable(config, read_step=True, poll=False)
    calls: dict[str, int] = {}

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        code = frame.f_code
        caller = frame.f_back
        if code.co_filename.startswith(COUNTED) and not (
                caller is not None and caller.f_code.co_filename.startswith(TESTS)):
            name = f"{Path(code.co_filename).stem}.{code.co_qualname}"
            calls[name] = calls.get(name, 0) + 1

    sys.setprofile(profile)
    try:
        _play_out(table, _example_mix(5))
    finally:
        sys.setprofile(None)
    assert table.done.result.finished == HANDS
    assert table.sent_ahead > HANDS  # the read step answered ahead, so the state was made ready
    # Per hand, never per action: the .log's hand (its file's write and flush) and the
    # trace's flush at a hand's end; the rest is the match's start and end and the events
    # file's batches.
    per_hand = {name: count for name, count in calls.items() if count >= HANDS / 2}
    assert set(per_hand) <= {"events.RecordFile.write", "events.RecordFile.flush",
                             "events.Trace.flush"}, per_hand
    assert max(calls.values()) <= 1.1 * HANDS + 30, calls

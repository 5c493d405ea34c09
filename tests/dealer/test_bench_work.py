"""bench/bench_dealer_work.py: the dealer's work per hand, and the part of it before the send."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _bench() -> ModuleType:
    sys.path.insert(0, str(BENCH))  # it imports bench_dealer from its own folder, as when run
    try:
        spec = importlib.util.spec_from_file_location("bench_dealer_work", BENCH / "bench_dealer_work.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


def test_work_to_the_send_is_a_part_of_the_work() -> None:
    """Every line of a seat to act causes a send, so the time to the sends is positive,
    and the dealer works on after them (the wait, the hand's record), so it is a part."""
    run = _bench().dealer_work(hands=40, seed=3)
    assert 0.0 < run["us_to_send_per_hand"] < run["us_per_hand"]
    assert 2.0 <= run["actions_per_hand"] <= 30.0


def test_with_the_read_step_the_states_made_ready_are_sent_and_play_is_the_same() -> None:
    """--read-step delivers bytes as the CLI reactor does: the same play (the bots' mix is
    seeded, so the same actions a hand), and the time to the sends falls below the work."""
    bench = _bench()
    plain = bench.dealer_work(hands=40, seed=3)
    stepped = bench.dealer_work(hands=40, seed=3, read_step=True)
    assert stepped["read_step"] and not plain["read_step"]
    assert stepped["actions_per_hand"] == plain["actions_per_hand"]
    assert 0.0 < stepped["us_to_send_per_hand"] < stepped["us_per_hand"]


def test_with_events_the_match_writes_its_events_file_and_play_is_the_same(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """--events: the match writes its events file (one hand_finished line a hand, in a
    temporary folder) and plays the same hands; --cpu times with the thread's CPU clock."""
    bench = _bench()
    written: list[str] = []
    real = bench.Match

    def keep_events_path(config: Any, **kwargs: Any) -> Any:
        match = real(config, **kwargs)
        written.append(str(config.events_path))
        return match

    monkeypatch.setattr(bench, "Match", keep_events_path)
    plain = bench.dealer_work(hands=40, seed=3)
    hands_lines: list[int] = []
    real_close = bench.tempfile.TemporaryDirectory.cleanup

    def count_then_clean(folder: Any) -> None:
        text = Path(written[-1]).read_text()
        hands_lines.append(text.count('"event": "hand_finished"'))
        real_close(folder)

    monkeypatch.setattr(bench.tempfile.TemporaryDirectory, "cleanup", count_then_clean)
    monkeypatch.setattr(bench, "now_ns", bench._CLOCK["cpu"])
    with_events = bench.dealer_work(hands=40, seed=3, events=True)
    assert with_events["events"] and not plain["events"]
    assert hands_lines == [40]
    assert with_events["actions_per_hand"] == plain["actions_per_hand"]
    assert 0.0 < with_events["us_to_send_per_hand"] < with_events["us_per_hand"]

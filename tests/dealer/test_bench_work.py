"""bench/bench_dealer_work.py: the dealer's work per hand, and the part of it before the send."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

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

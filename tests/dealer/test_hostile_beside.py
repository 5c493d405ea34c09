"""Attacks beside an honest match in one real dealer process, on loopback (issue 33's judging).

bench/bench_hostile.py measures how much each attack slows the honest match;
these tests check, without timing anything, what must hold whatever the
machine: the honest match plays every hand to its SCORE line, the attack is
reported in one line, and no process of ours is left. The two cases are the
ones that cost the dealer the most CPU in the bench before the unusable lines
were held back (dealer/budget.py ``unusable_line_hold_s``): bots that stay
under the budgets of unusable lines for the whole match, with stale replies or
with junk lines of up to 3,000 bytes.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_hostile.py"
HANDS = 150


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_hostile", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_hostile"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler to build the honest C bots")
@pytest.mark.parametrize("case", ["ignored_under", "garbage"])
def test_an_attack_beside_an_honest_match_costs_it_no_hand_and_leaves_no_process(tmp_path: Path,
                                                                                case: str) -> None:
    bench = _bench()
    plain_bot = bench.build_bot(tmp_path)
    folder = tmp_path / "run"
    folder.mkdir()
    run = bench.run_once(folder, plain_bot, bench.CASES[case], HANDS, "attack", timeout=60.0)
    assert not run.timed_out
    assert run.honest_hands == HANDS and run.honest_score, (run.honest_hands, run.honest_score)
    assert run.leftovers == []
    assert len(run.hostile_lines) == 1, run.hostile_lines  # the hostile match's end, in one line
    assert run.events_bytes < 1000 * HANDS  # a few events and a count per hand, not one per line

"""The C example bot (docs/examples/range_bot.c): compiled with the machine's cc, measured by LBR.

It proves the version-2 answer format outside Python: the bot announces
``# range-query 2`` only, answers in base64 float32, and an evaluation through
the command line runs against it with no query error.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from acpc_lbr.results.querylog import read_query_log

REPO = Path(__file__).resolve().parents[2]
SOURCE = REPO / "docs" / "examples" / "range_bot.c"
ACPC_LBR = Path(sys.executable).parent / "acpc-lbr"
CC = shutil.which("cc")


def fold_probability(hand_cards: np.ndarray) -> np.ndarray:
    """The C bot's fold table, per hand (its higher card's rank: below 8 -> 3/4, below J -> 1/4)."""
    high = hand_cards.max(axis=1) // 4
    return np.where(high < 6, 0.75, np.where(high < 9, 0.25, 0.0))


@pytest.fixture(scope="module")
def range_bot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bot compiled with cc, warnings as errors."""
    if CC is None:
        pytest.skip("no C compiler ('cc') on this machine: the C example bot cannot be built")
    binary = tmp_path_factory.mktemp("cbot") / "range_bot"
    subprocess.run([CC, "-O2", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic",
                    "-o", str(binary), str(SOURCE)], check=True, timeout=120)
    return binary


def test_lbr_measures_the_c_bot_through_version_2(range_bot: Path, tmp_path: Path) -> None:
    """evaluate --opponent-cmd runs against the C bot: version 2 negotiated, no query error, rows as documented."""
    out = tmp_path / "run"
    done = subprocess.run(
        [str(ACPC_LBR), "evaluate", "--opponent-cmd", f"{range_bot} {{host}} {{port}}",
         "--hands", "60", "--rounds", "1-4", "--quiet", "--out", str(out), "--json", str(tmp_path / "r.json")],
        capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    document = json.loads((tmp_path / "r.json").read_text())
    assert document["counts"]["queries"] > 50 and document["counts"]["query_errors"] == 0
    assert document["counts"]["range_inconsistencies"] == 0
    assert document["estimators"]["duplicate_io"]["chips"]["n"] == 60
    events = [json.loads(line) for line in (out / "lbr-vs-range_bot.events.jsonl").read_text().splitlines()]
    (announced,) = [e for e in events if e["event"] == "seat_queryable"]
    assert (announced["line"], announced["version"]) == ("# range-query 2", 2)
    # The rows the dealer kept are the bot's table, bit for bit (float32 of 0, 1/4, 3/4, 1).
    from protocol.gamedef import load_game

    game = load_game("nolimit")
    folds = fold_probability(game.hand_cards)
    rows = [row for hand in read_query_log(out / "lbr-vs-range_bot.queries").rows.values() if hand
            for row in hand]
    assert rows
    for row in rows:  # every kept row is a call row: 1 - fold facing a bet, else 1
        assert np.array_equal(row, 1.0 - folds) or np.array_equal(row, np.ones(game.num_hands))

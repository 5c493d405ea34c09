"""The plain C bot (docs/examples/plain_bot.c) measured through the probe adapter.

The bot is compiled with the machine's cc and run as real processes behind
the adapter, which faces a scripted dealer (loopback, 127.0.0.1):

* ``threshold`` is card-aware and deterministic: every probed answer must
  equal the exact one, computed here from the rule the C file states (the
  raise sizes from :mod:`protocol.rules`, so the C bot's betting replay is
  checked too);
* ``random`` is card-blind: its probed frequencies, pooled over the hands,
  must match its stated strategy within sampling error, a single raise size
  gets only its exact-size share, and the answer carries its sampling error;
* (slow) LBR through ``evaluate --probe`` against the C bot agrees, within
  the intervals, with LBR against the same strategy written with the SDK
  (tests/data/bots/blind_random.py) and asked real range queries.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import pytest_twisted

from protocol.gamedef import load_game
from protocol.rangecodec import decode_answer
from protocol.rangequery import read_query
from protocol.rules import Action
from tests.agents.test_probe import run_probe

REPO = Path(__file__).resolve().parents[2]
SOURCE = REPO / "docs" / "examples" / "plain_bot.c"
SDK_TWIN = REPO / "tests" / "data" / "bots" / "blind_random.py"
ACPC_LBR = Path(sys.executable).parent / "acpc-lbr"
NOLIMIT = load_game("nolimit")
CC = shutil.which("cc")


@pytest.fixture(scope="module")
def plain_bot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bot compiled with cc, warnings as errors."""
    if CC is None:
        pytest.skip("no C compiler ('cc') on this machine: the C example bot cannot be built")
    binary = tmp_path_factory.mktemp("cbot") / "plain_bot"
    subprocess.run([CC, "-O2", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic",
                    "-o", str(binary), str(SOURCE)], check=True, timeout=120)
    return binary


def launcher(binary: Path, strategy: str, copies: int, processes: list[Any]) -> Any:
    def launch(port: int) -> list[subprocess.Popen[bytes]]:
        started = [subprocess.Popen([str(binary), strategy, "127.0.0.1", str(port)])
                   for _ in range(copies)]
        processes.extend(started)
        return started
    return launch


def with_min_raise(query: str) -> str:
    """``{min}`` in the query's actions filled with the smallest legal raise-to there (protocol.rules)."""
    _, state = read_query(query.replace("{min}", "1"), NOLIMIT)
    low, _ = state.raise_range() or (0, 0)
    return query.replace("{min}", str(low))


def threshold_rows(query_line: str) -> np.ndarray:
    """The exact answer of plain_bot.c's 'threshold' strategy, from the rule its header states."""
    query, state = read_query(query_line, NOLIMIT)
    ranks = NOLIMIT.hand_cards // 4
    board = {card // 4 for card in query.state.board_cards}
    paired = np.isin(ranks, list(board)).any(axis=1)
    pocket = ranks[:, 0] == ranks[:, 1]
    level = np.where(paired, 2, np.where(pocket, np.where(ranks[:, 0] >= 7, 2, 1),
                                         np.where(ranks.max(axis=1) >= 9, 1, 0)))
    low = state.raise_range()
    facing = state.can_fold()
    raises = (level == 2) & (low is not None)
    folds = (level == 0) & facing
    played = {Action.FOLD: folds, Action.CALL: ~raises & ~folds}
    if low is not None:
        played[Action.raise_to(low[0])] = raises
    rows = np.array([played.get(a, np.zeros(NOLIMIT.num_hands, bool)) for a in query.actions], float)
    rows[:, NOLIMIT.hands_sharing(query.state.board_cards)] = 0.0
    return rows


THRESHOLD_QUERIES = [
    "QUERY:q1:1:0::|:f,c,r{min},r300",
    "QUERY:q2:0:0:r300:|:f,c,r{min}",
    "QUERY:q3:0:0:cc/:|/Ks7d2c:c,r{min}",
    "QUERY:q4:1:0:cc/r400:|/Ks7d2c:f,c,r{min}",
    "QUERY:q5:0:0:cc/cc/cc/:|/Ks7d2c/9h/3s:c,r{min}",
]


@pytest_twisted.ensureDeferred
async def test_the_deterministic_c_bot_is_answered_exactly(plain_bot: Path) -> None:
    """Probed answers of the threshold bot equal its exact ones; the playing copy's action reaches the dealer."""
    queries = [with_min_raise(q) for q in THRESHOLD_QUERIES]
    state = "MATCHSTATE:1:0::|AhAs"
    processes: list[Any] = []
    replies, adapter = await run_probe(
        [None] * 3, [state, *queries], expected=1 + len(queries), samples=2, game=NOLIMIT,
        launch=launcher(plain_bot, "threshold", 3, processes))
    assert f"{state}:r200" in replies
    for line in queries:
        query, _ = read_query(line, NOLIMIT)
        (answer,) = [r for r in replies if r.startswith(f"RANGE:{query.qid}:")]
        probed = decode_answer(answer, query.actions, NOLIMIT.num_hands)
        exact = threshold_rows(line)
        assert exact.sum() > 0 and probed.sampling_error == (0.0, 0.0)
        np.testing.assert_array_equal(probed.rows, exact, err_msg=line)
    assert adapter.stats.refused == 0 and adapter.stats.copy_failures == 0
    assert adapter.stats.verdict == "consistent" and adapter.stats.checks == 1


@pytest_twisted.ensureDeferred
async def test_the_card_blind_random_c_bot_is_answered_within_sampling_error(plain_bot: Path) -> None:
    """Fold 6%, call 47%, raise 47% spread over 19,801 sizes: the pooled probes agree; one size gets its share only."""
    samples = 20
    queries = ["QUERY:q1:1:0::|:f,c,r200,r20000", "QUERY:q2:0:0:cc/:|/Ks7d2c:c,r200"]
    processes: list[Any] = []
    replies, adapter = await run_probe(
        [None] * 3, queries, expected=2, samples=samples, game=NOLIMIT,
        launch=launcher(plain_bot, "random", 3, processes))
    preflop, flop = (decode_answer(next(r for r in replies if r.startswith(f"RANGE:{q}:")),
                                   read_query(line, NOLIMIT)[0].actions, NOLIMIT.num_hands)
                     for q, line in zip(("q1", "q2"), queries, strict=True))
    for answer, expected in ((preflop, {0: 0.06, 1: 0.47}), (flop, {0: 0.5})):
        live = answer.rows[:, ~NOLIMIT.hands_sharing(read_query(
            queries[answer is flop], NOLIMIT)[0].state.board_cards)]
        draws = samples * live.shape[1]
        for row, share in expected.items():
            error = np.sqrt(share * (1 - share) / draws)
            assert abs(live[row].mean() - share) < 5 * error, (answer.qid, row)
        # Each raise size has 0.47 / 19,801 (or 0.5 / 19,801) of the mass: about 0.6 of
        # the draws; P(Poisson(0.7) > 8) < 1e-7.
        for row in range(len(expected), len(answer.actions)):
            assert live[row].sum() * samples <= 8
        assert answer.sampling_error is not None
        largest, mean = answer.sampling_error
        assert 0 < mean < largest <= 0.5 / np.sqrt(samples)
    # The asked actions leave the other raise sizes out: the answer's mass is about 0.53.
    assert adapter.stats.smallest_mass < 0.9
    assert adapter.stats.probes == samples * (1326 + 1176)  # the flop blocks 150 hands


def evaluate(tmp_path: Path, name: str, command: str, *args: str) -> dict[str, Any]:
    out = tmp_path / name
    done = subprocess.run(
        [str(ACPC_LBR), "evaluate", "--opponent-cmd", command, "--hands", "200", "--seed", "3",
         "--no-io", "--quiet", "--out", str(out), "--json", str(tmp_path / f"{name}.json"), *args],
        capture_output=True, text=True, timeout=3000, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    document: dict[str, Any] = json.loads((tmp_path / f"{name}.json").read_text())
    return document


@pytest.mark.slow
def test_lbr_through_probes_agrees_with_lbr_through_real_queries(plain_bot: Path, tmp_path: Path) -> None:
    """The C random bot probed and its SDK twin queried: LBR's duplicate win rates agree within the intervals."""
    probed = evaluate(tmp_path, "probed", f"{plain_bot} random {{host}} {{port}}", "--probe", "20")
    queried = evaluate(tmp_path, "queried",
                       f"{ACPC_LBR} play {SDK_TWIN}:strategy {{host}} {{port}} --game nolimit")
    a, b = (d["estimators"]["duplicate"]["chips"] for d in (probed, queried))
    gap = abs(a["mean"] - b["mean"])
    assert gap <= a["half_width_95"] + b["half_width_95"], (a, b)
    assert probed["probe"]["consistency"]["verdict"] == "consistent"
    assert probed["probe"]["sampled_answers"] > 0 and probed["probe"]["refused"] == 0
    assert probed["counts"]["lbr_active_decisions"] > 0

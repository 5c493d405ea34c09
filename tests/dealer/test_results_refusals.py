"""``acpc-lbr results`` refuses files that do not say what was played, instead of a figure.

Each case starts from the files of a real (simulated) Leduc match, changes one
thing a user could get wrong or a crash could leave, and expects a ValueError
(exit 2 with one line) where a figure used to come out: the same log twice, a
hand missing, values the cards do not give, a SCORE that is not the hands'
sum, the query log of another match or another measured player. A torn last
line is ignored, as in a query log.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from acpc_lbr.cli.results import main as results_main
from acpc_lbr.results import results_from_files
from tests.dealer.test_results import _honest_ask, _play_match


@pytest.fixture
def match(tmp_path: Path) -> Path:
    """The directory of a duplicate match ``d`` (d.log, d.dup.log and their query logs)."""
    ask = _honest_ask()
    _play_match(tmp_path, "d", ("lbr", "bot"), 120, 3, ask, half=0)
    _play_match(tmp_path, "d.dup", ("bot", "lbr"), 120, 3, ask, half=1)
    return tmp_path


def _edit(path: Path, change: object) -> None:
    lines = path.read_text(encoding="ascii").splitlines(keepends=True)
    path.write_text("".join(change(lines)), encoding="ascii")  # type: ignore[operator]


def test_the_same_log_twice_is_refused(match: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: the first seating counted twice (360 hands of a 240-hand match, a narrower interval)."""
    whole = results_from_files([match / "d.log", match / "d.dup.log"])
    assert whole["counts"]["hands"] == 240
    with pytest.raises(ValueError, match="given twice"):
        results_from_files([match / "d.log", match / "d.log", match / "d.dup.log"])
    with pytest.raises(ValueError, match="given twice"):
        results_from_files([match / "d.log", match / "." / "d.log"])
    copy = match / "copy"
    copy.mkdir()
    for name in ("d.log", "d.queries"):
        shutil.copy(match / name, copy / name)
    with pytest.raises(ValueError, match="same match"):
        results_from_files([match / "d.log", copy / "d.log"])
    assert results_main([str(match / "d.log"), str(match / "d.log")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "count twice" in err


def test_a_log_with_a_hand_missing_is_refused(match: Path) -> None:
    """Before: 119 hands, no word of the missing one (and a SCORE that no longer added up)."""
    _edit(match / "d.log", lambda lines: [ln for ln in lines if not ln.startswith("STATE:40:")])
    with pytest.raises(ValueError, match="SCORE is not the sum"):
        results_from_files([match / "d.log"])
    _edit(match / "d.log", lambda lines: [ln for ln in lines if not ln.startswith("SCORE:")])
    with pytest.raises(ValueError, match="hand 40 is missing"):
        results_from_files([match / "d.log"])


def _swap_values(line: str) -> str:
    fields = line.split(":")
    first, second = fields[4].split("|")
    fields[4] = f"{second}|{first}"
    return ":".join(fields)


def test_values_the_cards_do_not_give_are_refused(match: Path) -> None:
    """Before: the logged values were taken as they stood, whatever the betting and cards gave."""
    def swap(lines: list[str]) -> list[str]:
        target = next(i for i, ln in enumerate(lines) if ln.startswith("STATE:") and ":0|0:" not in ln)
        lines[target] = _swap_values(lines[target])
        return [ln for ln in lines if not ln.startswith("SCORE:")]

    _edit(match / "d.log", swap)
    with pytest.raises(ValueError, match="are not what its betting and cards give"):
        results_from_files([match / "d.log"])


def test_a_score_that_is_not_the_sum_is_refused(match: Path) -> None:
    def change(lines: list[str]) -> list[str]:
        return [ln.replace("SCORE:", "SCORE:1", 1) if ln.startswith("SCORE:") else ln for ln in lines]

    _edit(match / "d.log", change)
    with pytest.raises(ValueError, match=r"d.log:\d+: the SCORE is not the sum"):
        results_from_files([match / "d.log"])


def test_a_torn_last_line_is_ignored_and_a_malformed_one_refused(match: Path) -> None:
    """Before: a STATE line cut short by a kill ended ``results`` with a traceback (exit 1)."""
    lines = (match / "d.log").read_text(encoding="ascii").splitlines(keepends=True)
    (match / "d.log").write_text("".join(lines[:80]) + lines[80][:-8], encoding="ascii")
    doc = results_from_files([match / "d.log"])
    assert doc["counts"]["hands"] == 80 - 4  # the four header lines
    (match / "d.log").write_text("".join(lines[:80]) + lines[80][:-8] + "\n" + "".join(lines[81:]),
                                 encoding="ascii")
    with pytest.raises(ValueError, match=r"d.log:81: "):
        results_from_files([match / "d.log"])
    assert results_main([str(match / "d.log")]) == 2


def test_the_query_log_of_another_match_is_refused(match: Path) -> None:
    """Before: the mirror's rows gave the first seating's showdowns IO values from other lines."""
    shutil.copy(match / "d.dup.queries", match / "d.queries")
    with pytest.raises(ValueError, match="the query log is for match 'd.dup', not 'd'"):
        results_from_files([match / "d.log"])


def test_rows_of_other_lines_are_refused(match: Path) -> None:
    """A query log whose header fits but whose hands' lines are not the log's."""
    def shift(lines: list[str]) -> list[str]:
        hands = [i for i, ln in enumerate(lines) if '"decisions"' in ln]
        first, second = hands[0], hands[1]
        a, b = lines[first], lines[second]
        number_a = a.split('"hand":', 1)[1].split(",", 1)[0]
        number_b = b.split('"hand":', 1)[1].split(",", 1)[0]
        lines[first] = a.replace(f'"hand":{number_a},', f'"hand":{number_b},', 1)
        lines[second] = b.replace(f'"hand":{number_b},', f'"hand":{number_a},', 1)
        return lines

    _edit(match / "d.queries", shift)
    with pytest.raises(ValueError, match="are for the line"):
        results_from_files([match / "d.log"])


def test_another_measured_player_than_the_query_log_s_is_refused(match: Path) -> None:
    """Before: ``--measure bot`` weighted the bot's showdowns by the bot's own answers as if they were
    its opponent's, and printed that as IO."""
    assert results_from_files([match / "d.log"], measured="lbr")["counts"]["hands"] == 120
    with pytest.raises(ValueError, match="the query log is for measured 'lbr', not 'bot'"):
        results_from_files([match / "d.log"], measured="bot")


def test_logs_of_other_players_are_refused(match: Path) -> None:
    """Before: LBR against one bot and LBR against another made one figure, labelled with the first."""
    _play_match(match, "o", ("lbr", "other"), 60, 9, _honest_ask("call-raise"))
    with pytest.raises(ValueError, match=re.escape("players lbr|other, not lbr|bot")):
        results_from_files([match / "d.log", match / "o.log"])


def test_matches_dealt_the_same_cards_to_the_same_seats_are_refused(match: Path) -> None:
    """Before: a second match from the same seed with the same seating counted its hands, the same
    deals, as independent samples. The two halves of a duplicate match (seats reversed) still pair."""
    _play_match(match, "again", ("lbr", "bot"), 60, 3, _honest_ask())
    with pytest.raises(ValueError, match="dealt from the same seed 3 to the same seats"):
        results_from_files([match / "d.log", match / "d.dup.log", match / "again.log"])
    _play_match(match, "other", ("lbr", "bot"), 60, 4, _honest_ask())
    assert results_from_files([match / "d.log", match / "other.log"])["counts"]["hands"] == 180


def test_aivat_rows_of_other_decisions_or_not_probabilities_are_refused(tmp_path: Path) -> None:
    """Before: AIVAT was recomputed from rows recorded for other decisions, or from values outside
    [0, 1], as long as their actions were there."""
    import json

    import numpy as np

    from acpc_lbr.results.querylog import encode_row

    _play_match(tmp_path, "v", ("lbr", "bot"), 80, 4, _honest_ask(), aivat=True)
    original = (tmp_path / "v.queries").read_text(encoding="ascii")
    records = [json.loads(line) for line in original.splitlines()]
    with_aivat = [r for r in records if r.get("type") == "hand" and r.get("aivat")]
    a, b = next((x, y) for x in with_aivat for y in with_aivat
                if [d["betting"] for d in x["aivat"]] != [d["betting"] for d in y["aivat"]]
                and len(x["aivat"]) == len(y["aivat"]))
    a["aivat"], b["aivat"] = b["aivat"], a["aivat"]
    (tmp_path / "v.queries").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="ascii")
    with pytest.raises(ValueError, match="AIVAT rows of hand"):
        results_from_files([tmp_path / "v.log"])
    records = [json.loads(line) for line in original.splitlines()]
    target = next(r for r in records if r.get("type") == "hand" and r.get("aivat"))
    action = next(iter(target["aivat"][0]["rows"]))
    target["aivat"][0]["rows"][action] = encode_row(np.full(6, 1.5))
    (tmp_path / "v.queries").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="ascii")
    with pytest.raises(ValueError, match=r"not 6 probabilities in \[0, 1\]"):
        results_from_files([tmp_path / "v.log"])


def test_a_mirror_from_another_seed_is_refused(match: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Before: MATCH.dup.log of another run (another seed) paired with MATCH.log hand by hand, as if
    the same deals had been played with the seats reversed."""
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    _play_match(elsewhere, "d.dup", ("bot", "lbr"), 120, 8, _honest_ask(), half=1)
    (match / "d.dup.queries").unlink()
    shutil.copy(elsewhere / "d.dup.log", match / "d.dup.log")
    with pytest.raises(ValueError, match="is not the mirror of"):
        results_from_files([match / "d.log", match / "d.dup.log"])

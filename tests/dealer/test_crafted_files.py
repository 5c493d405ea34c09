"""``acpc-lbr results`` on crafted files: every read is bounded, every refusal one line.

Each case starts from the files of a simulated Leduc match (as in
test_results_refusals.py), plants one hostile thing a file could hold -- a
zlib bomb in a row, a 50 MB junk line, rows for hands the log does not hold,
records of the wrong shape, JSON nested too deep -- and checks that the read
ends in a ``ValueError`` (exit 2 and one line on stderr), with the memory it
took (``tracemalloc``: Python objects and numpy arrays) far below the planted
size.
"""

from __future__ import annotations

import base64
import json
import tracemalloc
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from acpc_lbr.cli.results import main as results_main
from acpc_lbr.results import results_from_files
from acpc_lbr.results.querylog import QUERY_LOG_LINE_LIMIT, encode_row, read_query_log
from tests.dealer.test_results import _honest_ask, _play_match

MB = 1 << 20


@pytest.fixture
def match(tmp_path: Path) -> Path:
    """The directory of a match ``d`` (d.log and d.queries)."""
    _play_match(tmp_path, "d", ("lbr", "bot"), 60, 3, _honest_ask())
    return tmp_path


def _bomb(size: int) -> str:
    """A row's text that inflates to ``size`` zero bytes (built in pieces: never ``size`` bytes at once)."""
    packer = zlib.compressobj(9)
    piece = bytes(MB)
    packed = b"".join(packer.compress(piece) for _ in range(size // MB)) + packer.flush()
    return base64.b64encode(packed).decode("ascii")


def _first_hand_with_rows(lines: list[str]) -> int:
    return next(i for i, line in enumerate(lines) if '"decisions"' in line)


def _refused_in_one_line(paths: list[Path], capsys: pytest.CaptureFixture[str], match: str) -> None:
    assert results_main([str(p) for p in paths]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and match in err, err


def _peak_bytes(read: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        with pytest.raises(ValueError):
            read()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_zlib_bomb_in_a_row_is_refused_after_one_row_s_bytes(
        match: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: a 2.8 MB row inflated without limit (4.2 GB of RSS). Now a row stops at 8 bytes a hand."""
    lines = (match / "d.queries").read_text(encoding="ascii").splitlines(keepends=True)
    target = _first_hand_with_rows(lines)
    record = json.loads(lines[target])
    record["decisions"][0]["row"] = _bomb(256 * MB)
    lines[target] = json.dumps(record) + "\n"
    (match / "d.queries").write_text("".join(lines), encoding="ascii")
    peak = _peak_bytes(lambda: results_from_files([match / "d.log"]))
    assert peak < 8 * MB, f"reading took {peak / MB:.0f} MB"
    _refused_in_one_line([match / "d.log"], capsys, "inflates past 48 bytes")


def test_a_row_of_another_length_is_refused(match: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A row of 7 values for a game of 6 hands is not a row of this game."""
    import numpy as np

    lines = (match / "d.queries").read_text(encoding="ascii").splitlines(keepends=True)
    target = _first_hand_with_rows(lines)
    record = json.loads(lines[target])
    record["decisions"][0]["row"] = encode_row(np.full(5, 0.5))
    lines[target] = json.dumps(record) + "\n"
    (match / "d.queries").write_text("".join(lines), encoding="ascii")
    _refused_in_one_line([match / "d.log"], capsys, "not 6 float64 values")


def test_a_50_mb_junk_line_in_a_log_is_refused_unread(match: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: a 50 MB line in the middle of a .log was read whole and the log accepted (exit 0)."""
    lines = (match / "d.log").read_text(encoding="ascii").splitlines(keepends=True)
    lines.insert(30, "x" * (50 * MB) + "\n")
    (match / "d.log").write_text("".join(lines), encoding="ascii")
    peak = _peak_bytes(lambda: results_from_files([match / "d.log"]))
    assert peak < 24 * MB, f"reading took {peak / MB:.0f} MB"
    _refused_in_one_line([match / "d.log"], capsys, "d.log:31: a line of more than 8,388,608 characters")


def test_an_over_long_query_log_line_is_refused(match: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A .queries line past QUERY_LOG_LINE_LIMIT is refused once that much is read."""
    with open(match / "d.queries", "a", encoding="ascii") as file:
        file.write("y" * (QUERY_LOG_LINE_LIMIT + 10) + "\n")
    _refused_in_one_line([match / "d.log"], capsys, "a line of more than")


def test_rows_of_hands_the_log_does_not_hold_are_not_decoded(match: Path) -> None:
    """A crafted file of many hands with cheap constant rows (a 250x inflation each) past the log's
    end: counted as before, but never inflated. A hand listing more rows than it had actions is refused."""
    import numpy as np

    cheap = encode_row(np.full(6, 0.5))
    extra = "".join(json.dumps({"type": "hand", "hand": 1000 + k, "opponent_position": 0,
                                "decisions": [{"betting": "", "action": "c", "source": "relayed",
                                               "row": cheap}]}) + "\n" for k in range(2000))
    with open(match / "d.queries", "a", encoding="ascii") as file:
        file.write(extra)
    doc = results_from_files([match / "d.log"])
    assert doc["counts"]["hands"] == 60
    actions_of = {k: 4 for k in range(60)}
    data = read_query_log(match / "d.queries", 6, actions_of)
    assert not any(k >= 1000 for k in data.rows)
    lines = (match / "d.queries").read_text(encoding="ascii").splitlines(keepends=True)
    target = _first_hand_with_rows(lines)
    record = json.loads(lines[target])
    record["decisions"] *= 100
    lines[target] = json.dumps(record) + "\n"
    (match / "d.queries").write_text("".join(lines), encoding="ascii")
    with pytest.raises(ValueError, match="rows for the"):
        results_from_files([match / "d.log"])


@pytest.mark.parametrize("line", [
    "[1, 2]",
    '{"type": "hand", "hand": "seven"}',
    '{"type": "hand", "hand": 3, "opponent_position": 0, "decisions": 5}',
    '{"type": "hand", "hand": 3, "opponent_position": 0, "decisions": [{"row": 7}]}',
    '{"type": "hand", "hand": 3, "opponent_position": 0, "aivat": [{"betting": "", "rows": [1]}]}',
    '{"type": "hand", "hand": 3, "opponent_position": 0, "decisions": [{"row": "!!notbase64"}]}',
    "[" * 100_000 + "]" * 100_000,
])
def test_records_of_the_wrong_shape_are_refused_in_one_line(
        match: Path, line: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: a list, a string hand number, a field of another type or deep nesting gave a
    traceback (AttributeError, TypeError, RecursionError)."""
    lines = (match / "d.queries").read_text(encoding="ascii").splitlines(keepends=True)
    lines.insert(5, line + "\n")
    (match / "d.queries").write_text("".join(lines), encoding="ascii")
    assert results_main([str(match / "d.log")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "d.queries:6: " in err and len(err) < 500, err


def test_a_header_claiming_a_huge_row_is_refused(tmp_path: Path) -> None:
    """Read without a game, a row's length comes from the header: a claim past MAX_ROW_HANDS is refused."""
    (tmp_path / "h.queries").write_text('{"type": "header", "version": 2, "num_hands": 1000000000000}\n',
                                         encoding="ascii")
    with pytest.raises(ValueError, match="is not a count of hands"):
        read_query_log(tmp_path / "h.queries")

"""Reading files users hand us stays bounded (acpc_lbr/runtime/bounded.py), and results documents are
checked against their schema (acpc_lbr.results.read_document): one line, no traceback.

The documents start from a real one (tests/data/results/evaluate-hands200-seed5.json,
written by ``acpc-lbr evaluate``) with one field changed.
"""

from __future__ import annotations

import io
import json
import zlib
from pathlib import Path
from typing import Any

import pytest

from acpc_lbr.cli.report import main as report_main
from acpc_lbr.cli.results import main as results_main
from acpc_lbr.results import MAX_DOCUMENT_BYTES, read_document
from acpc_lbr.runtime.bounded import bounded_lines, inflate

GOOD = Path(__file__).parent.parent / "data" / "results" / "evaluate-hands200-seed5.json"


def test_inflate_stops_at_its_limit() -> None:
    """A zlib bomb produces at most limit + 1 bytes before it is refused; data that fits is returned."""
    bomb = zlib.compress(bytes(10 << 20), 9)
    with pytest.raises(ValueError, match="inflates past 1,000 bytes"):
        inflate(bomb, 1000)
    assert inflate(zlib.compress(b"abc"), 3) == b"abc"
    with pytest.raises(ValueError, match="not zlib data"):
        inflate(b"plain", 100)
    with pytest.raises(ValueError, match="cut short"):
        inflate(zlib.compress(bytes(100))[:-6], 1000)


def test_bounded_lines_refuses_a_long_line_and_keeps_a_torn_one() -> None:
    """Lines up to the limit pass (line end counted), a longer one is refused naming its number."""
    assert list(bounded_lines(io.StringIO("ab\ncd"), 3, "f")) == ["ab\n", "cd"]
    with pytest.raises(ValueError, match=r"^f:2: a line of more than 3 characters"):
        list(bounded_lines(io.StringIO("ab\nabcd\n"), 3, "f"))


def _good() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(GOOD.read_text(encoding="utf-8"))
    return doc


def _document(tmp_path: Path, change: Any) -> Path:
    doc = _good()
    change(doc)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


@pytest.mark.parametrize(("change", "where"), [
    (lambda d: d.update(big_blind="100"), "$.big_blind"),
    (lambda d: d["estimators"]["raw"]["chips"].update(n=[1, 2]), "$.estimators.raw.chips.n"),
    (lambda d: d["estimators"]["raw"]["chips"]["exact"].update(sum="1/0"), "$.estimators.raw.chips.exact.sum"),
    (lambda d: d["counts"].update(hands={"a": 1}), "$.counts.hands"),
    (lambda d: d.update(config={"players": "ab"}), "$.config.players"),
    (lambda d: d.update(trajectory={"hands": list(range(5000)), "estimators": {}}), "$.trajectory.hands"),
    (lambda d: d.update(version=99), "$.version"),
])
def test_a_field_of_the_wrong_type_is_refused_naming_it(tmp_path: Path, change: Any, where: str,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Before: a wrong type gave a traceback (or a figure) in report and merge."""
    path = _document(tmp_path, change)
    with pytest.raises(ValueError, match=f"at {where.replace('$', '[$]')}, "):
        read_document(path)
    assert results_main(["--merge", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and len(err) < 400, err


def test_deep_nesting_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: JSON nested 100,000 deep ended ``report`` with a RecursionError traceback."""
    path = tmp_path / "deep.json"
    path.write_text('{"schema": ' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    with pytest.raises(ValueError, match="nested too deep"):
        read_document(path)
    pytest.importorskip("matplotlib")
    assert report_main([str(path), "--out", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nested too deep" in err


def test_a_document_past_the_size_limit_is_refused_unread(tmp_path: Path) -> None:
    """Before: a 1.6 GB trajectory was parsed whole (7.2 GB of RSS)."""
    path = tmp_path / "big.json"
    with open(path, "w", encoding="utf-8") as file:
        file.write('{"schema": "acpc-lbr/results", "pad": "')
        file.write("0" * MAX_DOCUMENT_BYTES)
        file.write('"}')
    with pytest.raises(ValueError, match="larger than any results document: refused unread"):
        read_document(path)


def test_the_recorded_document_meets_the_schema() -> None:
    """The schema takes what the program writes (a document of ``evaluate``)."""
    assert read_document(GOOD)["counts"]["hands"] == 400


def test_trajectory_columns_of_another_length_are_refused(tmp_path: Path) -> None:
    """A column shorter than the points (an IndexError in the report before) is refused in one line."""
    path = _document(tmp_path, lambda d: d.update(trajectory={
        "unit": "chips", "stride": 1, "hands": [1, 2, 3],
        "estimators": {"raw": {"n": [1, 2, 3], "mean": [0.5], "half_width_95": [None, None, None],
                               "exact": {"sum": ["1", "2", "3"], "sum_sq": ["1", "2", "3"]}}}}))
    with pytest.raises(ValueError, match="trajectory column raw.mean has 1 entries for 3 points"):
        read_document(path)

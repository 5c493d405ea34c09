"""docs/reliability.md's table stays honest: every row names tests that exist, every attack test has a row."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ATTACK_TESTS = ROOT / "tests" / "dealer" / "test_hostile.py"


def table_rows() -> list[str]:
    """The rows of the attack table in docs/reliability.md."""
    text = (ROOT / "docs" / "reliability.md").read_text()
    section = text.split("\n| Attack", 1)[1].split("\n\n", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| Attack")]


def defined_tests(path: Path) -> set[str]:
    """Names of the module-level test functions of a test file."""
    tree = ast.parse(path.read_text())
    return {node.name for node in tree.body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_")}


def test_every_row_names_existing_tests() -> None:
    """Each row has an attack, an outcome and at least one `path::test` that is defined in that file."""
    rows = table_rows()
    assert len(rows) >= 15
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert len(cells) == 3 and all(cells), row
        named = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", cells[2])
        assert named, f"no test named in: {row}"
        for path, name in named:
            assert name in defined_tests(ROOT / path), f"{path}::{name} does not exist"


def test_every_attack_test_has_a_row() -> None:
    """No attack test is left out of the table."""
    named = {name for row in table_rows() for name in re.findall(r"test_hostile\.py::(\w+)", row)}
    assert defined_tests(ATTACK_TESTS) - named == set()
    assert len(named) >= 20

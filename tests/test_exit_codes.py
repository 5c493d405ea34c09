"""Exit codes: one meaning per number, and README's table says what acpc_lbr/exit_codes.py says."""

from __future__ import annotations

import re
from pathlib import Path

from acpc_lbr import exit_codes

README = Path(__file__).resolve().parent.parent / "README.md"


def _codes() -> dict[str, int]:
    return {name: value for name, value in vars(exit_codes).items() if name.startswith("EXIT_")}


def test_each_number_has_one_name() -> None:
    codes = _codes()
    assert len(codes) >= 7
    assert len(set(codes.values())) == len(codes), codes


def test_readme_table_matches_the_module() -> None:
    section = README.read_text().split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    found = re.findall(r"^\| (\d+) \| `(EXIT_[A-Z_]+)` \|", section, re.MULTILINE)
    rows = {name: int(code) for code, name in found}
    assert rows == _codes()

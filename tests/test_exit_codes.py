"""Exit codes: one meaning per number, and docs/exit-codes.md's table says what acpc_lbr/exit_codes.py says."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from acpc_lbr.runtime import exit_codes

ROOT = Path(__file__).resolve().parent.parent
EXIT_CODES_DOC = ROOT / "docs" / "exit-codes.md"


def _codes() -> dict[str, int]:
    return {name: value for name, value in vars(exit_codes).items() if name.startswith("EXIT_")}


def test_each_number_has_one_name() -> None:
    codes = _codes()
    assert len(codes) >= 7
    assert len(set(codes.values())) == len(codes), codes


def test_readme_table_matches_the_module() -> None:
    section = EXIT_CODES_DOC.read_text()
    found = re.findall(r"^\| (\d+) \| `(EXIT_[A-Z_]+)` \|", section, re.MULTILINE)
    rows = {name: int(code) for code, name in found}
    assert rows == _codes()


def _package_sources() -> list[Path]:
    root = ROOT
    return sorted(path for package in ("protocol", "dealer", "agents", "acpc_lbr")
                  for path in (root / package).rglob("*.py"))


def _is_int_literal(value: ast.expr | None) -> bool:
    if isinstance(value, ast.Tuple):
        return all(_is_int_literal(element) for element in value.elts)
    return isinstance(value, ast.Constant) and type(value.value) is int


def test_exit_codes_have_one_home() -> None:
    """No module but acpc_lbr/runtime/exit_codes.py defines an EXIT_ name (agents/probe.py had its own)."""
    homes = []
    for path in _package_sources():
        if path.name == "exit_codes.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.Assign, ast.AnnAssign)) or not _is_int_literal(node.value):
                continue  # (EXIT_GRACE_SECONDS = 10.0 is a time, not a status)
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names = target.elts if isinstance(target, ast.Tuple) else [target]
                homes += [f"{path.name}:{node.lineno} {n.id}" for n in names
                          if isinstance(n, ast.Name) and n.id.startswith("EXIT_")]
    assert homes == []


def test_commands_return_named_exit_codes() -> None:
    """A program's ``main``/``run`` returns a named exit code, never a bare number."""
    bare = []
    for path in _package_sources():
        for function in ast.walk(ast.parse(path.read_text())):
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) and function.name in ("main", "run"):
                bare += [f"{path.name}:{node.lineno}" for node in ast.walk(function)
                         if isinstance(node, ast.Return) and isinstance(node.value, ast.Constant)
                         and type(node.value.value) is int]
    assert bare == []

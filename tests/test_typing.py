"""The typed packages pass ``mypy --strict`` (configured in pyproject.toml)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_strict_on_every_package() -> None:
    """protocol/, dealer/, agents/ and acpc_lbr/ type-check under --strict (kernels excepted)."""
    result = subprocess.run(
        [sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


#: Modules whose interfaces (signatures, class attributes) carry real types, no ``Any``.
TYPED_INTERFACES = ("dealer/results.py", "dealer/events.py", "dealer/metrics.py", "dealer/match.py",
                    "dealer/interfaces.py", "dealer/config.py", "dealer/seating.py", "dealer/handloop.py",
                    "dealer/turns.py", "dealer/writers.py", "dealer/seats.py",
                    "acpc_lbr/results/document.py", "acpc_lbr/results/outcomes.py",
                    "acpc_lbr/results/querylog.py", "acpc_lbr/results/matchlog.py", "acpc_lbr/results/files.py",
                    "acpc_lbr/results/merge.py", "acpc_lbr/results/table.py", "acpc_lbr/estimators.py",
                    "acpc_lbr/trajectory.py",
                    "acpc_lbr/app/evaluate/run.py", "acpc_lbr/app/evaluate/evaluation.py",
                    "acpc_lbr/app/evaluate/processes.py", "acpc_lbr/app/evaluate/output.py")


def _annotations(tree: ast.Module) -> list[tuple[int, ast.expr]]:
    """Every annotation of a public interface: function parameters and returns, class attributes."""
    found: list[tuple[int, ast.expr]] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            arguments = node.args
            for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                        arguments.vararg, arguments.kwarg]:
                if arg is not None and arg.annotation is not None:
                    found.append((arg.lineno, arg.annotation))
            if node.returns is not None:
                found.append((node.lineno, node.returns))
        elif isinstance(node, ast.ClassDef):
            found += [(item.lineno, item.annotation) for item in node.body if isinstance(item, ast.AnnAssign)]
    return found


def test_no_any_in_the_results_and_evaluate_interfaces() -> None:
    """The seam between dealer, results, metrics and evaluate is typed: no ``Any`` in a signature
    or a class attribute of these modules (JSON as read from a file may stay ``Any`` inside)."""
    loose = []
    for name in TYPED_INTERFACES:
        path = ROOT / name
        for line, annotation in _annotations(ast.parse(path.read_text())):
            text = ast.unparse(annotation)
            if "Any" in text.replace("[", " ").replace("]", " ").replace(",", " ").replace("|", " ").split():
                loose.append(f"{name}:{line} {text}")
    assert loose == []

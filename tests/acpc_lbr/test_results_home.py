"""The results home (``acpc_lbr/results/``): free of Twisted, the dealer and the agents, with
one step from a finished hand to its outcome.

``acpc-lbr results`` reads finished match files; it has no network and no
players. So neither it nor ``import acpc_lbr.results`` may load Twisted, a
``dealer`` module or an ``agents`` module (before, the offline readers lived in
``dealer/results.py`` and the command loaded the dealer with them). Read from
``python -X importtime`` in a fresh process, so a module loaded anywhere counts.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ACPC_LBR = Path(sys.executable).parent / "acpc-lbr"
MATCHES = Path(__file__).resolve().parents[1] / "data" / "results" / "matches"
#: Packages the results home must not load (a name, or a dotted prefix).
NOT_LOADED = ("twisted", "dealer", "agents")


def _imported(command: list[str], cwd: Path) -> set[str]:
    """The modules a fresh ``python -X importtime`` process running ``command`` imported."""
    done = subprocess.run([sys.executable, "-X", "importtime", *command], cwd=cwd, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return {found[1] for line in done.stderr.splitlines()
            if (found := re.match(r"import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", line))}


def _forbidden(imported: set[str]) -> list[str]:
    return sorted(m for m in imported for p in NOT_LOADED if m == p or m.startswith(p + "."))


@pytest.mark.parametrize("command", [
    ["-c", "import acpc_lbr.results"],
    [str(ACPC_LBR), "results", "dup.log", "dup.dup.log", "--json"],
], ids=["import", "acpc-lbr results"])
def test_results_load_no_twisted_dealer_or_agents(command: list[str]) -> None:
    """``import acpc_lbr.results`` and ``acpc-lbr results`` (on a duplicate match with IO and
    AIVAT: every reader) load no Twisted, dealer or agents module."""
    imported = _imported(command, MATCHES / "leduc-dup-aivat")
    assert "acpc_lbr.results" in imported  # the reading works
    assert _forbidden(imported) == []


def test_the_scan_sees_a_forbidden_import() -> None:
    """The check would see the dealer and Twisted: a process that imports them is caught."""
    imported = _imported(["-c", "import acpc_lbr.results, dealer.events, twisted.internet.defer"], MATCHES)
    assert {"dealer.events", "twisted", "twisted.internet.defer"} <= set(_forbidden(imported))


#: The functions that value a hand (IO, AIVAT): only the one step calls them.
VALUERS = ("hand_io", "hand_aivat_value")
#: Where that step lives.
ONE_STEP = "acpc_lbr/results/outcomes.py"


def _calls(path: Path) -> list[str]:
    """The names of :data:`VALUERS` that ``path`` calls (by name or as an attribute)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name in VALUERS:
                found.append(name)
    return sorted(set(found))


def test_one_step_from_a_finished_hand_to_its_outcome() -> None:
    """Only :class:`acpc_lbr.results.outcomes.HandAccountant` values a hand: the live dealer,
    ``acpc-lbr results`` and the simulation call it, none has a loop of its own (there were three)."""
    callers = {str(path.relative_to(REPO)): _calls(path)
               for package in ("protocol", "acpc_lbr", "agents", "dealer", "bench")
               for path in sorted((REPO / package).rglob("*.py")) if _calls(path)}
    assert callers == {ONE_STEP: sorted(VALUERS)}

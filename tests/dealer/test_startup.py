"""The plain dealer's start-up: what it imports before its port line.

``acpc-lbr tournament`` starts one dealer per seating, thousands per event, so
what a dealer loads before it listens is paid thousands of times. A plain
dealer (``acpc-lbr dealer M G N S a b -q``: the ``.log`` and the events file on,
no console, no metrics) must not load the console's structlog (with rich and
pygments), the metrics (prometheus_client, twisted.web), numpy (its deals come
from Python's own MT19937; range queries, their answers and hand tables load with the first
range query), the compute core's numba kernels, or, before its port line, its
results pipeline.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ACPC_LBR = Path(sys.executable).parent / "acpc-lbr"

#: Packages a plain dealer must not import before its port line (a name, or a dotted prefix).
#: The results of a plain dealer (the query log beside its ``.log``) load after it.
NOT_LOADED = ("structlog", "rich", "pygments", "prometheus_client", "numba", "numpy", "scipy", "jsonschema",
              "twisted.web", "dealer.metrics", "dealer.results", "acpc_lbr.results", "acpc_lbr.estimators",
              "protocol.rangecodec", "protocol.rangequery", "protocol.hands")


def modules_before_port_line(args: list[str], cwd: Path) -> tuple[set[str], str]:
    """Start ``acpc-lbr dealer ARGS`` with ``-X importtime``; the modules it had imported when
    it printed its port line, and that line. The dealer is stopped then.

    Its stdout and stderr are one pipe, so the order of the lines is the order of the
    events: every import before the port line, none after it.
    """
    command = [sys.executable, "-X", "importtime", str(ACPC_LBR), "dealer", *args]
    proc = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    imported: set[str] = set()
    port_line = ""
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            found = re.match(r"import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", line)
            if found:
                imported.add(found[1])
            elif re.fullmatch(r"\d+ \d+\n", line):
                port_line = line
                break
    finally:
        proc.terminate()
        proc.communicate(timeout=60)
    return imported, port_line


def loaded(imported: set[str], package: str) -> list[str]:
    return sorted(m for m in imported if m == package or m.startswith(package + "."))


@pytest.mark.parametrize("flags", [["-q"], ["-q", "-l"], ["-q", "-l", "--no_events"]])
def test_plain_dealer_loads_no_console_metrics_or_kernels(tmp_path: Path, flags: list[str]) -> None:
    """Up to its port line a plain dealer imports none of :data:`NOT_LOADED` (the import
    list is read from ``-X importtime``, so a module loaded at start-up anywhere counts)."""
    imported, port_line = modules_before_port_line(["m", "nolimit", "10", "1", "a", "b", *flags], tmp_path)
    assert re.fullmatch(r"\d+ \d+\n", port_line)
    assert "dealer.match" in imported and "twisted.internet.tcp" in imported  # the reading works
    assert {package: loaded(imported, package) for package in NOT_LOADED} == dict.fromkeys(NOT_LOADED, [])


def test_console_still_loads_structlog(tmp_path: Path) -> None:
    """The readable console (``--console``) is structlog's: asked for, it is loaded."""
    imported, _ = modules_before_port_line(["m", "nolimit", "10", "1", "a", "b", "-q", "--console"], tmp_path)
    assert "structlog" in imported


def test_results_asked_for_load_before_the_port_line(tmp_path: Path) -> None:
    """``--table`` (like ``--results-json`` and ``--metrics-port``) sets the results up before the
    port line, where a failure still means "did not start"."""
    imported, _ = modules_before_port_line(["m", "nolimit", "10", "1", "a", "b", "-q", "--table"], tmp_path)
    assert "dealer.results" in imported

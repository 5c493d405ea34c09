"""acpc-lbr tournament under attack: hostile bots, hostile files, careless users.

Each test plays the attack for real (the command, its dealers and bot
processes over loopback) and checks what the issue asks of it: one clear line,
the right fault kind, the event going on or refused at the start, nothing of
ours left running, and the same document whatever the timing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ACPC_LBR = [sys.executable, "-m", "acpc_lbr.cli", "tournament"]


def run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ACPC_LBR, *args], capture_output=True, text=True, timeout=timeout, check=False)


def script(folder: Path, name: str, body: str) -> Path:
    """A bot program written for the test (Python, run by this interpreter)."""
    path = folder / name
    path.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body))
    path.chmod(0o755)
    return path


#: Connects, says its version, then answers every state with ``REPLY`` (a template).
ANSWERING_BOT = """
    import socket, sys, time
    s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
    s.sendall(b"VERSION:2.0.0\\r\\n")
    for line in s.makefile("rb"):
        REPLY
"""


def faults_of(out: Path) -> dict[str, set[str]]:
    document = json.loads((out / "results.json").read_text())
    kinds: dict[str, set[str]] = {}
    for fault in document["faults"]:
        kinds.setdefault(fault["entrant"], set()).add(fault["kind"])
    return kinds


def test_the_dealers_diagnosis_wins_over_the_bots_exit_on_the_closed_connection(tmp_path: Path) -> None:
    # A 1 MB line, and a bot too slow for --t-response: the dealer drops each, and each then
    # dies on its closed socket with status 1. Their faults are what the dealer saw, not crashes.
    big = script(tmp_path, "big.py", ANSWERING_BOT.replace("REPLY", 's.sendall(b"x" * (1 << 20) + b"\\r\\n")'))
    slow = script(tmp_path, "slow.py", ANSWERING_BOT.replace("REPLY", 'time.sleep(3); s.sendall(line.strip() + b":c\\r\\n")'))
    out = tmp_path / "event"
    done = run("--game", "kuhn", "--entrant", "r=random", "--entrant", f"big={big} {{host}} {{port}}",
               "--entrant", f"slow={slow} {{host}} {{port}}", "--format", "gauntlet", "--matches", "1",
               "--hands", "5", "--retries", "0", "--max-failures", "5", "--t-response", "1000",
               "--concurrency", "2", "--out", str(out), "-q")
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
    kinds = faults_of(out)
    assert kinds == {"big": {"protocol_error"}, "slow": {"timeout"}}, kinds

"""Two reference bots through the project's own dealer (`acpc-lbr dealer`), on loopback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "acpc_lbr.cli"]


@pytest.mark.parametrize(
    ("game", "bots"), [("nolimit", ("random", "call-raise")), ("limit", ("always-raise", "random"))]
)
def test_two_bots_finish_a_match_through_the_dealer(
    tmp_path: Path, game: str, bots: tuple[str, str]
) -> None:
    """A 200-hand match ends with every process at status 0 and no action corrected."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    dealer = subprocess.Popen(
        [*CLI, "dealer", "m", game, "200", "42", "a", "b", "-q", "--start_timeout", "20000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        env=env,
    )
    players: list[subprocess.Popen[bytes]] = []
    try:
        assert dealer.stdout is not None
        ports = dealer.stdout.readline().split()
        assert len(ports) == 2, dealer.stderr.read() if dealer.stderr else ""
        for seed, (bot, port) in enumerate(zip(bots, ports)):
            players.append(
                subprocess.Popen(
                    [
                        *CLI,
                        "play",
                        bot,
                        "127.0.0.1",
                        port.decode(),
                        "--game",
                        game,
                        "--seed",
                        str(seed),
                    ],
                    stderr=subprocess.PIPE,
                    cwd=REPO,
                    env=env,
                )
            )
        _, dealer_err = dealer.communicate(timeout=60)
        statuses = [player.wait(timeout=30) for player in players]
    finally:
        for process in (dealer, *players):
            if process.poll() is None:
                process.kill()
                process.wait()
    assert dealer.returncode == 0, dealer_err.decode()[-2000:]
    assert statuses == [0, 0]
    log = (tmp_path / "m.log").read_text()
    assert sum(line.startswith("STATE:") for line in log.splitlines()) == 200
    finished = [
        json.loads(line)
        for line in (tmp_path / "m.events.jsonl").read_text().splitlines()
        if '"match_finished"' in line
    ]
    assert finished and finished[0]["corrections"] == [0, 0]
    assert finished[0]["ignored"] == [0, 0]

"""Two reference bots through the project's own dealer (`acpc-lbr dealer`), on loopback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "acpc_lbr.cli"]


def play_match(
    directory: Path, game: str, bots: tuple[str, str], hands: int, limit: float
) -> float:
    """Run `acpc-lbr dealer` and two `acpc-lbr play` bots to the end; return the wall time.

    Checks every exit status is 0, the log has one STATE line per hand, and the
    dealer neither corrected nor ignored any reply.
    """
    env = dict(os.environ, PYTHONPATH=str(REPO))
    start = time.monotonic()
    dealer = subprocess.Popen(
        [*CLI, "dealer", "m", game, str(hands), "42", "a", "b", "-q", "--start_timeout", "20000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=directory,
        env=env,
    )
    players: list[subprocess.Popen[bytes]] = []
    try:
        assert dealer.stdout is not None
        ports = dealer.stdout.readline().split()
        assert len(ports) == 2, dealer.stderr.read() if dealer.stderr else ""
        for seed, (bot, port) in enumerate(zip(bots, ports, strict=True)):
            command = [*CLI, "play", bot, "127.0.0.1", port.decode(), "--game", game]
            players.append(
                subprocess.Popen(
                    [*command, "--seed", str(seed)], stderr=subprocess.PIPE, cwd=REPO, env=env
                )
            )
        _, dealer_err = dealer.communicate(timeout=limit)
        statuses = [player.wait(timeout=30) for player in players]
    finally:
        for process in (dealer, *players):
            if process.poll() is None:
                process.kill()
                process.wait()
    elapsed = time.monotonic() - start
    assert dealer.returncode == 0, dealer_err.decode()[-2000:]
    assert statuses == [0, 0]
    log = (directory / "m.log").read_text()
    assert sum(line.startswith("STATE:") for line in log.splitlines()) == hands
    finished = [
        json.loads(line)
        for line in (directory / "m.events.jsonl").read_text().splitlines()
        if '"match_finished"' in line
    ]
    assert finished and finished[0]["corrections"] == [0, 0]
    assert finished[0]["ignored"] == [0, 0]
    return elapsed


@pytest.mark.parametrize(
    ("game", "bots"), [("nolimit", ("random", "call-raise")), ("limit", ("always-raise", "random"))]
)
def test_two_bots_finish_a_match_through_the_dealer(
    tmp_path: Path, game: str, bots: tuple[str, str]
) -> None:
    """A 200-hand match ends with every process at status 0 and no action corrected."""
    play_match(tmp_path, game, bots, 200, limit=60)


@pytest.mark.slow
def test_a_ten_thousand_hand_benchmark_match(tmp_path: Path) -> None:
    """The benchmark length: 10,000 hands of always-call self-play finish cleanly within 3 minutes."""
    elapsed = play_match(tmp_path, "nolimit", ("always-call", "always-call"), 10_000, limit=180)
    print(f"10000 hands in {elapsed:.1f} s ({10_000 / elapsed:.0f} hands/s)")


@pytest.mark.parametrize("bot", ["always-call", "lbr"])
def test_a_bot_started_for_another_game_says_so_and_the_match_ends(tmp_path: Path, bot: str) -> None:
    """A bot given ``--game limit`` against a no-limit dealer (whose raises it cannot read)
    exits 1 at once with an error that names the likely cause; the dealer ends the match
    (disconnect) instead of waiting out its ten-minute t_response. The timeouts only detect
    a hang."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    dealer = subprocess.Popen(
        [*CLI, "dealer", "m", "nolimit", "100", "42", "a", "b", "-q"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path, env=env,
    )
    players: list[subprocess.Popen[bytes]] = []
    try:
        assert dealer.stdout is not None
        ports = dealer.stdout.readline().split()
        for port, game in zip(ports, (["nolimit"], ["limit"]), strict=True):
            players.append(subprocess.Popen(
                [*CLI, "play", "call-raise" if game == ["nolimit"] else bot, "127.0.0.1",
                 port.decode(), "--game", *game],
                stderr=subprocess.PIPE, cwd=REPO, env=env))
        _, dealer_err = dealer.communicate(timeout=120)
        outputs = [player.communicate(timeout=120)[1].decode() for player in players]
    finally:
        for process in (dealer, *players):
            if process.poll() is None:
                process.kill()
                process.wait()
    assert dealer.returncode == 3, dealer_err.decode()[-2000:]
    assert "seat 2 (b) disconnected" in dealer_err.decode()
    assert players[1].returncode == 1
    assert "another game" in outputs[1] and "--game" in outputs[1]
    assert "Traceback" not in outputs[1]

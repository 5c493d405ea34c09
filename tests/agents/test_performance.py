"""Plain play stays cheap: the bots play 10,000-hand benchmark matches."""

from __future__ import annotations

import time

import numpy as np
import pytest
from twisted.internet.testing import StringTransport

from agents.bots import BOTS
from agents.client import StrategyBot
from protocol.gamedef import load_game
from tests.reference import REFERENCE_DIR

TRACE = REFERENCE_DIR / "transcripts" / "nl1000.trace"


def test_always_call_handles_a_message_in_well_under_100_microseconds() -> None:
    """Best of 3 passes over a seat's 7442 reference messages: under 100 us each (measured ~9 us)."""
    if not TRACE.exists():
        pytest.fail("reference transcript not available")
    with TRACE.open() as trace:
        data = [
            line.split(" ", 4)[4].rstrip("\n").encode() + b"\r\n"
            for line in trace
            if line.startswith("TO 2 at ")
        ]
    game = load_game("nolimit")
    best = float("inf")
    for _ in range(3):
        bot = StrategyBot(game, BOTS["always-call"], np.random.default_rng(0))
        bot.makeConnection(StringTransport())
        start = time.perf_counter()
        for chunk in data:
            bot.dataReceived(chunk)
        best = min(best, time.perf_counter() - start)
        assert bot.actions_sent > 3000
    assert best / len(data) < 100e-6

"""Plain play stays cheap: the bots play 10,000-hand benchmark matches."""

from __future__ import annotations

import numpy as np
import pytest
from twisted.internet.testing import StringTransport

from agents.bots import BOTS
from agents.client import StrategyBot
from protocol.gamedef import load_game
from tests.reference import REFERENCE_DIR

TRACE = REFERENCE_DIR / "transcripts" / "nl1000.trace"


def test_always_call_plays_a_whole_reference_match() -> None:
    """A seat's 7442 reference messages, three times over: every decision answered.

    The cost per message (about 9 us here) is a benchmark figure
    (bench/bench_protocol.py), never a test's pass/fail.
    """
    if not TRACE.exists():
        pytest.fail("reference transcript not available")
    with TRACE.open() as trace:
        data = [
            line.split(" ", 4)[4].rstrip("\n").encode() + b"\r\n"
            for line in trace
            if line.startswith("TO 2 at ")
        ]
    game = load_game("nolimit")
    for _ in range(3):
        bot = StrategyBot(game, BOTS["always-call"], np.random.default_rng(0))
        bot.makeConnection(StringTransport())
        for chunk in data:
            bot.dataReceived(chunk)
        assert bot.actions_sent > 3000

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


def test_the_benchmark_profile_says_whose_work_each_sample_was() -> None:
    """bench/bench_lbr.py --profile: samples go to the part whose line handler they ran under."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "bench" / "bench_lbr.py"
    spec = importlib.util.spec_from_file_location("bench_lbr", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    run = "AsyncioSelectorReactor.run (/v/twisted/internet/asyncioreactor.py:257)"
    lbr = "LbrAgent.lineReceived (/w/agents/lbr.py:161);AcpcClient.lineReceived (/w/agents/client.py:132)"
    raw = "\n".join([
        f"{run};{lbr};LbrPlayer.decide (/w/acpc_lbr/lbr.py:603) 30",
        f"{run};{lbr};decode_answer (/w/protocol/rangecodec.py:160) 10",
        (f"{run};AcpcClient.lineReceived (/w/agents/client.py:132);StrategyBot.answer_query "
         "(/w/agents/client.py:360);encode_answer (/w/protocol/rangecodec.py:371) 20"),
        (f"{run};SeatProtocol.lineReceived (/w/dealer/seat.py:158);MatchResults.after_hand "
         "(/w/dealer/results.py:655) 25"),
        f"{run};Connection.doWrite (/v/twisted/internet/tcp.py:300) 5",
        "<module> (/w/acpc_lbr/cli.py:1);_find_and_load (<frozen importlib._bootstrap>:1176) 10",
    ])
    summary = bench.profile_summary(raw, 100)
    assert "100 samples at 100/s = 1.0 s of CPU" in summary
    for share, part in (("40.0%", "LBR agent"), ("30.0%", "LBR's computation"),
                        ("10.0%", "decoding answers"), ("20.0%", "opponent bot"),
                        ("20.0%", "of which encoding"), ("25.0%", "dealer"),
                        ("25.0%", "results and IO after each hand"),
                        ("5.0%", "reactor turns outside the line handlers"),
                        ("10.0%", "start-up: imports"),
                        ("5.0%", "Twisted, asyncio and the sockets")):
        assert any(line.strip().startswith(share) and part in line for line in summary.splitlines()), (part, summary)

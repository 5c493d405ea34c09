"""CPU cost of one range query through the channel: bot encode, relay check/forward, agent decode.

A 5-action no-limit hold'em query on the turn (``f,c`` and three raise
sizes), answered by an SDK bot (:class:`agents.client.StrategyBot`) exactly as
in a match, in each answer version, for two strategies:

* ``call-raise`` (card-blind: every row is the same for every hand);
* ``example`` (docs/examples/example_bot.py: a different value per hand).

Per query it times, in CPU time (``time.process_time``):

* the channel: the bot's encoding (:func:`protocol.rangecodec.encode_answer`),
  the relay's work on the answer (:func:`~protocol.rangecodec.decode_body`
  and :func:`~protocol.rangecodec.check_rows` with the board mask, then the
  forwarded line) and the agent's :func:`~protocol.rangecodec.decode_answer`;
* the bot's whole ``answer_query`` (parse the query and replay its betting,
  run the strategy, check and encode its answer), for reference.

Version 1 (decimal text) is the baseline, measured in the same run; the
ratio is version 1's channel cost over version 2's. The readers and printer
this codec replaced cost about 5 ms per such query (issue 8).

Usage::

    .venv/bin/python bench/bench_range_channel.py [--repeats 300]
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from agents.bots import call_raise
from agents.client import StrategyBot
from agents.players import load_strategy
from agents.sdk import Strategy, blocked_hands
from protocol.gamedef import load_game
from protocol.rangecodec import (
    answer_fields,
    check_rows,
    decode_answer,
    decode_body,
    encode_answer,
)
from protocol.rangequery import parse_query

QUERY = "QUERY:d1:0:7:cc/cc/:|/2cAs8s/Kd:f,c,r300,r600,r20000"
GAME = load_game("nolimit")


def cpu_per_call(function: Callable[[], object], repeats: int) -> float:
    """Least CPU seconds per call over 5 batches of ``repeats`` calls (the first call excluded)."""
    function()
    best = float("inf")
    for _ in range(5):
        start = time.process_time()
        for _ in range(repeats):
            function()
        best = min(best, (time.process_time() - start) / repeats)
    return best


def measure(strategy: Strategy, version: int, repeats: int) -> dict[str, float]:
    """Per-query CPU milliseconds of each stage."""
    bot = StrategyBot(GAME, strategy, np.random.default_rng(1))
    bot.answer_version = version
    query = parse_query(QUERY, GAME)
    blocked = blocked_hands(GAME, query.state.board_cards)
    line = bot.answer_query(QUERY)
    rows = decode_answer(line, query.actions, GAME.num_hands).rows

    def relay() -> str:
        _, body = answer_fields(line)
        values, _ = decode_body(body, query.actions, GAME.num_hands)
        check_rows(values, blocked)
        return f"RANGE:a1:{body}"

    forwarded = relay()
    figures = {
        "encode_ms": 1000 * cpu_per_call(
            lambda: encode_answer("d1", query.actions, rows, version, blocked), repeats),
        "relay_ms": 1000 * cpu_per_call(relay, repeats),
        "agent_decode_ms": 1000 * cpu_per_call(
            lambda: decode_answer(forwarded, query.actions, GAME.num_hands), repeats),
    }
    figures["channel_ms"] = sum(figures.values())
    # A new hand number each time: the query is read cold, as the first about its state
    # (protocol.rangequery keeps the states it read, for the runs of queries about one hand).
    hands = itertools.count(1000)
    figures["answer_query_ms"] = 1000 * cpu_per_call(
        lambda: bot.answer_query(QUERY.replace(":0:7:", f":0:{next(hands)}:")), repeats)
    figures["bytes"] = len(line)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=300)
    args = parser.parse_args()
    strategies = {"call-raise": call_raise,
                  "example": load_strategy(f"{REPO}/docs/examples/example_bot.py:strategy")}
    print(f"query: {QUERY}")
    print("CPU ms per query; channel = encode + relay + agent decode")
    print(f"{'strategy':<11} {'version':>7} {'bytes':>7} {'encode':>7} {'relay':>7} "
          f"{'decode':>7} {'channel':>8} {'v1/v2':>6} {'bot answer_query':>17}")
    for name, strategy in strategies.items():
        results = {version: measure(strategy, version, args.repeats) for version in (1, 2)}
        for version, f in results.items():
            ratio = results[1]["channel_ms"] / f["channel_ms"]
            print(f"{name:<11} {version:>7} {f['bytes']:>7.0f} {f['encode_ms']:>7.3f} "
                  f"{f['relay_ms']:>7.3f} {f['agent_decode_ms']:>7.3f} {f['channel_ms']:>8.3f} "
                  f"{ratio:>6.1f} {f['answer_query_ms']:>17.3f}")


if __name__ == "__main__":
    main()

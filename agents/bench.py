"""Time the bots in process: cost per dealer message and per range query.

Usage::

    python -m agents.bench TRACE --game GAME [--seat N] [--bot NAME ...] [--query QUERY]

TRACE is a reference dealer transcript (``TO <seat> at <time> <line>`` lines,
e.g. tests/data/acpc-reference/transcripts/nl1000.trace). Every line the seat
received is fed to a fresh bot on an in-memory transport; the best of three
passes is reported, so no network or dealer time is included.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from twisted.internet.testing import StringTransport

from acpc_lbr.runtime.exit_codes import EXIT_OK
from agents.bots import BOTS
from agents.client import StrategyBot
from agents.players import load_strategy
from agents.sdk import Strategy
from protocol.gamedef import GameDef, load_game


def _connected(game: GameDef, strategy: Strategy) -> tuple[Any, Any]:
    """A bot on an in-memory transport (Twisted's test classes are untyped)."""
    bot: Any = StrategyBot(game, strategy, np.random.default_rng(1))
    transport: Any = StringTransport()  # type: ignore[no-untyped-call]
    bot.makeConnection(transport)
    return bot, transport


def _strategy(name: str) -> Strategy:
    return BOTS[name] if name in BOTS else load_strategy(name)


def main(argv: Sequence[str] | None = None) -> int:
    """Print microseconds per message (and per query) for each bot."""
    parser = argparse.ArgumentParser(
        prog="python -m agents.bench", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument("trace")
    parser.add_argument("--game", required=True)
    parser.add_argument("--seat", type=int, default=2)
    parser.add_argument("--bot", action="append", help="bot name or FILE.py:FUNCTION (repeatable)")
    parser.add_argument("--query", help="a QUERY line to time as well")
    parser.add_argument("--passes", type=int, default=3)
    args = parser.parse_args(argv)
    game = load_game(args.game)
    prefix = f"TO {args.seat} at "
    with open(args.trace) as trace:
        data = [
            line.split(" ", 4)[4].rstrip("\n").encode() + b"\r\n"
            for line in trace
            if line.startswith(prefix)
        ]
    for name in args.bot or list(BOTS):
        strategy = _strategy(name)
        best, replies = float("inf"), 0
        for _ in range(args.passes):
            bot, _ = _connected(game, strategy)
            start = time.perf_counter()
            for chunk in data:
                bot.dataReceived(chunk)
            best = min(best, time.perf_counter() - start)
            replies = bot.actions_sent
        line = f"{name:14s} {len(data)} messages, {replies} replies: {best / len(data) * 1e6:7.1f} us/message"
        if args.query:
            bot, transport = _connected(game, strategy)
            query = args.query.encode() + b"\r\n"
            count = 200
            start = time.perf_counter()
            for _ in range(count):
                bot.dataReceived(query)
            elapsed = (time.perf_counter() - start) / count
            line += f", {elapsed * 1e3:.2f} ms/query ({len(transport.value()) // count} bytes)"
        print(line)
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())

"""A plain ACPC bot for the tests: it checks or calls, and never announces range queries.

Usage: python plain_call.py GAME HOST PORT [--raise-share P] [--raise-after N]

``--raise-share P`` raises (when legal) with probability P instead, drawn
from a generator seeded per process. ``--raise-after N`` makes it break the
probe adapter's assumption: once it has seen N lines it always raises (when
legal), so a copy that is probed many times plays unlike the copy that plays.
"""

from __future__ import annotations

import argparse
import os
import random
import socket

from protocol.gamedef import load_game
from protocol.rules import Action
from protocol.wire import parse_matchstate


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("game")
    parser.add_argument("host")
    parser.add_argument("port", type=int)
    parser.add_argument("--raise-share", type=float, default=0.0)
    parser.add_argument("--raise-after", type=int, default=None)
    args = parser.parse_args()
    game = load_game(args.game)
    rng = random.Random(os.getpid())
    seen = 0
    with socket.create_connection((args.host, args.port)) as sock:
        sock.sendall(b"VERSION:2.0.0\r\n")
        for raw in sock.makefile("rb"):
            line = raw.decode("ascii").rstrip("\r\n")
            if not line.startswith("MATCHSTATE:"):
                continue
            seen += 1
            view = parse_matchstate(line, game)
            state = view.to_state(game)
            if state.finished or state.current_player != view.position:
                continue
            raising = rng.random() < args.raise_share or (
                args.raise_after is not None and seen > args.raise_after)
            low = state.raise_range()
            action = "c"
            if raising and low is not None:
                action = Action.RAISE.text() if game.is_limit else Action.raise_to(low[0]).text()
            sock.sendall(f"{line}:{action}\r\n".encode())


if __name__ == "__main__":
    main()

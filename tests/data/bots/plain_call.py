"""A plain ACPC bot for the tests: it checks or calls, and never announces range queries.

Usage: python plain_call.py GAME HOST PORT
"""

from __future__ import annotations

import socket
import sys

from protocol.gamedef import load_game
from protocol.wire import parse_matchstate


def main() -> None:
    game = load_game(sys.argv[1])
    with socket.create_connection((sys.argv[2], int(sys.argv[3]))) as sock:
        sock.sendall(b"VERSION:2.0.0\r\n")
        for raw in sock.makefile("rb"):
            line = raw.decode("ascii").rstrip("\r\n")
            if not line.startswith("MATCHSTATE:"):
                continue
            view = parse_matchstate(line, game)
            state = view.to_state(game)
            if not state.finished and state.current_player == view.position:
                sock.sendall(f"{line}:c\r\n".encode())


if __name__ == "__main__":
    main()

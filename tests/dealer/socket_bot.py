"""A plain-socket bot for subprocess tests: always call, or replay a reference log.

Usage: python tests/dealer/socket_bot.py HOST PORT GAME [--replay LOG] [--close-at HAND]
                                         [--stall-at HAND --stall SECONDS [--partial]]

With ``--stall-at`` the bot waits ``--stall`` seconds before its first answer
in that hand (with ``--partial``, after sending the first half of the answer),
printing ``stall`` and ``resume`` on stdout as the wait begins and ends.
"""

from __future__ import annotations

import argparse
import socket
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from protocol.gamedef import load_game
from protocol.wire import parse_matchstate
from tests.dealer.bots import actions_from_log


def main() -> int:
    """Connect, send VERSION, answer every state where it is to act."""
    parser = argparse.ArgumentParser()
    parser.add_argument("host")
    parser.add_argument("port", type=int)
    parser.add_argument("game")
    parser.add_argument("--replay", default=None)
    parser.add_argument("--close-at", type=int, default=None)
    parser.add_argument("--stall-at", type=int, default=None)
    parser.add_argument("--stall", type=float, default=0.0)
    parser.add_argument("--partial", action="store_true")
    args = parser.parse_args()
    game = load_game(args.game)
    actions = actions_from_log(Path(args.replay)) if args.replay else None
    sock = socket.create_connection((args.host, args.port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.sendall(b"VERSION:2.0.0\r\n")
    for raw in sock.makefile("rb"):
        line = raw.decode("ascii").rstrip("\r\n")
        view = parse_matchstate(line, game)
        if args.close_at is not None and view.hand_id >= args.close_at:
            sock.close()
            return 0
        state = view.to_state(game)
        if state.finished or state.current_player != view.position:
            continue
        action = "c"
        if actions is not None:
            action = actions[view.hand_id][sum(len(a) for a in state.actions)]
        reply = f"{line}:{action}\r\n".encode("ascii")
        if view.hand_id == args.stall_at:
            args.stall_at = None
            print("stall", flush=True)
            if args.partial:
                sock.sendall(reply[: len(reply) // 2])
                reply = reply[len(reply) // 2 :]
            time.sleep(args.stall)
            print("resume", flush=True)
        sock.sendall(reply)
    return 0


if __name__ == "__main__":
    sys.exit(main())

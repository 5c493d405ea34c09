"""``acpc-lbr play``: connect one bot to an ACPC dealer and play until it closes.

Usage::

    acpc-lbr play BOT HOST PORT --game GAME [--seed S]

``BOT`` is a registered bot (see :data:`agents.players.PLAYERS`: ``always-call``,
``always-raise``, ``always-fold``, ``call-raise``, ``random``, and ``lbr`` with
its own ``--bets``/``--rounds``/``--timing`` options) or your own strategy
function given as ``path/to/file.py:function`` or ``package.module:function``
(docs/bot-sdk.md). The exit status is 0 when the dealer closes the connection
(the end of the match), 1 when the connection fails or breaks, 2 for a usage
error, and 3 when ``lbr``'s opponent does not answer range queries.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import Any

from acpc_lbr.runtime.exit_codes import EXIT_FAILED, EXIT_USAGE
from acpc_lbr.runtime.reactor import install_asyncio_reactor
from agents.client import BotFactory
from agents.lbr import lbr_options
from agents.players import PLAYERS, load_strategy, strategy_player
from protocol.errors import ProtocolError
from protocol.gamedef import load_game


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="acpc-lbr play",
        description="Connect a bot to an ACPC dealer and play until the dealer closes the connection.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=(
            f"Bots: {', '.join(PLAYERS)};\nor FILE.py:FUNCTION / MODULE:FUNCTION for your own "
            "strategy function (see docs/bot-sdk.md).\n\n"
            "The lbr bot takes options of its own, after HOST PORT:\n"
            + lbr_options().format_help()
        ),
    )
    parser.add_argument("bot", metavar="BOT", help="a bot name, or FILE.py:FUNCTION")
    parser.add_argument("host", metavar="HOST", help="the dealer's host")
    parser.add_argument("port", metavar="PORT", type=int, help="the seat's port")
    parser.add_argument(
        "--game", required=True, help="game name or .game file (see 'acpc-lbr games')"
    )
    parser.add_argument("--seed", type=int, default=None, help="seed of the bot's own generator")
    parser.add_argument(
        "--connect-timeout", type=float, default=30.0, help="seconds to wait for the connection"
    )
    parser.add_argument(
        "--log-level",
        default="WARNING",
        type=str.upper,
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="logging level (default WARNING)",
    )
    return parser


def main(argv: Sequence[str]) -> int:
    """Run ``acpc-lbr play``; returns the exit status."""
    parser = _parser()
    args, options = parser.parse_known_args(list(argv))
    logging.basicConfig(level=args.log_level, stream=sys.stderr)
    try:
        game = load_game(args.game)
    except (ProtocolError, OSError) as problem:
        print(f"acpc-lbr play: cannot load game {args.game!r}: {problem}", file=sys.stderr)
        return EXIT_USAGE
    try:
        if args.bot in PLAYERS:
            maker = PLAYERS[args.bot]
        elif ":" in args.bot:
            maker = strategy_player(load_strategy(args.bot))
        else:
            print(
                f"acpc-lbr play: unknown bot {args.bot!r} (known: {', '.join(PLAYERS)})",
                file=sys.stderr,
            )
            return EXIT_USAGE
        client = maker(game, args.seed, options)
    except (ValueError, ImportError) as problem:
        print(f"acpc-lbr play: {problem}", file=sys.stderr)
        return EXIT_USAGE

    install_asyncio_reactor()
    from twisted.internet import reactor as installed

    reactor: Any = installed  # zope interfaces are opaque to mypy

    factory = BotFactory(lambda: client)
    status: list[int] = []

    def finish(code: int) -> None:
        status.append(code)
        reactor.stop()

    def stopping() -> None:
        """SIGINT/SIGTERM stopped the reactor (the match did not end): the lost connection is the
        stop's own doing, and the one 'interrupted' line says so."""
        if not status:
            interrupted.append(True)
            logging.getLogger("agents").setLevel(logging.CRITICAL)

    interrupted: list[bool] = []
    factory.done.addCallback(finish)
    reactor.addSystemEventTrigger("before", "shutdown", stopping)
    reactor.connectTCP(args.host, args.port, factory, timeout=args.connect_timeout)
    reactor.run()
    if interrupted:
        print("acpc-lbr play: interrupted", file=sys.stderr)
        return EXIT_FAILED
    return status[0] if status else EXIT_FAILED

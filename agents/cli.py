"""``acpc-lbr play``: connect one bot to an ACPC dealer and play until it closes.

Usage::

    acpc-lbr play BOT HOST PORT --game GAME [--seed S]

``BOT`` is a registered bot (see :data:`PLAYERS`: ``always-call``,
``always-raise``, ``always-fold``, ``call-raise``, ``random``, and ``lbr`` with
its own ``--bets``/``--rounds``/``--timing`` options) or your own strategy
function given as ``path/to/file.py:function`` or ``package.module:function``
(docs/bot-sdk.md). The exit status is 0 when the dealer closes the connection
(the end of the match), 1 when the connection fails or breaks, 2 for a usage
error, and 3 when ``lbr``'s opponent does not answer range queries.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from acpc_lbr.runtime.exit_codes import EXIT_FAILED, EXIT_USAGE
from acpc_lbr.runtime.reactor import install_asyncio_reactor
from agents.bots import BOTS
from agents.client import AcpcClient, BotFactory, StrategyBot, seeded_rng
from agents.lbr import lbr_options, make_lbr_player
from agents.sdk import Strategy
from protocol.errors import ProtocolError
from protocol.gamedef import GameDef, load_game

#: Builds a bot's client from the game, the seed and the options left over
#: after the common ones (a bot with options of its own parses them; raise
#: SystemExit or ValueError for bad ones).
PlayerMaker = Callable[[GameDef, "int | None", Sequence[str]], AcpcClient]


def strategy_player(strategy: Strategy) -> PlayerMaker:
    """A :data:`PlayerMaker` for an SDK strategy (no options of its own)."""

    def make(game: GameDef, seed: int | None, options: Sequence[str]) -> AcpcClient:
        if options:
            raise ValueError(f"unrecognised arguments: {' '.join(options)}")
        return StrategyBot(game, strategy, seeded_rng(seed))

    return make


#: Bot name -> how to build its client. Adding a bot is one line.
PLAYERS: dict[str, PlayerMaker] = {name: strategy_player(s) for name, s in BOTS.items()}
PLAYERS["lbr"] = make_lbr_player  # LBR: --bets fcpa --rounds 3-4 (agents/lbr.py)


def load_strategy(spec: str) -> Strategy:
    """Load a strategy function from ``file.py:function`` or ``package.module:function``.

    Raises:
        ValueError: the spec is malformed or names nothing callable.
    """
    where, colon, name = spec.rpartition(":")
    if not colon or not where or not name:
        raise ValueError(f"expected FILE.py:FUNCTION or MODULE:FUNCTION, got {spec!r}")
    if where.endswith(".py") or "/" in where or "\\" in where:
        path = Path(where)
        if not path.is_file():
            raise ValueError(f"no such file: {where}")
        module_name = f"acpc_lbr_user_strategy_{abs(hash(str(path.resolve())))}"
        module_spec = importlib.util.spec_from_file_location(module_name, path)
        if module_spec is None or module_spec.loader is None:
            raise ValueError(f"cannot load {where}")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[module_name] = module
        module_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    strategy = getattr(module, name, None)
    if not callable(strategy):
        raise ValueError(f"{where} has no function {name!r}")  # noqa: TRY004 (a bad spec, reported as such)
    result: Strategy = strategy
    return result


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

"""The command line of ``acpc-lbr table`` (see the package's docstring)."""

from __future__ import annotations

import argparse
import ipaddress
import secrets
import signal
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from twisted.internet.error import CannotListenError

from acpc_lbr.app.evaluate.processes import EvaluateReactor
from acpc_lbr.app.table.offers import games_offered, players_offered
from acpc_lbr.app.table.web import BoundedRequest, ConnectionCap, Limits, TableServer
from acpc_lbr.runtime.exit_codes import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from acpc_lbr.runtime.reactor import install_asyncio_reactor
from dealer.metrics import DealerMetrics, serve_metrics


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="acpc-lbr table",
        description="Serve a web page where a person plays ACPC bots through the dealer, "
        "with a duplicate baseline. Prints the page's address first, then the logs' folder.",
    )
    parser.add_argument("--port", type=int, default=0, help="the page's port (default: any free port)")
    parser.add_argument("--bind", default="127.0.0.1",
                        help="interface to serve (default 127.0.0.1; anything else needs the printed key)")
    parser.add_argument("--out", default=None, help="folder of the logs (default: a new temporary folder)")
    parser.add_argument("--seconds", type=float, default=30.0,
                        help="the person's time per decision; then the seat checks or folds (default 30)")
    parser.add_argument("--opponent", action="append", default=[], metavar="BOT|FILE.py:FUNCTION",
                        help="offer this SDK strategy too (repeatable; the built-in bots are always offered)")
    parser.add_argument("--opponent-cmd", action="append", default=[], metavar="'[NAME=]PROG {host} {port}'",
                        help="offer this ACPC program (repeatable; {game} is the game file's path)")
    parser.add_argument("--game", action="append", default=[], metavar="FILE",
                        help="offer this game file too (heads-up; the bundled games are always offered)")
    parser.add_argument("--max-tables", type=int, default=8, help="tables in play at once (default 8)")
    parser.add_argument("--metrics-port", type=int, default=None, metavar="PORT",
                        help="serve the matches' Prometheus metrics on PORT, as the dealer does (0: any free port)")
    parser.add_argument("--metrics-bind", default="127.0.0.1", metavar="ADDR",
                        help="interface of the metrics endpoint (default 127.0.0.1)")
    parser.add_argument("--seed", type=int, default=None, help="deal seed of table 1 (the next count up; default random)")
    return parser


def _is_loopback(bind: str) -> bool:
    try:
        return ipaddress.ip_address(bind).is_loopback
    except ValueError:
        return bind == "localhost"


def main(argv: Sequence[str]) -> int:
    """Run ``acpc-lbr table``; returns the exit status."""
    args = _parser().parse_args(list(argv))
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="acpc-lbr-table-"))
    try:
        if not 0 <= args.port <= 65535 or args.max_tables < 1 or not 1.0 <= args.seconds <= 3600:
            raise ValueError("--port must be in 0..65535, --max-tables at least 1, --seconds in 1..3600")
        out.mkdir(parents=True, exist_ok=True)
        games = games_offered(args.game, out)
        players = players_offered(args.opponent, args.opponent_cmd)
    except (ValueError, OSError) as problem:
        print(f"acpc-lbr table: {problem}", file=sys.stderr)
        return EXIT_USAGE
    install_asyncio_reactor()  # not uvloop: the table starts opponent programs (acpc_lbr/runtime/reactor.py)
    from twisted.internet import reactor as installed
    from twisted.web import server

    reactor = cast(EvaluateReactor, installed)
    key = None if _is_loopback(args.bind) else secrets.token_urlsafe(18)
    seed = args.seed if args.seed is not None else secrets.randbelow(2**32)
    limits = Limits(tables=args.max_tables, action_seconds=args.seconds)
    metrics = DealerMetrics() if args.metrics_port is not None else None
    tables = TableServer(games, players, reactor, out.resolve(), limits, key, seed, metrics)
    site = server.Site(tables)  # type: ignore[no-untyped-call]
    site.requestFactory = BoundedRequest
    tcp: Any = installed  # zope interfaces are opaque to mypy
    try:
        port = tcp.listenTCP(args.port, ConnectionCap(site), interface=args.bind)
    except CannotListenError as problem:
        print(f"acpc-lbr table: cannot serve {args.bind}:{args.port}: {problem.socketError}", file=sys.stderr)
        return EXIT_FAILED
    host = f"[{args.bind}]" if ":" in args.bind else args.bind
    print(f"http://{host}:{port.getHost().port}/" + (f"#key={key}" if key else ""), flush=True)
    print(f"logs: {out.resolve()}", flush=True)
    if metrics is not None:
        try:
            endpoint = serve_metrics(metrics, args.metrics_port, args.metrics_bind).getHost()
        except CannotListenError as problem:
            print(f"acpc-lbr table: cannot serve the metrics: {problem.socketError}", file=sys.stderr)
            return EXIT_FAILED
        print(f"METRICS http://{endpoint.host}:{endpoint.port}/metrics", file=sys.stderr, flush=True)
    reactor.addSystemEventTrigger("before", "shutdown", tables.close)
    signal.signal(signal.SIGTERM, lambda *_: reactor.callFromThread(reactor.stop))  # type: ignore[attr-defined]
    reactor.run()
    return EXIT_OK

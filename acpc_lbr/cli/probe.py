"""``acpc-lbr probe``: stand in for a plain ACPC bot toward a dealer, answering range queries by probing copies of it.

Usage::

    acpc-lbr probe HOST PORT --game GAME [--samples K] [--instances N] -- BOT-COMMAND ...

The adapter itself (:class:`agents.probe.ProbeAdapter`, :func:`agents.probe.run_adapter`)
and what it measures are described in :mod:`agents.probe` and docs/range-query.md.
"""

from __future__ import annotations

import argparse
import json
import logging
import shlex
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

from twisted.internet import defer

from acpc_lbr.runtime import children
from acpc_lbr.runtime.exit_codes import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from acpc_lbr.runtime.reactor import install_asyncio_reactor
from agents.probe import (
    DEFAULT_INSTANCES,
    DEFAULT_PROBE_TIMEOUT,
    DEFAULT_SAMPLES,
    ProbeAdapter,
    ProbeStats,
    fill_command,
    log,
    run_adapter,
    summary,
)
from protocol.errors import ProtocolError
from protocol.gamedef import load_game


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="acpc-lbr probe",
        description="Stand in for a plain ACPC bot toward a dealer and answer range queries "
                    "by probing copies of it (docs/range-query.md, 'Bots that cannot be "
                    "modified').",
        usage="acpc-lbr probe HOST PORT --game GAME [--samples K] [--instances N] "
              "-- BOT-COMMAND ...",
    )
    parser.add_argument("host")
    parser.add_argument("port", type=int)
    parser.add_argument("--game", required=True, help="game name or .game file")
    parser.add_argument("--samples", type=int, default=DEFAULT_SAMPLES, metavar="K",
                        help=f"probes per private hand and query (default {DEFAULT_SAMPLES})")
    parser.add_argument("--instances", type=int, default=DEFAULT_INSTANCES, metavar="N",
                        help=f"copies of the bot: one plays, N-1 are probed (default "
                             f"{DEFAULT_INSTANCES})")
    parser.add_argument("--probe-timeout", type=float, default=DEFAULT_PROBE_TIMEOUT,
                        metavar="S", help="seconds a query's probes may take; a copy that "
                        "still owes one then is dropped (default %(default)g)")
    parser.add_argument("--stats", default=None, metavar="FILE",
                        help="write the probe statistics here (JSON) when the match ends")
    return parser


def main(argv: Sequence[str]) -> int:
    """Run ``acpc-lbr probe``; 0 when the match ended normally."""
    words = list(argv)
    split = words.index("--") if "--" in words else len(words)
    args = _parser().parse_args(words[:split])
    command = words[split + 1:]
    if not command:
        print("acpc-lbr probe: give the bot command after '--'", file=sys.stderr)
        return EXIT_USAGE
    if len(command) == 1:
        command = shlex.split(command[0])
    try:
        game = load_game(args.game)
    except (ProtocolError, OSError) as problem:
        print(f"acpc-lbr probe: {problem}", file=sys.stderr)
        return EXIT_USAGE
    logging.basicConfig(level=logging.INFO, format="probe: %(message)s")

    install_asyncio_reactor()
    from twisted.internet import reactor as installed

    reactor: Any = installed
    try:
        adapter = ProbeAdapter(game, args.samples, args.instances, reactor, args.probe_timeout)
    except ValueError as problem:
        print(f"acpc-lbr probe: {problem}", file=sys.stderr)
        return EXIT_USAGE
    outcome: list[Any] = []

    def launch(copy_port: int) -> list[subprocess.Popen[bytes]]:
        # In the adapter's process group (whoever stops it stops them and their helpers), and
        # killed when it dies (acpc_lbr/runtime/children.py).
        return [subprocess.Popen(fill_command(command, "127.0.0.1", copy_port),
                                 stdin=subprocess.DEVNULL, preexec_fn=children.child_setup(new_group=False))
                for _ in range(args.instances)]

    async def go() -> None:
        try:
            outcome.append(await run_adapter(adapter, args.host, args.port, launch))
        finally:
            reactor.stop()

    reactor.callWhenRunning(lambda: defer.ensureDeferred(go()).addErrback(outcome.append))
    reactor.run()
    if not outcome or not isinstance(outcome[0], ProbeStats):
        reason = outcome[0].getErrorMessage() if outcome else "interrupted"
        print(f"acpc-lbr probe: {reason}", file=sys.stderr)
        return EXIT_FAILED
    stats = outcome[0]
    log.info("%s", summary(stats))
    if args.stats:
        try:
            with open(args.stats, "w", encoding="utf-8") as out:
                json.dump(stats.to_dict(), out, indent=2)
        except OSError as problem:
            print(f"acpc-lbr probe: cannot write {args.stats}: {problem}", file=sys.stderr)
            return EXIT_FAILED
    return EXIT_OK

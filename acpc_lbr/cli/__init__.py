"""The ``acpc-lbr`` command line: one entry point, one subcommand per job.

Each subcommand is a module of this package, ``acpc_lbr/cli/NAME.py``, with
its options (argparse) and ``main(argv) -> int``; the work it drives lives in
its own layer below. This module only dispatches, importing lazily so that
``acpc-lbr --help`` and ``acpc-lbr games`` stay fast.

Layer L5 (``acpc_lbr/cli/``), the top: may import every layer below it; nothing
imports it (docs/architecture.md, "Folders are the layers").
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import signal
import sys
from collections.abc import Sequence
from typing import NoReturn

import protocol
from acpc_lbr import __version__
from acpc_lbr.runtime import children
from acpc_lbr.runtime.exit_codes import EXIT_FAILED, EXIT_INTERNAL, EXIT_USAGE
from acpc_lbr.runtime.stdout import drop_stdout
from protocol import _variant

#: name -> (module with ``main(argv)``, one-line help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "games": ("acpc_lbr.cli.games", "list the bundled ACPC game definitions"),
    "equity": ("acpc_lbr.cli.equity", "exact win/tie/loss shares of a hand against a hand or range"),
    "dealer": ("acpc_lbr.cli.dealer", "run an ACPC dealer (drop-in for the reference dealer)"),
    "play": ("acpc_lbr.cli.play", "connect a bot (reference bots, LBR) to a dealer"),
    "probe": ("acpc_lbr.cli.probe", "answer range queries for a plain ACPC bot by probing copies of it"),
    "evaluate": ("acpc_lbr.cli.evaluate", "measure a bot's exploitability with LBR"),
    "results": ("acpc_lbr.cli.results", "recompute match results from log files"),
    "report": ("acpc_lbr.cli.report", "one self-contained HTML report from results JSON files"),
    "tournament": ("acpc_lbr.cli.tournament", "play bots against bots: duplicate matches, rankings, intervals"),
    "exact": ("acpc_lbr.cli.exact", "exact best response and exact LBR value of a strategy in Kuhn or Leduc"),
    "table": ("acpc_lbr.cli.table", "serve a web page where a person plays a bot through the dealer"),
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="acpc-lbr",
        description="ACPC poker dealer and Local Best Response exploitability measurement.",
        epilog="Run 'acpc-lbr COMMAND --help' for a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"acpc-lbr {__version__}; {_variant.LABEL}: {protocol.variant()}; "
                                                                    f"C helper: {protocol.helper()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_, help_text) in SUBCOMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``acpc-lbr`` with ``argv`` (default: the process arguments)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in SUBCOMMANDS:
        # Only here: building the parser of every subcommand's line costs a dealer's start-up
        # a few ms, and a subcommand parses its own options.
        parser = _parser()
        parser.parse_args(args)  # handles --help, --version and unknown commands
        parser.print_help()
        return EXIT_USAGE
    module_name, _ = SUBCOMMANDS[args[0]]
    if args[0] in ("dealer", "table"):  # the table runs dealers too
        # Before numpy is imported: the dealer does no linear algebra, and OpenBLAS
        # would otherwise start a thread per core that spins at start-up (~0.13 s of
        # CPU per dealer process). An explicit setting is kept.
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    module = importlib.import_module(module_name)
    result: int = module.main(args[1:])
    return result


def run() -> NoReturn:
    """The ``acpc-lbr`` program: :func:`main`, then exit with its code.

    A command that returns has closed what it wrote, so the process's objects
    need no last garbage collection: they are frozen (``gc.freeze``) and the
    interpreter's shutdown, which would otherwise walk all of them (Twisted,
    numpy: most of the time from a dealer's last hand to its exit, longer than
    a whole short match; docs/dealer.md), skips them. Everything else of the shutdown still runs
    (``atexit``, flushing the standard streams). Only here, not in
    :func:`main`, which tests and other programs call in their own process.
    """
    signal.signal(signal.SIGTERM, _interrupt)  # SIGTERM ends a command as SIGINT does
    try:
        code = main()
        sys.stdout.flush()
    except KeyboardInterrupt:
        # A command without a reactor of its own (results, report, exact, evaluate's Dask
        # driver, ...): one line and EXIT_FAILED, not a traceback or a death by signal. The
        # dealer and evaluate handle both signals in their reactors and say more.
        children.end_groups()
        command = _command_name()
        print(f"acpc-lbr {command}: interrupted", file=sys.stderr)
        code = EXIT_INTERNAL if command == "dealer" else EXIT_FAILED  # the dealer's code when stopped
    except BrokenPipeError:
        # The reader of the output has gone (``acpc-lbr evaluate | head``). What was written
        # to files stays written; the rest of the output is dropped.
        drop_stdout()
        print("acpc-lbr: the standard output was closed by its reader; the rest of the output "
              "is lost (the files written are kept)", file=sys.stderr)
        code = EXIT_FAILED
    gc.freeze()
    sys.exit(code)


def _interrupt(signum: int, frame: object) -> None:
    """SIGTERM, as SIGINT: raise KeyboardInterrupt where the program is."""
    raise KeyboardInterrupt(signal.Signals(signum).name)


def _command_name() -> str:
    """The subcommand being run (for the one-line message)."""
    args = sys.argv[1:]
    return args[0] if args and args[0] in SUBCOMMANDS else "(no command)"


if __name__ == "__main__":
    run()

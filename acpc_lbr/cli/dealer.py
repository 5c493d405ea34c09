"""``acpc-lbr dealer``: a drop-in for the ACPC reference dealer.

Usage (the reference's positional arguments and options, GNU-style: options
may come before or after the positional arguments)::

    acpc-lbr dealer MATCH GAME HANDS SEED NAME1 NAME2 [options]

GAME is a bundled game name or alias (``nolimit``, ``limit``,
``holdem.nolimit.2p.reverse_blinds.game`` ...) or a path to a game file; the
``.log`` header records it as typed. The first line on stdout gives the ports,
in seat order (flushed at once).

Beyond the reference: ``--bind`` (default 127.0.0.1), ``--duplicate`` (the
mirrored match runs concurrently on two more ports; the port line then has
four ports: NAME1's and NAME2's in the match, then NAME1's and NAME2's in the
mirror ``MATCH.dup``), several matches in one process (``--match "NAME GAME
HANDS SEED P1 P2"``, repeatable, or ``--matches FILE`` with one such line per
match; one port line per match, in order), ``--max_line`` and
``--max_ignored``. See docs/dealer.md for the failure policy and exit codes.
Results (raw, duplicate and imaginary-observation estimators of heads-up
matches, each player's raw result in a match of more players; ``--measure``, ``--results-json``; docs/results.md) and Prometheus
metrics (``--metrics-port``, ``--metrics-bind``, ``--metrics-grace``;
docs/metrics.md) come from dealer/results.py and dealer/metrics.py.

Exit codes: 0 every match was played to the end; 1 bad arguments or a startup
failure; 3 a match ended early because of a bot; 4 an internal error or an
interrupted dealer. With several matches the highest code is returned.
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from acpc_lbr.runtime.eventloop import event_loop_choice
from acpc_lbr.runtime.exit_codes import EXIT_FAILED
from dealer.budget import BotBudget
from dealer.busypoll import DEFAULT_BUDGET_US, MAX_BUDGET_US
from dealer.config import DEFAULT_START_TIMEOUT_MS, DEFAULT_T_QUERY_MS, LARGEST_MAX_LINE, MatchConfig
from dealer.sendstates import MEASURED
from dealer.sendstates import MODES as SEND_MODES
from dealer.startup import StartupRefused, prepare, results_before_port_line
from protocol.errors import GameDefError
from protocol.gamedef import load_game

# Twisted (~0.2 s of imports) and the dealer's parts that need it are imported by main(), after
# the port line of a plain dealer (dealer/startup.py): this module and those above import none.

USAGE = (
    "usage: acpc-lbr dealer MATCH GAME HANDS SEED NAME1 ... NAMEN [options]\n"
    "       acpc-lbr dealer --match 'MATCH GAME HANDS SEED NAME1 ... NAMEN' [--match ...] [options]\n"
)


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:
        raise _UsageError(message)


class _Formatter(argparse.HelpFormatter):
    """argparse's help formatter, with the terminal's width read once per process.

    argparse makes a formatter for every option it adds (to check its metavar),
    and each asks ``shutil`` for the width: the import of ``shutil`` and its
    compression modules, and a failing ioctl per option when the output is not a
    terminal, on the way to a dealer's port line. The width is found as shutil
    finds it: ``COLUMNS``, else the standard output's terminal, else 80.
    """

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position,
                         _help_width() if width is None else width)


def _help_width() -> int:
    """Columns for help text (as argparse: the terminal's, less 2)."""
    global _HELP_WIDTH
    if _HELP_WIDTH is None:
        try:
            columns = int(os.environ["COLUMNS"])
        except (KeyError, ValueError):
            try:
                columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
            except (AttributeError, ValueError, OSError):
                columns = 80
        _HELP_WIDTH = (columns if columns > 0 else 80) - 2
    return _HELP_WIDTH


_HELP_WIDTH: int | None = None


def build_parser() -> argparse.ArgumentParser:
    """The dealer's argument parser."""
    parser = _Parser(
        prog="acpc-lbr dealer",
        formatter_class=_Formatter,
        description="Run an ACPC dealer (a drop-in for the reference dealer).",
        epilog="Exit codes: 0 full match(es); 1 bad arguments/startup; "
        "3 a match ended early because of a bot; 4 internal error/interrupted.",
    )
    parser.add_argument("positional", nargs="*", metavar="MATCH GAME HANDS SEED NAME...")
    parser.add_argument("-p", dest="ports", default="", help="ports in seat order, comma-separated (0: any)")
    parser.add_argument("-q", dest="quiet", action="store_true",
                        help="quiet as the reference: stderr gets only the header, warnings, errors "
                        "and the SCORE (no TO/FROM trace, STARTED, FINISHED or timing lines)")
    parser.add_argument("--quiet", dest="silent", action="store_true",
                        help="-q, and no progress either (neither the live bar nor --progress-every lines)")
    parser.add_argument("--progress-every", dest="progress_every", type=int, default=0, metavar="N",
                        help="a progress line on stderr every N hands (default none; with -q on a "
                        "terminal, a live progress bar is shown instead, and erased at the end)")
    parser.add_argument("-l", dest="log", action="store_false", help="do not write MATCH.log")
    parser.add_argument("-L", dest="log", action="store_true", default=True, help="write MATCH.log (default)")
    parser.add_argument("-T", dest="tlog", action="store_true", default=False, help="write the MATCH.tlog transaction log")
    parser.add_argument("-t", dest="tlog", action="store_false", help="no transaction log (default)")
    parser.add_argument("-a", dest="resume", action="store_true", help="append to the logs and resume from MATCH.tlog")
    parser.add_argument("-f", dest="fixed", action="store_true", help="fixed seats: seat s is always position s")
    parser.add_argument("--t_response", type=int, default=600_000, metavar="MS")
    parser.add_argument("--t_hand", type=int, default=600_000, metavar="MS")
    parser.add_argument("--t_per_hand", type=int, default=7_000, metavar="MS")
    parser.add_argument("--start_timeout", type=int, default=DEFAULT_START_TIMEOUT_MS, metavar="MS",
                        help=f"every bot must connect within MS (default {DEFAULT_START_TIMEOUT_MS}; "
                        "0 or less: wait forever, as the reference does)")
    parser.add_argument("--idle_timeout", type=int, default=None, metavar="MS",
                        help="end the match when the bot the dealer waits for has sent nothing "
                        "for MS (default: off; --t_response still applies)")
    parser.add_argument("--busy_poll", type=int, default=DEFAULT_BUDGET_US, metavar="USEC",
                        help="after asking a bot that answered within USEC last time, keep "
                        f"polling for its answer for up to USEC before sleeping (default "
                        f"{DEFAULT_BUDGET_US}; 0: off; see docs/dealer.md)")
    parser.add_argument("--bind", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)")
    parser.add_argument("--duplicate", action="store_true",
                        help="also play the mirrored match MATCH.dup (seats reversed) on two more ports")
    parser.add_argument("--match", dest="matches", action="append", default=[], metavar="'MATCH GAME HANDS SEED NAMES...'",
                        help="one more match in this process (repeatable)")
    parser.add_argument("--matches", dest="match_file", default=None, metavar="FILE",
                        help="file with one 'MATCH GAME HANDS SEED NAMES...' line per match")
    parser.add_argument("--max_line", type=int, default=4096, metavar="BYTES",
                        help=f"longest line a bot may send (default 4096, at most {LARGEST_MAX_LINE})")
    parser.add_argument("--max_ignored", type=int, default=100, metavar="N",
                        help="unparsable/stale lines tolerated per decision (default 100)")
    parser.add_argument("--no_events", dest="events", action="store_false",
                        help="do not write MATCH.events.jsonl")
    parser.add_argument("--t_query", type=int, default=DEFAULT_T_QUERY_MS, metavar="MS",
                        help=f"a bot's time limit per range query (default {DEFAULT_T_QUERY_MS})")
    parser.add_argument("--t_query_match", type=int, default=int(BotBudget.query_seconds_match * 1000),
                        metavar="MS", help="the most time a bot may spend answering range queries in one "
                        f"match; past it the match ends, charged to it (default "
                        f"{int(BotBudget.query_seconds_match * 1000)}: an hour)")
    parser.add_argument("--queryable", default="", metavar="NAME[,NAME]",
                        help="players that answer range queries without announcing it")
    parser.add_argument("--send_states", choices=SEND_MODES, default=MEASURED,
                        help="when a decision point's states go to the seats not to act: with "
                        "their next send (on_turn), at once as from the reference (at_once), or "
                        "whichever is measured faster on this machine (measured, the default; "
                        "see docs/dealer.md)")
    parser.add_argument("--t_handshake", type=int, default=int(BotBudget.handshake_s * 1000), metavar="MS",
                        help="a connection must send VERSION within MS or is closed "
                        f"(default {int(BotBudget.handshake_s * 1000)})")
    parser.add_argument("--max_queries", type=int, default=BotBudget.max_queries, metavar="N",
                        help=f"range queries an agent may have out at once (default {BotBudget.max_queries})")
    # Our own output beyond the reference's; shown without -q, under -q only when asked for.
    parser.add_argument("--console", action="store_true",
                        help="with -q, still write the readable event lines (match started/finished, "
                        "errors) on stderr")
    parser.add_argument("--table", action="store_true",
                        help="with -q, still print the results table (RESULTS ...) on stderr")
    # Results and metrics (dealer/results.py, dealer/metrics.py; docs/results.md, docs/metrics.md).
    parser.add_argument("--measure", default=None, metavar="NAME",
                        help="the measured player of the results (default: the first name)")
    parser.add_argument("--results-json", dest="results_json", default=None, metavar="FILE",
                        help="write the results document (JSON) to FILE")
    parser.add_argument("--no-io", dest="io", action="store_false", default=True,
                        help="do not ask a queryable opponent for its range after each showdown "
                        "(the imaginary-observation estimators, on by default)")
    parser.add_argument("--io", dest="io", action="store_true", help=argparse.SUPPRESS)  # the default
    parser.add_argument("--aivat", action="store_true",
                        help="also compute the AIVAT estimators (asks a queryable opponent for the rows AIVAT "
                        "needs after every hand, even with --no-io; docs/results.md)")
    parser.add_argument("--metrics-port", dest="metrics_port", type=int, default=None, metavar="PORT",
                        help="serve Prometheus metrics on PORT (0: any free port, printed on stderr)")
    parser.add_argument("--metrics-bind", dest="metrics_bind", default="127.0.0.1", metavar="ADDR",
                        help="interface of the metrics endpoint (default 127.0.0.1)")
    parser.add_argument("--metrics-grace", dest="metrics_grace", type=float, default=60.0, metavar="SECONDS",
                        help="keep a finished match's series this long, and the endpoint up "
                        "this long after the last match (default 60)")
    return parser


def _config_from_words(words: Sequence[str], options: argparse.Namespace, ports: tuple[int, ...]) -> MatchConfig:
    if len(words) < 5:
        raise _UsageError(f"a match needs MATCH GAME HANDS SEED NAME..., got {' '.join(words)!r}")
    name, game_arg, hands_text, seed_text = words[:4]
    try:
        game = load_game(game_arg)
    except (GameDefError, OSError, ValueError) as error:
        raise _UsageError(f"cannot load game {game_arg!r}: {error}") from error
    try:
        hands, seed = int(hands_text), int(seed_text)
    except ValueError as error:
        raise _UsageError(f"HANDS and SEED must be integers: {error}") from error
    if not 1 <= hands < 2**31:
        raise _UsageError(f"HANDS must be a positive 32-bit integer, got {hands}")
    names = tuple(words[4 : 4 + game.num_players])
    if len(names) < game.num_players:
        raise _UsageError(f"{game_arg} needs {game.num_players} player names, got {len(names)}")
    for player in names:
        # Names are fields of the .log's STATE and SCORE lines (a:b|c:d): one with a
        # separator in it makes a log that nothing can read back.
        if not player or any(c in ":|" or c.isspace() for c in player):
            raise _UsageError(f"a player name must be non-empty, without ':', '|' or spaces, "
                              f"got {player!r}")
    try:
        return MatchConfig(
            name=name, game_arg=game_arg, game=game, hands=hands, seed=seed, names=names,
            ports=ports, bind=options.bind, t_response_ms=options.t_response,
            t_hand_ms=options.t_hand, t_per_hand_ms=options.t_per_hand,
            start_timeout_ms=options.start_timeout if options.start_timeout > 0 else None,
            idle_timeout_ms=options.idle_timeout, fixed_seats=options.fixed,
            write_log=options.log, write_tlog=options.tlog, resume=options.resume,
            trace_messages=not (options.quiet or options.silent), max_line=options.max_line,
            max_ignored=options.max_ignored, events=options.events,
            t_query_ms=options.t_query,
            queryable=tuple(n for n in options.queryable.split(",") if n),
            send_states=options.send_states,
            budget=BotBudget(handshake_s=options.t_handshake / 1000.0, max_queries=options.max_queries,
                             query_seconds_match=options.t_query_match / 1000.0),
            # Only the DUPLICATE line and a match of more than two players (each
            # player's raw result) read every hand's values: a long heads-up match
            # keeps no per-hand record (memory flat in hands played).
            keep_hand_values=options.duplicate or game.num_players > 2,
        )
    except ValueError as error:
        raise _UsageError(str(error)) from error


def parse_configs(argv: Sequence[str]) -> tuple[list[list[MatchConfig]], argparse.Namespace]:
    """Read the command line into groups of matches (a group is a match and its mirror).

    Raises:
        _UsageError: the arguments are unusable.
    """
    options = build_parser().parse_intermixed_args(list(argv))
    try:
        ports = tuple(int(p) if p else 0 for p in options.ports.split(",")) if options.ports else ()
    except ValueError as error:
        raise _UsageError(f"bad -p ports {options.ports!r}") from error
    if not all(0 <= p <= 65535 for p in ports):
        raise _UsageError(f"bad -p ports {options.ports!r}: each must be in 0..65535")
    if options.metrics_port is not None and not 0 <= options.metrics_port <= 65535:
        raise _UsageError(f"--metrics-port must be in 0..65535, got {options.metrics_port}")
    if not 1 <= options.max_line <= LARGEST_MAX_LINE:
        raise _UsageError(f"--max_line must be in 1..{LARGEST_MAX_LINE}")
    if options.idle_timeout is not None and options.idle_timeout <= 0:
        raise _UsageError("--idle_timeout must be positive")
    if not 0 <= options.busy_poll <= MAX_BUDGET_US:
        raise _UsageError(f"--busy_poll must be in 0..{MAX_BUDGET_US} microseconds")
    for flag in ("t_response", "t_hand", "t_per_hand", "t_query", "t_handshake", "t_query_match"):
        if getattr(options, flag) <= 0:
            raise _UsageError(f"--{flag} must be a positive number of milliseconds, "
                              f"got {getattr(options, flag)}")
    for flag in ("max_ignored", "max_queries"):
        if getattr(options, flag) < 0:
            raise _UsageError(f"--{flag} must be 0 or more, got {getattr(options, flag)}")
    specs: list[tuple[list[str], tuple[int, ...]]] = []
    if options.positional:
        specs.append((list(options.positional), ports))
    for text in options.matches:
        specs.append((shlex.split(text), ()))
    if options.match_file is not None:
        try:
            match_lines = Path(options.match_file).read_text().splitlines()
        except OSError as error:
            raise _UsageError(f"cannot read --matches file: {error}") from error
        for line in match_lines:
            if line.strip() and not line.lstrip().startswith("#"):
                specs.append((shlex.split(line), ()))
    if not specs:
        raise _UsageError("no match given")
    groups = []
    for words, match_ports in specs:
        config = _config_from_words(words, options, match_ports)
        group = [config]
        if options.duplicate:
            if config.game.num_players != 2:
                raise _UsageError("--duplicate needs a 2-player game")
            group.append(replace(config, name=f"{config.name}.dup", names=config.names[::-1], ports=()))
        groups.append(group)
    names = [c.name for group in groups for c in group]
    if len(set(names)) != len(names):
        raise _UsageError("two matches have the same name")
    return groups, options


def main(argv: Sequence[str]) -> int:
    """Run the dealer; returns the exit code (see the module docstring)."""
    try:
        groups, options = parse_configs(argv)
    except _UsageError as error:
        sys.stdout.write(USAGE)
        sys.stdout.flush()
        print(f"acpc-lbr dealer: {error}", file=sys.stderr)
        return EXIT_FAILED
    except SystemExit as exit_:  # --help
        return int(exit_.code or 0)

    event_loop_choice(prefer_uvloop=True)  # a bad ACPC_LBR_EVENT_LOOP refuses the run here
    try:
        startup = prepare(groups, options)
    except StartupRefused as refused:
        print(f"ERROR: {refused.message}", file=sys.stderr)
        return EXIT_FAILED
    # A plain dealer's port line now, before Twisted is loaded: the launcher starts the bots
    # meanwhile, and they wait in the listening sockets' backlog. Results read during the
    # match are set up first (their setup can still refuse the run, or print).
    held = _HeldStop()  # before the line: a launcher may stop the dealer once it has read it
    printed = not results_before_port_line(options, sys.stderr.isatty())
    if printed:
        sys.stdout.write("".join(line + "\n" for line in startup.port_lines()))
        sys.stdout.flush()
    from acpc_lbr.runtime.reactor import install_asyncio_reactor  # lazy: Twisted, after the port line

    install_asyncio_reactor(prefer_uvloop=True)  # the dealer starts no processes (see there)
    from twisted.internet import defer, reactor

    from dealer.process import run_groups  # lazy: Twisted, after the port line

    reactor.callWhenRunning(held.stop_if_asked, reactor)
    return run_groups(groups, reactor, defer, options, startup, printed)


class _HeldStop:
    """SIGINT and SIGTERM from the port line on: held until the reactor runs, then a stop.

    A launcher may stop the dealer as soon as it has read the port line, while the
    dealer still loads Twisted (~0.2 s); a stop then is done once the reactor runs,
    as a stop while waiting for the bots is: every match ends, "the dealer was
    stopped", its SCORE line, exit code 4. Once it runs, a signal stops it as
    Twisted's own handlers do (``callFromThread(stop)``): Twisted replaces this
    SIGTERM handler when it starts, but leaves a SIGINT handler that is not Python's
    default in place.
    """

    def __init__(self) -> None:
        self.signals: list[int] = []
        self.reactor: Any = None
        for number in (signal.SIGINT, signal.SIGTERM):
            signal.signal(number, self.hold)

    def hold(self, number: int, frame: object) -> None:
        if self.reactor is not None:
            self.reactor.callFromThread(self.reactor.stop)
        else:
            self.signals.append(number)

    def stop_if_asked(self, reactor: Any) -> None:
        """Called once the reactor runs: stop it if a signal came before."""
        self.reactor = reactor
        if self.signals:
            reactor.stop()

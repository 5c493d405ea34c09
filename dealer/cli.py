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
import errno
import os
import shlex
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from twisted.internet.error import CannotListenError, ReactorNotRunning

from acpc_lbr.runtime.exit_codes import EXIT_FAILED, EXIT_INTERNAL, EXIT_OK
from acpc_lbr.runtime.progress import Progress, best_estimate
from acpc_lbr.runtime.reactor import event_loop_of, install_asyncio_reactor
from dealer.budget import BotBudget
from dealer.busypoll import DEFAULT_BUDGET_US, MAX_BUDGET_US, BusyPoll
from dealer.events import Cause, EventRecord, HandFinished
from dealer.match import (
    DEFAULT_START_TIMEOUT_MS,
    Match,
    MatchAborted,
    MatchConfig,
    MatchResult,
)
from dealer.relay import DEFAULT_T_QUERY_MS
from dealer.seat import LARGEST_MAX_LINE
from protocol.errors import GameDefError
from protocol.gamedef import load_game
from protocol.wire import format_chips

USAGE = (
    "usage: acpc-lbr dealer MATCH GAME HANDS SEED NAME1 ... NAMEN [options]\n"
    "       acpc-lbr dealer --match 'MATCH GAME HANDS SEED NAME1 ... NAMEN' [--match ...] [options]\n"
)


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:
        raise _UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    """The dealer's argument parser."""
    parser = _Parser(
        prog="acpc-lbr dealer",
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


def paired_result(main: MatchResult, mirror: MatchResult, big_blind: int) -> tuple[str, str | None]:
    """The duplicate result: NAME1's mbb per game, averaged over each pair of mirrored hands,
    and a warning when the two halves of every pair were the same (else None).

    A pair is hand h of the match plus hand h of the mirror (same cards, seats
    reversed); only hands finished in both count. Its unit is the pair's mean,
    as the ``duplicate`` estimator of the results table (docs/results.md), in
    mbb/g like the table (1000 chips per big blind).
    """
    from acpc_lbr.stats import RunningMean  # lazy: only --duplicate needs it

    first = main.names[0]
    pairs = RunningMean()
    identical = 0
    for h in sorted(main.hand_values):
        if h in mirror.hand_values:
            pairs.add((main.hand_values[h][0] + mirror.hand_values[h][1]) / 2.0)
            identical += main.hand_values[h] == mirror.hand_values[h]  # each seat won the same in both
    if not pairs.n:
        return f"DUPLICATE {main.name}: no complete pairs", None
    scale = 1000.0 / big_blind
    mean, half = pairs.mean * scale, pairs.half_width * scale
    # The interval to a tenth of a mbb/g, as the table prints it; one pair has none.
    interval = f"± {half:.1f} (95%)" if pairs.n > 1 else "no interval from one pair"
    line = (f"DUPLICATE {main.name}: {first} {mean:+.1f} mbb/g {interval}, mean of each mirrored "
            f"pair over {pairs.n} pairs; {main.names[1]} the negation")
    warning = None
    if pairs.n > 1 and identical == pairs.n:
        warning = (f"WARNING: DUPLICATE {main.name}: the two halves of all {pairs.n} pairs are the same hand "
                   f"(each seat won the same in {main.name} and {mirror.name}), so the duplicate result is "
                   "0 by construction and measures nothing: the bots play alike whatever their seat, most "
                   "likely because they were seeded alike (give each of the four bot processes its own "
                   "--seed; docs/dealer.md, 'Seeding bots for duplicate')")
    return line, warning


def main(argv: Sequence[str]) -> int:
    """Run the dealer; returns the exit code (see the module docstring)."""
    try:
        groups, _options = parse_configs(argv)
    except _UsageError as error:
        sys.stdout.write(USAGE)
        sys.stdout.flush()
        print(f"acpc-lbr dealer: {error}", file=sys.stderr)
        return EXIT_FAILED
    except SystemExit as exit_:  # --help
        return int(exit_.code or 0)

    install_asyncio_reactor(prefer_uvloop=True)  # the dealer starts no processes (see there)
    from twisted.internet import defer, reactor

    return run_groups(groups, reactor, defer, _options)


def run_groups(groups: list[list[MatchConfig]], reactor: Any, defer: Any,
               options: argparse.Namespace | None = None) -> int:
    """Listen, print the port lines, run every match, print the results."""
    several = sum(len(g) for g in groups) > 1
    progress = _progress(groups, options)
    matches: list[list[Match]] = []
    try:
        port_lines = _listen_groups(groups, matches, reactor, options, progress, several)
    except MatchAborted as failure:
        return _fail_setup(progress, matches, failure.message)
    try:
        # Before the port line what can fail or print (--results-json's folder, the metrics
        # endpoint): a launcher reads the port line as "started".
        results_setup = _setup_results(matches, options, reactor, progress.stream is not None,
                                       for_logs=False)
    except (ValueError, OSError, CannotListenError) as error:
        return _fail_setup(progress, matches, str(error))
    sys.stdout.write("".join(line + "\n" for line in port_lines))
    sys.stdout.flush()
    if results_setup is None:
        # A plain dealer's results (the query log beside the .log, for an opponent that
        # answers range queries) load after the port line: the launcher starts the bots
        # meanwhile, and no hand is played before the reactor runs.
        try:
            results_setup = _setup_results(matches, options, reactor, for_logs=True)
        except (ValueError, OSError, CannotListenError) as error:
            return _fail_setup(progress, matches, str(error))

    all_matches = [m for group in matches for m in group]
    codes: list[int] = []

    def interrupted() -> None:
        for m in all_matches:
            m.abort(MatchAborted(Cause.INTERRUPTED, "the dealer was stopped", None, EXIT_INTERNAL))

    reactor.addSystemEventTrigger("before", "shutdown", interrupted)

    _watch_progress(progress, all_matches, results_setup)

    def report(results: list[tuple[bool, Any]]) -> None:
        progress.close()
        _report(results, matches, several, results_setup, codes)

    done = defer.DeferredList([m.start() for m in all_matches], consumeErrors=True)
    done.addCallback(report)
    def report_failed(failure: Any) -> None:  # a dealer bug: still one line, never silence
        print(f"ERROR: internal error while reporting the results: {failure.value!r}", file=sys.stderr)
        codes.append(EXIT_INTERNAL)

    done.addErrback(report_failed)
    # With metrics on, the endpoint stays up for --metrics-grace after the end.
    done.addBoth(lambda _: reactor.callLater(
        results_setup.linger() if results_setup is not None else 0, _stop, reactor))
    reactor.run()
    return max(codes) if codes else EXIT_INTERNAL if all_matches else EXIT_OK


def _stop(reactor: Any) -> None:
    """Stop the reactor unless it is stopping already (a signal stopped it: on uvloop's
    loop this call may still run during the shutdown)."""
    try:
        reactor.stop()
    except ReactorNotRunning:
        pass


def _listen_groups(groups: list[list[MatchConfig]], matches: list[list[Match]], reactor: Any,
                   options: argparse.Namespace | None, progress: Any, several: bool) -> list[str]:
    """Build and listen every group's matches (appended to ``matches`` as they are built,
    so a caller can stop them on a failure); the port line of each group."""
    stderr = progress.proxy(sys.stderr)  # on a terminal, console lines go above the bar
    port_lines = []
    # One poller for the process: several matches poll no more than one does.
    busy_poll = None
    if options is not None and options.busy_poll > 0:
        busy_poll = BusyPoll(event_loop_of(reactor).call_soon, options.busy_poll / 1e6)
    for group in groups:
        console = options is None or not (options.quiet or options.silent) or options.console
        built = [
            Match(c, reactor, stderr=stderr, trace_prefix=f"[{c.name}] " if several else "",
                  console=console, busy_poll=busy_poll)
            for c in group
        ]
        matches.append(built)
        ports = [m.listen() for m in built]
        if len(built) == 2:  # match + mirror: NAME1's and NAME2's ports in each
            port_lines.append(" ".join(map(str, ports[0] + ports[1][::-1])))
        else:
            port_lines.append(" ".join(map(str, ports[0])))
    return port_lines


def _report(results: list[tuple[bool, Any]], matches: list[list[Match]], several: bool,
            results_setup: Any, codes: list[int]) -> None:
    """Print every match's SCORE line (and each pair's paired result) and the results;
    append each match's exit code to ``codes``."""
    # Match.start never fails; a failure here is a dealer bug, but the other
    # matches' SCORE lines must still be printed.
    by_name = {r.name: r for ok, r in results if ok}
    for m in (m for group in matches for m in group):
        if m.config.name not in by_name:
            m.result.exit_code = EXIT_INTERNAL
            by_name[m.config.name] = m.result
    for group in matches:
        for m in group:
            result = by_name[m.config.name]
            codes.append(result.exit_code)
            score = result.score_line()
            print(f"{m.config.name} {score}" if several else score)
        if len(group) == 2:
            line, warning = paired_result(by_name[group[0].config.name], by_name[group[1].config.name],
                                          group[0].game.big_blind)
            print(line)
            if warning is not None:
                print(warning, file=sys.stderr)
    sys.stdout.flush()
    if results_setup is not None:
        try:
            results_setup.report(by_name)
        except OSError as error:  # e.g. the --results-json folder went away during the match
            print(f"ERROR: cannot write {error.filename}: {error.strerror}", file=sys.stderr)
            codes.append(EXIT_INTERNAL)


def _fail_setup(progress: Any, matches: list[list[Match]], message: str) -> int:
    """Stop the matches built so far and print the error: the dealer could not start."""
    progress.close()
    for group_matches in matches:
        for m in group_matches:
            m.stop_listening()
            m.events.close()
    print(f"ERROR: {message}", file=sys.stderr)
    return EXIT_FAILED


def _progress(groups: list[list[MatchConfig]], options: argparse.Namespace | None) -> Any:
    """The progress display (acpc_lbr/runtime/progress.py): a bar on a terminal when the trace is
    off (``-q``), lines with ``--progress-every``, nothing with ``--quiet``."""
    silent = options is None or options.silent
    every = 0 if options is None else options.progress_every
    trace_off = options is not None and options.quiet
    bar = not silent and trace_off and sys.stderr.isatty()
    total = sum(c.hands for group in groups for c in group)
    show = bar or (not silent and every > 0)
    return Progress(sys.stderr if show else None, total, every or total, label="", bar=bar, transient=True)


def _watch_progress(progress: Any, matches: Sequence[Match], results: Any) -> None:
    """Update ``progress`` after every hand of every match: the estimate of a single
    heads-up group (its narrowest interval, as the measured player's) and the failed queries."""
    if progress.stream is None:
        return
    groups = results.groups if results is not None else []
    live = groups[0].live.running if len(groups) == 1 else None
    if live is not None:
        progress.label = groups[0].measured

    def hand(event: EventRecord) -> None:
        if not isinstance(event, HandFinished):
            return
        figures = {}
        if live is not None:
            for name, stat in live.stats().items():
                if name != "io_minus_raw" and stat.n > 1:
                    mean, half = stat.live()
                    figures[name] = (mean, half, stat.n)
        errors = sum(counts.errors for m in matches for counts in m.relay.counts)
        big_blind = matches[0].game.big_blind
        progress.update(progress.done + 1, best_estimate(figures, big_blind), errors)

    for match in matches:
        match.events.subscribe(hand)


def _setup_results(matches: list[list[Match]], options: argparse.Namespace | None, reactor: Any,
                   progress_shown: bool = False, for_logs: bool = True) -> Any:
    """The results of every group, and the metrics endpoint when asked for.

    None when nothing would read them -- no table (``-q`` without ``--table``),
    no ``--results-json``, no metrics, no progress display, and no ``.log``
    for a query log to go beside (``-l``; or ``for_logs`` False: the ``.log`` is
    not counted) -- so that no per-hand accounting and none of the dealer's own
    range queries are done for nobody.
    """
    if options is None:
        return None
    if options.results_json:
        # Found out now, not after the match: the folder the document goes to.
        folder = Path(options.results_json).parent
        if not folder.is_dir():
            raise ValueError(f"cannot write {options.results_json}: "
                             f"{os.strerror(errno.ENOTDIR if folder.exists() else errno.ENOENT)}")
    table = not (options.quiet or options.silent) or options.table
    logs = for_logs and any(m.config.write_log for group in matches for m in group)
    if not (table or options.results_json or options.metrics_port is not None or progress_shown
            or logs):
        return None
    # lazy: the results (their estimators and metrics) are loaded only when something reads them
    from dealer.results import DealerResults

    return DealerResults(
        matches, reactor, measure=options.measure, results_json=options.results_json,
        metrics_port=options.metrics_port, metrics_bind=options.metrics_bind,
        metrics_grace=options.metrics_grace, io=options.io,
        table=table,
        aivat=getattr(options, "aivat", False),
        live=progress_shown,
    )

"""A dealer process: its matches run together, their port lines, their results.

:func:`run_groups` is what ``acpc-lbr dealer`` runs once its command line is
read (:mod:`acpc_lbr.cli.dealer`) and Twisted is loaded: it listens for every
match (a group is a match and, with ``--duplicate``, its mirror) on the sockets
bound before Twisted was (:mod:`dealer.startup`), prints the port lines unless
the command printed them then, plays them on one reactor, and prints the
results, the ``DUPLICATE`` line of each pair (:func:`paired_result`) and the
exit code (the highest of the matches').
The results pipeline and the metrics come from dealer/results.py and
dealer/metrics.py.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from twisted.internet.error import CannotListenError, ReactorNotRunning

from acpc_lbr.runtime.exit_codes import EXIT_FAILED, EXIT_INTERNAL, EXIT_OK
from acpc_lbr.runtime.progress import Progress, best_estimate
from acpc_lbr.runtime.reactor import event_loop_of
from dealer.busypoll import BusyPoll, MatchesPlaying
from dealer.events import Cause, EventRecord, HandFinished, open_record_file
from dealer.match import (
    Match,
    MatchAborted,
    MatchConfig,
    MatchResult,
)
from dealer.startup import DealerStartup, StartupRefused, check_results_folder, port_line


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
    mean = pairs.mean * scale
    # The printed 95% interval (the results document's low_95, high_95 of the duplicate row: the
    # skewness-corrected one) to a tenth of a mbb/g, as the table prints it; one pair has none.
    low, high = pairs.interval()
    interval = (f"95% interval [{low * scale:+.1f}, {high * scale:+.1f}]" if pairs.n > 1
                else "no interval from one pair")
    line = (f"DUPLICATE {main.name}: {first} {mean:+.1f} mbb/g, {interval}, mean of each mirrored "
            f"pair over {pairs.n} pairs; {main.names[1]} the negation")
    warning = None
    if pairs.n > 1 and identical == pairs.n:
        warning = (f"WARNING: DUPLICATE {main.name}: the two halves of all {pairs.n} pairs are the same hand "
                   f"(each seat won the same in {main.name} and {mirror.name}), so the duplicate result is "
                   "0 by construction and measures nothing: the bots play alike whatever their seat, most "
                   "likely because they were seeded alike (give each of the four bot processes its own "
                   "--seed; docs/dealer.md, 'Seeding bots for duplicate')")
    return line, warning


def run_groups(groups: list[list[MatchConfig]], reactor: Any, defer: Any,
               options: argparse.Namespace | None = None, startup: DealerStartup | None = None,
               printed: bool = False) -> int:
    """Listen, print the port lines, run every match, print the results.

    Args:
        startup: the sockets and files :func:`dealer.startup.prepare` opened before
            Twisted was loaded (None: the reactor opens the ports, the matches their files).
        printed: the port lines were printed already (a plain dealer prints them
            before loading Twisted: dealer/startup.py).
    """
    several = sum(len(g) for g in groups) > 1
    progress = _progress(groups, options)
    matches: list[list[Match]] = []
    try:
        port_lines = _listen_groups(groups, matches, reactor, options, progress, several, startup)
    except MatchAborted as failure:
        return _fail_setup(progress, matches, failure.message, startup)
    try:
        results_setup = _results_around_port_lines(matches, options, reactor, progress, port_lines, printed)
    except (ValueError, OSError, CannotListenError) as error:
        return _fail_setup(progress, matches, str(error), startup)

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


def _results_around_port_lines(matches: list[list[Match]], options: argparse.Namespace | None,
                               reactor: Any, progress: Any, port_lines: list[str], printed: bool) -> Any:
    """The results (:func:`_setup_results`), and the port lines printed unless ``printed``.

    Raises:
        ValueError, OSError, CannotListenError: the results cannot be set up (the dealer
            does not start).
    """
    results_setup = None
    if not printed:
        # Before the port line what can fail or print (--measure, the metrics endpoint):
        # a launcher reads the port line as "started".
        results_setup = _setup_results(matches, options, reactor, progress.stream is not None,
                                       for_logs=False)
        sys.stdout.write("".join(line + "\n" for line in port_lines))
        sys.stdout.flush()
    if results_setup is None:
        # A plain dealer's results (the query log beside the .log, for an opponent that
        # answers range queries) load after the port line: the launcher starts the bots
        # meanwhile, and no hand is played before the reactor runs.
        results_setup = _setup_results(matches, options, reactor, for_logs=True)
    return results_setup


def _stop(reactor: Any) -> None:
    """Stop the reactor unless it is stopping already (a signal stopped it: on uvloop's
    loop this call may still run during the shutdown)."""
    try:
        reactor.stop()
    except ReactorNotRunning:
        pass


def _listen_groups(groups: list[list[MatchConfig]], matches: list[list[Match]], reactor: Any,
                   options: argparse.Namespace | None, progress: Any, several: bool,
                   startup: DealerStartup | None = None) -> list[str]:
    """Build and listen every group's matches (appended to ``matches`` as they are built,
    so a caller can stop them on a failure); the port line of each group. With a
    ``startup``, the matches listen on its sockets and write to its files."""
    stderr = progress.proxy(sys.stderr)  # on a terminal, console lines go above the bar
    port_lines = []
    # One count of the matches playing and one poller for the process: several matches poll
    # no more than one does, and make no state ready ahead while another plays.
    playing = MatchesPlaying()
    busy_poll = None
    if options is not None and options.busy_poll > 0:
        busy_poll = BusyPoll(event_loop_of(reactor).call_soon, options.busy_poll / 1e6,
                             playing=playing)
    console = options is None or not (options.quiet or options.silent) or options.console
    for group in groups:
        built = [
            Match(c, reactor, stderr=stderr, trace_prefix=f"[{c.name}] " if several else "",
                  console=console, busy_poll=busy_poll, playing=playing,
                  opener=startup.files if startup is not None else open_record_file)
            for c in group
        ]
        matches.append(built)
        ports = [m.listen(startup.take_sockets(m.config.name) if startup is not None else ())
                 for m in built]
        port_lines.append(port_line(ports))
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


def _fail_setup(progress: Any, matches: list[list[Match]], message: str,
                startup: DealerStartup | None = None) -> int:
    """Stop the matches built so far and print the error: the dealer could not start."""
    progress.close()
    for group_matches in matches:
        for m in group_matches:
            m.stop_listening()
            m.events.close()
    if startup is not None:
        startup.close()
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
        shown = None
        if live is not None:
            running = live
            shown = best_estimate(figures, big_blind, lambda name: running.estimator(name).interval())
        progress.update(progress.done + 1, shown, errors)

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
    try:
        check_results_folder(options)  # found out now, not after the match
    except StartupRefused as refused:
        raise ValueError(refused.message) from refused
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

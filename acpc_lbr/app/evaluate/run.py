"""Running an evaluation: the dealer in process, the LBR agents, the opponents, the mirror.

:func:`run_evaluation` plays both seatings on a running reactor (the
mirrored one in a second process unless told otherwise: :mod:`acpc_lbr.app.seating`)
and gathers what they measured into an :class:`~acpc_lbr.app.evaluate.evaluation.Evaluation`;
:func:`play` runs it on the asyncio reactor for the command line, and
:func:`mirror_main` is the second process's side.
"""

from __future__ import annotations

import contextlib
import json
import logging
import shlex
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any, TextIO, cast

from twisted.internet import defer
from twisted.internet.error import CannotListenError, ReactorNotRunning
from twisted.python.failure import Failure

from acpc_lbr.app import seating
from acpc_lbr.app.evaluate.evaluation import (
    ConsistencyCheck,
    Evaluation,
    EvaluationConfig,
    ProbeSection,
)
from acpc_lbr.app.evaluate.output import EvaluationProgress
from acpc_lbr.app.evaluate.processes import (
    EvaluateReactor,
    OpponentProcess,
    exited_before_connecting,
)
from acpc_lbr.estimators import HandOutcome
from acpc_lbr.lbr import ActiveRounds, BettingOptions
from acpc_lbr.results import ResultsDocument, estimates_from_outcomes
from acpc_lbr.runtime import children
from acpc_lbr.runtime.exit_codes import (
    EXIT_FAILED,
    EXIT_INTERNAL,
    EXIT_OK,
)
from acpc_lbr.runtime.reactor import install_asyncio_reactor
from agents.bots import BOTS
from agents.client import AcpcClient, BotFactory, StrategyBot, seeded_rng
from agents.lbr import LbrAgent, LbrTiming
from dealer.budget import BotBudget
from dealer.busypoll import MatchesPlaying
from dealer.events import Cause, EventRecord, HandFinished
from dealer.interfaces import ListeningPort
from dealer.match import Match, MatchAborted, MatchConfig, MatchResult
from dealer.metrics import DealerMetrics, serve_metrics
from dealer.results import ResultsGroup
from protocol.gamedef import load_game

#: How long the players have to connect, and an opponent process to exit after the match.
START_TIMEOUT_MS = 60_000


EXIT_GRACE_SECONDS = 10.0


async def run_evaluation(config: EvaluationConfig, reactor: EvaluateReactor,
                         progress: TextIO | None = None, progress_every: int = 0,
                         make_opponent: Callable[[int], AcpcClient] | None = None,
                         split: bool = False, seatings: Sequence[int] | None = None,
                         on_outcome: Callable[[HandOutcome], None] | None = None) -> Evaluation:
    """Play the evaluation on ``reactor`` (loopback TCP) and return what it measured.

    Args:
        config: the evaluation.
        reactor: a running Twisted reactor.
        progress: where the progress goes (None: nowhere).
        progress_every: without a TTY, a line every this many hands (0: ten lines).
        make_opponent: ``half -> AcpcClient`` instead of the configured opponent
            (tests, embedding).
        split: play the mirrored seating in a process of its own
            (:mod:`acpc_lbr.app.seating`), so that the two seatings use two
            cores; ignored where :func:`can_split` says no.
        seatings: the seatings to play here (default: every one); a seating
            process plays ``(1,)``.
        on_outcome: also receives each hand's outcome (a seating process sends them on).
    """
    evaluation = Evaluation(config)
    halves = 2 if config.duplicate else 1
    here = list(range(halves) if seatings is None else seatings)
    remote = None
    if split and seatings is None and can_split(config, make_opponent):
        remote = _start_mirror(reactor, config)  # started first: it runs while we set up
        here = [0]
    total = config.hands * halves
    bar = EvaluationProgress(progress, config.hands * len(here) if seatings is not None else total,
                    progress_every or max(config.hands * halves // 10, 1), _shorter(config))
    config.out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    playing = MatchesPlaying(count=1)  # the LBR agent plays here too (see _seating)
    matches = [_seating(config, reactor, evaluation, bar, half, halves, playing) for half in here]
    processes: list[OpponentProcess] = []
    shutdown_trigger = reactor.addSystemEventTrigger(
        "before", "shutdown", _interrupter(matches, processes, remote))
    metrics, listening = _metrics_endpoint(config, progress)
    group = _results_group(config, matches, evaluation, bar, metrics, here, seatings,
                           on_outcome, remote)
    agents, factories, finished = _seat_players(config, reactor, matches, evaluation, processes,
                                                make_opponent, here)
    try:
        results = await defer.gatherResults(finished)
        # Our opponent processes wind down while the mirror's process finishes (its own do too).
        winding = defer.Deferred.fromCoroutine(_wind_down(reactor, processes, factories))
        mirror = await remote.finished if remote is not None else None
    finally:
        bar.close()
    reactor.removeSystemEventTrigger(shutdown_trigger)
    await winding
    evaluation.seconds = time.perf_counter() - started
    _gather(evaluation, list(results), agents, matches, group, here, mirror,
            estimators=seatings is None or on_outcome is None)
    group.close()
    if listening is not None:
        await listening.stopListening()
    return evaluation


def _interrupter(matches: Sequence[Match], processes: list[OpponentProcess],
                 remote: seating.SeatingProcess | None) -> Callable[[], None]:
    """What SIGINT/SIGTERM does: end the matches now (their logs get the reason and a
    SCORE over the finished hands) and stop the opponent processes and the mirror. The
    agents here lose their connections because of it: their complaints (a lost connection,
    failed queries) are silenced, as the one 'interrupted' line says it all."""
    def interrupted() -> None:
        logging.getLogger("agents").setLevel(logging.CRITICAL)
        for match in matches:
            match.abort(MatchAborted(Cause.INTERRUPTED, "evaluate was stopped", None, EXIT_INTERNAL))
        for process in processes:
            process.stop()
        if remote is not None:
            remote.stop()
    return interrupted


def _results_group(config: EvaluationConfig, matches: Sequence[Match], evaluation: Evaluation,
                   bar: EvaluationProgress, metrics: DealerMetrics | None, here: list[int],
                   seatings: Sequence[int] | None,
                   on_outcome: Callable[[HandOutcome], None] | None,
                   remote: seating.SeatingProcess | None) -> ResultsGroup:
    """The dealer's results of the matches played here, wired to the outcome sink, the
    metrics, the progress and the mirror's outcomes."""
    # The dealer's results: the document's counts (showdowns, dealer queries, IO
    # fallbacks) are then the ones `acpc-lbr results` finds in the same files.
    group = ResultsGroup(matches, measured="lbr", metrics=metrics if config.io or config.aivat else None,
                         lbr={"bets": config.bets.name, "rounds": config.rounds.text()},
                         io=config.io or config.aivat, aivat=config.aivat, halves=here)
    if on_outcome is not None:
        for part in group.results:
            # A seating process sends its outcomes on; the evaluating process keeps the estimators.
            part.sink = on_outcome if seatings is not None else _tee(part.sink, on_outcome)
    if metrics is not None and not (config.io or config.aivat):
        _publish_without_io(metrics, matches, evaluation)
    running = group.live.running  # the dealer's estimators (with IO, when on)
    bar.sources = lambda e: (running, _query_errors(matches))
    if remote is not None:
        group.live.expect_halves((0, 1))  # the mirror's outcomes come here too (below)

        def mirrored(outcome: HandOutcome) -> None:  # the mirror's hands: estimators and progress
            group.live.add(outcome)
            bar.hand(evaluation)
        remote.on_outcome = mirrored
    return group


async def _wind_down(reactor: EvaluateReactor, processes: list[OpponentProcess],
                     factories: Sequence[BotFactory]) -> None:
    """Let the opponent processes exit (all at once, each within the grace; one that never
    connected is asked to stop now: it would not see the match end) and the clients see
    the close."""
    for process in processes:
        if not process.connected():
            process.stop()
    await defer.gatherResults([defer.Deferred.fromCoroutine(process.finish(reactor, EXIT_GRACE_SECONDS))
                               for process in processes])
    for factory in factories:  # the clients see the dealer's close before we return
        await factory.done


def _metrics_endpoint(config: EvaluationConfig, progress: TextIO | None,
                      ) -> tuple[DealerMetrics | None, ListeningPort | None]:
    """The metrics and their endpoint (``--metrics-port``; its address said on ``progress``, or on
    stderr under ``--quiet``: it was asked for, and with port 0 nothing else tells it, as in the dealer)."""
    if config.metrics_port is None:
        return None, None
    metrics = DealerMetrics()
    listening = serve_metrics(metrics, config.metrics_port, config.metrics_bind)
    address = listening.getHost()
    print(f"METRICS http://{address.host}:{address.port}/metrics", file=progress or sys.stderr, flush=True)
    return metrics, listening


def _seating(config: EvaluationConfig, reactor: EvaluateReactor, evaluation: Evaluation, bar: EvaluationProgress,
             half: int, halves: int, playing: MatchesPlaying) -> Match:
    """The match of one seating (LBR first in half 0, second in half 1), its hands counted.

    ``playing``: the count of matches playing that the seatings of this process share, started
    at one for the LBR agent that plays in it: the time it thinks is its own, not the dealer's
    to make the next state ready ahead of its reply (dealer.turns.TurnPolicy.ahead_wanted)."""
    opponent = config.opponent_name
    names = ("lbr", opponent) if half == 0 else (opponent, "lbr")
    lbr_seat = names.index("lbr")
    match_config = MatchConfig(
        name=str(config.out / (f"lbr-vs-{opponent}" + (".dup" if half else ""))),
        game_arg=config.game_arg, game=config.game, hands=config.hands, seed=config.seed,
        names=names, bind="127.0.0.1", t_per_hand_ms=600_000, trace_messages=False,
        t_query_ms=config.t_query_ms, t_response_ms=config.t_response_ms, start_timeout_ms=START_TIMEOUT_MS,
        budget=BotBudget(query_seconds_match=config.t_query_match_ms / 1000.0),
    )
    match = Match(match_config, reactor, stderr=None, playing=playing)

    def on_event(event: EventRecord) -> None:
        if not isinstance(event, HandFinished):
            return
        if not (config.io or config.aivat):  # else the dealer's results keep the running figures
            chips = float(event.values[lbr_seat])
            deal = event.hand
            evaluation.estimates.add(HandOutcome(deal, half, chips))
            evaluation.pairs.setdefault(deal, [None] * halves)[half] = chips
        bar.hand(evaluation)

    match.events.subscribe(on_event)
    return match


def _publish_without_io(metrics: DealerMetrics, matches: Sequence[Match], evaluation: Evaluation) -> None:
    """Without IO the series come from the matches' events, and the running raw and
    duplicate estimates from this evaluation's own accumulators."""
    observers = [metrics.match(Path(m.config.name).name, m.config.names) for m in matches]
    for match, observer in zip(matches, observers):
        match.events.subscribe(observer.observe)

    def publish(event: EventRecord) -> None:
        if isinstance(event, HandFinished):
            observers[0].publish_estimates(evaluation.estimates, evaluation.big_blind, min_units=2)

    for match in matches:
        match.events.subscribe(publish)


def _seat_players(config: EvaluationConfig, reactor: EvaluateReactor, matches: Sequence[Match],
                  evaluation: Evaluation, processes: list[OpponentProcess],
                  make_opponent: Callable[[int], AcpcClient] | None, halves: Sequence[int],
                  ) -> tuple[list[LbrAgent], list[BotFactory], list[defer.Deferred[MatchResult]]]:
    """Start each match (of seating ``halves[i]``) and connect LBR and the opponent (a client here, or a process)."""
    agents: list[LbrAgent] = []
    factories: list[BotFactory] = []
    finished = []
    for half, match in zip(halves, matches):
        ports = match.listen()
        finished.append(match.start())
        lbr_seat = match.config.names.index("lbr")
        agent = LbrAgent(config.game, config.bets, config.rounds, announce_fatal=False)
        agents.append(agent)
        factory = BotFactory(_returning(agent))
        factories.append(factory)
        reactor.connectTCP("127.0.0.1", ports[lbr_seat], factory)
        opponent_port = ports[1 - lbr_seat]
        if make_opponent is not None:
            factory = BotFactory(_returning(make_opponent(half)))
            factories.append(factory)
            reactor.connectTCP("127.0.0.1", opponent_port, factory)
        elif config.opponent is not None:
            bot = StrategyBot(config.game, BOTS[config.opponent], seeded_rng(config.seed * 2 + half + 1))
            factory = BotFactory(_returning(bot))
            factories.append(factory)
            reactor.connectTCP("127.0.0.1", opponent_port, factory)
        else:
            process = _spawn(reactor, config, opponent_port, half)
            processes.append(process)
            evaluation.commands.append(process.command)
            process.seat = match.seats[1 - lbr_seat]
            process.ended.addCallback(exited_before_connecting, match, 1 - lbr_seat,
                                      process.command, config.out / f"opponent{half}.out")
    return agents, factories, finished


def _gather(evaluation: Evaluation, results: list[MatchResult], agents: Sequence[LbrAgent],
            matches: Sequence[Match], group: ResultsGroup, here: Sequence[int],
            mirror: seating.SeatingSummary | None = None, estimators: bool = True) -> None:
    """What the finished matches and agents (and the mirror's process, if any) measured, into ``evaluation``.

    ``estimators`` False (a seating process, whose outcomes went to its parent) leaves the estimators out.
    """
    config = evaluation.config
    halves = 2 if config.duplicate else 1
    if mirror is not None:
        results = [*results, mirror.result]
        here = [*here, 1]
    evaluation.results = results
    # Final figures from the match results (the same numbers the events gave),
    # added in the canonical (deal, half) order, so that the trajectory interleaves the halves.
    final: list[HandOutcome] = []
    evaluation.pairs = {}
    for half, result in zip(here, results):
        lbr_seat = result.names.index("lbr")
        for deal, values in sorted(result.hand_values.items()):
            final.append(HandOutcome(deal, half, float(values[lbr_seat])))
            evaluation.pairs.setdefault(deal, [None] * halves)[half] = float(values[lbr_seat])
    if estimators:
        evaluation.estimates = estimates_from_outcomes(final)
    timings = [agent.timing for agent in agents]
    if mirror is not None:
        timings.append(mirror.timing)
    timing = _summed_timing(timings)
    evaluation.timing = timing
    evaluation.inconsistencies = sum(a.inconsistencies for a in agents)
    evaluation.not_queryable = any(a.fatal is not None for a in agents)
    evaluation.relay = [list(m.relay.counts) for m in matches]
    evaluation.breakdown = _time_breakdown(matches, evaluation.seconds, timing)
    if mirror is not None:
        evaluation.inconsistencies += mirror.inconsistencies
        evaluation.not_queryable = evaluation.not_queryable or mirror.not_queryable
        evaluation.relay.append(mirror.relay)
        evaluation.commands.extend(mirror.commands)
        for key, value in mirror.breakdown.items():
            evaluation.breakdown[key] = evaluation.breakdown.get(key, 0.0) + value
    evaluation.document = _document(evaluation, group)
    evaluation.document.setdefault("timings", {})["cpu_seconds"] = seating.cpu_seconds()
    if mirror is not None:
        seating.add_counts(evaluation.document, mirror)
    if config.probe is not None:
        evaluation.probe = evaluation.document["probe"] = _probe_section(config, matches)
    if config.io or config.aivat:
        evaluation.io_estimates = group.live.final()


def _summed_timing(timings: Sequence[LbrTiming]) -> LbrTiming:
    """The LBR agents' time split and counts, summed (counts by reason added up by reason)."""
    total = LbrTiming()
    for timing in timings:
        for part in fields(LbrTiming):
            value = getattr(timing, part.name)
            if isinstance(value, dict):
                merged = getattr(total, part.name)
                for key, count in value.items():
                    merged[key] = merged.get(key, 0) + count
            else:
                setattr(total, part.name, getattr(total, part.name) + value)
    return total


def _time_breakdown(matches: Sequence[Match], wall: float, timing: LbrTiming) -> dict[str, float]:
    """Whose time the evaluation took, in seconds summed over the seatings (see :func:`format_report`).

    The opponent's share is what the dealer saw: the time charged for its
    actions and, per answered query, from sending it to the answer (transfer
    and the bot's encoding included). The channel's is the dealer's checking
    of answers and LBR's decoding. LBR's share is its turns as the dealer
    charged them plus the time its queries were out; the dealer's is the rest
    of each seating's wall time. Answering counts the time with at least one
    query out to the opponent (pipelined queries once).
    """
    opponent_acting = opponent_answering = check = lbr_turns = 0.0
    for match in matches:
        lbr_seat = match.config.names.index("lbr")
        opponent = 1 - lbr_seat
        opponent_acting += match.seats[opponent].match_time
        counts = match.relay.counts
        opponent_answering += counts[opponent].busy_seconds
        check += counts[opponent].check_seconds
        lbr_turns += match.seats[lbr_seat].match_time + match.relay.paused(lbr_seat, match.clock.seconds())
    return {
        "opponent_acting_seconds": opponent_acting,
        "opponent_answering_seconds": opponent_answering,
        "channel_check_seconds": check,
        "channel_decode_seconds": float(timing.decode),
        "lbr_compute_seconds": float(timing.compute),
        "lbr_turn_seconds": lbr_turns,
        "dealer_other_seconds": max(0.0, wall * len(matches) - opponent_acting - lbr_turns),
    }


def _query_errors(matches: Sequence[Match]) -> int:
    """Range queries that failed so far, over every seat of every match (relayed and the dealer's own)."""
    return sum(counts.errors for match in matches for counts in match.relay.counts)


def _tee(first: Callable[[HandOutcome], None] | None,
         second: Callable[[HandOutcome], None]) -> Callable[[HandOutcome], None]:
    """A sink that gives each outcome to ``first`` (if any), then to ``second``."""
    def both(outcome: HandOutcome) -> None:
        if first is not None:
            first(outcome)
        second(outcome)
    return both


def can_split(config: EvaluationConfig, make_opponent: Callable[[int], AcpcClient] | None = None) -> bool:
    """Whether the mirrored seating can run in a process of its own (``--one-process`` not given).

    It can for a duplicate evaluation of a built-in bot or an ``--opponent-cmd``
    program; not with ``make_opponent`` (an opponent object of this process),
    ``--probe`` (its report reads both seatings' relays) or ``--metrics-port``
    (the series of both matches come from this process).
    """
    return (config.duplicate and make_opponent is None and config.probe is None
            and config.metrics_port is None)


def _spec_of(config: EvaluationConfig) -> seating.MirrorSpec:
    """The settings the mirrored seating's process needs, JSON-ready (:func:`_config_of` reads them back)."""
    return {"game": config.game_arg, "opponent": config.opponent, "opponent_cmd": config.opponent_cmd,
            "bets": config.bets.name, "rounds": config.rounds.text(), "hands": config.hands,
            "seed": config.seed, "out": str(config.out), "t_query_ms": config.t_query_ms,
            "t_response_ms": config.t_response_ms, "t_query_match_ms": config.t_query_match_ms,
            "io": config.io, "aivat": config.aivat, "name": config.opponent_name}


def _config_of(spec: seating.MirrorSpec) -> EvaluationConfig:
    """The evaluation of a :func:`_spec_of` (both seatings: the mirror's process plays the second)."""
    game = load_game(spec["game"])
    return EvaluationConfig(
        game_arg=spec["game"], game=game, opponent=spec["opponent"], opponent_cmd=spec["opponent_cmd"],
        bets=BettingOptions.parse(spec["bets"]), rounds=ActiveRounds.parse(spec["rounds"], game),
        hands=int(spec["hands"]), seed=int(spec["seed"]), duplicate=True, out=Path(spec["out"]),
        t_query_ms=int(spec["t_query_ms"]), t_response_ms=int(spec["t_response_ms"]),
        t_query_match_ms=int(spec["t_query_match_ms"]),
        io=bool(spec["io"]), aivat=bool(spec["aivat"]),
        name=spec["name"])


def _start_mirror(reactor: EvaluateReactor, config: EvaluationConfig) -> seating.SeatingProcess:
    """Start the mirrored seating's process (``acpc-lbr evaluate --mirrored-seating SPEC``)."""
    opponent = config.opponent_name
    return seating.SeatingProcess(reactor, _spec_of(config), str(config.out / f"lbr-vs-{opponent}.dup"),
                                  (opponent, "lbr"))


def _summary_of(evaluation: Evaluation) -> seating.SeatingSummary:
    """What the mirrored seating's process sends its parent at the end (its one match)."""
    document = evaluation.document
    if document is None:
        raise RuntimeError("the seating's summary is made after its results document")
    counts = cast(dict[str, Any], document.get("counts", {}))
    return seating.SeatingSummary(
        result=evaluation.results[0], timing=evaluation.timing,
        inconsistencies=evaluation.inconsistencies, not_queryable=evaluation.not_queryable,
        relay=evaluation.relay[0] if evaluation.relay else [],
        commands=list(evaluation.commands), breakdown=dict(evaluation.breakdown),
        counts={k: int(counts.get(k, 0)) for k in seating.SUMMED_COUNTS},
        query_seconds=float(document.get("timings", {}).get("query_seconds", 0.0)),
        cpu_seconds=seating.cpu_seconds())


def mirror_main(argv: Sequence[str]) -> int:
    """The mirrored seating's process: play seating 1 of the evaluation SPEC (``argv[0]``), report on stdout."""
    seating.end_with_parent()
    config = _config_of(json.loads(argv[0]))
    install_asyncio_reactor()
    from twisted.internet import reactor as installed
    from twisted.internet.error import ReactorNotRunning

    reactor: Any = installed
    done: list[Any] = []
    flushed = [time.monotonic()]

    def outcome(o: HandOutcome) -> None:
        seating.write_outcome(o)
        if time.monotonic() - flushed[0] >= seating.FLUSH_SECONDS:  # the parent's progress
            seating.flush()
            flushed[0] = time.monotonic()

    async def go() -> None:
        try:
            evaluation = await run_evaluation(config, reactor, seatings=(1,), on_outcome=outcome)
            seating.write_summary(_summary_of(evaluation))
            done.append(evaluation)
        finally:
            with contextlib.suppress(ReactorNotRunning):
                reactor.stop()

    def start() -> None:
        defer.ensureDeferred(go()).addErrback(lambda failure: done.append(failure))

    reactor.callWhenRunning(start)
    reactor.run()
    if not done:  # stopped (SIGTERM from the parent, or its death): so are the programs it started
        children.end_groups()
    if seating.parent_gone:  # the evaluation was stopped; the parent has said so
        return EXIT_FAILED
    if not done or not isinstance(done[0], Evaluation):
        if done:
            print(f"acpc-lbr evaluate (mirrored seating): internal error: {done[0].getTraceback()}",
                  file=sys.stderr)
        return EXIT_INTERNAL
    return EXIT_OK


def _shorter(config: EvaluationConfig) -> str:
    """What shortens an evaluation, for the one line of a long first ETA."""
    text = f"--hands N shortens it in proportion (now {config.hands} deals)"
    if config.probe is not None:
        text += f", and a smaller --probe K too (now K = {config.probe}: up to 1,326·K probes per query)"
    return text


def _returning(client: AcpcClient) -> Callable[[], AcpcClient]:
    """A ``make_client`` for :class:`agents.client.BotFactory` that returns ``client``."""
    return lambda: client


def _document(evaluation: Evaluation, group: ResultsGroup) -> ResultsDocument:
    """The dealer's results document, with what only the evaluation knows added.

    Estimators and the dealer's counts come from ``group`` (as in
    ``acpc-lbr dealer --results-json``); the ``lbr_*`` counts are LBR's own
    (its range queries and decisions, from its agents).
    """
    config = evaluation.config
    timings = {
        "wall_seconds": evaluation.seconds,
        "lbr_query_wait_seconds": evaluation.timing.queries,
        "lbr_protocol_seconds": evaluation.timing.protocol,
        "lbr_compute_seconds": evaluation.timing.compute,
        **evaluation.breakdown,
    }
    document = group.document(evaluation.results, timings)
    document["config"].update({
        "opponent": config.opponent_name,  # short (--opponent-name, or the program's name)
        "logs": str(config.out),
    })
    if config.opponent_cmd is not None:
        document["config"]["opponent_cmd"] = config.opponent_cmd
    sent, failed = evaluation.lbr_queries
    document["counts"].update({
        "lbr_queries": sent,
        "lbr_query_errors": failed,
        "lbr_active_decisions": evaluation.timing.decisions,
        "lbr_range_inconsistencies": evaluation.inconsistencies,
    })
    return document


def _probe_section(config: EvaluationConfig, matches: Sequence[Match]) -> ProbeSection:
    """What the probe adapters reported (``probe<half>.json``), summed over the seatings.

    The standard errors are the dealer's own count of the ``se=`` parts of the
    answers it relayed (docs/range-query.md); the rest is the adapters'.
    """
    parts: list[dict[str, Any]] = []  # the adapters' JSON, as read
    for half in range(len(matches)):
        path = config.out / f"probe{half}.json"
        with contextlib.suppress(OSError, ValueError):
            parts.append(json.loads(path.read_text()))
    totals = {key: sum(int(part.get(key, 0)) for part in parts)
              for key in ("queries", "answered", "refused", "probes", "copy_failures")}
    refusals: dict[str, int] = {}
    for part in parts:
        for cause, count in part.get("refusals", {}).items():
            refusals[cause] = refusals.get(cause, 0) + int(count)
    masses = [part["smallest_answer_mass"] for part in parts
              if part.get("smallest_answer_mass") is not None]
    answered = totals["answered"]
    checks: list[ConsistencyCheck] = [  # each adapter's, missing parts none
        {"verdict": str(c.get("verdict", "")), "decisions": int(c.get("decisions", 0)),
         "probes": int(c.get("probes", 0)), "largest_z": float(c.get("largest_z", 0.0)),
         "threshold_z": float(c.get("threshold_z", 0.0))}
        for c in (part.get("consistency", {}) for part in parts)
    ]
    sampled = largest = total = 0.0
    for match in matches:
        counts = match.relay.counts[1 - match.config.names.index("lbr")]
        sampled += counts.sampled
        largest = max(largest, counts.largest_standard_error)
        total += counts.sum_mean_standard_error
    return {
        "samples": config.probe,
        "instances": max((int(part.get("instances", 0)) for part in parts), default=0),
        "reports": len(parts),
        "queries": totals["queries"],
        "answered": answered,
        "refused": totals["refused"],
        "probes": totals["probes"],
        "copy_failures": totals["copy_failures"],
        "refusals": refusals,
        "smallest_answer_mass": min(masses) if masses else None,
        "mean_answer_mass": (sum(part["mean_answer_mass"] * part["answered"] for part in parts
                                 if part.get("mean_answer_mass") is not None) / answered
                             if answered else None),
        "sampled_answers": int(sampled),
        "largest_standard_error": largest,
        "mean_standard_error": total / sampled if sampled else 0.0,
        "consistency": _consistency(checks, complete=len(parts) == len(matches)),
    }


def _consistency(checks: Sequence[ConsistencyCheck], complete: bool) -> ConsistencyCheck:
    """The adapters' consistency checks as one: inconsistent if any says so."""
    decisions = sum(c["decisions"] for c in checks)
    verdicts = {c["verdict"] for c in checks}
    verdict = ("inconsistent" if "inconsistent" in verdicts else
               "consistent" if decisions and complete else "not checked")
    return {
        "verdict": verdict, "decisions": decisions,
        "probes": sum(c["probes"] for c in checks),
        "largest_z": max((c["largest_z"] for c in checks), default=0.0),
        "threshold_z": max((c["threshold_z"] for c in checks), default=0.0),
    }


def _spawn(reactor: EvaluateReactor, config: EvaluationConfig, port: int, half: int) -> OpponentProcess:
    command = (config.opponent_cmd or "").format(
        host="127.0.0.1", port=port, stats=shlex.quote(str(config.out / f"probe{half}.json")))
    argv = shlex.split(command)
    executable = shutil.which(argv[0]) or argv[0]
    argv[0] = executable
    return OpponentProcess(reactor, argv, config.out / f"opponent{half}.out")


def play(config: EvaluationConfig, progress: TextIO | None, progress_every: int, split: bool) -> Evaluation | int:
    """Run the evaluation on the asyncio reactor; its :class:`Evaluation`, or the exit status of
    an evaluation that was interrupted or failed (said on stderr).

    ``progress``, ``progress_every`` and ``split`` are :func:`run_evaluation`'s."""
    install_asyncio_reactor()
    from twisted.internet import reactor as installed  # the one just installed

    reactor = cast(EvaluateReactor, installed)
    outcome: list[Evaluation | Failure] = []
    ended: list[str] = []  # "done" when go() stops the reactor; else a signal did

    async def go() -> None:
        try:
            outcome.append(await run_evaluation(config, reactor, progress, progress_every, split=split))
        finally:
            ended.append("done")
            with contextlib.suppress(ReactorNotRunning):  # already stopping (a signal)
                reactor.stop()

    def start() -> None:
        defer.ensureDeferred(go()).addErrback(outcome.append)

    reactor.callWhenRunning(start)
    reactor.addSystemEventTrigger("before", "shutdown", lambda: ended.append("interrupted"))
    reactor.run()
    if ended and ended[0] == "interrupted":
        children.end_groups()  # the programs it started, and theirs: none outlives it
        print(f"acpc-lbr evaluate: interrupted; the logs of the finished hands are in {config.out}",
              file=sys.stderr)
        return EXIT_FAILED
    first = outcome[0] if outcome else None
    if isinstance(first, Evaluation):
        return first
    if first is not None and first.check(CannotListenError):  # type: ignore[no-untyped-call]  # --metrics-port taken
        print(f"acpc-lbr evaluate: {first.value}", file=sys.stderr)
        return EXIT_FAILED
    error = first.getTraceback() if first is not None else "interrupted"
    print(f"acpc-lbr evaluate: internal error: {error}", file=sys.stderr)
    return EXIT_FAILED

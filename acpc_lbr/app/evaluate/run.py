"""``acpc-lbr evaluate``: a lower bound on a bot's exploitability, with a 95% interval.

Usage::

    acpc-lbr evaluate [--opponent BOT | --opponent-cmd "CMD {host} {port}"]
                      [--game nolimit] [--bets fcpa] [--rounds 3-4]
                      [--hands N] [--seed S] [--no-duplicate] [--no-io] [--out DIR] [--keep-logs] [--json FILE]

It starts an in-process dealer (:class:`dealer.match.Match`), the LBR agent
(:class:`agents.lbr.LbrAgent`) and the opponent, and plays over loopback TCP
(127.0.0.1). By default the evaluation is *duplicate*: the match and its
mirror (seats swapped, the same deals) run concurrently, and each deal's two
outcomes are averaged, which removes most of the luck of the cards. The
mirror runs in a second process with its own dealer, LBR agent and opponent
(:mod:`acpc_lbr.app.seating`), so the two seatings use two cores;
``--one-process`` keeps both in this one. The
opponent is a built-in bot by name (``acpc-lbr play`` knows them), or any
program given by ``--opponent-cmd``, launched once per half with ``{host}``
and ``{port}`` filled in, the way ACPC start-up scripts take them; it must
answer range queries (docs/range-query.md).

The result is LBR's win rate in milli-big-blinds per game (mbb/g): a lower
bound on what a best response would win, i.e. on the opponent's
exploitability (docs/lbr.md). Raw (per hand) and duplicate (per pair)
estimators are printed side by side with the imaginary-observation ones (IO
and duplicate + IO, from the dealer's results: the opponent answers range
queries, or LBR could not play it); ``--no-io`` leaves the IO ones out.

With no options it runs a demonstration (2-3 minutes on a busy 2-core machine; README):
LBR (fcpa, rounds 3-4, the last two of the game) against ``call-raise`` in heads-up
no-limit hold'em.

Exit status (:mod:`acpc_lbr.runtime.exit_codes`): 0 done; 1 a match failed or evaluate
was interrupted; 2 usage; 5 the opponent does not answer range queries; 6 no
bound: LBR took no active
decision, some of its range queries failed (:data:`MAX_FAILED_QUERY_SHARE`), or a
probed bot (``--probe``) played unlike its probes.
Logs are kept in every case.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import os
import re
import shlex
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Protocol, TextIO, TypedDict, cast

from twisted.internet import defer, protocol
from twisted.internet.error import CannotListenError, ProcessExitedAlready, ReactorNotRunning
from twisted.python.failure import Failure

from acpc_lbr.app import scaleout, seating
from acpc_lbr.app.report import render, require_matplotlib
from acpc_lbr.app.summary import bound_line, counts_line, time_lines
from acpc_lbr.estimators import CheckName, HandOutcome, MatchEstimates
from acpc_lbr.lbr import ActiveRounds, BettingOptions
from acpc_lbr.results import ResultsDocument, estimates_from_outcomes, honesty_line, proven_lies
from acpc_lbr.runtime import children
from acpc_lbr.runtime.exit_codes import (
    EXIT_FAILED,
    EXIT_INTERNAL,
    EXIT_NO_BOUND,
    EXIT_NOT_QUERYABLE,
    EXIT_OK,
    EXIT_USAGE,
)
from acpc_lbr.runtime.progress import Progress, best_estimate
from acpc_lbr.runtime.reactor import install_asyncio_reactor
from agents.bots import BOTS
from agents.client import AcpcClient, BotFactory, StrategyBot, seeded_rng
from agents.lbr import LbrAgent, LbrTiming
from dealer.budget import BotBudget
from dealer.events import Cause, EventRecord, HandFinished
from dealer.interfaces import ListeningPort, MatchReactor
from dealer.match import Match, MatchAborted, MatchConfig, MatchResult
from dealer.metrics import DealerMetrics, serve_metrics
from dealer.relay import QueryCounts
from dealer.results import ResultsGroup
from protocol.errors import ProtocolError
from protocol.gamedef import GameDef, load_game

#: The demonstration run (no options): 142-159 s on a busy 2-core machine (README).
DEFAULT_OPPONENT = "call-raise"
DEFAULT_HANDS = 4000
#: The share of LBR's range queries that may fail before the result is refused.
#: Zero: a failed query means LBR decided without the opponent's range (or
#: without its fold probabilities), so the player measured is not LBR but a
#: weaker one, and a bot that breaks its answers (a wrong game, a crash in
#: its strategy) would read as unexploitable. The logs stay for inspection.
MAX_FAILED_QUERY_SHARE = 0.0
#: Probes per private hand and query with a bare --probe.
PROBE_SAMPLES = 100
#: How long the players have to connect, and an opponent process to exit after the match.
START_TIMEOUT_MS = 60_000
EXIT_GRACE_SECONDS = 10.0


class _Process(Protocol):
    """A spawned process (``IProcessTransport``): its pid, what stops it, its pipes' close."""

    pid: int | None

    def signalProcess(self, signalID: str | int) -> None: ...

    def loseConnection(self) -> None: ...


class EvaluateReactor(MatchReactor, Protocol):
    """What an evaluation needs of its Twisted reactor (its ``IReactor*`` interfaces; a
    Protocol because zope interfaces are opaque to mypy): a match's, and more."""

    def connectTCP(self, host: str, port: int, factory: BotFactory) -> object: ...

    def spawnProcess(self, processProtocol: protocol.ProcessProtocol, executable: str,
                     args: list[str], env: dict[str, str]) -> _Process: ...

    def addSystemEventTrigger(self, phase: str, eventType: str, callable: Callable[..., object],
                              *args: object) -> object: ...

    def removeSystemEventTrigger(self, triggerID: object) -> None: ...

    def callWhenRunning(self, callable: Callable[..., object], *args: object) -> object: ...

    def run(self) -> None: ...

    def stop(self) -> None: ...


class ConsistencyCheck(TypedDict):
    """``probe.consistency``: the playing copy's actions against its probed ranges."""

    verdict: str
    decisions: int
    probes: int
    largest_z: float
    threshold_z: float


class ProbeSection(TypedDict):
    """``probe`` of the results document: what the probe adapters reported, both seatings."""

    samples: int | None
    instances: int
    reports: int
    queries: int
    answered: int
    refused: int
    probes: int
    copy_failures: int
    refusals: dict[str, int]
    smallest_answer_mass: float | None
    mean_answer_mass: float | None
    sampled_answers: int
    largest_standard_error: float
    mean_standard_error: float
    consistency: ConsistencyCheck


@dataclass(frozen=True)
class EvaluationConfig:
    """One evaluation.

    Attributes:
        game_arg: the game as typed (bundled name or path).
        game: the game.
        opponent: a built-in bot name, or None with ``opponent_cmd``.
        opponent_cmd: a command line with ``{host}`` and ``{port}``.
        bets: LBR's betting options.
        rounds: LBR's active rounds.
        hands: deals to play (each played twice when duplicate).
        seed: the deal seed (the bots' generators derive from it).
        duplicate: also play the mirrored match.
        out: directory for the logs.
        t_query_ms: the opponent's time limit per query.
        t_response_ms: the opponent's time limit per action (the dealer's ``--t_response``).
        t_query_match_ms: the most time the opponent may spend answering range queries in
            one seating's match (the dealer's ``--t_query_match``).
        io: attach the dealer's results (imaginary observations; on unless ``--no-io``).
        aivat: also compute the AIVAT estimators (with the same results machinery).
        metrics_port: serve Prometheus metrics on this port (None: none; 0: any).
        metrics_bind: the metrics endpoint's interface.
        name: the opponent's player name (logs, files, metrics); None: from
            :func:`default_opponent_name`.
        probe: K when the opponent runs behind the probe adapter (``--probe``), else None.
    """

    game_arg: str
    game: GameDef
    opponent: str | None
    opponent_cmd: str | None
    bets: BettingOptions
    rounds: ActiveRounds
    hands: int
    seed: int
    duplicate: bool = True
    out: Path = Path(".")
    t_query_ms: int = 10_000
    t_response_ms: int = 600_000
    t_query_match_ms: int = int(BotBudget.query_seconds_match * 1000)
    io: bool = True
    aivat: bool = False
    metrics_port: int | None = None
    metrics_bind: str = "127.0.0.1"
    name: str | None = None
    probe: int | None = None

    @property
    def opponent_name(self) -> str:
        """The opponent's player name in the logs, the file names and the metrics."""
        if self.name is not None:
            return self.name
        return default_opponent_name(self.opponent, self.opponent_cmd)


_INTERPRETERS = re.compile(r"(python[0-9.]*|pypy[0-9.]*|env|uv|node|java|ruby|perl|sh|bash)")


def _clean_name(text: str) -> str:
    return "".join(c for c in text if c.isalnum() or c in "-_.").strip(".")


def default_opponent_name(opponent: str | None, command: str | None) -> str:
    """A telling player name for the opponent.

    A built-in bot is its name. For a command: the bot that ``acpc-lbr play``
    runs (``play always-fold`` gives ``always-fold``; ``play my_bot.py:strategy``
    gives ``my_bot``); else the script an interpreter runs (``python3 bot.py``
    gives ``bot``, ``python -m pkg.bot`` gives ``bot``); else the program's
    name. Never ``lbr`` (LBR's own name).

    >>> default_opponent_name(None, "acpc-lbr play sdk:examples/my_bot.py:strategy {host} {port}")
    'my_bot'
    >>> default_opponent_name(None, "python3 -m acpc_lbr.cli play call-raise {host} {port} --game leduc")
    'call-raise'
    >>> default_opponent_name(None, "python3 -u ./bots/tight.py {host} {port}")
    'tight'
    >>> default_opponent_name(None, "./mybot {host} {port}")
    'mybot'
    """
    if opponent is not None:
        return opponent
    try:
        words = shlex.split(command or "")
    except ValueError:
        words = []
    name = ""
    if "play" in words:  # acpc-lbr play BOT HOST PORT (or python -m acpc_lbr.cli play BOT ...)
        after = words[words.index("play") + 1 :]
        bot = after[0] if after else ""
        where, colon, _function = bot.removeprefix("sdk:").rpartition(":")
        name = Path(where).stem.rpartition(".")[2] if colon else bot
    elif words:
        rest = words
        while rest and _INTERPRETERS.fullmatch(Path(rest[0]).name):
            rest = rest[1:]
            while rest and rest[0].startswith("-"):
                flag = rest.pop(0)
                if flag == "-m" and rest:  # python -m package.module
                    rest = [rest[0].rpartition(".")[2]]
                    break
        name = Path(rest[0] if rest else words[0]).stem
    name = _clean_name(name)
    return name if name and name != "lbr" else "opponent"


@dataclass
class Evaluation:
    """What an evaluation measured.

    Attributes:
        config: the evaluation.
        estimates: LBR's estimators in chips (raw per hand, duplicate per pair).
        pairs: per deal, LBR's chips in each seating (``[half0, half1]``).
        results: each half's :class:`dealer.match.MatchResult`.
        timing: the LBR agents' time split and counts, summed over halves.
        relay: per half, the dealer's per-seat query counters.
        probe: what the probe adapters reported (``--probe``; also the document's ``probe``).
        inconsistencies: range inconsistencies seen by LBR.
        commands: the opponent command of each half as launched (``--opponent-cmd``).
        seconds: wall time.
        not_queryable: the opponent does not answer range queries.
        document: the results JSON document.
        io_estimates: the dealer's estimators with imaginary observations (None: ``--no-io``).
        breakdown: whose time it was (:func:`_time_breakdown`), seconds.
    """

    config: EvaluationConfig
    estimates: MatchEstimates = field(default_factory=MatchEstimates)
    pairs: dict[int, list[float | None]] = field(default_factory=dict)
    results: list[MatchResult] = field(default_factory=list)
    timing: LbrTiming = field(default_factory=LbrTiming)
    relay: list[list[QueryCounts]] = field(default_factory=list)
    inconsistencies: int = 0
    seconds: float = 0.0
    not_queryable: bool = False
    document: ResultsDocument | None = None
    probe: ProbeSection | None = None
    io_estimates: MatchEstimates | None = None
    breakdown: dict[str, float] = field(default_factory=dict)
    commands: list[str] = field(default_factory=list)

    @property
    def big_blind(self) -> int:
        return self.config.game.big_blind

    def mbb(self, name: str) -> tuple[float, float, int]:
        """(mean, 95% half-width, units) of one estimator in mbb/g."""
        stat = self.estimates.estimator(name)
        scale = 1000.0 / self.big_blind
        return stat.mean * scale, stat.half_width * scale, stat.n

    @property
    def lbr_queries(self) -> tuple[int, int]:
        """(range queries LBR sent, how many of them failed), both halves."""
        return self.timing.queries_sent, self.timing.query_errors

    @property
    def refusal(self) -> str | None:
        """Why the figures are not a bound on the opponent's exploitability (None: they are), with
        the last lines an ``--opponent-cmd`` program wrote when a match ended early: the cause is
        often there (a bot started for another game says so, then disconnects)."""
        reason = self._refusal()
        if reason is None or self.config.opponent_cmd is None or "it said: " in reason:
            return reason
        ended = next((k for k, r in enumerate(self.results) if r.cause is not None), None)
        said = None if ended is None else program_said(self.config.out / f"opponent{ended}.out")
        return reason if said is None else f"{reason}; the opponent program said: {said}"

    def _refusal(self) -> str | None:
        sent, failed = self.lbr_queries
        if sent and failed / sent > MAX_FAILED_QUERY_SHARE:
            reasons = self.timing.errors
            top = "; ".join(f"{count}x {reason}" for reason, count in
                            sorted(reasons.items(), key=lambda kv: -kv[1])[:3])
            return (f"{failed} of {sent} LBR range queries failed ({failed / sent:.1%}"
                    + (f": {top}" if top else "") + "); without the opponent's range LBR "
                    "is not LBR, so its win rate is no bound")
        probe = self.probe
        if probe is not None and probe["consistency"]["verdict"] == "inconsistent":
            check = probe["consistency"]
            return (f"the probed bot does not play as its probes answer (consistency check: "
                    f"z {check['largest_z']:.1f} over {check['decisions']} decisions, limit "
                    f"{check['threshold_z']:g}); its probed ranges are not its strategy")
        unplayed = [r for r in self.results if r.cause is not None and not r.hands_played]
        if unplayed and not any(r.hands_played for r in self.results):
            message = unplayed[0].message or "the match ended early"
            if self.config.opponent_cmd is not None and "its output" not in message:
                # A program that left (started for another game, say) tells why in its output.
                log = self.config.out / f"opponent{self.results.index(unplayed[0])}.out"
                message += f" (the opponent program's output: {log})"
            return f"no hand was played: {message}"
        if not self.timing.decisions and self.results:
            return (f"LBR took no active decision (rounds {self.config.rounds.text()}): it only "
                    "checked and called, so its win rate says nothing about the opponent")
        return None

    @property
    def exit_code(self) -> int:
        if self.not_queryable:
            return EXIT_NOT_QUERYABLE
        if any(r.exit_code != 0 for r in self.results):
            return EXIT_FAILED
        return EXIT_NO_BOUND if self.refusal is not None else EXIT_OK


class _Progress:
    """The evaluation's progress (acpc_lbr/runtime/progress.py): a bar on a TTY, else a line every ``every`` hands.

    ``sources()`` gives the running estimators (the dealer's, with IO) and the
    failed range queries so far; by default the evaluation's own raw and
    duplicate figures and no errors.
    """

    def __init__(self, stream: TextIO | None, total: int, every: int, shorter: str | None = None) -> None:
        self.bar = Progress(stream, total, every, shorter=shorter)
        self.tty = self.bar.tty
        self.sources: Callable[[Evaluation], tuple[MatchEstimates, int]] = lambda e: (e.estimates, 0)

    def hand(self, evaluation: Evaluation) -> None:
        if self.bar.stream is None:
            return
        estimates, errors = self.sources(evaluation)
        figures = {}
        for name, stat in estimates.stats().items():
            if name != "io_minus_raw" and stat.n > 1:
                mean, half = stat.live()  # Welford: cheap enough for every hand
                figures[name] = (mean, half, stat.n)
        self.bar.update(self.bar.done + 1, best_estimate(figures, evaluation.big_blind), errors)

    def close(self) -> None:
        self.bar.close()


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
    bar = _Progress(progress, config.hands * len(here) if seatings is not None else total,
                    progress_every or max(config.hands * halves // 10, 1), _shorter(config))
    config.out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    matches = [_seating(config, reactor, evaluation, bar, half, halves) for half in here]
    processes: list[_OpponentProcess] = []
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


def _interrupter(matches: Sequence[Match], processes: list[_OpponentProcess],
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
                   bar: _Progress, metrics: DealerMetrics | None, here: list[int],
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


async def _wind_down(reactor: EvaluateReactor, processes: list[_OpponentProcess],
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


def _seating(config: EvaluationConfig, reactor: EvaluateReactor, evaluation: Evaluation, bar: _Progress,
             half: int, halves: int) -> Match:
    """The match of one seating (LBR first in half 0, second in half 1), its hands counted."""
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
    match = Match(match_config, reactor, stderr=None)

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
                  evaluation: Evaluation, processes: list[_OpponentProcess],
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
            process.ended.addCallback(_exited_before_connecting, match, 1 - lbr_seat,
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


#: How much of an ``--opponent-cmd`` program's output (stdout and stderr) its log keeps.
OPPONENT_LOG_LIMIT = 16 << 20


class _OpponentProcess:
    """One external opponent process (``--opponent-cmd``), in a process group of its own.

    ``ended`` fires when the program itself exits, not when its output pipes
    close: a helper it forked may hold them open for as long as it likes, and
    the matches' end must not wait for it (:mod:`acpc_lbr.runtime.children`). Whatever
    is left of its group then is killed (:meth:`finish`).
    """

    def __init__(self, reactor: EvaluateReactor, argv: list[str], log_path: Path) -> None:
        self.ended: defer.Deferred[int] = defer.Deferred()
        self.command = shlex.join(argv)
        #: The match's seat the program plays (set by the caller).
        self.seat: Any = None
        self.log = open(log_path, "wb")  # noqa: SIM115 (closed when the process ends)
        self.logged = 0
        outer = self

        class _Watcher(protocol.ProcessProtocol):
            def outReceived(self, data: bytes) -> None:
                outer.write_log(data)

            def errReceived(self, data: bytes) -> None:
                outer.write_log(data)

            def processExited(self, reason: Failure) -> None:
                code = getattr(reason.value, "exitCode", None)
                if not outer.ended.called:
                    outer.ended.callback(int(code or 0))

            def processEnded(self, reason: Failure) -> None:
                outer.log.close()

        launched = children.grouped_argv(argv)
        self.transport = reactor.spawnProcess(_Watcher(), launched[0], launched, env=dict(os.environ))
        self.pid: int | None = self.transport.pid
        if self.pid is not None:
            children.started(self.pid)

    def write_log(self, data: bytes) -> None:
        """Keep the first :data:`OPPONENT_LOG_LIMIT` bytes of the program's output; drop the rest.

        Each piece is flushed to the file as it comes: an evaluation that is
        interrupted stops before the process ends (and the log is closed), and
        the program's output must be on disk all the same (the interpreter's
        shutdown collects nothing: ``acpc_lbr.cli.run``)."""
        room = OPPONENT_LOG_LIMIT - self.logged
        if room >= 0 and not self.log.closed:
            self.log.write(data[:room])
            if len(data) > room:
                self.log.write(b"\n# acpc-lbr: output beyond %d bytes dropped\n" % OPPONENT_LOG_LIMIT)
            self.log.flush()
        self.logged += len(data)

    async def finish(self, reactor: EvaluateReactor, grace: float) -> None:
        """Wait for the program to exit (its group is killed after ``grace`` seconds), then kill
        what is left of its group and stop reading its pipes."""
        if not self.ended.called:
            timer = reactor.callLater(grace, self._kill)
            await self.ended
            if timer.active():
                timer.cancel()
        self._kill()
        if self.pid is not None:
            children.STARTED.discard(self.pid)
        with contextlib.suppress(Exception):  # pipes already closed
            self.transport.loseConnection()

    def connected(self) -> bool:
        """Whether the program's seat ever connected (a seat never set: assumed so)."""
        return self.seat is None or bool(self.seat.connected)

    def stop(self) -> None:
        """Ask the program and its helpers to end (SIGTERM to its group)."""
        self._signal(signal.SIGTERM, "TERM")

    def _kill(self) -> None:
        self._signal(signal.SIGKILL, "KILL")

    def _signal(self, signum: int, name: str) -> None:
        if self.pid is not None and os.name == "posix":
            children.kill_group(self.pid, signum)
            return
        with contextlib.suppress(ProcessExitedAlready, OSError):
            self.transport.signalProcess(name)


def _exited_before_connecting(status: int, match: Match, seat: int, command: str, log: Path) -> int:
    """An opponent program that exits before its seat is connected ends the match now,
    saying so, with its last words (else the match would wait out its start timeout and blame LBR)."""
    if not match.seats[seat].connected:
        said = program_said(log)
        match.abort(MatchAborted(
            Cause.STARTUP,
            f"the opponent program exited (status {status}) before it connected: {command} "
            + (f"(it said: {said}; its output: {log})" if said else f"(its output: {log})"),
            seat, EXIT_FAILED,
        ))
    return status


#: How much of a program's output :func:`program_said` quotes: its last lines, each cut short.
SAID_LINES, SAID_LINE_CHARS = 3, 300


def program_said(log: Path) -> str | None:
    r"""The last lines a program wrote (its output file's last 8 KiB), joined by ' / ', each cut
    to :data:`SAID_LINE_CHARS` with unprintable characters as '?' (a terminal escape from a bot
    stays text); None when it wrote nothing or the file is unreadable.

    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile("wb", suffix=".out") as f:
    ...     _ = f.write(b"starting\nERROR: bad game \x1b[31m(kuhn)\nbye\n"); f.flush()
    ...     program_said(Path(f.name))
    "'starting' / 'ERROR: bad game ?[31m(kuhn)' / 'bye'"
    """
    try:
        with open(log, "rb") as file:
            file.seek(0, os.SEEK_END)
            file.seek(max(file.tell() - 8192, 0))
            text = file.read().decode("utf-8", errors="replace")
    except OSError:
        return None
    lines = [line.strip() for line in text.splitlines() if line.strip()][-SAID_LINES:]
    if not lines:
        return None
    clean = ["".join(c if c.isprintable() else "?" for c in line[:SAID_LINE_CHARS]) for line in lines]
    return " / ".join(repr(line) for line in clean)


def _spawn(reactor: EvaluateReactor, config: EvaluationConfig, port: int, half: int) -> _OpponentProcess:
    command = (config.opponent_cmd or "").format(
        host="127.0.0.1", port=port, stats=shlex.quote(str(config.out / f"probe{half}.json")))
    argv = shlex.split(command)
    executable = shutil.which(argv[0]) or argv[0]
    argv[0] = executable
    return _OpponentProcess(reactor, argv, config.out / f"opponent{half}.out")


def format_report(evaluation: Evaluation, logs_removed: bool = False) -> str:
    """The human-readable result (no bound when :attr:`Evaluation.refusal` says so); ``logs_removed``:
    the default log folder is removed after this (the last line says so)."""
    config = evaluation.config
    hands = sum(r.hands_played for r in evaluation.results)
    lines = [
        f"LBR ({config.bets.name}, rounds {config.rounds.text()}) vs {config.opponent_name} "
        f"in {config.game_arg}: {hands} hands"
        + (f" ({len(evaluation.pairs)} duplicate deals)" if config.duplicate else "")
        + f", seed {config.seed}"
    ]
    for mirror, command in enumerate(evaluation.commands):
        lines.append(f"  opponent {'mirror ' if mirror else ''}command: {command}")
    sent, failed = evaluation.lbr_queries
    share = f" ({failed / sent:.1%})" if sent else ""
    lines.append(f"LBR range queries: {sent} sent, {failed} failed{share}")
    lines.append("")
    refusal = evaluation.refusal
    if refusal is not None:
        lines.append(f"NO BOUND: {refusal}.")
    else:
        lines += _bound_lines(evaluation)
    if evaluation.document is not None:
        estimators = evaluation.document["estimators"]
        lies = proven_lies(evaluation.document["counts"])
        for honesty in (honesty_line(estimators, "io", lies), honesty_line(estimators, "aivat", lies)):
            if honesty is not None:
                lines.append(honesty)
    lines.append("")
    lines += _time_lines(evaluation, hands)
    lines.append(_counts_line(evaluation))
    if evaluation.inconsistencies:
        lines.append(f"  LBR range inconsistencies: {evaluation.inconsistencies} decisions where the opponent "
                     "played an action its answers gave probability 0 for every hand it could hold (LBR's "
                     "range then falls back to the prior)"
                     + ("; with --probe, an action rarer than 1/K often looks impossible"
                        if evaluation.probe is not None else ""))
    if evaluation.probe is not None:
        lines += _probe_lines(evaluation.probe)
    for result in evaluation.results:
        if result.exit_code != 0:
            lines.append(f"match {result.name} ended early: {result.message}")
            said = (program_said(config.out / f"opponent{evaluation.results.index(result)}.out")
                    if config.opponent_cmd is not None and refusal is None else None)  # (else quoted there)
            if said is not None:
                lines.append(f"  the opponent program's last lines: {said}")
    lines.append(f"logs: removed ({config.out}: a run with a bound and no --out; --keep-logs or --out DIR "
                 "keeps them)" if logs_removed else f"logs: {config.out}")
    return "\n".join(lines)


def _bound_lines(evaluation: Evaluation) -> list[str]:
    """The bound: each estimator's mean and 95% interval in mbb/g."""
    config = evaluation.config
    lines = ["lower bound on exploitability (LBR's win rate), mbb/g, 95% interval:"]
    names = ["raw", "duplicate"] if config.duplicate else ["raw"]
    for name in names:
        mean, half, n = evaluation.mbb(name)
        lines.append(bound_line(name, mean, half, f"{n} {'pairs' if name == 'duplicate' else 'hands'}"))
    lies = proven_lies(evaluation.document["counts"]) if evaluation.document is not None else 0
    if evaluation.io_estimates is not None and lies:
        lines.append(f"  {'io, aivat':<15} no bound: the opponent's answers were proven false {lies} times (range "
                     "inconsistencies, counts below): IO and AIVAT rest on them")
    elif evaluation.io_estimates is not None:
        scale = 1000.0 / config.game.big_blind
        for name in ("io", "duplicate_io", "aivat", "duplicate_aivat"):
            stat = evaluation.io_estimates.estimator(name)
            if stat.n and _flagged(evaluation, "io_minus_raw" if "io" in name else "aivat_minus_raw"):
                lines.append(f"  {name:<15} no bound: its honesty check is flagged (below)")
            elif stat.n:
                lines.append(bound_line(name, stat.mean * scale, stat.half_width * scale, str(stat.n)))
    else:
        lines.append(f"  {'io':<15} (off: --no-io)")
    return lines


def _flagged(evaluation: Evaluation, check: CheckName) -> bool:
    """Whether the honesty check ``check`` of the evaluation's document is flagged."""
    if evaluation.document is None:
        return False
    block = evaluation.document["estimators"].get(check)
    return block is not None and bool(block["flagged"])


def _time_lines(evaluation: Evaluation, hands: int) -> list[str]:
    """Where the wall time went (:func:`_time_breakdown`; :func:`acpc_lbr.app.summary.time_lines`)."""
    timings: dict[str, Any] = dict(evaluation.document["timings"]) if evaluation.document is not None else {}
    timings.update(evaluation.breakdown)
    if evaluation.breakdown:
        timings["lbr_query_wait_seconds"] = evaluation.timing.queries
    return time_lines(timings, evaluation.seconds, hands, evaluation.config.duplicate)


def _counts_line(evaluation: Evaluation) -> str:
    """The queries, showdowns, fallbacks and decisions counted."""
    counts: dict[str, Any] = dict(evaluation.document["counts"]) if evaluation.document is not None else {}
    counts.update(lbr_range_inconsistencies=evaluation.inconsistencies,
                  lbr_active_decisions=evaluation.timing.decisions)
    return counts_line(counts)


def _probe_lines(probe: ProbeSection) -> list[str]:
    """What the probe adapters did and their consistency check, one line per figure with its meaning."""
    check = probe["consistency"]
    mass, mean_mass = probe["smallest_answer_mass"], probe["mean_answer_mass"]
    lines = [
        f"probe adapter: K {probe['samples']}, N {probe['instances']}, {probe['probes']} probes "
        f"for {probe['queries']} queries ({probe['refused']} refused, {probe['copy_failures']} "
        "copy failures): each answer is a frequency over K plays of a copy of the bot",
        f"  standard error of an answer: largest {probe['largest_standard_error']:.4f}, "
        f"mean {probe['mean_standard_error']:.4f} (a frequency p from K probes is off by about "
        "sqrt(p(1-p)/K))",
    ]
    if mass is not None:
        lines.append(f"  smallest answer mass {mass:.4f}" + (f", mean {mean_mass:.4f}" if mean_mass is not None else "")
                     + ": the probability of the asked actions for one hand, summed; well below 1 when the "
                     "bot plays actions LBR did not ask about (no-limit raise sizes it randomises)")
    lines.append(f"  consistency check: {check['verdict']} ({check['decisions']} decisions of the "
                 f"playing copy against {check['probes']} probes, largest z {check['largest_z']:.2f}, "
                 f"limit {check['threshold_z']:g}): whether the bot plays as its probes answer")
    return lines


def _add_log_options(parser: argparse.ArgumentParser) -> None:
    """``--out`` and ``--keep-logs``: where the logs go, and whether the default folder stays (docs/lbr.md, Logs)."""
    parser.add_argument("--out", default=None, metavar="DIR",
                        help="directory for the logs, always kept (default: a new folder "
                        f"{tempfile.gettempdir()}/acpc-lbr-evaluate-*, removed after a run that gave a bound, "
                        "kept after any other; docs/lbr.md)")
    parser.add_argument("--keep-logs", dest="keep_logs", action="store_true",
                        help="keep the default log folder after a run that gave a bound too")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="acpc-lbr evaluate",
        description="Measure a lower bound on a bot's exploitability with Local Best Response.",
        epilog="With no options: LBR (fcpa, rounds 3-4) against call-raise in no-limit hold'em, "
               "2-3 minutes (README). See docs/lbr.md.",
    )
    who = parser.add_mutually_exclusive_group()
    who.add_argument("--opponent", default=None, metavar="BOT",
                     help=f"a built-in bot (default {DEFAULT_OPPONENT})")
    who.add_argument("--opponent-cmd", default=None, metavar="CMD",
                     help="a program to launch per half, e.g. './bot {host} {port}'")
    parser.add_argument("--probe", type=int, nargs="?", const=PROBE_SAMPLES, default=None,
                        metavar="K", help="the --opponent-cmd bot speaks only plain ACPC: answer "
                        "LBR's range queries by probing copies of it, K samples per hand "
                        f"(default {PROBE_SAMPLES}; acpc-lbr probe, docs/range-query.md)")
    parser.add_argument("--opponent-name", dest="opponent_name", default=None, metavar="NAME",
                        help="the opponent's player name in the logs, file names and metrics "
                        "(default: the bot's name, or the script/program of --opponent-cmd)")
    parser.add_argument("--game", default="nolimit", help="game name or .game file (default nolimit)")
    parser.add_argument("--bets", default="fcpa", help="LBR's raises: fc, fcpa, 56bets or e.g. 0.5,1,min,allin")
    parser.add_argument("--rounds", default=None,
                        help="LBR's active rounds, 1-based, within the game's rounds "
                        "(default: the game's last two, e.g. 3-4 in hold'em, 1-2 in Leduc)")
    parser.add_argument("--hands", type=int, default=DEFAULT_HANDS,
                        help=f"deals to play; duplicate plays each twice (default {DEFAULT_HANDS})")
    parser.add_argument("--seed", type=int, default=1, help="deal seed (default 1)")
    parser.add_argument("--no-duplicate", dest="duplicate", action="store_false",
                        help="play one seating only")
    parser.add_argument("--one-process", dest="one_process", action="store_true",
                        help="play both seatings in this process (by default the mirrored one "
                        "runs in a process of its own, so that the two use two cores)")
    _add_log_options(parser)
    parser.add_argument("--json", default=None, metavar="FILE", help="write the results document here")
    parser.add_argument("--report", default=None, metavar="FILE",
                        help="write the HTML report here at the end (needs matplotlib: "
                        "pip install 'acpc-lbr[report]')")
    parser.add_argument("--no-io", dest="io", action="store_false",
                        help="leave out the imaginary-observation estimators (on by default: the "
                        "dealer asks the opponent for its range after each showdown it did not see)")
    parser.add_argument("--io", dest="io", action="store_true", default=True,
                        help=argparse.SUPPRESS)  # the default now; kept for old command lines
    parser.add_argument("--aivat", action="store_true",
                        help="also compute the AIVAT estimators (uses the dealer's queries even with --no-io; "
                        "docs/results.md)")
    _add_time_limits(parser)
    parser.add_argument("--progress-every", type=int, default=0, metavar="N",
                        help="without a TTY, print a progress line every N hands (default: 10 lines)")
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    parser.add_argument("--metrics-port", dest="metrics_port", type=int, default=None, metavar="PORT",
                        help="serve Prometheus metrics on PORT while it runs (0: any free port; "
                        "the address is printed on stderr; docs/metrics.md)")
    parser.add_argument("--metrics-bind", dest="metrics_bind", default="127.0.0.1", metavar="ADDR",
                        help="interface of the metrics endpoint (default 127.0.0.1)")
    scaleout.add_arguments(parser)
    return parser


def _add_time_limits(parser: argparse.ArgumentParser) -> None:
    """The opponent's time limits: per query, per action, and for all its queries in a match."""
    parser.add_argument("--t_query", type=int, default=10_000, metavar="MS",
                        help="the opponent's time limit per range query (default 10000)")
    parser.add_argument("--t_response", type=int, default=600_000, metavar="MS",
                        help="the opponent's time limit per action, as the dealer's: a bot that "
                        "hangs ends the match after MS (default 600000)")
    parser.add_argument("--t_query_match", type=int, default=int(BotBudget.query_seconds_match * 1000),
                        metavar="MS", help="the most time the opponent may spend answering range "
                        "queries in one match, as the dealer's (default 3600000: an hour)")


def config_from_args(args: argparse.Namespace) -> EvaluationConfig:
    """Check the options.

    Raises:
        ValueError: an unusable option.
        ProtocolError: a --game that is no bundled game and no readable game file.
    """
    game = load_game(args.game)
    if game.num_players != 2:
        raise ValueError("LBR plays heads-up games only")
    opponent = args.opponent
    if opponent is None and args.opponent_cmd is None:
        opponent = DEFAULT_OPPONENT
    if opponent is not None and opponent not in BOTS:
        raise ValueError(f"unknown bot {opponent!r} (known: {', '.join(BOTS)}); "
                         "use --opponent-cmd for your own program")
    name = args.opponent_name
    if args.probe is not None:
        probed = _probe_command(args)
        if name is None:
            name = default_opponent_name(None, args.opponent_cmd)
        args.opponent_cmd = probed
    if args.opponent_cmd is not None:
        _check_opponent_cmd(args.opponent_cmd)
    if args.opponent_name is not None and (
            not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", args.opponent_name) or args.opponent_name == "lbr"):
        raise ValueError(f"--opponent-name {args.opponent_name!r}: use 1-64 letters, digits, "
                         "'-', '_' or '.', and not 'lbr' (LBR's own name)")
    if args.hands < 1:
        raise ValueError("--hands must be positive")
    if args.t_response < 1 or args.t_query_match < 1:
        raise ValueError("--t_response and --t_query_match must be positive (milliseconds)")
    if not 0 <= args.seed < 2**32:
        raise ValueError("--seed must be an unsigned 32-bit integer")
    for written in (args.json, args.report):  # found out now, not after the whole run
        folder = Path(written).parent if written else None
        if folder is not None and not folder.is_dir():
            raise ValueError(f"cannot write {written}: no such folder {str(folder)!r}")
    rounds = (ActiveRounds.parse(args.rounds, game) if args.rounds is not None
              else ActiveRounds.last_two(game))
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="acpc-lbr-evaluate-"))
    try:  # now, not as an internal error once the players are starting
        out.mkdir(parents=True, exist_ok=True)
    except OSError as problem:
        raise ValueError(f"--out {args.out}: cannot make the log folder: {problem.strerror}") from None
    return EvaluationConfig(
        game_arg=args.game, game=game, opponent=opponent, opponent_cmd=args.opponent_cmd,
        bets=BettingOptions.parse(args.bets), rounds=rounds,
        hands=args.hands, seed=args.seed, duplicate=args.duplicate, out=out,
        t_query_ms=args.t_query, t_response_ms=args.t_response, t_query_match_ms=args.t_query_match,
        io=args.io or args.aivat, aivat=args.aivat,
        metrics_port=args.metrics_port, metrics_bind=args.metrics_bind, name=name,
        probe=args.probe,
    )


def _probe_command(args: argparse.Namespace) -> str:
    """``--probe``: the probe adapter's command line, around the bot of ``--opponent-cmd``.

    Raises:
        ValueError: no ``--opponent-cmd``, K < 1, or a bot command that cannot run.
    """
    if args.opponent_cmd is None:
        raise ValueError("--probe measures a program given by --opponent-cmd")
    if args.probe < 1:
        raise ValueError("--probe K needs K >= 1")
    try:
        bot = shlex.split(args.opponent_cmd)
    except ValueError as error:
        raise ValueError(f"--opponent-cmd: cannot read {args.opponent_cmd!r}: {error}") from None
    if not bot or shutil.which(bot[0]) is None:  # the adapter's copies would all fail
        raise ValueError(f"--opponent-cmd: no such program {bot[0] if bot else ''!r}")
    # The bot's own {host} and {port} are the adapter's to fill in.
    inner = args.opponent_cmd.replace("{host}", "{{host}}").replace("{port}", "{{port}}")
    # The adapter refuses a query before the dealer's t_query does, with its reason.
    return (f"{shlex.quote(sys.executable)} -m acpc_lbr.cli probe {{host}} "
            f"{{port}} --game {shlex.quote(args.game)} --samples {args.probe} "
            f"--probe-timeout {args.t_query * 0.0009:g} --stats {{stats}} "
            f"-- {inner}")


def _check_opponent_cmd(command: str) -> None:
    """An ``--opponent-cmd`` names ``{port}`` and a program that exists.

    Raises:
        ValueError: it does not.
    """
    if "{port}" not in command:
        raise ValueError("--opponent-cmd needs {port} (and usually {host}) in it")
    try:
        words = shlex.split(command.format(host="127.0.0.1", port=0, stats="x"))
    except (ValueError, KeyError, IndexError) as error:
        raise ValueError(f"--opponent-cmd: cannot read {command!r}: {error}") from None
    if not words or shutil.which(words[0]) is None:
        raise ValueError(f"--opponent-cmd: no such program {words[0] if words else ''!r}")


def main(argv: Sequence[str]) -> int:
    """Run ``acpc-lbr evaluate``; returns the exit status."""
    if list(argv[:1]) == [seating.MIRROR_FLAG]:  # not a user's option: evaluate's own second process
        return mirror_main(list(argv[1:]))
    parser = _parser()
    try:
        args = parser.parse_args(list(argv))
    except SystemExit as exit_:
        return int(exit_.code or 0)
    try:
        config = config_from_args(args)
        if args.report:
            require_matplotlib()  # before hours of play, not after
    except (ValueError, ProtocolError, OSError, ImportError) as problem:  # ProtocolError: --game
        print(f"acpc-lbr evaluate: {problem}", file=sys.stderr)
        return EXIT_USAGE
    if scaleout.wanted(args) or args.dry_run:
        return scaleout.run(args, list(argv))

    evaluation = _play(config, args)
    if not isinstance(evaluation, Evaluation):
        return evaluation
    if evaluation.not_queryable:
        print(f"acpc-lbr evaluate: the opponent {config.opponent_name!r} does not answer range "
              "queries, which LBR needs: implement them (docs/range-query.md), or rerun with "
              "--probe to have copies of the bot probed for its ranges.", file=sys.stderr)
        return EXIT_NOT_QUERYABLE
    code = _write_results(evaluation, args)
    # The default folder (no --out) goes after a run that gave its bound; any other run keeps its
    # logs for the post-mortem, and says where (docs/lbr.md, "Logs").
    remove = args.out is None and not args.keep_logs and code == EXIT_OK
    print(format_report(evaluation, logs_removed=remove))
    if remove:
        shutil.rmtree(config.out, ignore_errors=True)
    return code


def _play(config: EvaluationConfig, args: argparse.Namespace) -> Evaluation | int:
    """Run the evaluation on the asyncio reactor; its :class:`Evaluation`, or the exit status of
    an evaluation that was interrupted or failed (said on stderr)."""
    install_asyncio_reactor()
    from twisted.internet import reactor as installed  # the one just installed

    reactor = cast(EvaluateReactor, installed)
    outcome: list[Evaluation | Failure] = []
    ended: list[str] = []  # "done" when go() stops the reactor; else a signal did

    async def go() -> None:
        try:
            outcome.append(await run_evaluation(
                config, reactor, None if args.quiet else sys.stderr, args.progress_every,
                split=not args.one_process))
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


def _write_results(evaluation: Evaluation, args: argparse.Namespace) -> int:
    """Write ``--json`` and ``--report`` when there is a bound (else say why not); the exit status."""
    refusal = evaluation.refusal
    if refusal is not None:
        print(f"acpc-lbr evaluate: no bound: {refusal}. The logs are in {evaluation.config.out}"
              + (f"; {args.json} was not written" if args.json else "")
              + (f"; {args.report} was not written" if args.report else "") + ".", file=sys.stderr)
        return evaluation.exit_code
    if args.json:
        try:
            Path(args.json).write_text(json.dumps(evaluation.document, indent=2) + "\n")
        except OSError as problem:
            print(f"acpc-lbr evaluate: cannot write {args.json}: {problem.strerror}", file=sys.stderr)
            return EXIT_USAGE
    if args.report and evaluation.document is not None:
        try:
            Path(args.report).write_text(render([evaluation.document]), encoding="utf-8")
        except (OSError, ValueError) as problem:
            print(f"acpc-lbr evaluate: cannot write the report: {problem}", file=sys.stderr)
            return EXIT_USAGE
    return evaluation.exit_code

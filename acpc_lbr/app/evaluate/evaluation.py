"""What an evaluation is (:class:`EvaluationConfig`) and what it measured (:class:`Evaluation`).

The settings and defaults of ``acpc-lbr evaluate`` (the command line's options
are in :mod:`acpc_lbr.cli.evaluate`), the opponent's name, the sections of the
results document that only evaluate writes, and the refusal rule: when the
figures are no bound on the opponent's exploitability.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from acpc_lbr.app.evaluate.processes import program_said
from acpc_lbr.estimators import MatchEstimates
from acpc_lbr.lbr import ActiveRounds, BettingOptions
from acpc_lbr.results import ResultsDocument
from acpc_lbr.runtime.exit_codes import (
    EXIT_FAILED,
    EXIT_NO_BOUND,
    EXIT_NOT_QUERYABLE,
    EXIT_OK,
)
from agents.lbr import LbrTiming
from dealer.budget import BotBudget
from dealer.match import MatchResult
from dealer.relay import QueryCounts
from protocol.gamedef import GameDef

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
        """(mean, 1.96 × standard error, units) of one estimator in mbb/g (the interval: ``estimator(name).interval()``)."""
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

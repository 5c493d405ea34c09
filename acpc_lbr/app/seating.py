"""The mirrored seating of a duplicate evaluation, in a process of its own.

``acpc-lbr evaluate`` plays a match and its mirror (the seats swapped, the
same deals). In one process both share one reactor and one core: the
dealer, LBR and the opponent take turns, and the wall time is the sum of
all their CPU time. The two seatings share nothing but the deal seed, so
the mirror runs here as an independent chain -- its own dealer, LBR agent,
opponent and results -- in a child process, and the two fill two cores.

The parent (:class:`SeatingProcess`) starts the child first, plays seating
0 itself, and merges what the child reports on its stdout, one line per
message:

* ``O [deal, chips, io_chips, aivat_chips, io_variance]``: a hand's outcome, as the
  child's results computed it (JSON floats round-trip exactly), fed to the
  parent's running estimators and progress;
* ``S {...}``: at the end, the mirror's :class:`SeatingSummary` (its
  match result, LBR's timing and counts, the dealer's counts).

Every figure is the one the single process computes: each seating's dealer,
bots and generators are seeded per seating, and the final estimators are
recomputed from the outcomes in canonical order. A child that ends without
its summary is a failed mirror match, named as such.

The child is ``acpc-lbr evaluate --mirrored-seating SPEC`` (SPEC: the
evaluation's settings as JSON; :func:`acpc_lbr.app.evaluate.run.mirror_main`).
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

from acpc_lbr.estimators import HandOutcome
from acpc_lbr.results import ResultsDocument
from acpc_lbr.runtime import children
from acpc_lbr.runtime.exit_codes import EXIT_INTERNAL
from acpc_lbr.runtime.stdout import drop_stdout
from agents.lbr import LbrTiming
from dealer.events import Cause
from dealer.match import MatchResult
from dealer.relay import QueryCounts

if TYPE_CHECKING:
    from twisted.internet import defer

#: The document counts that the dealer's results sum over the matches (the
#: rest come from the match results or the outcomes, which the parent has).
SUMMED_COUNTS = ("dealer_queries", "range_inconsistencies", "showdowns", "io_fallbacks",
                 "aivat_fallbacks", "queries", "query_errors")
#: How often the child passes its outcomes on (they are buffered in between).
FLUSH_SECONDS = 0.25
#: ``acpc-lbr evaluate MIRROR_FLAG SPEC`` is the child (acpc_lbr.app.evaluate.run.mirror_main).
MIRROR_FLAG = "--mirrored-seating"
#: The child's command line before its SPEC argument.
CHILD = [sys.executable, "-m", "acpc_lbr.cli", "evaluate", MIRROR_FLAG]


class MirrorSpec(TypedDict):
    """The settings the mirrored seating's process is started with (JSON on its command line)."""

    game: str
    opponent: str | None
    opponent_cmd: str | None
    bets: str
    rounds: str
    hands: int
    seed: int
    out: str
    t_query_ms: int
    t_response_ms: int
    t_query_match_ms: int
    io: bool
    aivat: bool
    name: str | None


@dataclass(frozen=True)
class SeatingSummary:
    """What the mirrored seating's process measured (see :func:`summary_of`)."""

    result: MatchResult
    timing: LbrTiming = field(default_factory=LbrTiming)
    inconsistencies: int = 0
    not_queryable: bool = False
    relay: list[QueryCounts] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    breakdown: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    query_seconds: float = 0.0
    cpu_seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        r = self.result
        return {
            "result": {"name": r.name, "names": list(r.names), "totals": r.totals,
                       "hand_values": [[hand, list(v)] for hand, v in r.hand_values.items()],
                       "completed": r.completed, "exit_code": r.exit_code,
                       "cause": None if r.cause is None else str(r.cause), "message": r.message,
                       "seat": r.seat, "corrections": r.corrections, "ignored": r.ignored},
            "timing": self.timing.to_dict(), "inconsistencies": self.inconsistencies,
            "not_queryable": self.not_queryable, "relay": [seat.to_dict() for seat in self.relay],
            "commands": self.commands,
            "breakdown": self.breakdown, "counts": self.counts, "query_seconds": self.query_seconds,
            "cpu_seconds": self.cpu_seconds,
        }

    @staticmethod
    def from_json(data: dict[str, Any]) -> SeatingSummary:
        r = data["result"]
        result = MatchResult(
            name=r["name"], names=tuple(r["names"]), totals=[float(t) for t in r["totals"]],
            hand_values={int(hand): tuple(float(x) for x in values) for hand, values in r["hand_values"]},
            completed=bool(r["completed"]), exit_code=int(r["exit_code"]),
            cause=None if r["cause"] is None else Cause(r["cause"]), message=r["message"],
            seat=r["seat"], corrections=list(r["corrections"]), ignored=list(r["ignored"]),
            finished=len(r["hand_values"]))
        return SeatingSummary(
            result, LbrTiming.from_dict(data["timing"]), int(data["inconsistencies"]),
            bool(data["not_queryable"]), [QueryCounts.from_dict(seat) for seat in data["relay"]],
            list(data["commands"]),
            {k: float(v) for k, v in data["breakdown"].items()},
            {k: int(v) for k, v in data["counts"].items()}, float(data["query_seconds"]),
            float(data["cpu_seconds"]))


def cpu_seconds() -> float:
    """This process's CPU time so far (user + system), seconds."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def add_counts(document: ResultsDocument, mirror: SeatingSummary) -> None:
    """Add the mirror's share to the parent's results document (one match's, until now)."""
    counts = document.setdefault("counts", {})
    for key in SUMMED_COUNTS:
        counts[key] = int(counts.get(key, 0)) + mirror.counts.get(key, 0)
    config = document.setdefault("config", {})
    config["duplicate"] = True
    config["matches"] = [*config.get("matches", []), mirror.result.name]
    timings = document.setdefault("timings", {})
    timings["query_seconds"] = float(timings.get("query_seconds", 0.0)) + mirror.query_seconds
    timings["mirror_cpu_seconds"] = mirror.cpu_seconds


class SeatingProcess:
    """The parent's side: starts the mirror's process and reads what it reports.

    Attributes:
        on_outcome: receives each of the mirror's hand outcomes as it arrives.
        finished: fires with the mirror's :class:`SeatingSummary` when the
            process has exited (a failed mirror match if it gave none).
    """

    def __init__(self, reactor: Any, spec: MirrorSpec, name: str, names: tuple[str, ...]) -> None:
        from twisted.internet import defer, protocol

        self.name = name  # the mirror match's, for a failed mirror
        self.names = names
        self.on_outcome: Callable[[HandOutcome], None] | None = None
        self.finished: defer.Deferred[SeatingSummary] = defer.Deferred()
        self.summary: SeatingSummary | None = None
        self.problem: str | None = None
        self._pieces: list[bytes] = []
        outer = self

        class _Reader(protocol.ProcessProtocol):
            def outReceived(self, data: bytes) -> None:
                outer._data(data)

            def processEnded(self, reason: Any) -> None:
                outer._ended(getattr(reason.value, "exitCode", None))

        argv = children.grouped_argv([*CHILD, json.dumps(spec)])  # dies with us (acpc_lbr/runtime/children.py)
        self.transport = reactor.spawnProcess(_Reader(), argv[0], argv, env=dict(os.environ),
                                              childFDs={0: "w", 1: "r", 2: 2})
        self.pid: int | None = self.transport.pid
        if self.pid is not None:
            children.started(self.pid)

    def _data(self, data: bytes) -> None:
        # The child is this program: its lines are trusted, whatever their length (the
        # summary grows with the hands); the pieces of a long line are joined once.
        if b"\n" not in data:
            self._pieces.append(data)
            return
        *lines, rest = b"".join([*self._pieces, data]).split(b"\n")
        self._pieces = [rest]
        for line in lines:
            self._line(line)

    def _line(self, line: bytes) -> None:
        kind, _, body = line.partition(b" ")
        try:
            if kind == b"O":
                deal, chips, io, aivat, io_variance = json.loads(body)
                if self.on_outcome is not None:
                    self.on_outcome(HandOutcome(int(deal), 1, float(chips),
                                                None if io is None else float(io),
                                                None if aivat is None else float(aivat),
                                                None if io_variance is None else float(io_variance)))
            elif kind == b"S":
                self.summary = SeatingSummary.from_json(json.loads(body))
        except (ValueError, TypeError, KeyError) as error:
            self.problem = f"unreadable report line ({error})"

    def _ended(self, status: int | None) -> None:
        rest = b"".join(self._pieces)
        self._pieces = []
        if rest:
            self._line(rest)
        summary = self.summary
        if summary is None or self.problem is not None:
            why = self.problem or "without its results"
            summary = SeatingSummary(MatchResult(
                name=self.name, names=self.names, totals=[0.0] * len(self.names),
                exit_code=EXIT_INTERNAL, cause=Cause.INTERNAL,
                message=f"the mirrored seating's process ended (status {status}) {why}"))
        if not self.finished.called:
            self.finished.callback(summary)

    def stop(self) -> None:
        """Ask the process to end (SIGTERM): it ends its match as an interrupted evaluate does."""
        import contextlib

        from twisted.internet.error import ProcessExitedAlready

        if self.pid is not None and os.name == "posix":
            children.kill_group(self.pid, signal.SIGTERM)
            return
        with contextlib.suppress(ProcessExitedAlready, OSError):
            self.transport.signalProcess("TERM")


def write_outcome(o: HandOutcome) -> None:
    """The child's line for one outcome (buffered; see :func:`write_summary`)."""
    _write(f"O {json.dumps([o.deal, o.chips, o.io_chips, o.aivat_chips, o.io_variance])}\n")


def write_summary(summary: SeatingSummary) -> None:
    """The child's last line."""
    _write(f"S {json.dumps(summary.to_json())}\n", flush=True)


def flush() -> None:
    """Pass the buffered outcomes on to the parent."""
    _write("", flush=True)


#: Set once the parent has stopped reading (it was interrupted and has said so itself).
parent_gone: list[bool] = []


def _write(line: str, flush: bool = False) -> None:
    """Write to the parent; once it has gone, drop the line, and every later one, quietly.

    A parent stopped by SIGINT/SIGTERM exits at once and closes the pipe while the
    child, stopped too, still ends its match: its last lines have no reader.
    """
    if parent_gone:
        return
    try:
        sys.stdout.write(line)
        if flush:
            sys.stdout.flush()
    except BrokenPipeError:
        parent_gone.append(True)
        drop_stdout()


def end_with_parent() -> None:
    """Receive SIGTERM when the parent dies (Linux), so that no mirror outlives its evaluation
    (it then ends its match as an interrupted evaluate does)."""
    children.die_with_parent(signal.SIGTERM)

"""Playing an event: seatings in flight, retries, disqualification, records.

:class:`Driver` walks the schedule in its canonical order and keeps up to
``concurrency`` seatings in flight on an executor (threads here, or Dask
workers). A seating that fails is played again from the same seed with fresh
processes, up to ``retries`` times; a match whose seating still fails is
given up and charged to the entrant at fault. An entrant with more given-up
matches than ``max_failures`` is disqualified: none of its matches is
started any more, and the rankings leave it out (whatever of its matches had
already been played), so the rankings do not depend on timing.

When every seating of a match has ended, the match is scored from its logs
and its record written (:mod:`~acpc_lbr.app.tournament.store`); the results are
computed from the records alone, in canonical order, so any concurrency, any
number of workers and any resume give the same document.
"""

from __future__ import annotations

import concurrent.futures
import copy
import math
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from acpc_lbr.app.tournament.event import Event, MatchJob, bot_seed
from acpc_lbr.app.tournament.scoring import LogMismatch, Moments, allin_values, read_seating, unit_values
from acpc_lbr.app.tournament.seating import Fault, SeatingJob, SeatingReport, play_seating
from acpc_lbr.app.tournament.store import EventStore, file_sha256


class Executor(Protocol):
    """What the driver needs of a pool: submit a seating, wait for some to end."""

    def submit(self, job: SeatingJob) -> Any: ...

    def wait_some(self, futures: list[Any]) -> list[tuple[Any, SeatingReport]]: ...

    def close(self) -> None: ...


class ThreadExecutor:
    """Seatings in threads of this process (each is processes; a thread only waits on them)."""

    def __init__(self, workers: int, run: Callable[[SeatingJob], SeatingReport] = play_seating) -> None:
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers)
        self.run = run

    def submit(self, job: SeatingJob) -> Any:
        return self.pool.submit(self.run, job)

    def wait_some(self, futures: list[Any]) -> list[tuple[Any, SeatingReport]]:
        done, _ = concurrent.futures.wait(futures, timeout=0.5,
                                          return_when=concurrent.futures.FIRST_COMPLETED)
        return [(f, _report_of(f)) for f in done]

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


def _report_of(future: concurrent.futures.Future[SeatingReport]) -> SeatingReport:
    """The seating's report; an error of the seating itself (a full disk, no more processes) is
    a failed seating charged to no one, not the end of the event."""
    try:
        return future.result()
    except Exception as error:  # noqa: BLE001 - whatever it was, the event goes on
        return SeatingReport(False, "", (Fault(None, "dealer", f"the seating failed: {type(error).__name__}: {error}"),))


@dataclass
class _Pending:
    """A match being played: its seatings' reports so far."""

    job: MatchJob
    reports: dict[int, SeatingReport] = field(default_factory=dict)
    attempts: dict[int, int] = field(default_factory=dict)
    faults: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Progress:
    """What the driver tells its watcher after each finished match."""

    done: int
    total: int
    record: dict[str, Any]
    elapsed: float


class Driver:
    """Plays an event's missing matches, writes their records and keeps their outcomes."""

    def __init__(self, event: Event, store: EventStore, executor: Executor, concurrency: int,
                 python: str = sys.executable) -> None:
        self.event = event
        self.store = store
        self.executor = executor
        self.concurrency = max(1, concurrency)
        self.python = python
        self._allin_match = -1  # the match index whose deals the all-in cache holds
        self.schedule = event.schedule()
        self.outcomes = Outcomes(event)
        assert all((job.match, job.pairing) == divmod(i, len(self.outcomes.pairings))
                   for i, job in enumerate(self.schedule)), "walk() reads the schedule match-major"
        self.stop = threading.Event()
        self.rescored: list[str] = []

    # -- the records -------------------------------------------------------------------

    def load(self) -> int:
        """Read the kept matches (checked against their logs); how many."""
        for job in self.schedule:
            record = self.store.read_record(job)
            if record is None:
                if self.store.record_path(job).exists():  # a log changed since, or a torn record
                    self.rescored.append(job.key)
                continue
            if record["status"] == "ok":
                try:
                    fresh = self.score(job, [Path(self.store.root / s["log"]) for s in record["seatings"]])
                except (LogMismatch, ValueError):
                    fresh = None
                if fresh is None or fresh != record["moments"]:
                    self.rescored.append(job.key)
                    self.store.forget(job)
                    continue
            self.outcomes.put(job, record)
        return len(self.outcomes)

    def walk(self) -> tuple[Outcomes, dict[str, str], list[MatchJob]]:
        """The schedule read in its canonical order: what counts, who is out, what is left to play.

        An entrant is disqualified at the match, in schedule order, that takes
        it past ``max_failures`` given-up matches; its later matches do not
        count, whether or not they were played (matches in flight when it was
        found out end and are recorded, but the order of the schedule decides,
        not the order in which matches finished). A match without a record
        counts as not failed, so the walk with every record in is the same
        for any concurrency, any number of workers, any resume.

        Returns:
            the outcomes that count (the others read as not played), the
            disqualified (name -> why), and the matches still to play (no
            record, no disqualified member).
        """
        limit = self.event.max_failures
        pairings = self.outcomes.pairings
        # The schedule is match-major (Event.schedule): position k * pairings + p is match k of pairing p.
        state = np.stack(self.outcomes.state, axis=1)
        given_up = {e.name: 0 for e in self.event.entrants}
        banned: dict[str, str] = {}
        banned_at: dict[str, int] = {}  # the schedule position of the match that took it past the limit
        # Only a failed match can disqualify: they alone are read one by one, in schedule order.
        for position in np.flatnonzero(state.ravel() == FAILED).tolist():
            job = self.schedule[position]
            if any(banned_at.get(name, position) < position for name in job.names):
                continue
            charged = self.outcomes.failed_by(job)
            if charged in given_up:
                given_up[charged] += 1
                if given_up[charged] > limit:
                    banned_at[charged] = position
                    banned[charged] = (f"{given_up[charged]} matches given up after {self.event.retries} "
                                       f"rerun(s) each (the limit is {limit})")
        positions = np.arange(state.size).reshape(state.shape)
        out = np.zeros(state.shape, dtype=np.bool_)  # after the disqualification of a member
        for p, names in enumerate(pairings):
            for name in set(names) & banned_at.keys():
                out[:, p] |= positions[:, p] > banned_at[name]
        counted = (state != NOT_PLAYED) & ~out
        todo = [self.schedule[i] for i in np.flatnonzero((state == NOT_PLAYED) & ~out).tolist()]
        return self.outcomes.only([counted[:, p] for p in range(len(pairings))]), banned, todo

    def counted(self) -> Outcomes:
        """The outcomes the results are built from (see :meth:`walk`)."""
        return self.walk()[0]

    def disqualified(self) -> dict[str, str]:
        return self.walk()[1]

    # -- playing -----------------------------------------------------------------------

    def seating_job(self, job: MatchJob, seating: int, attempt: int) -> SeatingJob:
        order = job.seatings()[seating]
        game_file = str(self.store.game_file.resolve())
        commands = tuple(
            tuple(self.event.entrant(name).argv(self.python, self.event.game_arg, game_file, "127.0.0.1",
                                                "{port}", bot_seed(self.event.seed, job.match, seating, name),
                                                seat))
            for seat, name in enumerate(order))
        return SeatingJob(str(self.store.seating_folder(job, seating, attempt)), self.event.game_arg,
                          order, commands, job.hands, job.seed,
                          tuple(self.event.limits.dealer_options()), self.python)

    def run(self, watch: Callable[[Progress], None] | None = None) -> None:
        """Play every match without a record; returns when all are decided or ``stop`` is set."""
        started = time.monotonic()
        total = len(self.schedule)
        pending: dict[str, _Pending] = {}
        queue: list[tuple[MatchJob, int, int]] = []  # (match, seating, attempt) waiting for a slot
        in_flight: dict[Any, tuple[str, int, int]] = {}
        # Matches whose seatings all ended, scored once the slots are full again: scoring reads
        # and values every hand of the logs, and meanwhile the next seatings play.
        ready: list[_Pending] = []
        while not self.stop.is_set():
            todo: list[MatchJob] | None = None  # read from the records only when a slot is free
            while len(in_flight) < self.concurrency:
                if not queue:
                    if todo is None:
                        todo = [j for j in self.walk()[2] if j.key not in pending]
                    if not todo:
                        break
                    job = todo.pop(0)
                    pending[job.key] = _Pending(job)
                    queue.extend((job, s, 0) for s in range(len(job.seatings())))
                job, seating, attempt = queue.pop(0)
                future = self.executor.submit(self.seating_job(job, seating, attempt))
                in_flight[future] = (job.key, seating, attempt)
            self._finish_ready(ready, pending, watch, total, started)
            if not in_flight:
                break
            for future, report in self.executor.wait_some(list(in_flight)):
                key, seating, attempt = in_flight.pop(future)
                if self.stop.is_set():
                    continue
                match = pending[key]
                if not report.folder:  # a seating that failed before it said where it played
                    report = replace(report, folder=str(self.store.seating_folder(match.job, seating, attempt)))
                match.attempts[seating] = attempt + 1
                match.faults.extend(_fault_dict(f, seating, attempt) for f in report.faults)
                if not report.ok and attempt < self.event.retries:
                    queue.insert(0, (match.job, seating, attempt + 1))
                    continue
                match.reports[seating] = report
                if len(match.reports) == len(match.job.seatings()):
                    ready.append(match)
        self._finish_ready(ready, pending, watch, total, started)  # ended before a stop: kept

    def _finish_ready(self, ready: list[_Pending], pending: dict[str, _Pending],
                      watch: Callable[[Progress], None] | None, total: int, started: float) -> None:
        """Score and record the matches of ``ready`` (emptied), in the order they ended."""
        for match in ready:
            record = self.finish(match)
            del pending[match.job.key]
            if watch is not None:
                watch(Progress(len(self.outcomes), total, record, time.monotonic() - started))
        ready.clear()

    def finish(self, match: _Pending) -> dict[str, Any]:
        """Score a match whose seatings all ended, and write its record."""
        job = match.job
        seatings = [match.reports[s] for s in range(len(job.seatings()))]
        logs = [Path(r.folder) / "match.log" for r in seatings]
        record: dict[str, Any] = {
            "key": job.key, "pairing": job.pairing, "names": list(job.names), "match": job.match,
            "seed": job.seed, "hands": job.hands, "attempts": [match.attempts[s] for s in range(len(seatings))],
            # In seating order, not in the order the seatings happened to end.
            "faults": sorted(match.faults, key=lambda f: (f["seating"], f["attempt"])),
            "seatings": [{"order": list(order), "log": str(log.relative_to(self.store.root)),
                          "log_sha256": file_sha256(log) if log.exists() else None}
                         for order, log in zip(job.seatings(), logs)],
        }
        failed = [r for r in seatings if not r.ok]
        if not failed:
            try:
                record["moments"] = self.score(job, logs)
                record["status"] = "ok"
            except (LogMismatch, ValueError) as error:  # a log that cannot be scored: no result from it
                record["status"] = "failed"
                record["charged_to"] = None
                record["reason"] = f"the logs cannot be scored: {error}"
        else:
            fatal = [f for r in failed for f in r.faults if f.fatal]
            blamed = next((f for f in fatal if f.entrant is not None), fatal[0] if fatal else None)
            record["status"] = "failed"
            record["charged_to"] = blamed.entrant if blamed else None
            record["reason"] = blamed.message if blamed else "the match did not finish"
            record["kind"] = blamed.kind if blamed else "dealer"
        self.store.write_record(job, record)
        self.outcomes.put(job, record)
        return record

    def score(self, job: MatchJob, logs: list[Path]) -> dict[str, Any]:
        """Each member's unit moments over the match (raw and all-in), from its seatings' logs."""
        game = self.event.game
        # The all-in cache serves the pairings of match k (common seeds: the same deals, and
        # the schedule plays them one after another); emptied when k changes, so that it does
        # not grow with the matches played.
        if job.match != self._allin_match:
            allin_values.cache_clear()
            self._allin_match = job.match
        values = [read_seating(log, game, order, job.names, job.hands)
                  for log, order in zip(logs, job.seatings())]
        raw, allin = unit_values(values)
        return {
            "raw": {name: Moments.of(raw[:, i]).to_dict() for i, name in enumerate(job.names)},
            "allin": {name: Moments.of(allin[:, i]).to_dict() for i, name in enumerate(job.names)},
            "allin_hands": sum(v.allin_hands for v in values),
        }


#: The two measures a match is scored by (scoring.py): raw chips and all-in expectation.
MEASURES = ("raw", "allin")
#: A match's state in :class:`Outcomes`.
NOT_PLAYED, OK, FAILED = 0, 1, 2
#: The keys of a fault in the document, in its schema's order (docs/tournament.md).
FAULT_KEYS = ("entrant", "kind", "message", "fatal", "count", "seating", "attempt")


class Outcomes:
    """What the results need of every match, in arrays sized for the whole schedule.

    Each pairing has, per match, its state, the entrant a failed match is
    charged to, and each member's moments (n, mean, m2) under each measure,
    in numpy arrays allocated when the event starts and filled as matches
    finish. The rest of a record (log paths, hashes, attempts) stays on disk,
    and faults are kept only for the matches that had some (the document lists
    them), so the driver's memory does not grow with the matches played.
    """

    def __init__(self, event: Event) -> None:
        self.pairings = event.pairings()
        self.entrants = [e.name for e in event.entrants]
        matches = event.matches
        self.state = [np.zeros(matches, dtype=np.int8) for _ in self.pairings]
        self.charged = [np.full(matches, -1, dtype=np.int32) for _ in self.pairings]
        shapes = [(matches, len(names), len(MEASURES)) for names in self.pairings]
        self.n = [np.zeros(shape, dtype=np.int64) for shape in shapes]
        self.mean = [np.zeros(shape) for shape in shapes]
        self.m2 = [np.zeros(shape) for shape in shapes]
        self.m3 = [np.zeros(shape) for shape in shapes]
        self.m4 = [np.zeros(shape) for shape in shapes]
        self.allin = [np.zeros(matches, dtype=np.int64) for _ in self.pairings]
        self.faults: dict[tuple[int, int], tuple[dict[str, Any], ...]] = {}

    def put(self, job: MatchJob, record: dict[str, Any]) -> None:
        """Keep what the results need of a match's record (as written to disk or read back)."""
        p, k = job.pairing, job.match
        self.state[p][k] = OK if record["status"] == "ok" else FAILED
        charged = record.get("charged_to") if record["status"] == "failed" else None
        self.charged[p][k] = self.entrants.index(charged) if charged in self.entrants else -1
        if record["status"] == "ok":
            moments = record["moments"]
            for i, name in enumerate(job.names):
                for j, measure in enumerate(MEASURES):
                    m = moments[measure][name]
                    self.n[p][k, i, j], self.mean[p][k, i, j], self.m2[p][k, i, j] = m["n"], m["mean"], m["m2"]
                    # (a record written before the third and fourth sums: unknown, the units taken as unskewed)
                    self.m3[p][k, i, j], self.m4[p][k, i, j] = m.get("m3", math.nan), m.get("m4", math.nan)
            self.allin[p][k] = moments.get("allin_hands", 0)
        # In the schema's order, whether the record was just written or read back (sorted keys).
        faults = tuple({**{key: f[key] for key in FAULT_KEYS if key in f}, **f} for f in record.get("faults", ()))
        if faults:
            self.faults[p, k] = faults
        else:
            self.faults.pop((p, k), None)

    def has(self, job: MatchJob) -> bool:
        return bool(self.state[job.pairing][job.match] != NOT_PLAYED)

    def failed_by(self, job: MatchJob) -> str | None:
        """The entrant a failed match is charged to (None: an ok match, or charged to no one)."""
        p, k = job.pairing, job.match
        index = int(self.charged[p][k]) if self.state[p][k] == FAILED else -1
        return self.entrants[index] if index >= 0 else None

    def __len__(self) -> int:
        return sum(int(np.count_nonzero(s)) for s in self.state)

    def count(self, state: int) -> int:
        return sum(int(np.count_nonzero(s == state)) for s in self.state)

    def only(self, counted: list[npt.NDArray[np.bool_]]) -> Outcomes:
        """The same outcomes with every match outside ``counted`` (a mask per pairing) not played."""
        view = copy.copy(self)
        view.state = [np.where(mask, state, NOT_PLAYED).astype(np.int8) for state, mask in zip(self.state, counted)]
        return view

    def moments(self, pairing: int, match: int, member: int, measure: str) -> Moments:
        j = MEASURES.index(measure)
        return Moments(int(self.n[pairing][match, member, j]), float(self.mean[pairing][match, member, j]),
                       float(self.m2[pairing][match, member, j]), float(self.m3[pairing][match, member, j]),
                       float(self.m4[pairing][match, member, j]))

    def pooled(self, pairing: int, measure: str) -> dict[str, Moments]:
        """Members' moments over a pairing's played matches, merged in match order."""
        names = self.pairings[pairing]
        total = {name: Moments() for name in names}
        for k in np.flatnonzero(self.state[pairing] == OK).tolist():
            for i, name in enumerate(names):
                total[name] = total[name].merge(self.moments(pairing, k, i, measure))
        return total

    def allin_hands(self) -> int:
        return sum(int(a[s == OK].sum()) for a, s in zip(self.allin, self.state))


def _fault_dict(fault: Fault, seating: int, attempt: int) -> dict[str, Any]:
    data = asdict(fault)
    data.update(seating=seating, attempt=attempt)
    return data


def finite(value: float) -> float | None:
    """JSON has no NaN: None instead."""
    return None if math.isnan(value) or math.isinf(value) else value

"""Running a tournament for the command line: the driver with its pool, progress, metrics and signals.

:func:`play` runs the event's matches (:class:`~acpc_lbr.app.tournament.driver.Driver`)
on threads or a Dask cluster (:func:`executor_for`), prints a progress line
after each match, serves the event's metrics, stops on SIGINT, SIGTERM or SIGHUP so that
the same command resumes, adds each entrant's LBR bound on request, and writes
the results (JSON and CSV). The options are read by
:mod:`acpc_lbr.cli.tournament`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from acpc_lbr.app.tournament import seating
from acpc_lbr.app.tournament.driver import Driver, Progress, ThreadExecutor
from acpc_lbr.app.tournament.event import Event, EventError
from acpc_lbr.app.tournament.report import build_document, dumps, format_tables, leader, to_csv
from acpc_lbr.app.tournament.seating import SeatingJob, SeatingReport, play_seating
from acpc_lbr.app.tournament.store import EventStore, write_atomically
from acpc_lbr.runtime.exit_codes import EXIT_BOT_FAILURE, EXIT_FAILED, EXIT_OK, EXIT_USAGE
from protocol.gamedef import bundled_game_text, format_gamedef

PROG = "acpc-lbr tournament"
#: Seconds between two computations of the standings for the progress line and the metrics.
REFRESH_SECONDS = 2.0


def game_text(event: Event) -> str:
    path = Path(event.game_arg)
    if path.is_file():
        return path.read_text()
    try:
        return bundled_game_text(event.game_arg)
    except Exception:  # noqa: BLE001 - any game the event loaded can be written back
        return format_gamedef(event.game)


class _Watcher:
    """Progress lines and live metrics after each finished match."""

    def __init__(self, event: Event, driver: Driver, quiet: bool, metrics: Any) -> None:
        self.event = event
        self.driver = driver
        self.quiet = quiet
        self.metrics = metrics
        self.kept = len(driver.outcomes)
        self.leader = "-"
        self.refreshed = -math.inf

    def __call__(self, progress: Progress) -> None:
        record = progress.record
        if self.quiet and self.metrics is None:
            return
        # The standings read every record: at most every REFRESH seconds, so that
        # a long event's driver does not spend its time on its own progress line.
        if time.monotonic() - self.refreshed >= REFRESH_SECONDS or progress.done == progress.total:
            self.refreshed = time.monotonic()
            document = build_document(_no_bootstrap(self.event), *self.driver.walk()[:2])
            self.leader = leader(document)
            if self.metrics is not None:
                self.metrics.update(document)
        if self.quiet:
            return
        played = progress.done - self.kept
        remaining = progress.total - progress.done
        eta = progress.elapsed / played * remaining if played else 0.0
        status = "ok" if record["status"] == "ok" else f"FAILED ({record.get('charged_to') or 'dealer'}: " \
            f"{record.get('reason', '')[:160]})"
        print(f"[{progress.done}/{progress.total}] {record['key']} {status}; ETA {_clock(eta)}; "
              f"leader {self.leader}", file=sys.stderr, flush=True)


def _no_bootstrap(event: Event) -> Event:
    return replace(event, resamples=0)


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class _Metrics:
    """Prometheus series of the event, labelled by entrant."""

    def __init__(self, port: int, bind: str, event: Event) -> None:
        from prometheus_client import CollectorRegistry, Gauge, start_http_server

        self.registry = CollectorRegistry()
        self.matches = Gauge("acpc_tournament_matches", "matches of the event by state", ["state"],
                             registry=self.registry)
        self.bankroll = Gauge("acpc_tournament_bankroll_mbb_per_game", "total bankroll so far (mbb/g)",
                              ["entrant"], registry=self.registry)
        self.faults = Gauge("acpc_tournament_faults", "faults so far by kind", ["entrant", "kind"],
                            registry=self.registry)
        self.disqualified = Gauge("acpc_tournament_disqualified", "1 when disqualified", ["entrant"],
                                  registry=self.registry)
        server, _thread = start_http_server(port, addr=bind, registry=self.registry)
        self.port = server.server_port
        self.matches.labels("total").set(len(event.schedule()))
        print(f"METRICS http://{bind}:{self.port}/metrics", file=sys.stderr, flush=True)

    def update(self, document: dict[str, Any]) -> None:
        self.matches.labels("played").set(document["matches"]["played"])
        self.matches.labels("failed").set(document["matches"]["failed"])
        for entry in document["rankings"]["bankroll"]:
            if entry.get("mbb_per_game") is not None:
                self.bankroll.labels(entry["name"]).set(entry["mbb_per_game"])
        for entrant in document["entrants"]:
            self.disqualified.labels(entrant["name"]).set(1 if entrant["disqualified"] else 0)
            for kind, count in entrant["faults"].items():
                self.faults.labels(entrant["name"], kind).set(count)


@contextlib.contextmanager
def _signals(driver: Driver) -> Iterator[list[int]]:
    """SIGINT, SIGTERM and SIGHUP (a closed terminal) stop the event: matches in flight end, their
    processes die, nothing of them is recorded."""
    caught: list[int] = []

    def stop(signum: int, _frame: object) -> None:
        caught.append(signum)
        driver.stop.set()
        seating.STOP.set()

    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        yield caught
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def executor_for(args: argparse.Namespace, concurrency: int) -> tuple[Any, int, contextlib.ExitStack]:
    """The pool the seatings run on: threads here, or a Dask cluster."""
    stack = contextlib.ExitStack()
    if not (args.workers or args.scheduler or args.cluster):
        executor = ThreadExecutor(concurrency)
        stack.callback(executor.close)
        return executor, concurrency, stack
    try:
        from acpc_lbr.app.scaleout import dask_client  # lazy: the optional dask extra
        client, workers = stack.enter_context(dask_client(args))
    except ImportError:
        raise EventError("Dask is not installed: pip install -e '.[dask]'") from None
    return _DaskExecutor(client), max(1, workers or concurrency), stack


class _DaskExecutor:
    """Seatings as Dask tasks (a seating is processes; the worker only waits on them)."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def submit(self, job: SeatingJob) -> Any:
        return self.client.submit(play_seating, job, pure=False)

    def wait_some(self, futures: list[Any]) -> list[tuple[Any, SeatingReport]]:
        from distributed import wait  # lazy: the optional dask extra

        try:
            done, _ = wait(futures, timeout=0.5, return_when="FIRST_COMPLETED")
        except TimeoutError:  # distributed's wait says "none yet" by raising
            return []
        results = []
        for future in done:
            try:
                results.append((future, future.result()))
            except Exception as error:  # noqa: BLE001 - a dead worker: the seating failed, not the event
                results.append((future, SeatingReport(False, "", (seating.Fault(
                    None, "dealer", f"the Dask worker failed: {type(error).__name__}: {error}"),))))
        return results

    def close(self) -> None:
        pass


def play(args: argparse.Namespace, event: Event, store: EventStore, executor: Any, slots: int,
          resuming: bool, json_path: Path, out: Path) -> int:
    """Play the event's matches not yet recorded in ``store``, then write and print the results;
    the exit status. ``args`` are the command line's options (:mod:`acpc_lbr.cli.tournament`)."""
    # Processes a killed driver of this event left running (their matches are replayed).
    seating.kill_tagged(seating.seating_tag(out))
    reaper = seating.start_reaper(seating.seating_tag(out))  # for a driver killed with SIGKILL
    try:
        return _play(args, event, store, executor, slots, resuming, json_path, out)
    finally:
        seating.stop_reaper(reaper)


def _play(args: argparse.Namespace, event: Event, store: EventStore, executor: Any, slots: int,
          resuming: bool, json_path: Path, out: Path) -> int:
    driver = Driver(event, store, executor, slots)
    kept = driver.load()
    total = len(event.schedule())
    if not args.quiet:
        seatings = len(event.schedule()[0].seatings())
        print(f"{PROG}: {len(event.entrants)} entrants, {len(event.pairings())} pairings x {event.matches} "
              f"duplicate matches of {event.hands} deals ({seatings} seatings each) in {event.game_arg}; "
              f"seed {event.seed}; {slots} at once; {out}", file=sys.stderr)
        if resuming:
            print(f"resuming: {kept} of {total} matches kept (checked against their logs)"
                  + (f"; {len(driver.rescored)} did not match their logs and are played again"
                     if driver.rescored else ""), file=sys.stderr)
    try:
        metrics = _Metrics(args.metrics_port, args.metrics_bind, event) if args.metrics_port is not None else None
    except OSError as error:
        print(f"{PROG}: cannot serve metrics on {args.metrics_bind}:{args.metrics_port}: "
              f"{error.strerror or error}", file=sys.stderr)
        return EXIT_USAGE
    started = time.monotonic()
    with _signals(driver) as caught:
        try:
            driver.run(_Watcher(event, driver, args.quiet, metrics))
        except OSError as error:  # a record could not be written: a full disk, a lost mount
            seating.STOP.set()
            print(f"{PROG}: cannot keep the records in {out}: {error.strerror or error}; {len(driver.outcomes)} "
                  f"of {total} matches kept; run the same command to resume", file=sys.stderr)
            return EXIT_FAILED
    if caught:
        with contextlib.suppress(OSError):  # after SIGHUP the terminal may be gone
            print(f"{PROG}: stopped by {signal.Signals(caught[0]).name}: {len(driver.outcomes)} of {total} "
                  f"matches kept in {out}; run the same command to resume", file=sys.stderr)
        return EXIT_FAILED
    lbr = _lbr_column(args, event, out) if args.lbr else None
    counted, disqualified, _ = driver.walk()
    document = build_document(event, counted, disqualified, lbr)
    for path, text in ((json_path, dumps(document)), (out / "crosstable.csv", to_csv(document))):
        try:
            write_atomically(path, text)
        except OSError as error:
            print(f"{PROG}: cannot write the results to {path}: {error.strerror or error}; the matches are "
                  f"kept in {out}: run the same command to write them", file=sys.stderr)
            return EXIT_FAILED
    if metrics is not None:
        metrics.update(document)
    if not args.quiet:
        print(format_tables(document), end="", file=sys.stdout)
        print(f"{len(driver.outcomes)} matches in {time.monotonic() - started:.1f} s; results: {json_path}, "
              f"{out / 'crosstable.csv'}", file=sys.stderr)
    given_up = document["matches"]["failed"]
    if given_up or document["disqualified"]:
        print(f"{PROG}: {given_up} match(es) given up, {len(document['disqualified'])} entrant(s) "
              "disqualified (see faults in the results)", file=sys.stderr)
        return EXIT_BOT_FAILURE
    return EXIT_OK


def _lbr_column(args: argparse.Namespace, event: Event, out: Path) -> dict[str, Any]:
    """Each entrant's LBR lower bound from ``acpc-lbr evaluate`` (or why there is none)."""
    column: dict[str, Any] = {}
    folder = out / "lbr"
    folder.mkdir(exist_ok=True)
    for entrant in event.entrants:
        result = folder / f"{entrant.name}.json"
        command = [sys.executable, "-m", "acpc_lbr.cli", "evaluate", "--game", event.game_arg,
                   "--hands", str(args.lbr_hands), "--seed", str(event.seed), "--quiet",
                   "--json", str(result), "--out", str(folder / entrant.name),
                   "--opponent-name", entrant.name]
        if entrant.kind == "builtin":
            command += ["--opponent", entrant.spec]
        elif entrant.kind == "sdk":
            command += ["--opponent-cmd", shlex.join([sys.executable, "-m", "acpc_lbr.cli", "play", entrant.spec,
                                                      "--game", event.game_arg]) + " {host} {port}"]
        else:
            template = entrant.spec.replace("{game}", str((out / "event.game").resolve())).replace(
                "{seed}", str(event.seed)).replace("{seat}", "0")
            command += ["--opponent-cmd", template]
            if args.lbr_probe:
                command += ["--probe", str(args.lbr_probe)]
        if not args.quiet:
            print(f"LBR against {entrant.name} ({args.lbr_hands} deals)...", file=sys.stderr, flush=True)
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        column[entrant.name] = _lbr_figures(result, done)
    return column


def _lbr_figures(result: Path, done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    if done.returncode != 0 or not result.exists():
        tail = [line for line in done.stderr.strip().splitlines() if line.strip()][-1:]
        return {"bound": None, "reason": f"evaluate exited {done.returncode}: {' '.join(tail) or 'no message'}"}
    document = json.loads(result.read_text())
    estimators = document.get("estimators", {})
    for name in ("duplicate_io", "duplicate", "raw"):
        figures = estimators.get(name)
        if figures and figures.get("mbb_per_game", {}).get("mean") is not None:
            figure = figures["mbb_per_game"]
            return {"bound": {"estimator": name, "mean": figure["mean"], "half_width_95": figure["half_width_95"],
                              "low_95": figure.get("low_95"), "high_95": figure.get("high_95")},
                    "hands": figure.get("n")}
    return {"bound": None, "reason": "the evaluation gave no estimate"}


"""``acpc-lbr tournament``: bots against bots, in duplicate, with common seeds.

Usage::

    acpc-lbr tournament --game G --entrant NAME=SPEC [--entrant ...] --matches M --hands H
                        --seed S [--format round-robin|gauntlet] [--concurrency K] --out DIR
                        [--json FILE] [--event FILE.toml]

See docs/tournament.md. The pieces live in :mod:`acpc_lbr.tournament`; this
module reads the options, runs the driver, prints progress and the tables,
and writes the JSON and CSV.
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
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from acpc_lbr.exit_codes import EXIT_BOT_FAILURE, EXIT_FAILED, EXIT_OK, EXIT_USAGE
from acpc_lbr.tournament import seating
from acpc_lbr.tournament.driver import Driver, Progress, ThreadExecutor
from acpc_lbr.tournament.event import Event, EventError, Limits, build_event, read_toml
from acpc_lbr.tournament.report import build_document, dumps, format_tables, leader, to_csv
from acpc_lbr.tournament.seating import SeatingJob, SeatingReport, play_seating
from acpc_lbr.tournament.store import EventStore, write_atomically
from protocol.gamedef import bundled_game_text, format_gamedef

PROG = "acpc-lbr tournament"
#: Seconds between two computations of the standings for the progress line and the metrics.
REFRESH_SECONDS = 2.0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Play a tournament of ACPC bots: duplicate matches with common seeds, "
        "results in mbb/g with 95%% intervals, total bankroll and instant run-off rankings.")
    parser.add_argument("--event", type=Path, default=None, metavar="FILE.toml",
                        help="read the event from a TOML file (options given here override it)")
    parser.add_argument("--game", default=None, help="a bundled game (acpc-lbr games) or a game file")
    parser.add_argument("--entrant", action="append", default=None, metavar="NAME=SPEC",
                        help="a built-in bot, FILE.py:FUNCTION, or a command with {host} {port} "
                        "({game} {seed} {seat} too); repeat per entrant")
    parser.add_argument("--matches", type=int, default=None, metavar="M",
                        help="duplicate matches per pairing (default 10)")
    parser.add_argument("--hands", type=int, default=None, metavar="H", help="deals per match (default 1000)")
    parser.add_argument("--seed", type=int, default=None, metavar="S", help="the event's seed (default 1)")
    parser.add_argument("--format", choices=["round-robin", "gauntlet"], default=None,
                        help="every pair (or triple) meets, or one candidate meets the rest")
    parser.add_argument("--candidate", default=None, metavar="NAME",
                        help="the gauntlet's candidate (default: the first entrant)")
    parser.add_argument("--players", type=int, default=None, metavar="N",
                        help="seats per match; must equal the game's players (a check)")
    parser.add_argument("--concurrency", type=int, default=None, metavar="K",
                        help="seatings played at once on this machine (default 1)")
    parser.add_argument("--out", type=Path, default=None, metavar="DIR",
                        help="the event's directory: logs, records; run again to resume")
    parser.add_argument("--json", type=Path, default=None, metavar="FILE",
                        help="the results document (default DIR/results.json)")
    parser.add_argument("--retries", type=int, default=None, metavar="R",
                        help="reruns of a failed seating from its seed (default 2)")
    parser.add_argument("--max-failures", type=int, default=None, metavar="F",
                        help="matches an entrant may lose to its own faults before it is "
                        "disqualified (default 2)")
    parser.add_argument("--resamples", type=int, default=None, metavar="B",
                        help="bootstrap resamples of the matches (default 1000)")
    _add_groups(parser)
    return parser


def _add_groups(parser: argparse.ArgumentParser) -> None:
    """Time limits, output, metrics, scale-out and the LBR column."""
    limits = parser.add_argument_group("time limits in milliseconds (the ACPC's, passed to every dealer)")
    limits.add_argument("--t-response", type=int, default=None, metavar="MS", help="per action (60000)")
    limits.add_argument("--t-hand", type=int, default=None, metavar="MS", help="per hand (180000)")
    limits.add_argument("--t-per-hand", type=int, default=None, metavar="MS",
                        help="average per hand over the match (7000)")
    limits.add_argument("--start-timeout", type=int, default=None, metavar="MS",
                        help="for every seat to connect (20000)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress lines and no tables")
    parser.add_argument("--metrics-port", type=int, default=None, metavar="PORT",
                        help="serve Prometheus metrics labelled by entrant on PORT (0: any free port)")
    parser.add_argument("--metrics-bind", default="127.0.0.1", metavar="ADDR",
                        help="interface of the metrics endpoint (default 127.0.0.1)")
    scale = parser.add_argument_group("scale-out on Dask (optional extra: pip install -e '.[dask]')")
    scale.add_argument("--workers", type=int, default=None, metavar="N",
                       help="play the seatings on a local Dask cluster of N worker processes")
    scale.add_argument("--scheduler", default=None, metavar="ADDRESS",
                       help="play them on an existing Dask scheduler (the event's directory must be "
                       "shared with its workers)")
    scale.add_argument("--cluster", choices=["slurm"], default=None,
                       help="start workers through dask-jobqueue")
    scale.add_argument("--cluster-option", action="append", default=[], metavar="KEY=VALUE",
                       help="a dask-jobqueue cluster argument (repeatable)")
    lbr = parser.add_argument_group("exploitability column")
    lbr.add_argument("--lbr", action="store_true",
                     help="measure each entrant with LBR (acpc-lbr evaluate) and add its lower bound")
    lbr.add_argument("--lbr-hands", type=int, default=500, metavar="N", help="deals per LBR evaluation (500)")
    lbr.add_argument("--lbr-probe", type=int, default=None, metavar="K",
                     help="measure command entrants that do not answer range queries through the "
                     "probe adapter with K samples")


DEFAULTS: dict[str, Any] = {"matches": 10, "hands": 1000, "seed": 1, "format": "round-robin",
                            "concurrency": 1, "retries": 2, "max_failures": 2, "resamples": 1000}


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    """The options, over the event file's settings, over the defaults."""
    settings = dict(DEFAULTS)
    base = None
    if args.event is not None:
        settings.update(read_toml(args.event))
        base = args.event.resolve().parent
    for key, value in vars(args).items():
        if key == "entrant" and value is not None:
            settings["entrants"] = value
        elif value is not None and key not in ("event", "entrant"):
            settings[key] = value
    settings["base"] = base
    return settings


def build(settings: dict[str, Any]) -> Event:
    if not settings.get("game"):
        raise EventError("no game: give --game (or game in the event file)")
    defaults = Limits()
    limits = Limits(settings.get("t_response", defaults.t_response), settings.get("t_hand", defaults.t_hand),
                    settings.get("t_per_hand", defaults.t_per_hand),
                    settings.get("start_timeout", defaults.start_timeout))
    for name, value in vars(limits).items():
        if value <= 0:
            raise EventError(f"--{name.replace('_', '-')} must be positive, got {value}")
    for name in ("concurrency", "workers"):
        if settings.get(name) is not None and settings[name] < 1:
            raise EventError(f"--{name} must be at least 1, got {settings[name]}")
    port = settings.get("metrics_port")
    if port is not None and not 0 <= port <= 65535:
        raise EventError(f"--metrics-port must be in 0..65535, got {port}")
    return build_event(settings["game"], settings.get("entrants") or [], matches=settings["matches"],
                       hands=settings["hands"], seed=settings["seed"], format=settings["format"],
                       candidate=settings.get("candidate"), players=settings.get("players"), limits=limits,
                       retries=settings["retries"], max_failures=settings["max_failures"],
                       resamples=settings["resamples"], base=settings.get("base"))


def _game_text(event: Event) -> str:
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
            self.leader = leader(document["rankings"]["bankroll"])
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
    """SIGINT/SIGTERM stop the event: matches in flight end, their processes die, nothing is recorded."""
    caught: list[int] = []

    def stop(signum: int, _frame: object) -> None:
        caught.append(signum)
        driver.stop.set()
        seating.STOP.set()

    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield caught
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _executor(args: argparse.Namespace, concurrency: int) -> tuple[Any, int, contextlib.ExitStack]:
    """The pool the seatings run on: threads here, or a Dask cluster."""
    stack = contextlib.ExitStack()
    if not (args.workers or args.scheduler or args.cluster):
        executor = ThreadExecutor(concurrency)
        stack.callback(executor.close)
        return executor, concurrency, stack
    try:
        from acpc_lbr.commands.scaleout import dask_client  # lazy: the optional dask extra
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


def main(argv: Sequence[str]) -> int:
    """Run ``acpc-lbr tournament``; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(list(argv))
    try:
        settings = _settings(args)
        event = build(settings)
        out = settings.get("out")
        if out is None:
            raise EventError("no event directory: give --out DIR (run the same command again to resume)")
        out = Path(out)
        if event.players == 3 and args.lbr:
            raise EventError("--lbr measures heads-up bots only; this is a 3-player game")
        store = EventStore(out, event)
        resuming = store.open(_game_text(event))
        json_path = Path(settings.get("json") or out / "results.json")
        executor, slots, stack = _executor(args, settings["concurrency"])
    except EventError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return EXIT_USAGE
    try:
        with stack:
            return _play(args, event, store, executor, slots, resuming, json_path, out)
    finally:
        seating.kill_tagged(seating.seating_tag(out))  # what Dask workers stopped mid-seating left


def _play(args: argparse.Namespace, event: Event, store: EventStore, executor: Any, slots: int,
          resuming: bool, json_path: Path, out: Path) -> int:
    # Processes a killed driver of this event left running (their matches are replayed).
    seating.kill_tagged(seating.seating_tag(out))
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
        print(f"{PROG}: stopped by {signal.Signals(caught[0]).name}: {len(driver.outcomes)} of {total} matches "
              f"kept in {out}; run the same command to resume", file=sys.stderr)
        return EXIT_FAILED
    lbr = _lbr_column(args, event, out) if args.lbr else None
    counted, disqualified, _ = driver.walk()
    document = build_document(event, counted, disqualified, lbr)
    try:
        write_atomically(json_path, dumps(document))
        write_atomically(out / "crosstable.csv", to_csv(document))
    except OSError as error:
        print(f"{PROG}: cannot write the results: {error.strerror or error}", file=sys.stderr)
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
            return {"bound": {"estimator": name, "mean": figure["mean"], "half_width_95": figure["half_width_95"]},
                    "hands": figure.get("n")}
    return {"bound": None, "reason": "the evaluation gave no estimate"}


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))

"""``acpc-lbr evaluate --workers N | --scheduler ADDR | --cluster slurm``: one evaluation on Dask.

The deals are cut into batches of ``--batch-hands``. Each batch is a complete
evaluation -- dealer, LBR agent and opponent, duplicate included -- run as an
``acpc-lbr evaluate`` subprocess on a Dask worker with its own seed, and it
returns its results document. The driver merges the documents of the
completed batches exactly (:func:`acpc_lbr.results.merge_documents`), in
batch order, as they arrive.

Why a subprocess per batch: Twisted's reactor runs once per process and
cannot be restarted, and a batch that hangs or crashes must not take the
worker with it. A subprocess costs an interpreter start-up per batch (measured
by ``bench/bench_scaleout.py``; docs/scale-out.md gives the batch size that
keeps it small).

Determinism: batch ``i`` of a run with ``--seed S`` plays with the seed
:func:`batch_seed` (S, i), whatever worker runs it and whenever, so the same
seed and batch size give the same merged result with any number of workers.

Faults: a batch whose worker dies is submitted again (up to
``--max-retries`` times) under the same seed; only completed documents are
merged, so no deal is lost or counted twice. The final document lists every
batch, the retries and any batch given up, with its error; a run with a batch
given up prints what it has but exits non-zero.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from acpc_lbr.app.report import render
from acpc_lbr.app.summary import counts_line, document_bound_lines, time_lines
from acpc_lbr.estimators import CHECKS, ESTIMATORS
from acpc_lbr.results import ResultsDocument, dumps, honesty_line, merge_documents, proven_lies
from acpc_lbr.runtime import children
from acpc_lbr.runtime.exit_codes import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from acpc_lbr.runtime.progress import Estimate, Progress, best_estimate
from dealer.metrics import DealerMetrics

#: Options that belong to the driver, with how many values each takes; a batch never sees them.
DRIVER_OPTIONS: dict[str, int] = {
    "--workers": 1, "--scheduler": 1, "--cluster": 1, "--cluster-option": 1,
    "--batch-hands": 1, "--max-retries": 1, "--dry-run": 0,
    # Set per batch by the driver, or meaningful for the whole run only.
    "--seed": 1, "--hands": 1, "--json": 1, "--out": 1, "--quiet": 0, "--progress-every": 1,
    "--metrics-port": 1, "--metrics-bind": 1, "--report": 1,
}
DEFAULT_BATCH_HANDS = 2000
DEFAULT_MAX_RETRIES = 2
INSTALL_HINT = "Dask is not installed: pip install -e '.[dask]' (or pip install 'acpc-lbr[dask]')"


class BatchRefused(Exception):
    """A batch's evaluation ran and exited non-zero: rerunning the same seed gives the same."""


@dataclass(frozen=True)
class Batch:
    """One unit of work: ``hands`` deals from ``seed``."""

    index: int
    seed: int
    hands: int


def batch_seed(seed: int, index: int) -> int:
    """The deal seed of batch ``index``: a fixed function of (seed, index), below 2**31.

    >>> batch_seed(1, 0) == batch_seed(1, 0), batch_seed(1, 0) != batch_seed(1, 1)
    (True, True)
    """
    words = np.random.SeedSequence([seed & 0xFFFFFFFF, index]).generate_state(1, dtype=np.uint32)
    return int(words[0]) & 0x7FFFFFFF


def batch_size(hands: int, workers: int, asked: int | None) -> int:
    """Deals per batch: ``asked`` (``--batch-hands``), else as many as keep every worker busy
    (at least ``workers`` batches) and at most :data:`DEFAULT_BATCH_HANDS`.

    >>> batch_size(2000, 2, None), batch_size(100_000, 4, None), batch_size(2000, 2, 500)
    (1000, 2000, 500)

    Raises:
        ValueError: fewer batches than workers (a worker would sit idle), and why.
    """
    workers = max(workers, 1)
    if hands < workers:
        raise ValueError(f"--hands {hands} cannot be cut into {workers} batches for {workers} workers: "
                         "give at least one deal per worker, or fewer --workers")
    size = asked if asked is not None else min(DEFAULT_BATCH_HANDS, -(-hands // workers))
    if size < 1:
        raise ValueError("--batch-hands must be at least 1")
    batches = -(-hands // size)
    if batches < workers:
        raise ValueError(f"--batch-hands {size} cuts {hands} deals into {batches} batch(es) for {workers} "
                         f"workers: {workers - batches} would sit idle; give --batch-hands "
                         f"{-(-hands // workers)} or less, or leave it out (it is then chosen so)")
    return size


def plan_batches(hands: int, batch_hands: int, seed: int) -> list[Batch]:
    """Cut ``hands`` deals into batches of ``batch_hands`` (the last may be smaller).

    >>> [b.hands for b in plan_batches(2500, 1000, 1)]
    [1000, 1000, 500]
    """
    if hands < 1 or batch_hands < 1:
        raise ValueError("--hands and --batch-hands must be at least 1")
    sizes = [batch_hands] * (hands // batch_hands) + ([hands % batch_hands] if hands % batch_hands else [])
    return [Batch(i, batch_seed(seed, i), n) for i, n in enumerate(sizes)]


def batch_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` of ``evaluate`` without the options the driver owns (both ``--x v`` and ``--x=v``).

    >>> batch_argv(["--game", "leduc", "--workers", "2", "--seed=3", "--quiet", "--hands", "9"])
    ['--game', 'leduc']
    """
    kept: list[str] = []
    skip = 0
    for token in argv:
        if skip:
            skip -= 1
            continue
        name = token.split("=", 1)[0]
        if name in DRIVER_OPTIONS:
            skip = 0 if "=" in token else DRIVER_OPTIONS[name]
            continue
        kept.append(token)
    return kept


def run_batch(base_argv: Sequence[str], batch: Batch, out_dir: str, attempt: int) -> dict[str, Any]:
    """Run one batch as an ``acpc-lbr evaluate`` subprocess; its results document and facts.

    Runs on a Dask worker. The logs go to ``out_dir/batch-IIII-try-T``, a new
    folder per attempt, so a retried batch never mixes with a dead one.

    Raises:
        BatchRefused: the evaluation exited non-zero (its stderr tail is the message).
    """
    folder = Path(out_dir) / f"batch-{batch.index:04d}-try-{attempt}"
    folder.mkdir(parents=True, exist_ok=True)
    result = folder / "results.json"
    # --one-process: the workers already fill the cores (and a killed batch leaves no mirror process).
    command = [sys.executable, "-m", "acpc_lbr.cli", "evaluate", *base_argv, "--one-process",
               "--seed", str(batch.seed), "--hands", str(batch.hands),
               "--out", str(folder / "logs"), "--json", str(result), "--quiet"]
    started = time.perf_counter()
    with open(folder / "stdout.txt", "wb") as out, open(folder / "stderr.txt", "wb") as err:
        code = subprocess.call(command, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                               # In the worker's group (a Ctrl-C reaches it too); SIGTERM when the worker
                               # dies: it then ends its own children, as a stopped evaluate does.
                               preexec_fn=children.child_setup(new_group=False, signum=signal.SIGTERM))
    seconds = time.perf_counter() - started
    if code != 0 or not result.exists():
        tail = (folder / "stderr.txt").read_text(errors="replace").strip().splitlines()[-3:]
        raise BatchRefused(f"batch {batch.index} (seed {batch.seed}) exited {code}: "
                           + (" | ".join(tail) or "no message") + f" (logs: {folder})")
    return {"index": batch.index, "seed": batch.seed, "hands": batch.hands, "attempt": attempt,
            "seconds": seconds, "host": os.uname().nodename, "logs": str(folder),
            "document": json.loads(result.read_text())}


def _cluster_options(pairs: Sequence[str]) -> dict[str, Any]:
    """``KEY=VALUE`` pairs as keyword arguments (integers as int, lists split on commas by dask)."""
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--cluster-option takes KEY=VALUE, got {pair!r}")
        options[key.replace("-", "_")] = int(value) if value.isdigit() else value
    return options


def slurm_cluster(options: dict[str, Any]) -> Any:
    """A dask-jobqueue SLURMCluster with one single-threaded worker process per job."""
    from dask_jobqueue import SLURMCluster  # optional extra

    settings: dict[str, Any] = {"cores": 1, "processes": 1, "memory": "2GB", "walltime": "04:00:00"}
    settings.update(options)
    return SLURMCluster(**settings)


@contextlib.contextmanager
def dask_client(args: argparse.Namespace) -> Iterator[tuple[Any, int]]:
    """A Dask client for the run (and the number of workers it is meant to have)."""
    import dask
    from distributed import Client, LocalCluster

    if args.scheduler:
        with Client(args.scheduler, timeout="30s") as client:
            yield client, len(client.scheduler_info().get("workers", {}))
        return
    # A dead worker's task fails at once instead of being rerun silently, so the
    # driver counts every retry itself (a given scheduler keeps its own policy).
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        if args.cluster == "slurm":
            cluster = slurm_cluster(_cluster_options(args.cluster_option))
            cluster.scale(jobs=args.workers or 1)
            workers = args.workers or 1
        else:
            # silence_logs: the workers' own warnings (a task cancelled as a stopped run closes the
            # cluster) would follow the one line that says the run was interrupted.
            cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                                   host="127.0.0.1", dashboard_address="127.0.0.1:0",
                                   silence_logs=logging.ERROR)
            workers = args.workers
        with cluster, Client(cluster) as client:
            yield client, workers


class _LiveMetrics:
    """The single-process evaluate's estimate series, plus the scale-out's own gauges.

    Served by prometheus_client's own HTTP thread: the driver runs no reactor,
    and the thread only reads the registry.
    """

    def __init__(self, port: int, bind: str, name: str, workers: int, batches: int) -> None:
        from prometheus_client import Gauge, start_http_server

        self.metrics = DealerMetrics()
        registry = self.metrics.registry
        self.match = self.metrics.match(name, [])
        self.workers = Gauge("acpc_scaleout_workers", "Dask workers the run asked for",
                             ["match"], registry=registry)
        self.batches = Gauge("acpc_scaleout_batches", "Batches by state", ["match", "state"],
                             registry=registry)
        self.workers.labels(name).set(workers)
        for state, value in (("planned", batches), ("in_flight", 0), ("done", 0),
                             ("given_up", 0), ("retried", 0)):
            self.batches.labels(name, state).set(value)
        server, _ = start_http_server(port, addr=bind, registry=registry)
        self.port = server.server_port
        self.name = name

    def update(self, doc: ResultsDocument | None, hands: int, states: dict[str, int]) -> None:
        for state, value in states.items():
            self.batches.labels(self.name, state).set(value)
        if doc is None:
            return
        self.metrics.hands.labels(self.name).inc(hands)
        for estimator in (*ESTIMATORS, *CHECKS):
            est = doc["estimators"].get(estimator)
            if est is not None and est["mbb_per_game"]["n"]:
                mbb = est["mbb_per_game"]
                low, high = mbb.get("low_95"), mbb.get("high_95")
                self.match.publish_estimate(estimator, mbb["mean"], mbb["half_width_95"] or 0.0, mbb["n"],
                                            (math.nan, math.nan) if low is None or high is None else (low, high))


def _estimate(doc: ResultsDocument) -> Estimate | None:
    """The progress display's estimate of a merged document, as plain ``evaluate`` chooses it."""
    figures: dict[str, tuple[float, float, int]] = {}
    for name in ESTIMATORS:
        chips = doc["estimators"][name]["chips"] if name in doc["estimators"] else None
        if chips is not None and chips["n"] > 1 and chips["half_width_95"] is not None:
            figures[name] = (chips["mean"], chips["half_width_95"], chips["n"])
    def interval(name: str) -> tuple[float, float]:
        chips = doc["estimators"][name]["chips"]  # type: ignore[literal-required]  # (any estimator's name)
        low, high = chips.get("low_95"), chips.get("high_95")
        return (math.nan, math.nan) if low is None or high is None else (low, high)

    return best_estimate(figures, int(doc["big_blind"]), interval)


def summary(doc: ResultsDocument, workers: int, batches: int, seconds: float, logs: str) -> str:
    """The text plain ``evaluate`` prints at its end (the bound, the time, the counts), for the merged run."""
    config, counts = doc["config"], doc["counts"]
    lbr = config.get("lbr") or {"bets": "?", "rounds": "?"}
    duplicate = bool(config.get("duplicate"))
    hands = int(counts.get("hands", 0))
    deals = doc["estimators"]["duplicate"]["chips"]["n"]
    lines = [f"LBR ({lbr['bets']}, rounds {lbr['rounds']}) vs {config.get('opponent')} in {config.get('game')}: "
             f"{hands} hands" + (f" ({deals} duplicate deals)" if duplicate else "")
             + f", seed {config.get('seed')}; {batches} batches on {workers} worker(s)"]
    sent, failed = int(counts.get("lbr_queries", 0)), int(counts.get("lbr_query_errors", 0))
    lines += [f"LBR range queries: {sent} sent, {failed} failed" + (f" ({failed / sent:.1%})" if sent else ""), ""]
    lines += document_bound_lines(doc)
    lies = proven_lies(counts)
    lines += [line for line in (honesty_line(doc["estimators"], "io", lies),
                                honesty_line(doc["estimators"], "aivat", lies)) if line is not None]
    lines.append("")
    lines += time_lines(doc["timings"], seconds, hands, duplicate, batches)
    lines.append(counts_line(counts))
    lines.append(f"logs: {logs}")
    return "\n".join(lines)


def run(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """Drive one evaluation on Dask; the exit status of ``evaluate``."""
    try:
        if args.scheduler is None:  # else planned once the scheduler says how many workers it has
            args.batch_hands = batch_size(args.hands, args.workers or 1, args.batch_hands)
        batches = plan_batches(args.hands, args.batch_hands or DEFAULT_BATCH_HANDS, args.seed)
        if _printed_job_script(args):
            return EXIT_OK
        import distributed  # noqa: F401
    except ImportError:
        print(f"acpc-lbr evaluate: {INSTALL_HINT}", file=sys.stderr)
        return EXIT_USAGE
    except ValueError as problem:
        print(f"acpc-lbr evaluate: {problem}", file=sys.stderr)
        return EXIT_USAGE
    driver = _Driver(args, batch_argv(argv), args.out or tempfile.mkdtemp(prefix="acpc-lbr-scaleout-"))
    started = time.perf_counter()
    interrupted = False
    with dask_client(args) as (client, workers):
        if args.scheduler is not None:
            try:
                args.batch_hands = batch_size(args.hands, workers, args.batch_hands)
            except ValueError as problem:
                print(f"acpc-lbr evaluate: {problem}", file=sys.stderr)
                return EXIT_USAGE
            batches = plan_batches(args.hands, args.batch_hands, args.seed)
        try:
            driver.drive(client, workers, batches)
        except KeyboardInterrupt:  # SIGINT, or SIGTERM (acpc_lbr.cli): the cluster closes quietly
            logging.getLogger("distributed").setLevel(logging.CRITICAL)
            interrupted = True
    if interrupted:
        print(f"acpc-lbr evaluate: interrupted; the finished batches' logs are in {driver.out_dir}",
              file=sys.stderr)
        return EXIT_FAILED
    if not driver.done:
        print("acpc-lbr evaluate: no batch completed; no result", file=sys.stderr)
        return EXIT_FAILED
    return _publish(args, driver, len(batches), workers, time.perf_counter() - started)


def _printed_job_script(args: argparse.Namespace) -> bool:
    """``--dry-run``: print the SLURM job script (True); without ``--cluster slurm`` it is a usage error.

    Raises:
        ImportError: dask-jobqueue is not installed (a clear message in :func:`run`).
        ValueError: ``--dry-run`` without ``--cluster slurm``.
    """
    if args.cluster == "slurm" and args.dry_run:
        import dask_jobqueue  # noqa: F401  (a clear message in run if absent)

        print(slurm_cluster(_cluster_options(args.cluster_option)).job_script())
        return True
    if args.dry_run:
        raise ValueError("--dry-run prints the SLURM job script; it needs --cluster slurm")
    return False


class _Driver:
    """The batches of one run: submitted, collected as they complete, rerun when their worker is lost.

    Attributes:
        done: each completed batch's facts and results document (:func:`run_batch`), by index.
        given_up: the batches that will not complete, with their error.
        retries: how many times a batch was submitted again.
    """

    def __init__(self, args: argparse.Namespace, base: list[str], out_dir: str) -> None:
        self.args = args
        self.base = base
        self.out_dir = out_dir
        self.done: dict[int, dict[str, Any]] = {}
        self.given_up: list[dict[str, Any]] = []
        self.retries = 0
        #: The futures in flight: the batch each runs and its attempt number.
        self.owner: dict[Any, tuple[Batch, int]] = {}
        self.live: _LiveMetrics | None = None
        #: The progress bar or lines, as plain ``evaluate`` draws them (None: ``--quiet``).
        self.progress: Progress | None = None

    def say(self, text: str) -> None:
        if not self.args.quiet:
            print(text, file=sys.stderr, flush=True)

    def drive(self, client: Any, workers: int, batches: list[Batch]) -> None:
        """Run every batch to completion or to giving up."""
        from distributed import as_completed  # optional extra, checked in run

        args = self.args
        if client.dashboard_link and _has_dashboard():
            self.say(f"Dask dashboard: {client.dashboard_link}")
        self.say(f"{len(batches)} batches of up to {args.batch_hands} deals on {workers} worker(s); "
                 f"logs in {self.out_dir}")
        if args.metrics_port is not None:
            self.live = _LiveMetrics(args.metrics_port, args.metrics_bind, "scaleout", workers, len(batches))
            self.say(f"metrics: http://{args.metrics_bind}:{self.live.port}/metrics")
        if not args.quiet:  # a line per batch done, or the bar on a terminal: as plain evaluate
            seatings = 1 if getattr(args, "duplicate", True) is False else 2
            self.progress = Progress(sys.stderr, args.hands * seatings, 1, shorter=(
                f"--hands N shortens it in proportion (now {args.hands} deals), and more workers on free cores"))
        for batch in batches:
            self._submit(client, batch, 0)
        queue = as_completed(list(self.owner))
        for future in queue:
            batch, again = self._collect(client, future)
            if again is not None:
                queue.add(again)
            self._show(batch, len(batches))
        if self.progress is not None:
            self.progress.close()

    def _submit(self, client: Any, batch: Batch, attempt: int) -> Any:
        future = client.submit(run_batch, self.base, batch, self.out_dir, attempt, pure=False,
                               key=f"acpc-lbr-batch-{batch.index}-try-{attempt}-{os.getpid()}")
        self.owner[future] = (batch, attempt)
        return future

    def _collect(self, client: Any, future: Any) -> tuple[Batch, Any]:
        """The batch of a finished ``future``, and the future of its rerun (None when there is none)."""
        batch, attempt = self.owner.pop(future)
        try:
            self.done[batch.index] = future.result()
        except BatchRefused as refused:
            self.given_up.append({"index": batch.index, "seed": batch.seed, "error": str(refused)})
            self.say(f"batch {batch.index} given up: {refused}")
        # The edge of the run: whatever ended the task other than the evaluation's
        # own verdict (KilledWorker, a lost connection, a cancelled future) is a
        # failure of the machinery, and the same seed is run again.
        except Exception as lost:  # noqa: BLE001
            if attempt < self.args.max_retries:
                self.retries += 1
                self.say(f"batch {batch.index} lost ({type(lost).__name__}); rerunning its seed")
                return batch, self._submit(client, batch, attempt + 1)
            self.given_up.append({"index": batch.index, "seed": batch.seed,
                                  "error": f"{type(lost).__name__}: {lost}"})
            self.say(f"batch {batch.index} given up after {attempt + 1} attempts: {lost}")
        return batch, None

    def _show(self, batch: Batch, total: int) -> None:
        """The progress line and the live gauges after ``batch``'s future ended."""
        states = {"in_flight": len(self.owner), "done": len(self.done), "given_up": len(self.given_up),
                  "retried": self.retries}
        if batch.index not in self.done:
            if self.live is not None:
                self.live.update(None, 0, states)
            return
        merged = self.merged()
        if self.progress is not None:
            self.progress.update(int(merged["counts"].get("hands", 0)), _estimate(merged),
                                 int(merged["counts"].get("query_errors", 0)))
        if self.live is not None:
            self.live.update(merged, int(self.done[batch.index]["document"]["counts"].get("hands", 0)), states)

    def merged(self) -> ResultsDocument:
        """The completed batches' documents merged, in batch order."""
        return merge_documents([self.done[i]["document"] for i in sorted(self.done)])


def _publish(args: argparse.Namespace, driver: _Driver, batches: int, workers: int, seconds: float) -> int:
    """Print and write the merged document; EXIT_FAILED when a batch was given up."""
    done = driver.done
    doc = driver.merged()
    doc["config"]["seed"] = args.seed  # the run's seed; each batch's own is in scaleout.batches
    doc["scaleout"] = {
        "workers": workers, "batch_hands": args.batch_hands, "seed": args.seed,
        "batches": [{key: done[i][key] for key in ("index", "seed", "hands", "attempt", "seconds",
                                                    "host", "logs")} for i in sorted(done)],
        "retries": driver.retries, "given_up": driver.given_up,
        "wall_seconds": seconds,
    }
    print(summary(doc, workers, batches, seconds, driver.out_dir))
    if args.json:
        Path(args.json).write_text(dumps(doc))
    if getattr(args, "report", None):  # the merged run's report (acpc_lbr/app/report.py)
        Path(args.report).write_text(render([doc]), encoding="utf-8")
    if driver.given_up:
        print(f"acpc-lbr evaluate: {len(driver.given_up)} of {batches} batches given up; the result "
              f"above covers only the {len(done)} completed ones (see the JSON's scaleout.given_up)",
              file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def _has_dashboard() -> bool:
    try:
        import bokeh  # noqa: F401
    except ImportError:
        return False
    return True



"""The text ``acpc-lbr evaluate`` prints, and the files it writes at the end.

The progress line while it plays (:class:`EvaluationProgress`), the report of an
evaluation (:func:`format_report`: the bound, the honesty checks, the time and
counts lines, the probe adapter's figures) and ``--json``/``--report``
(:func:`write_results`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from acpc_lbr.app.evaluate.evaluation import Evaluation, ProbeSection
from acpc_lbr.app.evaluate.processes import program_said
from acpc_lbr.app.report import render
from acpc_lbr.app.summary import BOUND_HEADER, counts_line, stat_bound_line, time_lines
from acpc_lbr.estimators import CheckName, MatchEstimates
from acpc_lbr.results import honesty_line, proven_lies
from acpc_lbr.runtime.exit_codes import (
    EXIT_USAGE,
)
from acpc_lbr.runtime.progress import Progress, best_estimate


class EvaluationProgress:
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
                mean, half = stat.live()  # running figures: cheap enough for every hand
                figures[name] = (mean, half, stat.n)
        shown = best_estimate(figures, evaluation.big_blind, lambda name: estimates.estimator(name).interval())
        self.bar.update(self.bar.done + 1, shown, errors)

    def close(self) -> None:
        self.bar.close()


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
    lines = [BOUND_HEADER]
    names = ["raw", "duplicate"] if config.duplicate else ["raw"]
    scale = 1000.0 / config.game.big_blind
    for name in names:
        stat = evaluation.estimates.estimator(name)
        lines.append(stat_bound_line(name, stat, scale, f"{stat.n} {'pairs' if name == 'duplicate' else 'hands'}"))
    lies = proven_lies(evaluation.document["counts"]) if evaluation.document is not None else 0
    if evaluation.io_estimates is not None and lies:
        lines.append(f"  {'io, aivat':<15} no bound: the opponent's answers were proven false {lies} times (range "
                     "inconsistencies, counts below): IO and AIVAT rest on them")
    elif evaluation.io_estimates is not None:
        for name in ("io", "duplicate_io", "aivat", "duplicate_aivat"):
            stat = evaluation.io_estimates.estimator(name)
            if stat.n and _flagged(evaluation, "io_minus_raw" if "io" in name else "aivat_minus_raw"):
                lines.append(f"  {name:<15} no bound: its honesty check is flagged (below)")
            elif stat.n:
                lines.append(stat_bound_line(name, stat, scale, str(stat.n)))
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


def write_results(evaluation: Evaluation, json_path: str | None, report_path: str | None) -> int:
    """Write ``--json`` (``json_path``) and ``--report`` (``report_path``) when there is a bound
    (else say why not); the exit status."""
    refusal = evaluation.refusal
    if refusal is not None:
        print(f"acpc-lbr evaluate: no bound: {refusal}. The logs are in {evaluation.config.out}"
              + (f"; {json_path} was not written" if json_path else "")
              + (f"; {report_path} was not written" if report_path else "") + ".", file=sys.stderr)
        return evaluation.exit_code
    if json_path:
        try:
            Path(json_path).write_text(json.dumps(evaluation.document, indent=2) + "\n")
        except OSError as problem:
            print(f"acpc-lbr evaluate: cannot write {json_path}: {problem.strerror}", file=sys.stderr)
            return EXIT_USAGE
    if report_path and evaluation.document is not None:
        try:
            Path(report_path).write_text(render([evaluation.document]), encoding="utf-8")
        except (OSError, ValueError) as problem:
            print(f"acpc-lbr evaluate: cannot write the report: {problem}", file=sys.stderr)
            return EXIT_USAGE
    return evaluation.exit_code

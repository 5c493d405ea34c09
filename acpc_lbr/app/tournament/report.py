"""The results of an event: the JSON document, its CSV and the terminal tables.

The document is built from the match records alone, in canonical order, and
holds no time, host or path: the same event gives the same bytes however it
was run (any concurrency, any number of workers, resumed or not).
docs/tournament.md documents its schema.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from acpc_lbr.app.tournament.driver import FAILED, MEASURES, OK, Outcomes, finite
from acpc_lbr.app.tournament.event import Event
from acpc_lbr.app.tournament.scoring import Moments
from acpc_lbr.app.tournament.seating import FAULT_KINDS
from acpc_lbr.app.tournament.standings import (
    MIN_MATCHES_TO_SEPARATE,
    RULES,
    MatchTable,
    bankroll_scores,
    bootstrap,
    rank,
    separated_after,
)

FORMAT = "acpc-lbr-tournament"
VERSION = 1


def _figure(moments: Moments, scale: float) -> dict[str, Any]:
    """``mean``, ``half_width_95`` (1.96 × the mean's standard error: the interval's scale) and the printed 95%
    interval ``low_95``, ``high_95`` (skewness-corrected, as a results document's; not always the mean ± the
    half-width), in mbb/g."""
    low, high = moments.interval_95()
    return {"mean": finite(moments.mean * scale) if moments.n else None,
            "half_width_95": finite(moments.half_width_95 * scale),
            "low_95": finite(low * scale), "high_95": finite(high * scale)}


def headline_measure(event: Event) -> str:
    """All-in expectation in no-limit games (where it applies), raw chips otherwise."""
    return "raw" if event.game.is_limit else "allin"


def build_document(event: Event, outcomes: Outcomes, disqualified: dict[str, str],
                   lbr: dict[str, Any] | None = None) -> dict[str, Any]:
    """The results document of an event from its matches' outcomes (those not counted read as not played)."""
    scale = 1000.0 / event.game.big_blind
    measure = headline_measure(event)
    pairings = event.pairings()
    pairing_rows = []
    for p, names in enumerate(pairings):
        head = outcomes.pooled(p, measure)
        raw = outcomes.pooled(p, "raw")
        units = head[names[0]].n
        row: dict[str, Any] = {"names": list(names), "units": units,
                               "matches": int(np.count_nonzero(outcomes.state[p] == OK)),
                               "failed_matches": int(np.count_nonzero(outcomes.state[p] == FAILED)),
                               "disqualified": sorted(set(names) & disqualified.keys()),
                               "results": {n: {"mbb_per_game": _figure(head[n], scale),
                                               "raw_mbb_per_game": _figure(raw[n], scale)} for n in names}}
        if len(names) == 2:
            a, b = names
            row = {"a": a, "b": b, "mbb_per_game": _figure(head[a], scale),
                   "raw_mbb_per_game": _figure(raw[a], scale), **row}
        pairing_rows.append(row)
    ranked = [e.name for e in event.entrants if e.name not in disqualified]
    table = _match_table(ranked, outcomes, measure, scale)
    rankings: dict[str, list[dict[str, Any]]] = {}
    p_above: dict[str, Any] = {}
    point = table.pooled()
    scores = bankroll_scores(ranked, table.pairings, point)
    for rule in RULES:
        places = rank(rule, ranked, table.pairings, point)
        order = sorted(ranked, key=lambda n: (places[n], ranked.index(n)))
        uncertainty = bootstrap(rule, ranked, table, event.resamples, event.seed)
        separated = separated_after(order, uncertainty, event.matches)
        rankings[rule] = [{"name": n, "rank": places[n],
                           "p_rank": uncertainty.p_rank[n] if uncertainty else None,
                           "separated_from_next": sep,
                           **({"mbb_per_game": finite(scores[n])} if rule == "bankroll" else {})}
                          for n, sep in zip(order, separated)]
        p_above[rule] = uncertainty.p_above if uncertainty else None
    faults, counts = _faults(event, outcomes)
    return {
        "format": FORMAT, "version": VERSION,
        "event": event.identity(),
        "game": {"name": event.game_arg, "players": event.players, "betting": event.game.betting,
                 "big_blind": event.game.big_blind},
        "headline": measure,
        "allin_hands": outcomes.allin_hands(),
        "entrants": [{"name": e.name, "spec": e.spec, "kind": e.kind,
                      "disqualified": e.name in disqualified, "reason": disqualified.get(e.name),
                      "faults": counts[e.name],
                      **({"lbr": lbr.get(e.name)} if lbr is not None else {})} for e in event.entrants],
        "pairings": pairing_rows,
        "rankings": rankings,
        "p_above": p_above,
        "faults": faults,
        "disqualified": [{"name": n, "reason": r} for n, r in sorted(disqualified.items())],
        "matches": {"total": len(event.schedule()), "played": outcomes.count(OK), "failed": outcomes.count(FAILED)},
    }


def _match_table(ranked: Sequence[str], outcomes: Outcomes, measure: str, scale: float) -> MatchTable:
    """Per-match means of the pairings among ``ranked`` (those with a disqualified member left out)."""
    kept = [p for p, names in enumerate(outcomes.pairings) if set(names) <= set(ranked)]
    j = MEASURES.index(measure)
    means = []
    units = []
    for p in kept:
        ok = outcomes.state[p] == OK
        means.append(np.where(ok[:, None], outcomes.mean[p][:, :, j] * scale, 0.0))
        units.append(np.where(ok, outcomes.n[p][:, 0, j], 0))
    return MatchTable(tuple(outcomes.pairings[p] for p in kept), tuple(means), tuple(units))


def _faults(event: Event, outcomes: Outcomes) -> tuple[list[dict[str, Any]], dict[str, dict[str, int]]]:
    rows = []
    counts: dict[str, dict[str, int]] = {e.name: dict.fromkeys(FAULT_KINDS[:-1], 0) for e in event.entrants}
    for job in event.schedule():
        if not outcomes.has(job):
            continue
        for fault in outcomes.faults.get((job.pairing, job.match), ()):
            rows.append({"match": job.key, **fault})
            if fault.get("entrant") in counts:
                kind = fault["kind"]
                counts[fault["entrant"]][kind] = counts[fault["entrant"]].get(kind, 0) + int(fault.get("count", 1))
    return rows, counts


def dumps(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=1, sort_keys=False, allow_nan=False) + "\n"


def to_csv(document: dict[str, Any]) -> str:
    """One row per pairing and member: the crosstable in a spreadsheet's shape."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["pairing", "entrant", "mbb_per_game", "half_width_95", "raw_mbb_per_game",
                     "raw_half_width_95", "units", "matches", "failed_matches", "low_95", "high_95",
                     "raw_low_95", "raw_high_95"])
    for row in document["pairings"]:
        for name in row["names"]:
            head = row["results"][name]["mbb_per_game"]
            raw = row["results"][name]["raw_mbb_per_game"]
            writer.writerow(["-vs-".join(row["names"]), name, _cell(head["mean"]), _cell(head["half_width_95"]),
                             _cell(raw["mean"]), _cell(raw["half_width_95"]), row["units"], row["matches"],
                             row["failed_matches"], _cell(head.get("low_95")), _cell(head.get("high_95")),
                             _cell(raw.get("low_95")), _cell(raw.get("high_95"))])
    return out.getvalue()


def _cell(value: float | None) -> str:
    return "" if value is None else f"{value:.6f}"


def _pm(figure: dict[str, Any], negate: bool = False) -> str:
    """``mean [low, high]``: the printed 95% interval (a document written before it: ``mean ± half_width_95``);
    ``negate``: the other member's view of a heads-up pairing."""
    mean, half = figure["mean"], figure["half_width_95"]
    low, high = figure.get("low_95"), figure.get("high_95")
    if mean is None:
        return "-"
    if negate:
        mean, low, high = -mean, None if high is None else -high, None if low is None else -low
    if low is not None and high is not None:
        return f"{mean:+.1f} [{low:+.1f}, {high:+.1f}]"
    return f"{mean:+.1f}" + (f" ± {half:.1f}" if half is not None else "")


def _crosstable(document: dict[str, Any], names: list[str]) -> list[str]:
    """The heads-up crosstable's lines: each column as wide as its widest cell, two blanks between."""
    cells = {(r["a"], r["b"]): r["mbb_per_game"] for r in document["pairings"]}
    rows = [[_crosstable_cell(cells, a, b) for b in names] for a in names]
    label = max(len(n) for n in names)
    widths = [max(len(name), *(len(row[j]) for row in rows)) for j, name in enumerate(names)]
    lines = [" " * label + "".join(f"  {n:>{w}}" for n, w in zip(names, widths))]
    for a, row in zip(names, rows):
        lines.append(f"{a:<{label}}" + "".join(f"  {text:>{w}}" for text, w in zip(row, widths)))
    return lines


def _crosstable_cell(cells: dict[tuple[str, str], dict[str, Any]], a: str, b: str) -> str:
    """Row ``a`` against column ``b`` (empty where they did not meet)."""
    if (a, b) in cells:
        return _pm(cells[a, b])
    if (b, a) in cells:
        return _pm(cells[b, a], negate=True)
    return ""


def format_tables(document: dict[str, Any]) -> str:
    """The crosstable and both rankings, for the terminal."""
    lines = []
    names = [e["name"] for e in document["entrants"]]
    unit = "all-in expectation" if document["headline"] == "allin" else "chips"
    if document["game"]["players"] == 2:
        lines.append(f"results in mbb/g, mean [95% interval], per duplicate unit ({unit}); row against column")
        lines.extend(_crosstable(document, names))
    else:
        lines.append(f"results in mbb/g, mean [95% interval], per duplicate unit ({unit}); each entrant's "
                     "result in its triple")
        for r in document["pairings"]:
            parts = [f"{n} {_pm(r['results'][n]['mbb_per_game'])}" for n in r["names"]]
            lines.append(f"  {' | '.join(parts)}  ({r['units']} units)")
    for rule, title in (("bankroll", "total bankroll"), ("instant_runoff", "series instant run-off")):
        lines.append("")
        lines.append(f"{title}:")
        for entry in document["rankings"][rule]:
            p = entry["p_rank"]
            chance = f"  P(rank {entry['rank']}) = {p[entry['rank'] - 1]:.2f}" if p else ""
            score = f"  {entry['mbb_per_game']:+.1f} mbb/g" if entry.get("mbb_per_game") is not None else ""
            lines.append(f"  {entry['rank']:>2}. {entry['name']}{score}{chance}")
            if entry["separated_from_next"]:
                lines.append("      ---- separated at 95% ----")
        if document["p_above"][rule] is None:
            why = "--resamples 0" if document["event"].get("resamples") == 0 else \
                "it needs at least 2 matches per pairing"
            lines.append(f"  (no bootstrap: {why}; places are not tested)")
        elif document["event"]["matches"] < MIN_MATCHES_TO_SEPARATE:
            lines.append(f"  (P from a bootstrap of {document['event']['matches']} matches: too few to separate "
                         f"places; use --matches {MIN_MATCHES_TO_SEPARATE} or more)")
    if document["disqualified"]:
        lines.append("")
        for d in document["disqualified"]:
            lines.append(f"disqualified: {d['name']}: {d['reason']}")
    bounds = [(e["name"], e["lbr"]) for e in document["entrants"] if "lbr" in e]
    if bounds:
        lines.append("")
        lines.append("exploitability, LBR lower bound (mbb/g, mean [95% interval]):")
        for name, lbr in bounds:
            bound = lbr.get("bound") if lbr else None
            text = (f"{_pm(bound)} ({bound['estimator']})"
                    if bound else f"none: {lbr.get('reason') if lbr else 'not measured'}")
            lines.append(f"  {name}: {text}")
    counted = [(e["name"], k, v) for e in document["entrants"] for k, v in e["faults"].items() if v]
    if counted:
        lines.append("faults: " + ", ".join(f"{n} {k} {v}" for n, k, v in counted))
    return "\n".join(lines) + "\n"


def leader(document: dict[str, Any]) -> str:
    """The bankroll leader, in a few words (for the progress line); ``-`` before any match is scored.

    Only entrants with a scored match count (in a pairing the rankings keep):
    one whose matches all failed, or that has not played yet, leads nothing.
    """
    scored = {name for row in document["pairings"] if row["matches"] and not row["disqualified"]
              for name in row["names"]}
    for entry in document["rankings"]["bankroll"]:
        if entry["name"] in scored:
            score = entry.get("mbb_per_game")
            return str(entry["name"]) + ("" if score is None or math.isnan(score) else f" {score:+.0f} mbb/g")
    return "-"

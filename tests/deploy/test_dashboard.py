"""The Grafana dashboard against a live exporter: every panel's PromQL finds its series and labels.

A short duplicate evaluation with imaginary observations and AIVAT (the richest set of
series: two matches, both seats queried or not, all six estimators) runs in-process with its
/metrics endpoint on loopback; a scraper reads the endpoint mid-match over HTTP. Each
expression of the dashboard is parsed (promql-parser) and walked: every selector must
name a scraped series that satisfies its label matchers (Grafana variables expanded to
the values the dashboard offers), every ``by``/``on`` label must exist where it is
used, and every ``{{label}}`` of a legend must be a label of the expression's result.
No Prometheus server runs here, so PromQL is checked for its series and labels, not
evaluated.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import promql_parser as promql
import pytest_twisted
from prometheus_client.parser import text_string_to_metric_families

from acpc_lbr.app.evaluate.evaluation import EvaluationConfig
from acpc_lbr.app.evaluate.run import run_evaluation
from acpc_lbr.estimators import ESTIMATORS
from acpc_lbr.lbr import ActiveRounds, BettingOptions
from protocol.gamedef import load_game

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy" / "grafana" / "dashboards" / "acpc-lbr.json"
#: The series of the error panel: failures only (not the query rate).
ERROR_SERIES = {"acpc_timeouts_total", "acpc_invalid_actions_total", "acpc_disconnects_total",
                "acpc_query_errors_total", "acpc_range_inconsistencies_total"}

Series = dict[str, list[dict[str, str]]]


def _series(text: str) -> Series:
    """Each sample name's label sets; ``value`` is added as a pseudo-label for the checks."""
    found: Series = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, []).append({**sample.labels, "": str(sample.value)})
    return found


async def _scrape_mid_match(progress: io.StringIO, done: list[bool]) -> Series:
    """Poll the endpoint until both matches run, hands are in and all six estimators publish."""
    import urllib.request

    from twisted.internet import reactor
    from twisted.internet.task import deferLater
    from twisted.internet.threads import deferToThread

    def get(url: str) -> str:
        with urllib.request.urlopen(url, timeout=10) as response:
            return str(response.read().decode())

    last: Series = {}
    while not done:
        found = re.search(r"METRICS (http://\S+)", progress.getvalue())
        if found is not None:
            last = _series(await deferToThread(get, found.group(1)))
            estimators = {s["estimator"] for s in last.get("acpc_estimate_mbb_per_game", [])}
            hands = [s for s in last.get("acpc_hands_total", [])]
            if estimators == set(ESTIMATORS) and len(hands) == 2:
                return last
        await deferLater(reactor, 0.05, lambda: None)
    raise AssertionError(f"the match ended before every series was seen: {sorted(last)}")


def _variables(dashboard: dict[str, Any], series: Series) -> dict[str, list[str]]:
    """Each variable's values: a custom variable's options; a query variable's label values."""
    values: dict[str, list[str]] = {}
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "custom":
            values[variable["name"]] = [o["value"] for o in variable["options"]]
        else:
            found = re.fullmatch(r"label_values\((\w+)(?:\{[^}]*\})?, *(\w+)\)", variable["query"])
            assert found is not None, variable["query"]
            metric, label = found.groups()
            values[variable["name"]] = sorted({s[label] for s in series.get(metric, []) if label in s})
            assert values[variable["name"]], f"variable {variable['name']}: no {metric}{{{label}}}"
    return values


class _Checker:
    """Walks one PromQL expression against the scraped series; returns its result's labels."""

    def __init__(self, series: Series, variables: dict[str, list[str]], where: str) -> None:
        self.series = series
        self.variables = variables
        self.where = where

    def _matches(self, labels: dict[str, str], matcher: Any) -> bool:
        value = labels.get(matcher.name, "")
        op = str(matcher.op).rsplit(".", 1)[-1]
        wanted = matcher.value
        if "$" in wanted:  # a Grafana variable: "All" of its values (regex) or each value
            name = wanted.strip("$").strip("{}")
            options = self.variables[name]
            return value in options if op in ("Equal", "Re") else value not in options
        return {"Equal": value == wanted, "NotEqual": value != wanted,
                "Re": re.fullmatch(wanted, value) is not None,
                "NotRe": re.fullmatch(wanted, value) is None}[op]

    def labels(self, node: Any) -> set[str] | None:
        kind = type(node).__name__
        where = f"{self.where}: {node}"
        if kind == "VectorSelector":
            rows = [s for s in self.series.get(node.name, [])
                    if all(self._matches(s, m) for m in node.matchers.matchers)]
            assert rows, f"{where}: no such series"
            for matcher in node.matchers.matchers:
                if "$" in matcher.value:  # every value the dashboard offers has data
                    name = matcher.value.strip("$").strip("{}")
                    present = {s.get(matcher.name) for s in rows}
                    missing = set(self.variables[name]) - present
                    assert not missing, f"{where}: no series for {matcher.name} in {missing}"
            return set().union(*(set(s) for s in rows)) - {""}
        if kind == "MatrixSelector":
            return self.labels(node.vector_selector)
        if kind == "ParenExpr":
            return self.labels(node.expr)
        if kind in ("NumberLiteral", "StringLiteral"):
            return None
        if kind == "Call":
            arguments = [self.labels(argument) for argument in node.args]
            if node.func.name == "histogram_quantile":
                inner = arguments[1]
                assert inner is not None and "le" in inner, f"{where}: no le label"
                return inner - {"le"}
            vectors = [a for a in arguments if a is not None]
            return vectors[0] if vectors else None
        if kind == "AggregateExpr":
            inner = self.labels(node.expr)
            assert inner is not None
            modifier = node.modifier
            if modifier is None:
                return set()
            grouping = set(modifier.labels)
            if str(modifier.type).endswith("By"):
                assert grouping <= inner, f"{where}: grouped by {grouping - inner}, not labels here"
                return grouping
            return inner - grouping
        if kind == "BinaryExpr":
            left, right = self.labels(node.lhs), self.labels(node.rhs)
            matching = node.modifier.matching if node.modifier is not None else None
            if matching is not None and left is not None and right is not None:
                on = set(matching.labels)
                assert on <= left and on <= right, f"{where}: on({on}) missing on one side"
            return left if left is not None else right
        raise AssertionError(f"{where}: unexpected node {kind}")


def _targets(dashboard: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [(panel, target) for panel in dashboard["panels"] for target in panel["targets"]]


@pytest_twisted.ensureDeferred
async def test_every_panel_query_finds_its_series_during_a_live_match(tmp_path: Path) -> None:
    """Scraped mid-match, every selector of every panel (and every variable query) has series
    with the labels it filters, groups and joins on; every legend label exists on the result;
    legends name the match unless the panel repeats per match."""
    from twisted.internet import defer, reactor

    config = EvaluationConfig(
        game_arg="leduc", game=load_game("leduc"), opponent="random", opponent_cmd=None,
        bets=BettingOptions.parse("fcpa"), rounds=ActiveRounds.parse("1-2"), hands=400, seed=5,
        duplicate=True, out=tmp_path / "logs", io=True, aivat=True, metrics_port=0,
    )
    progress = io.StringIO()
    done: list[bool] = []
    scraper = defer.ensureDeferred(_scrape_mid_match(progress, done))
    evaluation = await run_evaluation(config, reactor, progress=progress, progress_every=10**6)
    done.append(True)
    series = await scraper
    assert evaluation.exit_code == 0
    # Both halves were running when scraped (it read 0 during evaluate before).
    assert [float(s[""]) for s in series["acpc_matches_running"]] == [2.0]

    dashboard = json.loads(DASHBOARD.read_text())
    variables = _variables(dashboard, series)
    assert len(variables["match"]) == 2
    for panel, target in _targets(dashboard):
        where = f"{panel['title']} [{target['refId']}]"
        tree = promql.parse(target["expr"])
        result = _Checker(series, variables, where).labels(tree)
        legend_labels = set(re.findall(r"\{\{(\w+)\}\}", target["legendFormat"]))
        assert result is not None and legend_labels <= result, (where, legend_labels, result)
        repeats_per_match = panel.get("repeat") in ("match", "group")
        if "match" in result and not repeats_per_match:
            assert "match" in legend_labels, f"{where}: the legend does not name the match"


def test_error_panel_plots_failures_and_the_query_panel_has_its_rate() -> None:
    """The errors panel queries failure counters only; the range-query panel plots latency and
    the query rate (on its own axis)."""
    dashboard = json.loads(DASHBOARD.read_text())

    def names(expr: str) -> set[str]:
        found: set[str] = set()

        def visit(node: Any) -> bool:
            if type(node).__name__ == "VectorSelector":
                found.add(node.name)
            return True

        promql.walk(promql.parse(expr), visit)
        return found

    panels = {p["title"].split(":")[0].split(" by ")[0]: p for p in dashboard["panels"]}
    errors = panels["Errors per second"]
    used = set().union(*(names(t["expr"]) for t in errors["targets"]))
    assert used == ERROR_SERIES
    queries = panels["Range queries"]
    used = set().union(*(names(t["expr"]) for t in queries["targets"]))
    assert {"acpc_query_seconds_bucket", "acpc_queries_total"} <= used
    assert any(o["matcher"] == {"id": "byFrameRefID", "options": "C"} for o in
               queries["fieldConfig"]["overrides"])


def test_latency_quantiles_drop_seats_without_samples() -> None:
    """histogram_quantile over a window without samples is NaN (the LBR seat, which is never
    queried): every quantile keeps only the seats whose count rate is above 0."""
    dashboard = json.loads(DASHBOARD.read_text())
    quantiles = [t["expr"] for _, t in _targets(dashboard) if "histogram_quantile" in t["expr"]]
    assert len(quantiles) == 4
    for expr in quantiles:
        tree = promql.parse(expr)
        assert type(tree).__name__ == "BinaryExpr" and str(tree.op) == "and", expr
        guard = tree.rhs
        assert type(guard).__name__ == "BinaryExpr" and str(guard.op) == ">", expr
        assert "_count" in str(guard.lhs) and str(guard.rhs) == "0", expr

"""The /metrics endpoint: served from the reactor, on loopback only, series retired."""

from __future__ import annotations

import socket
import urllib.request
from typing import Any

import pytest_twisted
from prometheus_client.parser import text_string_to_metric_families
from twisted.internet.threads import deferToThread

from dealer.metrics import DealerMetrics, serve_metrics


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


@pytest_twisted.ensureDeferred
async def test_endpoint_serves_counters_and_binds_loopback() -> None:
    """A scrape sees a match's counters move; the port is bound to 127.0.0.1 only."""
    metrics = DealerMetrics()
    match = metrics.match("m1", ["lbr", "bot"])
    port = serve_metrics(metrics, 0)
    try:
        host = port.getHost()
        assert host.host == "127.0.0.1"
        url = f"http://127.0.0.1:{host.port}/metrics"

        def scrape() -> str:
            with urllib.request.urlopen(url, timeout=10) as response:
                return str(response.read().decode())

        body = await deferToThread(scrape)
        assert _samples(body)[("acpc_hands_total", (("match", "m1"),))] == 0
        match.hand_finished({"lbr": 150.0, "bot": -150.0})
        match.publish_estimate("raw", 1500.0, 300.0, 1)
        body = await deferToThread(scrape)
        samples = _samples(body)
        assert samples[("acpc_hands_total", (("match", "m1"),))] == 1
        assert samples[("acpc_seat_chips", (("match", "m1"), ("seat", "bot")))] == -150.0
        assert samples[("acpc_estimate_mbb_per_game", (("estimator", "raw"), ("match", "m1")))] == 1500.0
        # Not reachable on another interface of this machine (if it has one).
        addresses = {info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)}
        for address in addresses - {"127.0.0.1"}:
            if address.startswith("127."):
                continue
            with socket.socket() as probe:
                probe.settimeout(1.0)
                assert probe.connect_ex((address, host.port)) != 0
        match.retire()
        body = await deferToThread(scrape)
        assert 'match="m1"' not in body
    finally:
        await port.stopListening()


def test_docs_list_every_metric() -> None:
    """docs/metrics.md names every sample the registry exports."""
    from pathlib import Path

    from dealer.metrics import metric_names

    text = (Path(__file__).resolve().parents[2] / "docs" / "metrics.md").read_text()
    for name in metric_names(DealerMetrics()):
        base = name.removesuffix("_bucket").removesuffix("_sum").removesuffix("_count")
        assert name in text or base in text, name


def test_events_move_the_series() -> None:
    """The EventLog subscriber turns action, hand, query and abort events into samples; the
    estimate is published directly (MatchMetrics.publish_estimate), not through the event bus."""
    from prometheus_client import CollectorRegistry

    from dealer import events as ev
    from dealer.events import Cause, QueryCause

    registry = CollectorRegistry()
    metrics = DealerMetrics(registry)
    match = metrics.match("m", ["lbr", "bot"])
    events: list[ev.EventRecord] = [
        ev.ActionPlayed(seat=2, hand=0, action="r300", seconds=0.002, corrected=True),
        ev.ActionPlayed(seat=1, hand=0, action="c", seconds=0.001, corrected=False),
        ev.HandFinished(hand=0, betting="r300c", values=(5.0, -5.0)),
        ev.HandFinished(hand=1, betting="f", values=(-2.0, 2.0)),
        ev.QueryAnswered(seat=2, seconds=0.01, actions=1),
        ev.QueryErrored(seat=2, cause=QueryCause.TIMEOUT, reason="late", seconds=1.0),
        ev.RangeInconsistency(hand=1, count=2),
        ev.MatchAborted(cause=Cause.DISCONNECT, seat=1, error="closed", hands_finished=2),
        ev.MatchAborted(cause=Cause.WRITE_FAILED, error="cannot write", hands_finished=2),  # no seat
    ]
    for event in events:
        match.observe(event)
    match.publish_estimate("io", 12.5, 3.0, 2)

    def value(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(name, {"match": "m", **labels})

    assert value("acpc_hands_total") == 2
    assert value("acpc_seat_chips", seat="lbr") == 3.0
    assert value("acpc_invalid_actions_total", seat="bot") == 1
    assert value("acpc_response_seconds_count", seat="lbr") == 1
    assert value("acpc_queries_total", seat="bot") == 2
    assert value("acpc_query_errors_total", seat="bot") == 1
    assert value("acpc_timeouts_total", seat="bot") == 1
    assert value("acpc_disconnects_total", seat="lbr") == 1
    assert value("acpc_range_inconsistencies_total") == 2
    assert value("acpc_estimate_mbb_per_game", estimator="io") == 12.5
    match.retire()
    assert value("acpc_hands_total") is None
    assert value("acpc_estimate_mbb_per_game", estimator="io") is None


def test_page_renders_on_the_calling_thread_in_both_formats() -> None:
    """/metrics is rendered during the request, on the reactor's thread: the resource returns the
    body itself (a thread-pool resource returns NOT_DONE_YET), in Prometheus text by default and
    in OpenMetrics when the scraper asks for it; no ``_created`` series is exported."""
    from prometheus_client import CollectorRegistry
    from twisted.web.test.requesthelper import DummyRequest

    from dealer.metrics import MetricsPage

    metrics = DealerMetrics(CollectorRegistry())
    metrics.match("m", ["a", "b"]).hand_finished({"a": 1.0, "b": -1.0})
    page = MetricsPage(metrics.registry)
    plain = DummyRequest([b""])
    body = page.render(plain)
    assert isinstance(body, bytes)
    assert b'acpc_hands_total{match="m"} 1.0' in body
    assert b"_created" not in body
    assert plain.responseHeaders.getRawHeaders(b"content-type")[0].startswith(b"text/plain")
    open_metrics = DummyRequest([b""])
    open_metrics.requestHeaders.setRawHeaders(b"accept", [b"application/openmetrics-text; version=1.0.0"])
    body = page.render(open_metrics)
    assert isinstance(body, bytes) and body.endswith(b"# EOF\n")
    assert open_metrics.responseHeaders.getRawHeaders(b"content-type")[0].startswith(
        b"application/openmetrics-text")


def test_matches_running_follows_the_match_events() -> None:
    """acpc_matches_running counts matches between match_started and their end, once each."""
    from prometheus_client import CollectorRegistry

    from dealer import events as ev

    registry = CollectorRegistry()
    metrics = DealerMetrics(registry)
    first, second = metrics.match("m", ["a", "b"]), metrics.match("m.dup", ["b", "a"])
    started = ev.MatchStarted(hands=2, seed=1, names=("a", "b"), first_hand=0)
    finished = ev.MatchFinished(score="SCORE:0|0:a|b", hands=2, corrections=(0, 0), ignored=(0, 0),
                                exit_code=0, totals={"a": "0", "b": "0"})
    early = ev.MatchEndedEarly(score="SCORE:0|0:a|b", hands=1, corrections=(0, 0), ignored=(0, 0),
                               exit_code=3, totals={"a": "0", "b": "0"})

    def running() -> float | None:
        return registry.get_sample_value("acpc_matches_running")

    assert running() == 0
    first.observe(started)
    second.observe(started)
    first.observe(started)  # counted once
    assert running() == 2
    first.observe(finished)
    first.observe(early)  # ended once
    assert running() == 1
    second.observe(early)
    assert running() == 0


def test_live_estimates_publish_the_documents_interval() -> None:
    """The published interval of each running estimate is the one a results document prints for the same
    hands (raw within seats, duplicate over pairs), up to rounding."""
    import numpy as np
    import pytest
    from prometheus_client import generate_latest

    from acpc_lbr.estimators import HandOutcome, MatchEstimates
    from acpc_lbr.results import estimates_from_outcomes, results_document

    rng = np.random.default_rng(8)
    outcomes = [HandOutcome(d, h, float(rng.choice([-100.0, 0.0, 700.0], p=[0.5, 0.4, 0.1]) + 60 * ((d + h) % 2)))
                for d in range(150) for h in (0, 1)]
    live = MatchEstimates.live_only()
    for outcome in outcomes:
        live.add(outcome)
    metrics = DealerMetrics()
    metrics.match("m", ["lbr", "bot"]).publish_estimates(live, 100)
    samples = _samples(generate_latest(metrics.registry).decode())
    document = results_document({"game": "nolimit"}, estimates_from_outcomes(outcomes), 100)
    for name in ("raw", "duplicate"):
        figures = document["estimators"][name]["mbb_per_game"]  # type: ignore[literal-required]
        labels = (("estimator", name), ("match", "m"))
        assert samples[("acpc_estimate_low_95_mbb_per_game", labels)] == pytest.approx(figures["low_95"], rel=1e-9)
        assert samples[("acpc_estimate_high_95_mbb_per_game", labels)] == pytest.approx(figures["high_95"], rel=1e-9)
        assert samples[("acpc_estimate_half_width_mbb_per_game", labels)] == pytest.approx(figures["half_width_95"],
                                                                                           rel=1e-9)


def test_running_estimates_are_computed_when_read_not_after_every_hand(monkeypatch: Any) -> None:
    """The running estimates (their intervals: a third of a millisecond, more than the dealer's
    own work per hand) are published when the registry is read -- a scrape, a sample read --
    once for all the hands since the last read, with the figures of the last hand; a retired
    match is no longer published."""
    from prometheus_client.exposition import generate_latest

    from acpc_lbr.estimators import HandOutcome, MatchEstimates
    from dealer.metrics import MatchMetrics

    published: list[int] = []
    original = MatchMetrics.publish_estimates

    def counting(self: MatchMetrics, estimates: MatchEstimates, big_blind: int, min_units: int = 1) -> None:
        published.append(estimates.estimator("raw").n)
        original(self, estimates, big_blind, min_units)

    monkeypatch.setattr(MatchMetrics, "publish_estimates", counting)
    metrics = DealerMetrics()
    match = metrics.match("m", ["lbr", "bot"])
    live = MatchEstimates.live_only()
    for deal in range(50):
        live.add(HandOutcome(deal, 0, float(deal % 3) * 100.0))
        match.estimates_changed(live, 100)
    assert published == []
    text = generate_latest(metrics.registry).decode()
    assert published == [50] and 'acpc_estimate_units{estimator="raw",match="m"} 50.0' in text
    assert metrics.registry.get_sample_value("acpc_estimate_units", {"match": "m", "estimator": "raw"}) == 50
    assert published == [50]  # nothing new: not computed again
    live.add(HandOutcome(50, 0, 100.0))
    match.estimates_changed(live, 100)
    match.retire()
    generate_latest(metrics.registry)
    assert published == [50] and metrics.before_collect == []


def test_latency_histograms_export_what_prometheus_clients_histogram_would() -> None:
    """The dealer's plain-count histograms (dealer.metrics.LatencyHistogram) give the same
    exposition, text and OpenMetrics, as prometheus_client's Histogram fed the same values:
    values on a bucket's bound, between bounds, above the largest, and two series."""
    from prometheus_client import CollectorRegistry, Histogram
    from prometheus_client.exposition import generate_latest
    from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics

    from dealer.metrics import LATENCY_BUCKETS, LatencyHistogram

    theirs_registry, ours_registry = CollectorRegistry(), CollectorRegistry()
    theirs = Histogram("acpc_x_seconds", "help text", ["match", "seat"], buckets=LATENCY_BUCKETS,
                       registry=theirs_registry)
    ours = LatencyHistogram("acpc_x_seconds", "help text", ("match", "seat"), ours_registry)
    values = [*LATENCY_BUCKETS, 0.0, 3e-5, 0.0007, 0.3, 10.000001, 42.0, 1e-4]
    for index, seconds in enumerate(values):
        seat = "ab"[index % 2]
        theirs.labels("m", seat).observe(seconds)
        ours.labels("m", seat).observe(seconds)
    for generate in (generate_latest, generate_openmetrics):
        assert generate(ours_registry) == generate(theirs_registry)
    ours.remove("m", "a")
    theirs.remove("m", "a")
    assert generate_latest(ours_registry) == generate_latest(theirs_registry)


def test_the_last_match_s_series_stay_until_the_process_ends() -> None:
    """A finished match's series go a grace after its end while another match of the process
    still plays; the last one's stay, so the grace the process announces after its SCORE line
    (``linger``) cannot outlast them. (A live test scraped 3.3 s after the last match ended, with
    a 3 s grace, and found its series gone while the endpoint still served.)"""
    from types import SimpleNamespace

    from twisted.internet.task import Clock

    from dealer.events import MatchFinished
    from dealer.results import DealerResults

    clock = Clock()
    results = object.__new__(DealerResults)  # only what the hook reads: two matches, a clock
    results.reactor, results.metrics_grace, results._finished = clock, 3.0, 0
    results.groups = [SimpleNamespace(matches=["first", "second"])]
    retired: list[str] = []
    observers = {name: SimpleNamespace(retire=lambda name=name: retired.append(name))
                 for name in ("first", "second")}
    ended = MatchFinished(score="SCORE:0|0:a|b", hands=1, corrections=(0, 0),
                          ignored=(0, 0), exit_code=0, totals={})
    hooks = {name: results._on_finish(observer) for name, observer in observers.items()}  # type: ignore[arg-type]
    hooks["first"](ended)
    clock.advance(2.9)
    assert retired == []
    hooks["second"](ended)
    clock.advance(0.2)
    assert retired == ["first"]
    clock.advance(3600)
    assert retired == ["first"], "the last match's series were removed before the process ended"

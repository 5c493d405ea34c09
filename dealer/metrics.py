"""Prometheus metrics of a dealer process, served from its own Twisted reactor.

``/metrics`` is rendered on the reactor thread (:class:`MetricsPage`), not by
prometheus_client's Twisted resource, which serves from the reactor's thread
pool: at shutdown the reactor joins that pool while a worker waits for the
reactor to write its response, and the process hangs. Rendering takes well
under a millisecond for one dealer's series.

Every series carries a ``match`` label. A finished match's series are
removed after a grace period (:meth:`MatchMetrics.retire`), so a
long-running dealer does not grow without bound. Latencies use buckets from
100 µs, since a loopback reply takes 60-200 µs.

Names follow the Prometheus conventions (``acpc_`` prefix, base units,
``_total`` for counters); docs/metrics.md lists and documents every
exported sample name.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, disable_created_metrics
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.metrics_core import HistogramMetricFamily
from prometheus_client.utils import floatToGoString
from twisted.internet.interfaces import IAddress, IProtocol, IProtocolFactory
from twisted.internet.protocol import connectionDone
from twisted.protocols.policies import ProtocolWrapper, WrappingFactory
from twisted.python.failure import Failure
from twisted.web.resource import Resource

from acpc_lbr.estimators import ESTIMATORS, MatchEstimates
from dealer import events as ev
from dealer.events import Cause, EventRecord, QueryCause
from dealer.fds import SEAT_FD_RESERVE, free_fds
from dealer.interfaces import Clock, DelayedCall, ListeningPort

if TYPE_CHECKING:  # twisted.web.server costs the dealer ~90 ms of imports at start-up
    from twisted.web.server import Request

# No ``*_created`` series: they carry the counter's HELP text under another
# name ("acpc_hands_created: Hands finished") and say nothing a scrape needs.
disable_created_metrics()  # type: ignore[no-untyped-call]

#: Latency buckets in seconds, from 100 µs to 10 s.
LATENCY_BUCKETS = (
    1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
)


def _interval_gauges(registry: CollectorRegistry) -> tuple[Gauge, Gauge]:
    """The two ends of each running estimate's printed 95% interval (a results document's low_95, high_95)."""
    return (Gauge("acpc_estimate_low_95_mbb_per_game",
                  "Lower end of the printed 95% interval of each running estimate (a results document's low_95)",
                  ["match", "estimator"], registry=registry),
            Gauge("acpc_estimate_high_95_mbb_per_game",
                  "Upper end of the printed 95% interval of each running estimate (a results document's high_95)",
                  ["match", "estimator"], registry=registry))


class LatencyHistogram:
    """A histogram family over :data:`LATENCY_BUCKETS`, kept as plain counts and exported when the
    registry is read (a collector of the registry, under the same names and text as
    prometheus_client's ``Histogram``: ``_bucket``, ``_count``, ``_sum``).

    Every action of a match is one observation. prometheus_client's ``Histogram``
    walks its buckets in Python and takes a lock per update, several microseconds an
    action: with metrics on, that was a third of the dealer's own work per hand. Here
    an observation is a bisection and two additions, on the reactor thread, which is
    also the thread the registry is read on (:class:`MetricsPage`).
    """

    def __init__(self, name: str, documentation: str, labelnames: tuple[str, ...],
                 registry: CollectorRegistry) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = labelnames
        self._children: dict[tuple[str, ...], LatencyCounts] = {}
        registry.register(self)

    def labels(self, *values: str) -> LatencyCounts:
        """The counts of one series (made at first use)."""
        child = self._children.get(values)
        if child is None:
            if len(values) != len(self.labelnames):
                raise ValueError(f"{self.name}: {len(self.labelnames)} label values expected, got {values!r}")
            child = self._children[values] = LatencyCounts()
        return child

    def remove(self, *values: str) -> None:
        """Drop one series (KeyError if there is none, as prometheus_client's families)."""
        del self._children[values]

    def describe(self) -> list[HistogramMetricFamily]:
        return [HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)]

    def collect(self) -> list[HistogramMetricFamily]:
        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)
        for values, child in self._children.items():
            cumulative, buckets = 0, []
            for bound, count in zip(_LATENCY_LE, child.counts):
                cumulative += count
                buckets.append((bound, float(cumulative)))
            family.add_metric(list(values), buckets, child.sum)
        return [family]


class LatencyCounts:
    """One series of a :class:`LatencyHistogram`: how many observations fell in each bucket
    (the last is above the largest bound), and their sum."""

    __slots__ = ("counts", "sum")

    def __init__(self) -> None:
        self.counts = [0] * (len(LATENCY_BUCKETS) + 1)
        self.sum = 0.0

    def observe(self, seconds: float) -> None:
        self.counts[bisect_left(LATENCY_BUCKETS, seconds)] += 1  # a bucket holds values <= its bound
        self.sum += seconds


def _latency_histograms(registry: CollectorRegistry) -> tuple[LatencyHistogram, LatencyHistogram]:
    """The seats' response times and their range queries' answer times."""
    return (LatencyHistogram("acpc_response_seconds",
                             "Time from sending a state to a seat until its action arrived",
                             ("match", "seat"), registry),
            LatencyHistogram("acpc_query_seconds", "Time a seat took to answer a range query",
                             ("match", "seat"), registry))


#: The ``le`` label of each bucket, as prometheus_client writes it.
_LATENCY_LE = (*(floatToGoString(bound) for bound in LATENCY_BUCKETS), "+Inf")  # type: ignore[no-untyped-call]


class DealerMetrics:
    """The metric families of one dealer process, on an injectable registry.

    Args:
        registry: where to register (tests pass a fresh ``CollectorRegistry``).
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        #: Called before every read of the registry (a scrape, ``get_sample_value``): the
        #: figures that are costly to keep current after every hand are brought up to date
        #: then (:meth:`MatchMetrics.estimates_changed`). Registered first, so it runs first.
        self.before_collect: list[Callable[[], None]] = []
        r.register(_BeforeCollect(self.before_collect))
        self.hands = Counter("acpc_hands", "Hands finished", ["match"], registry=r)
        self.seat_chips = Gauge(
            "acpc_seat_chips", "Net chips won so far by each seat", ["match", "seat"], registry=r
        )
        self.estimate = Gauge(
            "acpc_estimate_mbb_per_game",
            "Running estimate of the measured seat's winnings, by estimator",
            ["match", "estimator"],
            registry=r,
        )
        self.estimate_half_width = Gauge(
            "acpc_estimate_half_width_mbb_per_game",
            "1.96 times the standard error of each running estimate (its printed interval: acpc_estimate_low_95...)",
            ["match", "estimator"],
            registry=r,
        )
        self.estimate_low, self.estimate_high = _interval_gauges(r)
        self.estimate_units = Gauge(
            "acpc_estimate_units",
            "Independent units (hands or duplicate pairs) behind each estimate",
            ["match", "estimator"],
            registry=r,
        )
        self.response_seconds, self.query_seconds = _latency_histograms(r)
        self.queries = Counter("acpc_queries", "Range queries sent to a seat", ["match", "seat"], registry=r)
        self.query_errors = Counter(
            "acpc_query_errors", "Range queries that ended in QUERYERROR", ["match", "seat"], registry=r
        )
        self.timeouts = Counter("acpc_timeouts", "Seats that ran out of time", ["match", "seat"], registry=r)
        self.invalid_actions = Counter(
            "acpc_invalid_actions", "Actions corrected by the dealer", ["match", "seat"], registry=r
        )
        self.disconnects = Counter(
            "acpc_disconnects", "Seats that disconnected before the match ended", ["match", "seat"], registry=r
        )
        self.range_inconsistencies = Counter(
            "acpc_range_inconsistencies",
            "Opponent actions that its own range answers gave probability 0",
            ["match"],
            registry=r,
        )
        self.matches_running = Gauge(
            "acpc_matches_running", "Matches between their start and their end", registry=r
        )

    def match(self, name: str, seats: Iterable[str]) -> MatchMetrics:
        """Create the series of one match (every counter starts visible at 0)."""
        return MatchMetrics(self, name, list(seats))


class _BeforeCollect:
    """A collector with no samples of its own, which runs the registry's ``before_collect``
    hooks when the registry is read (prometheus_client reads its collectors in order)."""

    def __init__(self, hooks: list[Callable[[], None]]) -> None:
        self.hooks = hooks

    def collect(self) -> list[HistogramMetricFamily]:  # no samples of its own
        for hook in list(self.hooks):
            hook()
        return []


class MatchMetrics:
    """The labelled children of one match; call :meth:`retire` to drop them."""

    def __init__(self, metrics: DealerMetrics, name: str, seats: list[str]) -> None:
        self.metrics = metrics
        self.name = name
        self.seats = seats
        for seat in seats:
            for family in self._seat_families():
                family.labels(name, seat)
        #: Labelled children kept (a ``labels`` look-up takes a lock and builds a key: ~10 a hand).
        self._hands = metrics.hands.labels(name)
        self._chips = {seat: metrics.seat_chips.labels(name, seat) for seat in seats}
        self._response = {seat: metrics.response_seconds.labels(name, seat) for seat in seats}
        metrics.range_inconsistencies.labels(name)
        self._totals = [0.0] * len(seats)
        self.running = False
        #: The running estimates to publish at the next read of the registry (None: published).
        self._estimates: tuple[MatchEstimates, int] | None = None
        metrics.before_collect.append(self.publish_pending)

    def _seat_families(self) -> list[MetricWrapperBase | LatencyHistogram]:
        m = self.metrics
        return [
            m.seat_chips, m.response_seconds, m.query_seconds, m.queries, m.query_errors,
            m.timeouts, m.invalid_actions, m.disconnects,
        ]

    def hand_finished(self, seat_totals: dict[str, float]) -> None:
        """Count a hand and publish each seat's running total."""
        self._hands.inc()
        for seat, total in seat_totals.items():
            chips = self._chips.get(seat)
            if chips is None:
                chips = self._chips[seat] = self.metrics.seat_chips.labels(self.name, seat)
            chips.set(total)

    def estimates_changed(self, estimates: MatchEstimates, big_blind: int) -> None:
        """The running estimates moved (a hand was accounted for): they are published at the
        next read of the registry, not now. Their printed intervals take a third of a
        millisecond to compute, more than the dealer's own work per hand, and Prometheus
        reads them once every few seconds."""
        self._estimates = (estimates, big_blind)

    def publish_pending(self) -> None:
        """Publish the running estimates if they moved since they were last published."""
        pending = self._estimates
        if pending is not None:
            self._estimates = None
            self.publish_estimates(*pending)

    def publish_estimate(self, estimator: str, mean: float, half_width: float, units: int,
                         interval: tuple[float, float] = (math.nan, math.nan)) -> None:
        """Publish one estimator's running mean, 1.96 × its standard error and its printed 95% interval in mbb/g."""
        self.metrics.estimate.labels(self.name, estimator).set(mean)
        self.metrics.estimate_half_width.labels(self.name, estimator).set(half_width)
        self.metrics.estimate_low.labels(self.name, estimator).set(interval[0])
        self.metrics.estimate_high.labels(self.name, estimator).set(interval[1])
        self.metrics.estimate_units.labels(self.name, estimator).set(units)

    def publish_estimates(self, estimates: MatchEstimates, big_blind: int, min_units: int = 1) -> None:
        """The one publisher of live estimates: every estimator with ``min_units`` units or more.

        Figures in mbb/g from the running accumulators (:meth:`acpc_lbr.stats.RunningMean.live`), and the
        printed 95% interval a results document gives the same units (:meth:`acpc_lbr.stats.RunningMean.interval`;
        tens of microseconds each).
        """
        scale = 1000.0 / big_blind
        for estimator in ESTIMATORS:
            stat = estimates.estimator(estimator)
            if stat.n >= min_units:
                mean, half_width = stat.live()
                low, high = stat.interval()
                self.publish_estimate(estimator, mean * scale, half_width * scale, stat.n, (low * scale, high * scale))

    def observe(self, event: EventRecord) -> None:
        """An :class:`dealer.events.EventLog` hook: turn the match's events into samples.

        Seats in events are 1-based numbers; series are labelled by name.
        Events: :class:`~dealer.events.ActionPlayed` (response latency,
        corrected actions), :class:`~dealer.events.HandFinished` (hands,
        running chips), :class:`~dealer.events.QueryAnswered` /
        :class:`~dealer.events.QueryErrored` (queries a seat answered or
        failed, with latency), :class:`~dealer.events.MatchAborted` (timeouts,
        disconnects), :class:`~dealer.events.RangeInconsistency`, and
        :class:`~dealer.events.MatchStarted` / :class:`~dealer.events.MatchEnded`
        (``acpc_matches_running``).
        """
        m = self.metrics
        if isinstance(event, ev.ActionPlayed):
            label = self._label(event.seat)
            if label is not None:
                self._response[label].observe(event.seconds)
                if event.corrected:
                    m.invalid_actions.labels(self.name, label).inc()
        elif isinstance(event, ev.HandFinished):
            for index, value in enumerate(event.values):
                self._totals[index] += float(value)
            self.hand_finished(dict(zip(self.seats, self._totals)))
        elif isinstance(event, ev.QueryAnswered):
            label = self._label(event.seat)
            if label is not None:
                m.queries.labels(self.name, label).inc()
                m.query_seconds.labels(self.name, label).observe(event.seconds)
        elif isinstance(event, ev.QueryErrored):
            label = self._label(event.seat)
            if label is not None:
                m.queries.labels(self.name, label).inc()
                m.query_errors.labels(self.name, label).inc()
                if event.cause == QueryCause.TIMEOUT:
                    m.timeouts.labels(self.name, label).inc()
        elif isinstance(event, ev.MatchAborted):
            label = self._label(event.seat)
            if label is not None and event.cause.is_timeout:
                m.timeouts.labels(self.name, label).inc()
            elif label is not None and event.cause == Cause.DISCONNECT:
                m.disconnects.labels(self.name, label).inc()
        elif isinstance(event, ev.RangeInconsistency):
            m.range_inconsistencies.labels(self.name).inc(event.count)
        elif isinstance(event, ev.MatchStarted) and not self.running:
            self.running = True
            m.matches_running.inc()
        elif isinstance(event, ev.MatchEnded) and self.running:
            self.running = False
            m.matches_running.dec()

    def _label(self, seat: object) -> str | None:
        """The series label of a 1-based seat number (None: no seat, or not one of ours)."""
        return self.seats[seat - 1] if isinstance(seat, int) and 0 < seat <= len(self.seats) else None

    def retire(self) -> None:
        """Remove every series of this match."""
        m = self.metrics
        self._estimates = None
        if self.publish_pending in m.before_collect:
            m.before_collect.remove(self.publish_pending)
        for seat in self.seats:
            for family in self._seat_families():
                try:
                    family.remove(self.name, seat)
                except KeyError:
                    pass
        for family in (m.hands, m.range_inconsistencies):
            try:
                family.remove(self.name)
            except KeyError:
                pass
        for family in (m.estimate, m.estimate_half_width, m.estimate_low, m.estimate_high, m.estimate_units):
            for labels in list(family._metrics):  # the estimators published so far
                if labels[0] == self.name:
                    family.remove(*labels)


def metric_names(metrics: DealerMetrics) -> set[str]:
    """Every sample name the registry can export (histograms: _bucket/_sum/_count)."""
    names: set[str] = set()
    for family in metrics.registry.collect():
        if family.type == "counter":
            names.add(family.name + "_total")
        elif family.type == "histogram":
            names.update(family.name + suffix for suffix in ("_bucket", "_sum", "_count"))
        else:
            names.add(family.name)
    return names


class MetricsPage(Resource):
    """``GET /metrics``: the registry in the format the scraper asks for, rendered at once.

    The body is built on the reactor thread during the request, so no thread
    is ever involved (see the module docstring).
    """

    isLeaf = True

    def __init__(self, registry: CollectorRegistry) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.registry = registry

    def render_GET(self, request: Request) -> bytes:
        """The exposition text (Prometheus text, or OpenMetrics when accepted)."""
        accept = request.getHeader(b"accept")
        encoder, content_type = choose_encoder(accept.decode("latin-1") if accept else "")
        request.setHeader(b"Content-Type", content_type.encode("ascii"))  # type: ignore[no-untyped-call]
        body: bytes = encoder(self.registry)
        return body


@dataclass(frozen=True)
class MetricsLimits:
    """What the metrics port may take of the process (docs/metrics.md, "Limits").

    Attributes:
        max_connections: connections open at once; at the cap the port stops accepting
            (more connections wait in the kernel's backlog, at no cost to the dealer) until
            one closes.
        backlog: connections the kernel holds for the port while it does not accept (the
            ``listen`` backlog); past them it completes no new ones (Linux drops their
            first packet: the client's ``connect`` waits, retries and gives up, backing
            off). Twisted's default is 50: each held connection is one the port must
            accept, hold for the header timeout and close before a scraper's next one, so
            an idle attack of cap + 50 connections kept the port busy for
            ``(cap + 50) / cap`` header timeouts, and Prometheus out for as long. One
            cap's worth is enough for a scraper that reconnects while the cap is full.
        idle_timeout: seconds a connection may stay open with no request (Twisted's
            default is 12 hours).
        abort_timeout: seconds a connection closed at the idle timeout may take to read what
            is left of its response before it is cut off (Twisted's default is 15): a
            scraper that reads a byte a second holds a connection idle + abort seconds.
        header_timeout: seconds from a connection, or from the first byte of a
            request, to the end of that request's header: a scraper that sends a
            partial header, or sends it a byte at a time, is cut off then.
        fd_reserve: a connection is refused if it would leave fewer file
            descriptors free than this (:data:`dealer.fds.SEAT_FD_RESERVE`): those
            are the seats'; the port then stops accepting, and looks again every
            ``fd_recheck_s`` seconds.
        max_requests_per_second: requests served per second, over all
            connections; a request past it waits, unread, for the next second
            (its connection is not read meanwhile). So scrapers, however many
            and however fast, cost the dealer a bounded share of its CPU.
        max_connections_per_second: connections accepted per second; at the rate the
            port stops accepting until the second is over. Each connection costs the
            dealer an accept, a protocol and a close whether or not it sends a request:
            a scraper that connects and hangs up in a loop is bounded by this, not by
            the request rate.
        fd_recheck_s: short of the reserve, how often the port looks again.
    """

    max_connections: int = 16
    backlog: int = 16
    idle_timeout: float = 30.0
    abort_timeout: float = 5.0
    header_timeout: float = 10.0
    fd_reserve: int = SEAT_FD_RESERVE
    max_requests_per_second: int = 10
    max_connections_per_second: int = 20
    fd_recheck_s: float = 1.0


class Pausable(Protocol):
    """What :class:`BoundedSite` uses of its listening port (a Twisted ``tcp.Port``, an
    ``IPushProducer``): ``pauseProducing`` stops accepting, ``resumeProducing`` accepts again."""

    disconnecting: bool

    def pauseProducing(self) -> None: ...

    def resumeProducing(self) -> None: ...


class _BoundedConnection(ProtocolWrapper):
    """One metrics connection, cut off if a request's header does not come whole within the timeout."""

    factory: BoundedSite

    def __init__(self, factory: BoundedSite, wrapped: IProtocol) -> None:
        super().__init__(factory, wrapped)
        self._deadline: DelayedCall | None = None
        self._tail = b""
        #: Bytes of a request held back past the request rate, and when they are let through.
        self._held: bytes | None = None
        self._release: DelayedCall | None = None

    def connectionMade(self) -> None:
        self._arm()
        super().connectionMade()  # type: ignore[no-untyped-call]

    def dataReceived(self, data: bytes) -> None:
        if self._held is not None:  # waiting for the next second: kept, not read
            self._held += data
            return
        if self._deadline is None:  # a new request begins
            self._arm()
        seen = self._tail + data
        if b"\r\n\r\n" in seen or b"\n\n" in seen:  # its header is complete
            self._disarm()
            wait = self.factory.admit()
            if wait > 0.0 and self.transport is not None:
                self._held = data
                self.transport.pauseProducing()
                self._release = self.factory.clock.callLater(wait, self._let_through)
                return
        self._tail = seen[-3:]
        super().dataReceived(data)  # type: ignore[no-untyped-call]

    def _let_through(self) -> None:
        """The next second: read the held request again (it may have to wait once more)."""
        held, self._held, self._release = self._held or b"", None, None
        if self.transport is not None:
            self.transport.resumeProducing()
        self.dataReceived(held)

    def write(self, data: bytes) -> None:
        self._disarm()  # answering: the idle timeout (the site's) runs until the next request
        super().write(data)  # type: ignore[no-untyped-call]

    def connectionLost(self, reason: Failure = connectionDone) -> None:
        self._disarm()
        if self._release is not None and self._release.active():
            self._release.cancel()
        self._release = None
        super().connectionLost(reason)  # type: ignore[no-untyped-call]

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.factory.clock.callLater(self.factory.limits.header_timeout, self._expire)

    def _disarm(self) -> None:
        if self._deadline is not None and self._deadline.active():
            self._deadline.cancel()
        self._deadline = None

    def _expire(self) -> None:
        self._deadline = None
        self.factory.turned_away(f"a request header did not come whole within "
                                 f"{self.factory.limits.header_timeout:g} s", refused=False)
        if self.transport is not None:
            self.transport.abortConnection()  # an ITCPTransport


class BoundedSite(WrappingFactory[_BoundedConnection]):
    """The metrics site behind a cap on connections, a header timeout and the seats' descriptor reserve.

    At the cap, at the connection rate, or with no more than the reserve of descriptors
    free, the port stops accepting (:attr:`port`, once :func:`serve_metrics` has set it): a
    listening socket with connections waiting is always readable, so accepting a connection
    only to close it would run once per connection the peer opens -- a loop, at the
    dealer's cost, for a scraper that reconnects at once. Paused, the connections wait in
    the kernel's backlog (then the kernel turns them away), and the dealer does nothing for
    them. It accepts again when a connection closes, when the second is over (the rate),
    or ``fd_recheck_s`` later (the reserve).

    Args:
        site: the ``twisted.web`` site (its ``timeout`` is the idle timeout).
        clock: the reactor (tests: a ``task.Clock``).
        limits: the bounds.
        free_fds: descriptors the process may still open (None: unknown; injectable for tests).
    """

    protocol = _BoundedConnection

    def __init__(self, site: IProtocolFactory, clock: Clock, limits: MetricsLimits,
                 free_fds: Callable[[], int | None] = free_fds) -> None:
        super().__init__(site)  # type: ignore[no-untyped-call]
        self.clock = clock
        self.limits = limits
        self._free_fds = free_fds
        #: Connections closed on accept (accepted in the read of the port that reached a limit, before
        #: the pause), and cut off at the header timeout.
        self.refused = 0
        self.timed_out = 0
        #: Says, once, that the limits began to turn connections away (one line; None: silent).
        self.report: Callable[[str], None] | None = None
        self._reported = False
        #: Requests held back to the next second (the request rate), and this second's requests.
        self.delayed = 0
        self._second = float("-inf")
        self._served = 0
        #: The listening port, paused at the limits (None: not listening yet, or a test's site).
        self.port: Pausable | None = None
        #: Times the port stopped accepting; whether it is stopped now; the pending look at the
        #: limits again (the connection rate's second, the descriptors' reserve).
        self.pauses = 0
        self.accepting = True
        self._recheck: DelayedCall | None = None
        #: The connection rate: when this second began, and the connections accepted in it.
        self._accept_second = float("-inf")
        self._accepted = 0

    def admit(self) -> float:
        """0 if a request may be served now, else the seconds until it may (the request rate)."""
        now = self.clock.seconds()
        if now - self._second >= 1.0:
            self._second, self._served = now, 0
        if self._served < self.limits.max_requests_per_second:
            self._served += 1
            return 0.0
        self.delayed += 1
        return self._second + 1.0 - now

    def buildProtocol(self, addr: IAddress | None) -> ProtocolWrapper | None:  # type: ignore[override]
        """The connection's protocol, or None (closed at once) past a limit (those accepted in
        the same read of the port as the one that reached it; then the port is paused)."""
        if len(self.protocols) >= self.limits.max_connections:
            self.turned_away(self._at_cap())
            self._stop_accepting()
            return None
        short = self._short_of_fds() or self._over_rate()
        if short is not None:
            self.turned_away(short)
            self._stop_accepting()
            return None
        self._accepted += 1
        connection: _BoundedConnection | None = super().buildProtocol(addr)
        if connection is not None and hasattr(connection.wrappedProtocol, "abortTimeout"):  # an HTTPChannel
            connection.wrappedProtocol.abortTimeout = self.limits.abort_timeout
        return connection

    def registerProtocol(self, protocol: _BoundedConnection) -> None:
        super().registerProtocol(protocol)  # type: ignore[no-untyped-call]
        if len(self.protocols) >= self.limits.max_connections:  # the next one would be closed
            self.said(self._at_cap())
            self._stop_accepting()
        else:
            over = self._over_rate()
            if over is not None:  # the next one this second would be closed
                self.said(over)
                self._stop_accepting()

    def unregisterProtocol(self, protocol: _BoundedConnection) -> None:
        super().unregisterProtocol(protocol)  # type: ignore[no-untyped-call]
        self._accept_again()

    def _at_cap(self) -> str:
        return f"{self.limits.max_connections} connections are open (the cap)"

    def _short_of_fds(self) -> str | None:
        """Why no descriptor may go to a scraper now (None: one may); when not, the port looks
        again ``fd_recheck_s`` later."""
        free = self._free_fds()
        if free is not None and free <= self.limits.fd_reserve:
            self._look_again(self.limits.fd_recheck_s)
            return f"{free} file descriptors are free, and {self.limits.fd_reserve} are kept for seats"
        return None

    def _over_rate(self) -> str | None:
        """Why no more connections may be accepted this second (None: one may); when not, the
        port looks again once the second is over."""
        now = self.clock.seconds()
        if now - self._accept_second >= 1.0:
            self._accept_second, self._accepted = now, 0
        limit = self.limits.max_connections_per_second
        if self._accepted < limit:
            return None
        self._look_again(self._accept_second + 1.0 - now)
        return f"{limit} connections were accepted this second (the connection rate)"

    def _look_again(self, delay: float) -> None:
        if self._recheck is None:
            self._recheck = self.clock.callLater(delay, self._rechecked)

    def _stop_accepting(self) -> None:
        port = self.port
        if self.accepting and port is not None:
            self.accepting = False
            self.pauses += 1
            port.pauseProducing()

    def _rechecked(self) -> None:
        self._recheck = None
        self._accept_again()

    def _accept_again(self) -> None:
        """Accept again if under the cap and the rate, and the reserve is free (else look again later)."""
        port = self.port
        if self.accepting or port is None or port.disconnecting:
            return
        if len(self.protocols) >= self.limits.max_connections:
            return  # a connection's close brings it here again
        if self._short_of_fds() is not None or self._over_rate() is not None:
            return  # looked at again later (_over_rate and _short_of_fds say when)
        self.accepting = True
        port.resumeProducing()

    def stopFactory(self) -> None:
        """The port stopped listening: it is never resumed, and no recheck of the reserve is left behind."""
        self.port = None
        if self._recheck is not None and self._recheck.active():
            self._recheck.cancel()
        self._recheck = None
        super().stopFactory()  # type: ignore[no-untyped-call]

    def turned_away(self, why: str, refused: bool = True) -> None:
        """Count a connection refused on accept (or cut off at the header timeout: ``refused``
        False), and say so in one line the first time; the later ones are only counted."""
        if refused:
            self.refused += 1
        else:
            self.timed_out += 1
        self.said(why)

    def said(self, why: str) -> None:
        """The first time the limits turn connections away (or make them wait: at the cap), one line."""
        if self.report is not None and not self._reported:
            self._reported = True
            self.report(f"METRICS the metrics port turns connections away: {why}; the seats are not "
                        f"affected; further ones are counted, not reported (docs/metrics.md, 'Limits')")


def metrics_site(metrics: DealerMetrics, clock: Clock, limits: MetricsLimits | None = None) -> BoundedSite:
    """The bounded factory serving ``/metrics`` (what :func:`serve_metrics` listens with)."""
    from twisted.web.http import HTTPChannel
    from twisted.web.server import Site

    limits = limits or MetricsLimits()
    root = Resource()  # type: ignore[no-untyped-call]
    page: Any = MetricsPage(metrics.registry)  # an IResource (zope interfaces confuse mypy)
    root.putChild(b"metrics", page)
    site: Any = Site(root, timeout=limits.idle_timeout, reactor=clock)  # type: ignore[no-untyped-call]
    # The HTTP/1.1 channel itself, not the wrapper that would negotiate HTTP/2 (with the h2 package,
    # which the dealer does not install): abortTimeout must be set on the channel that times out
    # (BoundedSite.buildProtocol), and the wrapper would keep it.
    site.protocol = HTTPChannel
    return BoundedSite(site, clock, limits)


def serve_metrics(metrics: DealerMetrics, port: int, interface: str = "127.0.0.1",
                  limits: MetricsLimits | None = None,
                  report: Callable[[str], None] | None = None) -> ListeningPort:
    """Serve ``/metrics`` from the running reactor (no thread), within ``limits``; returns the port.
    ``report`` gets one line the first time the limits turn a connection away."""
    from twisted.internet import reactor as installed_reactor

    tcp: Any = installed_reactor  # zope interfaces confuse mypy
    site = metrics_site(metrics, tcp, limits)
    site.report = report
    listening: Any = tcp.listenTCP(port, site, backlog=site.limits.backlog, interface=interface)
    site.port = listening  # a tcp.Port: paused at the limits
    opened: ListeningPort = listening
    return opened

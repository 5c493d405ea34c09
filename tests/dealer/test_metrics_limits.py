"""The metrics port is bounded (dealer/metrics.py ``MetricsLimits``), and scraping never keeps a bot
from its seat (dealer/fds.py ``SEAT_FD_RESERVE``).

The attack of issue 33: under a 1,024-descriptor limit, 1,100 idle connections that sent only a
partial request header took the dealer to 1,024 open files, after which no bot could connect and
the match ended blaming the bot. Every test here is on 127.0.0.1, bounded in connections (at most
300) and in time (a few seconds).
"""

from __future__ import annotations

import resource
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import pytest_twisted
from twisted.internet import reactor, task
from twisted.internet.address import IPv4Address
from twisted.internet.error import ConnectionDone
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport
from twisted.internet.threads import deferToThread
from twisted.python.failure import Failure

from dealer import fds
from dealer.match import MatchResult
from dealer.metrics import BoundedSite, DealerMetrics, MetricsLimits, metrics_site, serve_metrics
from tests.dealer.harness import MemoryTable, make_config
from tests.dealer.test_cli import ACPC_LBR, start_bot

SMALL = MetricsLimits(max_connections=3, idle_timeout=2.0, header_timeout=0.4, fd_reserve=0)


def _serve(site: BoundedSite) -> tuple[object, int]:
    port = reactor.listenTCP(0, site, interface="127.0.0.1")  # type: ignore[attr-defined]
    return port, port.getHost().port


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    """Whether the peer closes ``sock`` within ``seconds`` (it never answers: partial requests)."""
    sock.settimeout(seconds)
    try:
        return sock.recv(1024) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def _scrape(port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        return int(response.status)


@pytest_twisted.ensureDeferred
async def test_connections_past_the_cap_wait_and_partial_headers_time_out() -> None:
    """Three held connections fill the cap: a fourth waits, unaccepted (the port is paused), and
    is served once the header timeout has cut the others off. Partial headers, sent at once or a
    byte at a time, are cut off at the header timeout, and the port serves again."""
    site = metrics_site(DealerMetrics(), reactor, SMALL)  # type: ignore[arg-type]
    port, number = _serve(site)
    site.port = port  # type: ignore[assignment]  # a tcp.Port (serve_metrics sets it so)

    def attack() -> tuple[bool, bool, list[bool], float, int]:
        held = [socket.create_connection(("127.0.0.1", number)) for _ in range(3)]
        time.sleep(0.1)
        extra = socket.create_connection(("127.0.0.1", number))
        extra.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        extra.settimeout(0.2)
        try:
            extra.recv(1024)
            extra_waits = False  # answered or closed: it was accepted past the cap
        except TimeoutError:
            extra_waits = True
        held[0].sendall(b"GET /metr")  # a partial header
        start = time.monotonic()
        dripped_alive = True
        for byte in b"GET /metrics HTTP/1.1\r\nHost: x\r\n":  # a byte every 0.05 s: idle never expires
            try:
                held[1].sendall(bytes([byte]))
            except OSError:
                dripped_alive = False
                break
            time.sleep(0.05)
        closed = [_closed_within(s, 1.0) for s in held]
        elapsed = time.monotonic() - start
        extra.settimeout(2.0)
        served = extra.recv(1024).startswith(b"HTTP/1.1 200")  # accepted once the others were cut off
        status = _scrape(number)
        for s in [*held, extra]:
            s.close()
        return extra_waits and served, dripped_alive, closed, elapsed, status

    try:
        extra_waited, dripped_alive, closed, elapsed, status = await deferToThread(attack)
    finally:
        await port.stopListening()  # type: ignore[attr-defined]
    assert extra_waited, "a connection past the cap was not kept waiting, then served"
    assert not dripped_alive or closed[1], "a header sent a byte at a time outlived the header timeout"
    assert closed == [True, True, True] and elapsed < 2.0
    assert status == 200
    assert site.pauses >= 1 and site.timed_out == 3 and site.accepting


class _Port:
    """A listening port's pause and resume (tcp.Port, an IPushProducer), recorded."""

    disconnecting = False

    def __init__(self) -> None:
        self.steps: list[str] = []

    def pauseProducing(self) -> None:
        self.steps.append("pause")

    def resumeProducing(self) -> None:
        self.steps.append("resume")


def _connect(site: BoundedSite) -> object:
    protocol = site.buildProtocol(IPv4Address("TCP", "127.0.0.1", 40000))
    if protocol is not None:
        protocol.makeConnection(StringTransport())
    return protocol


def test_at_the_cap_the_port_stops_accepting_until_a_connection_closes() -> None:
    """Accepting a connection only to close it would loop at the dealer's cost against a scraper
    that reconnects at once (a listening socket with connections waiting is always readable): at
    the cap the port is paused, and it accepts again when a connection closes."""
    clock = Clock()
    site = metrics_site(DealerMetrics(), clock, SMALL)  # type: ignore[arg-type]
    site.port = port = _Port()
    site.doStart()  # as the port does when it listens
    lines: list[str] = []
    site.report = lines.append
    held = [_connect(site) for _ in range(3)]
    assert port.steps == ["pause"] and not site.accepting
    assert len(lines) == 1 and "16" not in lines[0] and "3 connections are open (the cap)" in lines[0]
    # One more accepted in the same read of the port is closed, without a second pause.
    assert _connect(site) is None and site.refused == 1 and port.steps == ["pause"]
    held[0].connectionLost(Failure(ConnectionDone()))  # type: ignore[attr-defined]
    assert port.steps == ["pause", "resume"] and site.accepting
    clock.advance(SMALL.header_timeout)  # the other two are cut off: nothing more to resume
    assert port.steps == ["pause", "resume"] and len(lines) == 1
    held = [_connect(site) for _ in range(3)]
    site.doStop()  # the port stopped listening (while paused): a close later does not resume it
    held[0].connectionLost(Failure(ConnectionDone()))  # type: ignore[attr-defined]
    assert port.steps == ["pause", "resume", "pause"]


@pytest_twisted.ensureDeferred
async def test_past_the_cap_and_a_small_backlog_the_kernel_turns_connections_away() -> None:
    """An idle attack used to fill Twisted's default backlog of 50 behind the cap: each of those
    connections the port must later accept and hold for a header timeout before a real scraper
    gets in. The port listens with ``backlog`` (one cap's worth): past the cap and the backlog a
    new connection is not completed by the kernel (on Linux its first packet is dropped, so the
    client's connect waits), and no more than cap + backlog + 1 stay open."""
    limits = MetricsLimits(max_connections=2, backlog=2, header_timeout=5.0, fd_reserve=0)
    port = serve_metrics(DealerMetrics(), 0, limits=limits)
    number = port.getHost().port  # type: ignore[attr-defined]

    def attack() -> tuple[int, int]:
        opened: list[socket.socket] = []
        try:
            for _ in range(12):  # the default backlog would take all twelve
                try:
                    opened.append(socket.create_connection(("127.0.0.1", number), timeout=0.5))
                except TimeoutError:
                    break
            time.sleep(0.2)  # any closed at once (accepted in the read that reached the cap) are closed now
            alive = 0
            for sock in opened:
                sock.setblocking(False)
                try:
                    alive += sock.recv(1) != b""
                except BlockingIOError:
                    alive += 1
                except OSError:
                    pass
            return len(opened), alive
        finally:
            for sock in opened:
                sock.close()

    try:
        opened, alive = await deferToThread(attack)
    finally:
        await port.stopListening()
    assert opened < 12, "the kernel completed every connection: the backlog is not the small one"
    assert alive <= limits.max_connections + limits.backlog + 1, (opened, alive)


@pytest_twisted.ensureDeferred
async def test_a_scraper_that_does_not_read_its_response_is_cut_off() -> None:
    """A scraper that sends a whole request and reads the response a byte a second (or never) keeps
    its connection past the idle timeout, while the dealer waits to send the rest: Twisted then
    waits 15 s more before it cuts it off. The limits cut it off ``abort_timeout`` after the idle
    timeout, so such a scraper holds one of the capped connections idle + abort seconds at most."""
    metrics = DealerMetrics()
    for index in range(20):  # about 120 KB of samples: more than the sockets' buffers below hold
        metrics.match(f"match{index}", ["alpha", "beta"])
    limits = MetricsLimits(idle_timeout=1.0, abort_timeout=0.5, fd_reserve=0)
    site = metrics_site(metrics, reactor, limits)  # type: ignore[arg-type]
    port, number = _serve(site)
    reader = socket.socket()
    reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1)  # the smallest the system allows
    try:
        await deferToThread(reader.connect, ("127.0.0.1", number))
        while not site.protocols:
            await task.deferLater(reactor, 0.01, lambda: None)  # type: ignore[arg-type]
        # A fixed send buffer on the dealer's side (the kernel would grow it to take the whole
        # response, then hold the rest itself, off the dealer's books): the rest stays the dealer's.
        (served,) = site.protocols
        served.transport.getHandle().setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)  # type: ignore[attr-defined]
        reader.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        started = time.monotonic()
        await task.deferLater(reactor, limits.idle_timeout + 0.25, lambda: None)  # type: ignore[arg-type]
        still_sending = len(site.protocols) == 1  # past the idle timeout, the rest not yet read
        while site.protocols and time.monotonic() - started < 10.0:
            await task.deferLater(reactor, 0.05, lambda: None)  # type: ignore[arg-type]
        closed_after = time.monotonic() - started
    finally:
        reader.close()
        await port.stopListening()  # type: ignore[attr-defined]
    assert still_sending, "the response fit in the buffers: the test needs a larger one"
    assert closed_after < 1.0 + 0.5 + 1.0  # idle + abort (Twisted alone: 1.0 + 15)


def test_at_the_connection_rate_the_port_stops_accepting_until_the_second_is_over() -> None:
    """A scraper that connects and hangs up in a loop never reaches the cap, and sends no request
    for the request rate to count; each connection costs an accept, a protocol and a close. At
    ``max_connections_per_second`` the port is paused until the second is over."""
    clock = Clock()
    limits = MetricsLimits(max_connections=16, max_connections_per_second=4, fd_reserve=0)
    site = metrics_site(DealerMetrics(), clock, limits)  # type: ignore[arg-type]
    site.port = port = _Port()
    lines: list[str] = []
    site.report = lines.append
    for _ in range(4):
        connection = _connect(site)
        assert connection is not None
        connection.connectionLost(Failure(ConnectionDone()))  # type: ignore[attr-defined]
    assert port.steps == ["pause"] and not site.accepting
    assert len(lines) == 1 and "4 connections were accepted this second" in lines[0]
    clock.advance(0.5)
    assert port.steps == ["pause"]
    clock.advance(0.5)  # the second is over
    assert port.steps == ["pause", "resume"] and site.accepting
    assert _connect(site) is not None and port.steps == ["pause", "resume"]


def test_short_of_the_seats_reserve_the_port_stops_accepting_and_looks_again_later() -> None:
    """With no more than the reserve free, the connection is closed and the port paused; it is
    looked at again every ``fd_recheck_s`` until descriptors are free."""
    clock = Clock()
    free = [100]
    site = BoundedSite(metrics_site(DealerMetrics(), clock).wrappedFactory, clock,  # type: ignore[arg-type]
                       MetricsLimits(fd_reserve=100, fd_recheck_s=1.0), free_fds=lambda: free[0])
    site.port = port = _Port()
    assert _connect(site) is None and port.steps == ["pause"] and site.refused == 1
    clock.advance(1.0)
    assert port.steps == ["pause"]  # still short: looked at again later
    free[0] = 101
    clock.advance(1.0)
    assert port.steps == ["pause", "resume"] and site.accepting
    assert _connect(site) is not None and clock.getDelayedCalls() != []  # its header timeout


@pytest_twisted.ensureDeferred
async def test_the_seats_reserve_of_descriptors_is_never_given_to_a_scraper() -> None:
    """With no more than the reserve free, a scrape is closed on accept; with more, it is served."""
    free = [100]
    site = BoundedSite(metrics_site(DealerMetrics(), reactor).wrappedFactory, reactor,  # type: ignore[arg-type]
                       MetricsLimits(fd_reserve=100), free_fds=lambda: free[0])
    port, number = _serve(site)
    try:
        def refused() -> bool:
            with socket.create_connection(("127.0.0.1", number)) as sock:
                return _closed_within(sock, 1.0)

        assert await deferToThread(refused)
        free[0] = 101
        assert await deferToThread(_scrape, number) == 200
    finally:
        await port.stopListening()  # type: ignore[attr-defined]
    assert site.refused == 1


def test_a_dealer_out_of_descriptors_says_so(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: 'timed out waiting for seat 1', with no word of the files. Now the line says why."""
    monkeypatch.setattr(fds, "free_fds", lambda: 2)
    table = MemoryTable(make_config("fd", start_timeout_ms=100))
    table.clock.advance(1.0)
    assert table.done.called
    result: MatchResult = table.done.result
    assert "out of file descriptors" in result.message and "ulimit -n" in result.message


def test_free_descriptors_are_counted() -> None:
    """fds.free_fds is the limit less what is open: opening a file takes one."""
    before = fds.free_fds()
    if before is None:
        pytest.skip("this system does not list open descriptors")
    with open(__file__, encoding="utf-8"):
        assert fds.free_fds() == before - 1


def _metrics_line(err: Path, proc: subprocess.Popen[str], seconds: float) -> str:
    """The dealer's ``METRICS`` line on its stderr (the file ``err``): it may come just after
    the port line. Read by path: a handle shared with the child would share its offset, and a
    seek here would move where the dealer writes next."""
    deadline = time.monotonic() + seconds
    while True:
        text = err.read_text()
        found = [line for line in text.splitlines() if line.startswith("METRICS http")]
        if found:
            return found[0]
        assert time.monotonic() < deadline and proc.poll() is None, (
            f"the dealer printed no METRICS line in {seconds} s (exit {proc.poll()}): {text!r}")
        time.sleep(0.05)


@pytest.fixture
def dealer_at_256_files(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], list[int], int]]:
    """``acpc-lbr dealer`` (5 hands) with metrics, under a limit of 256 open files."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    err = open(tmp_path / "dealer.err", "a")  # noqa: SIM115  (O_APPEND: the dealer's writes go to the end)
    proc = subprocess.Popen([str(ACPC_LBR), "dealer", "m", "nolimit", "5", "1", "a", "b", "-q",
                             "--metrics-port", "0", "--metrics-grace", "0", "--start_timeout", "20000"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=err, text=True, preexec_fn=limit)
    try:
        assert proc.stdout is not None
        seats = [int(p) for p in proc.stdout.readline().split()]
        metrics = _metrics_line(tmp_path / "dealer.err", proc, seconds=20)
        yield proc, seats, int(metrics.rsplit(":", 1)[1].split("/")[0])
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        err.close()


def test_300_idle_scrapers_do_not_keep_the_bots_from_their_seats(
        dealer_at_256_files: tuple[subprocess.Popen[str], list[int], int], tmp_path: Path) -> None:
    """The attack of issue 33, scaled to a 256-file limit: 300 connections to the metrics port
    sending a partial header, then the bots connect and the match is played to its end."""
    proc, seats, metrics_port = dealer_at_256_files
    scrapers = []
    try:
        for _ in range(300):
            try:
                # Past the cap the port accepts nothing: once the kernel's backlog is full too,
                # a connection is not even set up (it would time out): the attack has all it can get.
                sock = socket.create_connection(("127.0.0.1", metrics_port), timeout=0.5)
            except OSError:
                break
            scrapers.append(sock)
            try:
                sock.sendall(b"GET /metrics HTTP/1.1\r\nHo")
            except OSError:
                pass  # closed by a limit
        assert len(scrapers) >= 16  # the cap, at least: the rest wait in the backlog
        bots = [start_bot(port, "holdem.nolimit.2p.reverse_blinds.game") for port in seats]
        out, _ = proc.communicate(timeout=60)
        for bot in bots:
            bot.wait(timeout=30)
    finally:
        for sock in scrapers:
            sock.close()
    err = (tmp_path / "dealer.err").read_text()
    assert proc.returncode == 0, err
    assert out.splitlines()[-1].startswith("SCORE:"), out


def test_accepts_refused_for_want_of_descriptors_are_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    """Twisted's EMFILE recovery (accept, close, log) is counted, so the note holds after the
    descriptors are free again."""
    from twisted.logger import Logger

    monkeypatch.setattr(fds, "ACCEPT_FAILURES", fds._AcceptFailures())
    monkeypatch.setattr(fds, "free_fds", lambda: 500)
    assert fds.shortage_note() == ""
    fds.ACCEPT_FAILURES.watching = False
    fds.watch_accept_failures()
    try:
        Logger().info("EMFILE encountered; releasing reserved file descriptor.")
        assert "1 connection(s) could not be accepted" in fds.shortage_note()
    finally:
        from twisted.logger import globalLogPublisher
        globalLogPublisher.removeObserver(fds.ACCEPT_FAILURES.observe)


@pytest_twisted.ensureDeferred
async def test_requests_past_the_rate_wait_for_the_next_second() -> None:
    """Six scrapes at once against a rate of two a second: two are served at once, the rest
    wait (their connections unread), so the last is served about two seconds later."""
    limits = MetricsLimits(max_requests_per_second=2, fd_reserve=0)
    site = metrics_site(DealerMetrics(), reactor, limits)  # type: ignore[arg-type]
    port, number = _serve(site)

    def six() -> float:
        import concurrent.futures

        started = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            assert list(pool.map(lambda _: _scrape(number), range(6))) == [200] * 6
        return time.monotonic() - started

    try:
        elapsed = await deferToThread(six)
    finally:
        await port.stopListening()  # type: ignore[attr-defined]
    assert 1.8 < elapsed < 6.0, elapsed
    assert site.delayed >= 4

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
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import pytest_twisted
from twisted.internet import reactor
from twisted.internet.threads import deferToThread

from dealer import fds
from dealer.match import MatchResult
from dealer.metrics import BoundedSite, DealerMetrics, MetricsLimits, metrics_site
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
async def test_connections_past_the_cap_are_closed_and_partial_headers_time_out() -> None:
    """Three held connections fill the cap: a fourth is closed on accept. Partial headers, sent at
    once or a byte at a time, are cut off at the header timeout, and the port serves again."""
    site = metrics_site(DealerMetrics(), reactor, SMALL)  # type: ignore[arg-type]
    port, number = _serve(site)

    def attack() -> tuple[bool, bool, list[bool], float, int]:
        held = [socket.create_connection(("127.0.0.1", number)) for _ in range(3)]
        time.sleep(0.1)
        extra = socket.create_connection(("127.0.0.1", number))
        extra_closed = _closed_within(extra, 0.3)
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
        status = _scrape(number)
        for s in [*held, extra]:
            s.close()
        return extra_closed, dripped_alive, closed, elapsed, status

    try:
        extra_closed, dripped_alive, closed, elapsed, status = await deferToThread(attack)
    finally:
        await port.stopListening()  # type: ignore[attr-defined]
    assert extra_closed, "a connection past the cap was kept open"
    assert not dripped_alive or closed[1], "a header sent a byte at a time outlived the header timeout"
    assert closed == [True, True, True] and elapsed < 2.0
    assert status == 200
    assert site.refused >= 1 and site.timed_out == 3


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


@pytest.fixture
def dealer_at_256_files(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], list[int], int]]:
    """``acpc-lbr dealer`` (5 hands) with metrics, under a limit of 256 open files."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    err = open(tmp_path / "dealer.err", "w+")  # noqa: SIM115
    proc = subprocess.Popen([str(ACPC_LBR), "dealer", "m", "nolimit", "5", "1", "a", "b", "-q",
                             "--metrics-port", "0", "--metrics-grace", "0", "--start_timeout", "20000"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=err, text=True, preexec_fn=limit)
    try:
        assert proc.stdout is not None
        seats = [int(p) for p in proc.stdout.readline().split()]
        err.seek(0)
        metrics = next(line for line in err.read().splitlines() if line.startswith("METRICS "))
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
            sock = socket.create_connection(("127.0.0.1", metrics_port), timeout=5)
            try:
                sock.sendall(b"GET /metrics HTTP/1.1\r\nHo")
            except OSError:
                pass  # already closed by the cap
            scrapers.append(sock)
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

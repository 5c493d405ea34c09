"""Seating alone (dealer/seating.py): ports, handshakes and seats, with StringTransport
connections, a MemoryReactorClock for the ports and its clock for the timers."""

from __future__ import annotations

import errno
import socket
from typing import Any

import pytest

from twisted.internet import defer
from twisted.internet.address import IPv4Address
from twisted.internet.testing import MemoryReactorClock, StringTransport
from twisted.python.failure import Failure

from acpc_lbr.runtime.exit_codes import EXIT_FAILED
from dealer.config import MatchAborted
from dealer.events import Cause
from dealer.seat import SeatProtocol
from dealer.seating import Seating
from dealer.seats import Seat
from tests.dealer.harness import make_config
from tests.dealer.parts import Parts


class _Lines:
    """The hand loop's side of a seated connection: records what it is told."""

    def __init__(self) -> None:
        self.lines: list[tuple[int, str]] = []

    def seat_line(self, seat: int, line: str) -> None:
        self.lines.append((seat, line))

    def seat_line_too_long(self, seat: int, length: int, limit: int) -> None: ...

    def seat_not_reading(self, seat: int, unsent: int, limit: int) -> None: ...

    def seat_error(self, seat: int, error: Exception) -> None: ...

    def seat_lost(self, seat: int, reason: Failure) -> None: ...


class _Table:
    """A Seating on a MemoryReactorClock, its connections StringTransports."""

    def __init__(self, **options: Any) -> None:
        self.parts = parts = Parts(make_config("s", names=("alice", "bob"), **options))
        self.reactor = MemoryReactorClock()
        self.lines = _Lines()
        self.seated: list[tuple[Seat, SeatProtocol]] = []
        self.seating = Seating(
            parts.seats, self.lines, reactor=self.reactor, clock=self.reactor, events=parts.events,
            trace=parts.trace, budget=parts.config.budget, max_line=4096, handshake_s=2.0,
            abort=parts.aborts, on_seated=lambda seat, protocol: self.seated.append((seat, protocol)),
        )

    def connect(self, seat: int, host: str = "127.0.0.1") -> tuple[SeatProtocol, StringTransport]:
        protocol = self.seating.factories[seat].buildProtocol(None)
        transport = StringTransport(peerAddress=IPv4Address("TCP", host, 40000 + seat))
        protocol.makeConnection(transport)
        return protocol, transport


def test_ports_open_one_per_seat_and_close_once_all_are_taken() -> None:
    """listen() opens a port per seat on the bind address; the first VERSION line takes the
    seat, its later lines go to the hand loop; wait() returns once every seat is taken."""
    table = _Table()
    assert table.seating.listen([9001], "127.0.0.1") == [9001, 0]
    assert [(p[0], p[3]) for p in table.reactor.tcpServers] == [(9001, "127.0.0.1"), (0, "127.0.0.1")]
    done = defer.ensureDeferred(table.seating.wait(None))
    protocol, _ = table.connect(0)
    protocol.dataReceived(b"VERSION:2.0.0\r\n")
    assert [s.index for s, _ in table.seated] == [0] and not done.called
    protocol.dataReceived(b"MATCHSTATE:0:0::Kh|:c\r\n")
    assert table.lines.lines == [(0, "MATCHSTATE:0:0::Kh|:c")]
    other, _ = table.connect(1)
    other.dataReceived(b"VERSION:2.0.0\n")
    assert done.called and table.parts.seats[1].protocol is other
    assert table.seating.factories[0].port is None and table.seating.factories[1].port is None


def test_sockets_bound_before_twisted_are_adopted_and_closed() -> None:
    """listen() with the seats' sockets already listening (bound before Twisted was loaded:
    dealer/startup.py) hands each to the reactor (adoptStreamPort, which keeps its own copy of
    the descriptor), opens no port of its own and closes the sockets given."""
    table = _Table()
    bound = [socket.create_server(("127.0.0.1", 0)) for _ in range(2)]
    descriptors = [s.fileno() for s in bound]
    assert table.seating.listen([], "127.0.0.1", bound) == [1234, 1234]  # the memory reactor's port
    assert table.reactor.tcpServers == []
    assert [(fd, family, factory) for fd, family, factory in table.reactor.adoptedPorts] == [
        (descriptors[0], socket.AF_INET, table.seating.factories[0]),
        (descriptors[1], socket.AF_INET, table.seating.factories[1])]
    assert [s.fileno() for s in bound] == [-1, -1]


def test_a_socket_the_reactor_cannot_adopt_is_a_startup_failure() -> None:
    """A bound socket the reactor refuses: the match cannot start (exit code 1), the message
    names the seat; every socket given is closed, the ports adopted so far stop listening."""
    table = _Table()
    stopped = []

    class Port:
        def getHost(self) -> IPv4Address:
            return IPv4Address("TCP", "127.0.0.1", 9001)

        def stopListening(self) -> None:
            stopped.append(self)

    def adopt(fd: int, family: socket.AddressFamily, factory: Any) -> Port:
        if table.seating.factories[0].port is not None:
            raise OSError(errno.EBADF, "Bad file descriptor")
        return Port()

    table.reactor.adoptStreamPort = adopt  # type: ignore[method-assign]
    bound = [socket.create_server(("127.0.0.1", 0)) for _ in range(2)]
    with pytest.raises(MatchAborted) as failure:
        table.seating.listen([], "127.0.0.1", bound)
    assert failure.value.message == "cannot listen on port 0 for seat 2 (bob): [Errno 9] Bad file descriptor"
    assert (failure.value.cause, failure.value.exit_code) == (Cause.STARTUP, EXIT_FAILED)
    assert [s.fileno() for s in bound] == [-1, -1]
    assert len(stopped) == 1 and table.seating.factories[0].port is None


def test_a_squatter_is_closed_and_the_seat_waits_for_the_real_bot() -> None:
    """A connection that sends no VERSION within the handshake limit is closed, saying why,
    naming its address; one with a bad first line too; the next good one gets the seat."""
    table = _Table()
    silent, silent_transport = table.connect(0, "10.0.0.9")
    table.reactor.advance(1.9)
    assert not silent_transport.disconnecting
    table.reactor.advance(0.2)
    assert silent_transport.disconnecting and not silent.accepted
    assert "connection 10.0.0.9:40000 to seat 1 (alice) sent no VERSION line within 2 s" in table.parts.stderr.getvalue()
    bad, bad_transport = table.connect(0, "10.0.0.8")
    bad.dataReceived(b"HELLO\x1b[2J\n")
    assert bad_transport.disconnecting
    assert "sent an invalid version string HELLO\\x1b[2J" in table.parts.stderr.getvalue()
    good, good_transport = table.connect(0)
    good.dataReceived(b"VERSION:2.0.0\n")
    assert good.accepted and not good_transport.disconnecting
    assert table.parts.seats[0].connected and table.seating.factories[0].last_refusal is not None


def test_too_many_waiting_connections_close_the_oldest() -> None:
    """Past max_candidates connections waiting to send VERSION, the oldest is closed."""
    table = _Table()
    limit = table.parts.config.budget.max_candidates
    transports = [table.connect(1)[1] for _ in range(limit + 1)]
    assert transports[0].disconnecting and not any(t.disconnecting for t in transports[1:])


def test_the_start_timeout_ends_the_match_naming_the_missing_seat() -> None:
    """wait(timeout) gives up after the timeout with no_connection, naming the first
    seat nobody took and why its last connection was refused."""
    table = _Table()
    done = defer.ensureDeferred(table.seating.wait(5000))
    table.connect(0)[0].dataReceived(b"VERSION:2.0.0\n")
    table.connect(1)[0].dataReceived(b"nope\n")
    table.reactor.advance(5.0)
    [failure] = table.parts.aborts.failures
    assert failure.cause is Cause.NO_CONNECTION and failure.seat == 1
    assert failure.message.startswith("timed out waiting for seat 2 (bob) to connect within 5 s "
                                      "(last refused: connection 127.0.0.1:40001 to seat 2 (bob) "
                                      "sent an invalid version string nope)")
    table.seating.fail(failure)
    assert done.called
    done.addErrback(lambda f: None)


def test_once_failed_or_closed_no_connection_is_seated() -> None:
    """After fail() a new connection is refused at once; close() ends the waiting ones."""
    table = _Table()
    waiting, waiting_transport = table.connect(0)
    table.seating.close()
    assert waiting_transport.disconnecting and waiting.refused
    late, late_transport = table.connect(1)
    assert late_transport.disconnecting and late.refused

"""dealer.seatio.read_ready: the reactor's read step for a seat's TCP connection does what
Twisted's ``_readOrWrite``, ``Connection.doRead`` and ``_dataReceived`` do (the CLI's
reactor uses it; the tests' reactor does not, so it is tested here on real sockets)."""

from __future__ import annotations

import socket
import struct
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from twisted.internet import main
from twisted.internet.testing import StringTransport
from twisted.logger import Logger

from dealer import seatio
from dealer.seat import SeatProtocol


class _Listener:
    """Seats the connection and records its lines."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def candidate(self, protocol: SeatProtocol) -> bool:
        return True

    def hello(self, protocol: SeatProtocol, line: str) -> bool:
        self.lines.append(line)
        return True

    def seat_line(self, seat: int, line: str) -> None:
        self.lines.append(line)

    def candidate_lost(self, protocol: SeatProtocol) -> None:
        self.lines.append("(lost)")

    def seat_lost(self, seat: int, reason: object) -> None:
        self.lines.append("(lost)")

    def seat_line_too_long(self, seat: int, length: int, limit: int) -> None:
        raise RuntimeError("a bug while handling a long line")


class _Reactor:
    """What read_ready may call on the reactor, recorded."""

    def __init__(self) -> None:
        self.logged: list[dict[str, Any]] = []
        self._log = Logger(observer=self.logged.append)  # as the reactor's own
        self.calls: list[tuple[str, Any, Any]] = []

    def _disconnectSelectable(self, selectable: Any, why: Any, is_read: bool) -> None:
        self.calls.append(("disconnect", selectable, why))

    def _readOrWrite(self, selectable: Any, read: bool) -> None:
        self.calls.append(("readOrWrite", selectable, read))


class _Transport:
    """The attributes of a Twisted TCP connection that read_ready reads."""

    bufferSize = 65536

    def __init__(self, sock: socket.socket, protocol: SeatProtocol) -> None:
        self.socket = sock
        self.fileno = sock.fileno
        self.protocol = protocol


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    """A loopback TCP connection: (the dealer's end, non-blocking; the bot's end)."""
    server = socket.create_server(("127.0.0.1", 0))
    bot = socket.create_connection(server.getsockname())
    dealer, _ = server.accept()
    server.close()
    dealer.setblocking(False)
    yield dealer, bot
    dealer.close()
    bot.close()


def _seat(limit: int = 4096) -> tuple[SeatProtocol, _Listener]:
    listener = _Listener()
    protocol = SeatProtocol(listener, listener, 0, limit)  # type: ignore[arg-type]  # the calls used here
    protocol.makeConnection(StringTransport())
    return protocol, listener


def _wait_readable(sock: socket.socket) -> None:
    import select

    assert select.select([sock], [], [], 5.0)[0], "nothing arrived"


def test_lines_read_go_to_the_protocol(pair: tuple[socket.socket, socket.socket]) -> None:
    dealer, bot = pair
    protocol, listener = _seat()
    reactor, transport = _Reactor(), _Transport(dealer, protocol)
    seatio.read_ready(reactor, transport)  # nothing to read yet: nothing happens
    bot.sendall(b"VERSION:2.0.0\r\nMATCHSTATE:0:0::Kh|:c\r\nMATCH")
    _wait_readable(dealer)
    seatio.read_ready(reactor, transport)
    assert listener.lines == ["VERSION:2.0.0", "MATCHSTATE:0:0::Kh|:c"]
    assert reactor.calls == []
    bot.sendall(b"STATE:0:0::Kh|:f\n")
    _wait_readable(dealer)
    seatio.read_ready(reactor, transport)
    assert listener.lines[-1] == "MATCHSTATE:0:0::Kh|:f"


def test_a_line_longer_than_a_read_arrives_whole(pair: tuple[socket.socket, socket.socket]) -> None:
    """A read takes at most ``seatio.READ_SIZE`` bytes (not Twisted's 64 KiB): a range query's
    answer of nearly 1 MiB comes over many reads, whole, between the lines around it."""
    import threading

    dealer, bot = pair
    protocol, listener = _seat(limit=1 << 20)
    reactor, transport = _Reactor(), _Transport(dealer, protocol)
    sizes: list[int] = []
    recv = dealer.recv

    class _CountedSocket:  # a socket's recv cannot be replaced: the reads go through this
        def recv(self, size: int) -> bytes:
            sizes.append(size)
            return recv(size)

        def fileno(self) -> int:
            return dealer.fileno()

    transport.socket = _CountedSocket()
    answer = "RANGE:" + "".join(chr(65 + i % 26) for i in range((1 << 20) - 8))
    sender = threading.Thread(target=bot.sendall, args=(
        f"VERSION:2.0.0\r\n{answer}\r\nMATCHSTATE:0:0::Kh|:c\n".encode(),))
    sender.start()
    try:
        while len(listener.lines) < 3:
            _wait_readable(dealer)
            seatio.read_ready(reactor, transport)
    finally:
        sender.join()
    assert listener.lines == ["VERSION:2.0.0", answer, "MATCHSTATE:0:0::Kh|:c"]
    assert max(sizes) == seatio.READ_SIZE and len(sizes) >= (1 << 20) // seatio.READ_SIZE, sizes[:3]
    assert reactor.calls == []


def _end_stream(bot: socket.socket) -> None:
    bot.shutdown(socket.SHUT_WR)


def _reset(bot: socket.socket) -> None:
    bot.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    bot.close()  # with a zero linger: a reset


@pytest.mark.parametrize(("close", "why"), [(_end_stream, main.CONNECTION_DONE),
                                            (_reset, main.CONNECTION_LOST)])
def test_the_bots_close_closes_as_twisted_would(pair: tuple[socket.socket, socket.socket],
                                                close: Callable[[socket.socket], None],
                                                why: Exception) -> None:
    """The end of the stream closes the connection as done; a reset (an error) as lost."""
    dealer, bot = pair
    protocol, _ = _seat()
    reactor, transport = _Reactor(), _Transport(dealer, protocol)
    close(bot)
    _wait_readable(dealer)
    seatio.read_ready(reactor, transport)
    assert reactor.calls == [("disconnect", transport, why)]


def test_a_closed_descriptor_goes_to_twisteds_own_step(pair: tuple[socket.socket, socket.socket]) -> None:
    dealer, _ = pair
    protocol, _ = _seat()
    reactor, transport = _Reactor(), _Transport(dealer, protocol)
    transport.fileno = lambda: -1  # as a Twisted connection once its socket is closed
    seatio.read_ready(reactor, transport)
    assert reactor.calls == [("readOrWrite", transport, True)]


def test_an_exception_is_logged_and_closes_the_connection(pair: tuple[socket.socket, socket.socket]) -> None:
    dealer, bot = pair
    protocol, _ = _seat(limit=8)
    protocol.accepted = True
    reactor, transport = _Reactor(), _Transport(dealer, protocol)
    bot.sendall(b"a line far over the limit\n")
    _wait_readable(dealer)
    seatio.read_ready(reactor, transport)
    [event] = reactor.logged  # the failure is the exception raised (compiled code sets exc_info)
    assert isinstance(event["log_failure"].value, RuntimeError)
    [(kind, selectable, why)] = reactor.calls
    assert (kind, selectable) == ("disconnect", transport)
    assert isinstance(why, RuntimeError)


class _Socket:
    """Takes at most ``room`` bytes per send."""

    def __init__(self, room: int) -> None:
        self.room, self.sent = room, b""

    def send(self, data: bytes) -> int:
        taken = data[: self.room]
        self.sent += taken
        return len(taken)


def _tcp_connection(sock: _Socket) -> Any:
    """A TCP connection object without a reactor, whose ``write`` keeps the bytes in its
    buffer (as Twisted's does until the socket is writable)."""
    from twisted.internet import tcp

    connection: Any = tcp.Connection.__new__(tcp.Connection)
    connection.socket = sock
    connection.connected = True
    connection.disconnecting = False
    connection.dataBuffer = b""
    connection._tempDataBuffer = []
    connection._tempDataLen = 0
    connection.offset = 0

    def write(data: bytes) -> None:
        connection.dataBuffer += data

    connection.write = write
    return connection


def test_sends_go_straight_to_the_socket_only_while_nothing_waits_in_twisted() -> None:
    """After a send the socket took whole, the next goes to it directly (``direct_socket``);
    after one it did not, the rest and every later line wait in Twisted's buffer, in order,
    until a send finds the buffer empty again."""
    protocol, _ = _seat()
    sock = _Socket(room=100)
    connection = protocol.transport = _tcp_connection(sock)
    seatio.send(protocol.io, "MATCHSTATE:0:0::Ah2c|")
    assert sock.sent == b"MATCHSTATE:0:0::Ah2c|\r\n" and protocol.direct_socket is sock
    sock.room = 4
    seatio.send(protocol.io, "MATCHSTATE:0:0:c:Ah2c|")
    assert protocol.direct_socket is None and connection.dataBuffer == b"HSTATE:0:0:c:Ah2c|\r\n"
    sock.room = 100
    seatio.send(protocol.io, "MATCHSTATE:0:0:cc/:Ah2c|/2d3d4d")  # behind the buffered bytes
    assert connection.dataBuffer == b"HSTATE:0:0:c:Ah2c|\r\nMATCHSTATE:0:0:cc/:Ah2c|/2d3d4d\r\n"
    assert protocol.direct_socket is None
    connection.dataBuffer = b""  # Twisted wrote it out
    seatio.send(protocol.io, "MATCHSTATE:0:0:cc/c:Ah2c|/2d3d4d")
    assert sock.sent.endswith(b"MATCHSTATE:0:0:cc/c:Ah2c|/2d3d4d\r\n") and protocol.direct_socket is sock
    protocol.connectionLost()  # closed: Twisted's write decides from now on
    seatio.send(protocol.io, "x")
    assert connection.dataBuffer == b"x\r\n" and protocol.direct_socket is None


@pytest.mark.parametrize("how", ["close", "abort", "lost"])
def test_a_closing_connection_is_never_written_or_read_directly(how: str) -> None:
    """Closing by the dealer (``close``, ``abort``) or a lost connection ends the direct
    sends and reads: the transport's own ``write`` and read step take over, as they do for
    a closed connection (Twisted sets ``disconnecting`` only in those calls)."""
    protocol, _ = _seat()
    sock = _Socket(room=100)
    connection = protocol.transport = _tcp_connection(sock)
    connection.producer = None
    connection.loseConnection = connection.abortConnection = lambda: None
    seatio.send(protocol.io, "a")
    assert protocol.direct_socket is sock
    {"close": protocol.close, "abort": protocol.abort, "lost": protocol.connectionLost}[how]()
    seatio.send(protocol.io, "b")
    assert sock.sent == b"a\r\n" and connection.dataBuffer == b"b\r\n"
    reactor = _Reactor()
    connection.protocol = protocol
    seatio.read_ready(reactor, connection)  # Twisted's read step, not the socket's recv
    assert [call[0] for call in reactor.calls] == ["readOrWrite"], reactor.calls


def test_other_transports_never_send_directly() -> None:
    """A transport that is not a TCP connection (a test's StringTransport) gets every line by
    its ``write``; ``direct_socket`` stays unset."""
    protocol, _ = _seat()
    seatio.send(protocol.io, "a")
    seatio.send(protocol.io, "b")
    assert protocol.transport.value() == b"a\r\nb\r\n" and protocol.direct_socket is None

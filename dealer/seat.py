"""One connection per seat: framing only, everything else is the match's.

:class:`SeatProtocol` is a ``LineReceiver`` with delimiter ``\\n``; a trailing
``\\r`` is stripped, so bots may end lines with ``\\n`` or ``\\r\\n`` as with the
reference. Lines the dealer sends end in ``\\r\\n``, like the reference's.
``MAX_LENGTH`` is a per-connection attribute (4 KiB by default, up to 1 MiB for
a bot that answers range queries): a longer line ends the match for that seat.

Lines are dispatched by prefix: ``prefix_handlers`` maps a prefix (e.g. a
future ``QUERY``/``RANGE`` line) to a callable; every other line goes to the
match's :meth:`SeatListener.seat_line`.

:class:`SeatFactory` accepts exactly one connection for its seat, then stops
listening, as the reference closes each listening socket once its seat is taken.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from twisted.internet import tcp
from twisted.internet.interfaces import IAddress
from twisted.internet.protocol import Factory, connectionDone
from twisted.protocols.basic import LineReceiver
from twisted.python.failure import Failure

#: Default line limit: the reference's buffer is 4 KiB too.
DEFAULT_MAX_LINE = 4096
#: The largest line limit a seat may be given (range-query answers are ~13 KB).
LARGEST_MAX_LINE = 1 << 20


class SeatListener(Protocol):
    """What a seat connection reports to (implemented by the match)."""

    def seat_connected(self, seat: int, protocol: SeatProtocol) -> bool:
        """A connection arrived for ``seat``; False refuses it."""

    def seat_line(self, seat: int, line: str) -> None:
        """One line (without its ending) arrived from ``seat``."""

    def seat_line_too_long(self, seat: int, length: int) -> None:
        """``seat`` sent a line longer than its limit."""

    def seat_lost(self, seat: int, reason: Failure) -> None:
        """The connection of ``seat`` closed."""


class SeatProtocol(LineReceiver):
    """The connection of one seat.

    Args:
        listener: the match this seat belongs to.
        seat: the seat index (0-based, command-line order).
        max_length: the longest line accepted, in bytes.
    """

    delimiter = b"\n"
    #: Send straight to the socket when nothing is queued (see :meth:`send_line`).
    direct_send = True

    def __init__(self, listener: SeatListener, seat: int, max_length: int = DEFAULT_MAX_LINE) -> None:
        if not 1 <= max_length <= LARGEST_MAX_LINE:
            raise ValueError(f"line limit must be in 1..{LARGEST_MAX_LINE}, got {max_length}")
        self.listener = listener
        self.seat = seat
        self.MAX_LENGTH = max_length
        self.prefix_handlers: dict[str, Callable[[str], None]] = {}
        self.accepted = False
        self._pending: list[str] = []

    def connectionMade(self) -> None:
        set_no_delay = getattr(self.transport, "setTcpNoDelay", None)
        if set_no_delay is not None:
            set_no_delay(True)
        self.accepted = self.listener.seat_connected(self.seat, self)
        transport: Any = self.transport
        if not self.accepted and transport is not None:
            transport.loseConnection()

    def lineReceived(self, line: bytes) -> None:
        text = line.decode("latin-1")
        text = text.removesuffix("\r")
        if self.prefix_handlers:
            for prefix, handler in self.prefix_handlers.items():
                if text.startswith(prefix):
                    handler(text)
                    return
        self.listener.seat_line(self.seat, text)

    def lineLengthExceeded(self, line: bytes) -> None:
        self.listener.seat_line_too_long(self.seat, len(line))
        transport: Any = self.transport
        if transport is not None:
            transport.loseConnection()

    def connectionLost(self, reason: Failure = connectionDone) -> None:
        if self.accepted:
            self.listener.seat_lost(self.seat, reason)

    def queue_line(self, text: str) -> None:
        """Queue one line (ending it with ``\\r\\n``) for the next :meth:`flush_lines`.

        The dealer queues the final state of a hand and the first state of the
        next one and sends them together: one send instead of two.
        """
        self._pending.append(text)

    def flush_lines(self) -> None:
        """Send the queued lines, if any."""
        if self._pending:
            text = "\r\n".join(self._pending)
            self._pending.clear()
            self.send_line(text)

    def send_with_queued(self, text: str) -> None:
        """Send the queued lines, if any, and ``text`` after them, in one send.

        The same bytes as :meth:`queue_line` then :meth:`flush_lines`, without
        the list round trip when nothing is queued (the dealer's usual case).
        """
        pending = self._pending
        if pending:
            pending.append(text)
            text = "\r\n".join(pending)
            pending.clear()
        self.send_line(text)

    def send_line(self, text: str) -> None:
        """Send one line, ending it with ``\\r\\n``.

        When nothing is queued on a TCP transport the line goes straight to
        the socket: Twisted's ``write`` would register the socket for writing
        and send on the next reactor turn, which costs two epoll changes and
        a loop iteration per message (a third of the dealer's time). Whatever
        the socket does not take at once goes through ``write`` as usual, so
        ordering and back-pressure are unchanged.
        """
        data = text.encode("ascii") + b"\r\n"
        transport: Any = self.transport
        if transport is None:
            return
        if (self.direct_send and isinstance(transport, tcp.Connection)
                and transport.connected and not transport.disconnecting
                and not transport.dataBuffer and not transport._tempDataBuffer):
            try:
                sent = transport.socket.send(data)
            except BlockingIOError:
                sent = 0
            except OSError:
                sent = 0  # let write() meet the error and close the connection
            if sent == len(data):
                return
            data = data[sent:]
        transport.write(data)

    def close(self) -> None:
        """Send what is queued, then close the connection once writes are out."""
        self.flush_lines()
        transport: Any = self.transport
        if transport is not None:
            transport.loseConnection()


class SeatFactory(Factory):
    """Builds the single connection of one seat.

    Args:
        listener: the match.
        seat: the seat index.
        max_length: the seat's line limit.
    """

    def __init__(self, listener: SeatListener, seat: int, max_length: int = DEFAULT_MAX_LINE) -> None:
        self.listener = listener
        self.seat = seat
        self.max_length = max_length

    def buildProtocol(self, addr: IAddress | None) -> SeatProtocol:
        return SeatProtocol(self.listener, self.seat, self.max_length)

"""The per-line work of a seat's connection: framing what a bot sends, and sending it lines.

These run for every action of a match, so they are compiled with the
dealer's hot path (the mypyc group of :mod:`protocol._variant`); a mypyc
class cannot derive from Twisted's ``Protocol``, so they are functions of
the connection's per-line state, :class:`SeatIO` (compiled), which the
connection, :class:`dealer.seat.SeatProtocol`, holds as ``io``; its methods
of the same names call them. :mod:`dealer.seat` says what
the framing and the sending guarantee; the match calls the sending functions
directly. The read step also sends the next state the match made ready for
the acting seat's likely reply (:class:`Ahead`), before the line is framed
(:func:`answer_ahead`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Protocol

from twisted.internet import main

from acpc_lbr.runtime.reactor import disconnect_reader, log_failure, read_by_twisted, write_now
from acpc_lbr.runtime.reactor import unsent_bytes as twisted_unsent_bytes
from dealer.budget import BotBudget
from dealer.interfaces import Clock

#: The most one read takes (Twisted reads up to 64 KiB). ``recv`` allocates the whole size and
#: gives back the rest; freeing a remainder of 64 KiB or more makes glibc's malloc merge its
#: free lists (``malloc_consolidate``), once per read: 1% of a dealer's cycles. A bot's line is
#: about 50 bytes; a range query's answer, up to 1 MiB, takes more reads of this size.
READ_SIZE: Final = 16384


class LineListener(Protocol):
    """Where a seated connection's lines go (:class:`dealer.seat.SeatListener`, the hand loop)."""

    def seat_line(self, seat: int, line: str) -> None: ...

    def seat_error(self, seat: int, error: Exception) -> None: ...

    def seat_not_reading(self, seat: int, unsent: int, limit: int) -> None: ...


class Connection(Protocol):
    """What these functions use of a seat's connection, :class:`dealer.seat.SeatProtocol`,
    beyond its :class:`SeatIO` (mypy checks that it has all of it; at run time, as a Python
    class, it is read by name). ``transport`` is whichever Twisted transport carries it (a
    TCP connection, a test's ``StringTransport``)."""

    io: SeatIO

    @property
    def transport(self) -> Any: ...

    def hello(self, line: str) -> bool: ...

    def lineReceived(self, line: bytes) -> None: ...

    def lineLengthExceeded(self, line: bytes) -> None: ...

    def abort(self) -> None: ...


class SeatIO:
    """The per-line state of one seat's connection, as native attributes.

    :class:`dealer.seat.SeatProtocol` is a Twisted ``Protocol``, a Python class:
    each of its attributes read or set from compiled code is a dictionary lookup,
    and the framing, the dispatch and the sends of a line read a dozen of them
    (about a tenth of the dealer's instructions per hand). So that state lives
    here, in a compiled class; the protocol holds its ``io`` and reads and sets
    the same values through properties of the same names (``paused``,
    ``accepted``, ``MAX_LENGTH``, ...), and every function of this module takes
    the ``io``.

    Args:
        protocol: the connection (its transport, its handshake and its Python methods).
        listener: where its lines go once it holds the seat.
        seat: the seat index.
        max_length: the longest line accepted, in bytes.
        budget: the per-bot limits.
        max_queued_lines: lines that may wait for the next send.
        direct_lines: the connection's ``lineReceived`` is :class:`dealer.seat.SeatProtocol`'s own.
    """

    def __init__(self, protocol: Connection, listener: LineListener, seat: int, max_length: int,
                 budget: BotBudget, max_queued_lines: int, direct_lines: bool) -> None:
        self.protocol = protocol
        self.listener = listener
        self.seat = seat
        self.max_length = max_length
        self.budget = budget
        self.max_queued_lines = max_queued_lines
        self.direct_lines = direct_lines
        self.prefix_handlers: dict[str, Callable[[str], None]] = {}
        #: The connection holds the seat; it was refused (its lines are dropped); lines are
        #: not handled while paused (back-pressure, a hold): they wait in the buffer.
        self.accepted = False
        self.refused = False
        self.paused = False
        #: The next state made ready for this seat's likely replies (:class:`Ahead`).
        self.ahead: Ahead | None = None
        #: The TCP socket, and its ``send``, while nothing of ours waits in Twisted's buffers
        #: and the connection is open (:func:`write`).
        self.direct_socket: Any = None
        self.direct_send: Any = None
        #: The socket's ``recv`` and Twisted's read size (:func:`read_io_ready`), kept at the
        #: first read; ``closed`` once the connection is closed or lost (:func:`closed`).
        self.recv: Any = None
        self.read_size = 0
        self.closed = False
        #: Bytes read after the last complete line (or held while paused); inside
        #: :func:`data_received` (a line's handler may feed more data in); more of the
        #: partial line, read since, not yet joined to it, and their bytes.
        self.buffer = b""
        self.busy_receiving = False
        self.pieces: list[bytes] = []
        self.pieces_size = 0
        #: Lines queued for the next send (:func:`queue_line`).
        self.pending: list[str] = []


def unsent_bytes(transport: Any) -> int:
    """Bytes written to ``transport`` that the peer has not taken yet (0 if unknown)."""
    return twisted_unsent_bytes(transport)


def read_ready(reactor: Any, transport: Any) -> None:
    """The reactor's step when a seat's TCP connection is readable (see
    :class:`acpc_lbr.runtime.reactor.LeanAsyncioReactor`): what Twisted's
    ``_readOrWrite``, ``Connection.doRead`` and ``_dataReceived`` do, in one
    compiled step -- read once, hand the bytes to :func:`data_received`, and
    on an error, the end of the stream or an exception close the connection
    as they would (through :mod:`acpc_lbr.runtime.reactor`, the one module that
    touches Twisted's private names). The connection's protocol registers
    :func:`read_io_ready` bound to its ``io`` (no lookups through the transport).
    """
    read_io_ready(transport.protocol.io, reactor, transport)


def read_io_ready(io: SeatIO, reactor: Any, transport: Any) -> None:
    """:func:`read_ready` of the connection whose per-line state is ``io``.

    The socket's ``recv`` and Twisted's read size are kept in ``io`` at the
    first read (each read of them through the transport is a dictionary
    lookup on a Python object, several per line); once the connection is
    closed (``io.closed``: by us, or lost) Twisted's own read step takes it.
    """
    recv = io.recv
    if recv is None or io.closed:
        if io.closed or transport.fileno() == -1:  # closed under us: Twisted's own path says so
            read_by_twisted(reactor, transport)
            return
        recv = io.recv = transport.socket.recv
        io.read_size = min(transport.bufferSize, READ_SIZE)
    try:
        data: bytes = recv(io.read_size)
    except BlockingIOError:
        return
    except OSError:
        disconnect_reader(reactor, transport, main.CONNECTION_LOST)
        return
    if not data:
        disconnect_reader(reactor, transport, main.CONNECTION_DONE)
        return
    ahead: Ahead | None = io.ahead
    if ahead is not None:
        answer_ahead(io, ahead, data)
    try:
        data_received(io, data)
    except Exception as error:  # noqa: BLE001 (as the reactor: log it, drop the connection)
        log_failure(reactor)
        disconnect_reader(reactor, transport, error)


class Ahead:
    """The next state, made ready while a bot thinks, for the replies it will most likely send.

    While the match waits for the acting seat's line, it works out (with the
    rules, :func:`dealer.turns.make_ahead`) which seat acts next and what
    it is sent if the reply is a call or a fold (when that ends the hand: the
    hand's final state and the next hand's first), and for a raise of any legal
    size, the line around the size. When the reply comes and is one of these --
    the state echoed exactly as sent, then ``c``, ``f``, or ``r`` and a legal
    size written the canonical way (``r`` alone in a limit game) -- the reactor's
    read step (:func:`read_ready`) sends that state at once
    (:func:`answer_ahead`), before the line goes through the framing, the
    reading of the action and the rules; those follow as for any line, and
    when they come to the send, the match checks that the state they give is
    the one sent (:meth:`dealer.handloop.HandLoop.check_ahead`; a difference is a
    dealer bug and ends the match). Every other line takes the usual path.
    """

    def __init__(self, expected: bytes, deadline: float, clock: Clock) -> None:
        #: The state sent to the seat and ``:`` (a reply that echoes it exactly).
        self.expected = expected
        #: Replies at or after this time (the clock's) take the usual path: the
        #: match's checks of the time limits must see them first.
        self.deadline = deadline
        self.clock = clock
        #: After ``c``: the connection to send to and what (its state; when the call
        #: ends the hand, that hand's final state and the next hand's first);
        #: None: not ready. After ``f``, the same.
        self.call_to: SeatIO | None = None
        self.call_text = ""
        self.fold_to: SeatIO | None = None
        self.fold_text = ""
        #: After ``r``: the seat to act and its state, ``raise_head`` + size + ``raise_tail``
        #: for a size from ``raise_min`` to ``raise_max``; in a limit game
        #: (``raise_sized`` False) the reply is ``r`` alone and the state is ``raise_head``.
        self.raise_to: SeatIO | None = None
        self.raise_sized = True
        self.raise_head = ""
        self.raise_tail = ""
        self.raise_min = 0
        self.raise_max = 0
        #: Once it was used: the connection sent to, the lines sent and when the
        #: reply was read; ``error`` is what the send raised, for the match to raise;
        #: ``given``: the lines the rules have given that connection since (the
        #: match's check, :meth:`dealer.handloop.HandLoop.check_ahead`).
        self.sent_to: SeatIO | None = None
        self.sent_text = ""
        self.heard = 0.0
        self.error: Exception | None = None
        #: The socket did not take all of it: the match checks the seat's unsent
        #: output (:func:`check_unsent`) when it comes to that send.
        self.held = False
        self.given: list[str] = []


def answer_ahead(io: SeatIO, ahead: Ahead, data: bytes) -> None:
    """Send the state :class:`Ahead` made ready if ``data`` is one whole line it answers."""
    if ahead.sent_to is not None or ahead.error is not None:
        return
    if io.buffer or io.paused or io.busy_receiving or io.refused:
        return
    end = len(data) - 1
    # One whole line, nothing after it, within the seat's line limit (data_received's test).
    if end < 0 or end > io.max_length or data.find(b"\n") != end:
        return
    if end > 0 and data[end - 1] == 13:  # "\r"
        end -= 1
    expected = ahead.expected
    start = len(expected)
    if end <= start or not data.startswith(expected):
        return
    kind = data[start]
    if kind == 99 and end == start + 1:  # "c"
        target, text = ahead.call_to, ahead.call_text
    elif kind == 102 and end == start + 1:  # "f"
        target, text = ahead.fold_to, ahead.fold_text
    elif kind == 114 and ahead.raise_to is not None:  # "r"
        target = ahead.raise_to
        if not ahead.raise_sized:
            if end != start + 1:
                return
            text = ahead.raise_head
        else:
            digits = data[start + 1:end]
            count = len(digits)
            # Canonical sizes only (no sign, no leading zero, at most 9 digits):
            # what the rules read as written.
            if count == 0 or count > 9 or digits[0] == 48 or not digits.isdigit():
                return
            size = int(digits)
            if size < ahead.raise_min or size > ahead.raise_max:
                return
            text = ahead.raise_head + digits.decode("ascii") + ahead.raise_tail
    else:
        return
    if target is None:
        return
    now: float = ahead.clock.seconds()
    if now >= ahead.deadline:
        return
    ahead.sent_to = target
    ahead.sent_text = text
    ahead.heard = now
    try:
        # Without the check of the seat's unsent output: that is the match's, where
        # its own send would have made it (after the reply is played).
        ahead.held = not write_line(target, text)
    except Exception as error:  # noqa: BLE001 (raised by the match, as a send of its own would be)
        ahead.error = error


def data_received(io: SeatIO, data: bytes) -> None:
    """Split ``data`` into lines (``\\n``) and hand each to the protocol's ``lineReceived``
    (:meth:`dealer.seat.SeatProtocol.dataReceived`)."""
    if io.busy_receiving:  # fed from a line's handler: read after what is left
        io.buffer += data
        return
    io.busy_receiving = True
    end = len(data) - 1
    if end >= 0 and not io.buffer and not io.paused and data.find(b"\n") == end:
        # The usual read: exactly one whole line.
        try:
            if end > io.max_length:
                io.protocol.lineLengthExceeded(data)
                return
            deliver_line(io, data[:end])
        finally:
            io.busy_receiving = False
        if io.buffer:  # fed in by the handler
            transport = io.protocol.transport
            if transport is None or not transport.disconnecting:
                data_received(io, b"")
        return
    _data_received_slowly(io, data)


def _data_received_slowly(io: SeatIO, data: bytes) -> None:
    """:func:`data_received` for any read that is not exactly one whole line."""
    pieces: list[bytes] = io.pieces
    if data and io.buffer and not io.paused and data.find(b"\n") < 0:
        # More of a line that has not ended (the buffer holds no line when not paused):
        # kept aside and joined once, when it ends, so that each byte costs once however
        # small the reads (a line of up to 1 MiB a few bytes at a time).
        size = len(io.buffer) + io.pieces_size + len(data)
        if size <= io.max_length:
            pieces.append(data)
            io.pieces_size += len(data)
            io.busy_receiving = False
            return
    if pieces:
        io.buffer = b"".join([io.buffer, *pieces])
        pieces.clear()
        io.pieces_size = 0
    buffer: bytes = io.buffer + data if io.buffer else data
    io.buffer = b""
    start = 0
    try:
        while not io.paused:
            end = buffer.find(b"\n", start)
            limit: int = io.max_length  # a handler may raise it (range queries)
            if end < 0:
                if io.buffer:  # fed in by a handler: it comes next
                    buffer, start, io.buffer = buffer[start:] + io.buffer, 0, b""
                    continue
                if len(buffer) - start > limit:
                    line, buffer, start = buffer[start:], b"", 0
                    io.protocol.lineLengthExceeded(line)
                return
            if end - start > limit:  # the buffer goes, with anything fed in
                line, buffer, start = buffer[start:] + io.buffer, b"", 0
                io.buffer = b""
                io.protocol.lineLengthExceeded(line)
                return
            line = buffer[start:end]
            start = end + 1
            deliver_line(io, line)
            transport = io.protocol.transport
            if transport is not None and transport.disconnecting:
                return
    finally:
        if start < len(buffer):
            io.buffer = buffer[start:] + io.buffer
        io.busy_receiving = False


def deliver_line(io: SeatIO, line: bytes) -> None:
    """Hand one line to the connection's ``lineReceived``: :func:`line_received` called here
    when that is all it would do (``direct_lines``)."""
    if io.direct_lines:
        line_received(io, line)
    else:
        io.protocol.lineReceived(line)


def line_received(io: SeatIO, line: bytes) -> None:
    """One line from the connection, its ``\\n`` removed (``\\r`` still on)
    (:meth:`dealer.seat.SeatProtocol.lineReceived`)."""
    if io.refused:
        return
    text = line.decode("latin-1")
    if text[-1:] == "\r":
        text = text[:-1]
    if not io.accepted:
        io.accepted = accepted = io.protocol.hello(text)
        if not accepted:
            io.refused = True
        return
    try:
        # A state echoed with an action (nearly every line) is the match's;
        # every other line is offered to the prefix handlers first.
        handlers = io.prefix_handlers
        if handlers and not text.startswith("MATCHSTATE:"):
            for prefix, handler in handlers.items():
                if text.startswith(prefix):
                    handler(text)
                    return
        io.listener.seat_line(io.seat, text)
    except Exception as error:  # noqa: BLE001 (a dealer bug must end the match, not the connection)
        io.listener.seat_error(io.seat, error)


def queue_line(io: SeatIO, text: str) -> None:
    """Queue one line for the next send (:meth:`dealer.seat.SeatProtocol.queue_line`)."""
    pending: list[str] = io.pending
    pending.append(text)
    if len(pending) > io.max_queued_lines:
        flush_lines(io)


def flush_lines(io: SeatIO) -> None:
    """Send the queued lines, if any (:meth:`dealer.seat.SeatProtocol.flush_lines`)."""
    pending: list[str] = io.pending
    if pending:
        text = "\r\n".join(pending)
        pending.clear()
        send(io, text)


def send_line(io: SeatIO, text: str) -> None:
    """Send the queued lines and ``text`` after them, in one send
    (:meth:`dealer.seat.SeatProtocol.send_line`)."""
    if not write_line(io, text):
        check_unsent(io)


def write_line(io: SeatIO, text: str) -> bool:
    """:func:`send_line` without the check of the unsent output (:func:`check_unsent`);
    True when the socket took every byte."""
    pending: list[str] = io.pending
    if pending:
        pending.append(text)
        text = "\r\n".join(pending)
        pending.clear()
    return write(io, text)


def send(io: SeatIO, text: str) -> None:
    """Send ``text`` (one or more lines), ending it with ``\\r\\n``.

    When nothing is queued on a TCP transport the bytes go straight to the
    socket (:func:`acpc_lbr.runtime.reactor.write_now`: Twisted's ``write`` would send
    them on the next reactor turn, after two epoll changes). Whatever the
    socket does not take goes through ``write`` as usual, so ordering and
    back-pressure are unchanged. Past ``BotBudget.max_unsent_bytes`` of
    unsent output the bot is dropped.
    """
    if not write(io, text):
        check_unsent(io)


def write(io: SeatIO, text: str) -> bool:
    """Write ``text`` and ``\\r\\n`` (:func:`send` without the check of the unsent
    output); True when the socket took every byte (or there is no transport).

    What :func:`acpc_lbr.runtime.reactor.write_now` does, without its Python call
    while ``direct_socket`` is set: the last write went straight to the socket
    whole, and only this function writes to the seat's transport, so nothing of
    ours waits in Twisted's buffers and these bytes may go to the socket too.
    When the socket does not take them all, the rest goes through the
    transport's ``write`` and ``direct_socket`` is cleared until a
    ``write_now`` finds the buffers empty again.
    """
    data = (text + "\r\n").encode("ascii")
    send = io.direct_send
    if send is not None:  # cleared when the connection closes (:func:`closed`)
        try:
            sent: int = send(data)
        except OSError:  # BlockingIOError included: write() queues it, or meets the error
            sent = 0
        if sent == len(data):
            return True
        io.direct_socket = io.direct_send = None
        io.protocol.transport.write(data[sent:])
        return False
    transport = io.protocol.transport
    if transport is None:
        return True
    if io.closed:  # Twisted's write drops it, or sends it before the close it was asked for
        transport.write(data)
        return False
    if write_now(transport, data):  # True only on a TCP transport, its socket taking it all
        io.direct_socket = transport.socket
        io.direct_send = io.direct_socket.send
        return True
    return False


def closed(io: SeatIO) -> None:
    """The connection is closing or lost: writes and reads go through Twisted from now on
    (it drops or refuses them as a closed transport does)."""
    io.closed = True
    io.direct_socket = io.direct_send = None


def check_unsent(io: SeatIO) -> None:
    """Drop the bot if its unsent output is over ``BotBudget.max_unsent_bytes``."""
    limit: int = io.budget.max_unsent_bytes
    if io.accepted and not io.refused:
        unsent = unsent_bytes(io.protocol.transport)
        if unsent > limit:
            io.refused = True
            io.listener.seat_not_reading(io.seat, unsent, limit)
            io.protocol.abort()

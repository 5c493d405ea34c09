"""Connections to a seat's port: framing, the handshake and output back-pressure.

:class:`SeatProtocol` splits what it reads into lines at ``\\n``; a trailing
``\\r`` is stripped, so bots may end lines with ``\\n`` or ``\\r\\n`` as with the
reference. Lines the dealer sends end in ``\\r\\n``, like the reference's.
``MAX_LENGTH`` is a per-connection attribute (4 KiB by default, up to 1 MiB for
a bot that answers range queries): a longer line ends the match for that seat.
The framing is ``LineReceiver``'s (same limits, same pause), in linear time
and without its per-line copies of the buffer: every action of a match goes
through it. So the framing, the sending and the reading of a seat's
connection are compiled with the dealer's hot path, in :mod:`dealer.seatio`
(a compiled class cannot derive from Twisted's ``Protocol``), with the
per-line state they read (:class:`dealer.seatio.SeatIO`, this protocol's ``io``):
this protocol's methods call them, and its attributes of the same names
(``paused``, ``accepted``, ``MAX_LENGTH``, ...) read and set that state.

**Handshake.** A seat's port takes any number of connections (up to
``BotBudget.max_candidates`` at once); the first one whose first line is a valid
``VERSION`` line gets the seat, and the port closes: the port's factory,
:class:`dealer.seating.SeatFactory`, owns its connections until then (each reports
to it as its :class:`Handshake`). A connection that sends something else first, or nothing within
``BotBudget.handshake_s``, is closed, and the seat goes on waiting; messages
about it name the connection (its address), not the player, who may not even
have arrived yet. So squatters cannot keep the real bot out.

Once a connection holds the seat, its lines are dispatched by prefix:
``prefix_handlers`` maps a prefix (``QUERY``/``RANGE`` lines) to a callable;
every other line goes to the hand loop's :meth:`SeatListener.seat_line`. A handler
that raises anything ends the match as an internal error
(:meth:`SeatListener.seat_error`), instead of dropping the connection.

**Back-pressure.** The protocol is the streaming producer of its own transport:
when output for a bot that does not read piles up past the transport's buffer
size, the transport pauses the producer and the dealer stops reading from
that bot until it reads; past ``BotBudget.max_unsent_bytes`` the bot is dropped
(:meth:`SeatListener.seat_not_reading`).
"""

from __future__ import annotations

import functools
import socket
from collections.abc import Callable
from typing import Any, Protocol, cast

from twisted.internet import protocol as twisted_protocol
from twisted.internet import tcp
from twisted.internet.protocol import connectionDone
from twisted.python.failure import Failure

from dealer import seatio
from dealer.budget import BotBudget
from dealer.config import DEFAULT_MAX_LINE, LARGEST_MAX_LINE
from dealer.interfaces import DelayedCall



class Handshake(Protocol):
    """What a connection reports before it holds the seat (its port's factory:
    :class:`dealer.seating.SeatFactory`)."""

    def candidate(self, protocol: SeatProtocol) -> bool:
        """A connection arrived on the seat's port; False refuses it."""

    def hello(self, protocol: SeatProtocol, line: str) -> bool:
        """The first line of a candidate connection; True gives it the seat."""

    def candidate_lost(self, protocol: SeatProtocol) -> None:
        """A candidate connection closed before it got the seat."""

    def candidate_line_too_long(self, protocol: SeatProtocol, start: bytes, limit: int) -> None:
        """A candidate's first line passed ``limit`` bytes (``start``: its first bytes): it is refused."""


class SeatListener(Protocol):
    """What a connection that holds the seat reports to (the hand loop:
    :class:`dealer.handloop.HandLoop`)."""

    def seat_line(self, seat: int, line: str) -> None:
        """One line (without its ending) arrived from ``seat``."""

    def seat_line_too_long(self, seat: int, length: int, limit: int) -> None:
        """``seat`` sent a line of at least ``length`` bytes, over its ``limit``."""

    def seat_not_reading(self, seat: int, unsent: int, limit: int) -> None:
        """``unsent`` bytes wait for ``seat``, which does not read them (over ``limit``)."""

    def seat_error(self, seat: int, error: Exception) -> None:
        """Handling a line of ``seat`` raised ``error`` (a dealer bug)."""

    def seat_lost(self, seat: int, reason: Failure) -> None:
        """The connection of ``seat`` closed."""


class SeatProtocol(twisted_protocol.Protocol):
    """One connection to a seat's port (a candidate until its VERSION line gives it the seat).

    Args:
        handshake: the seat's port (its factory), told of the connection until it holds the seat.
        listener: where the lines go once it holds the seat (the hand loop).
        seat: the seat index (0-based, command-line order).
        max_length: the longest line accepted, in bytes.
        budget: the per-bot limits (unsent output, send buffer).
    """

    delimiter = b"\n"
    #: The reactor's read step for this connection (acpc_lbr.runtime.reactor.LeanAsyncioReactor);
    #: each connection's own is bound to its ``io`` in ``__init__``.
    read_ready: Callable[[Any, Any], None] = staticmethod(seatio.read_ready)
    #: The end of a :meth:`hold` (an IDelayedCall), while one lasts.
    _held: Any = None
    #: :meth:`lineReceived` is this class's own, so the compiled framing hands each line to
    #: :func:`dealer.seatio.line_received` itself (a Python call less per line); False in a
    #: subclass that overrides it (set by ``__init_subclass__``).
    direct_lines = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.direct_lines = cls.lineReceived is SeatProtocol.lineReceived

    def __init__(self, handshake: Handshake, listener: SeatListener, seat: int,
                 max_length: int = DEFAULT_MAX_LINE, budget: BotBudget | None = None) -> None:
        if not 1 <= max_length <= LARGEST_MAX_LINE:
            raise ValueError(f"line limit must be in 1..{LARGEST_MAX_LINE}, got {max_length}")
        self.handshake = handshake
        #: The per-line state, compiled (:class:`dealer.seatio.SeatIO`): the listener, the seat,
        #: the line limit, the budget, the prefix handlers, ``accepted`` (the connection holds
        #: the seat: its VERSION line was accepted), ``refused`` (refused, or let go after a bad
        #: handshake: its lines are dropped), ``paused`` (lines are not handled: back-pressure
        #: or a hold), ``ahead`` (the next state made ready for this seat's likely replies while
        #: it is to act, set and cleared by the match; the read step sends it), the buffers.
        #: This class reads and sets them through the properties below.
        self.io = seatio.SeatIO(self, listener, seat, max_length,
                                budget if budget is not None else BotBudget(),
                                self.MAX_QUEUED_LINES, self.direct_lines)
        #: The reactor's read step, bound to this connection's ``io`` (the reactor calls it
        #: with itself and the transport).
        self.read_ready = functools.partial(seatio.read_io_ready, self.io)
        #: The dealer stopped reading because output for this bot piled up.
        self.reading_paused = False
        #: A pending handshake deadline, set by the seat's factory.
        self.handshake_timer: DelayedCall | None = None

    # -- the per-line state, in self.io ----------------------------------------

    @property
    def listener(self) -> SeatListener:
        return cast(SeatListener, self.io.listener)  # set as one (__init__, the setter)

    @listener.setter
    def listener(self, value: SeatListener) -> None:
        self.io.listener = value

    @property
    def seat(self) -> int:
        return self.io.seat

    @property
    def MAX_LENGTH(self) -> int:  # noqa: N802 (LineReceiver's name)
        return self.io.max_length

    @MAX_LENGTH.setter
    def MAX_LENGTH(self, value: int) -> None:  # noqa: N802
        self.io.max_length = value

    @property
    def budget(self) -> BotBudget:
        return self.io.budget

    @budget.setter
    def budget(self, value: BotBudget) -> None:
        self.io.budget = value

    @property
    def prefix_handlers(self) -> dict[str, Callable[[str], None]]:
        return self.io.prefix_handlers

    @property
    def accepted(self) -> bool:
        return self.io.accepted

    @accepted.setter
    def accepted(self, value: bool) -> None:
        self.io.accepted = value

    @property
    def refused(self) -> bool:
        return self.io.refused

    @refused.setter
    def refused(self, value: bool) -> None:
        self.io.refused = value

    @property
    def paused(self) -> bool:
        return self.io.paused

    @paused.setter
    def paused(self, value: bool) -> None:
        self.io.paused = value

    @property
    def ahead(self) -> seatio.Ahead | None:
        return self.io.ahead

    @ahead.setter
    def ahead(self, value: seatio.Ahead | None) -> None:
        self.io.ahead = value

    @property
    def direct_socket(self) -> Any:
        return self.io.direct_socket

    def peer_label(self) -> str:
        """``connection 127.0.0.1:40312``: how messages name a connection before it holds a seat."""
        transport: Any = self.transport
        peer = transport.getPeer() if transport is not None else None
        host, port = getattr(peer, "host", None), getattr(peer, "port", None)
        return f"connection {host}:{port}" if host is not None else "connection (unknown peer)"

    def connectionMade(self) -> None:
        transport: Any = self.transport
        if isinstance(transport, tcp.Connection):
            transport.setTcpNoDelay(True)
            try:
                transport.socket.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF,
                                            self.budget.send_buffer_bytes)
            except OSError:
                pass  # the system default then
        if transport is not None:
            transport.registerProducer(self, True)
        if not self.handshake.candidate(self):
            self.refuse()

    def refuse(self) -> None:
        """Close a connection that does not (or no longer may) hold the seat."""
        self.refused = True
        self.close()

    def dataReceived(self, data: bytes) -> None:
        """Split ``data`` into lines (``\\n``) and hand each to :meth:`lineReceived`.

        As ``LineReceiver``: a line longer than ``MAX_LENGTH``, or a partial
        line that already is, goes to :meth:`lineLengthExceeded` with the rest
        of the buffer (which is dropped); while :attr:`paused`, lines wait;
        once the transport is closing, the rest is not read. Unlike it, each
        byte is looked at once and the buffer is not copied per line, nor per
        read of a line that comes in pieces.
        """
        seatio.data_received(self.io, data)

    def lineReceived(self, line: bytes) -> None:
        """One line from the connection (its ``\\n`` removed, ``\\r`` still on)."""
        seatio.line_received(self.io, line)

    def lineLengthExceeded(self, line: bytes) -> None:
        if self.accepted:
            self.listener.seat_line_too_long(self.seat, len(line), self.MAX_LENGTH)
        elif not self.refused:  # a first line too long to be a VERSION line: refused, saying so
            self.handshake.candidate_line_too_long(self, line[:100], self.MAX_LENGTH)
            self.refused = True
        self.abort()

    def hello(self, line: str) -> bool:
        """The connection's first line, to its port's factory: True gives it the seat."""
        return self.handshake.hello(self, line)

    def cancel_handshake_timer(self) -> None:
        """Cancel the handshake deadline, if one is pending."""
        timer = self.handshake_timer
        if timer is not None and timer.active():
            timer.cancel()
        self.handshake_timer = None

    def connectionLost(self, reason: Failure = connectionDone) -> None:
        seatio.closed(self.io)
        self.cancel_handshake_timer()
        if self._held is not None and self._held.active():
            self._held.cancel()
        self._held = None
        if self.accepted:
            self.listener.seat_lost(self.seat, reason)
        else:
            self.handshake.candidate_lost(self)

    # -- back-pressure (IPushProducer of our own transport) -----------------

    def pauseProducing(self) -> None:
        """The transport holds too much output for the bot: stop reading from it.

        Lines already read wait too (:attr:`paused`).
        """
        self.reading_paused = True
        self.paused = True
        transport: Any = self.transport
        if transport is not None:
            transport.pauseProducing()

    def resumeProducing(self) -> None:
        """The bot took its output: read from it (and handle what was read) again."""
        self.reading_paused = False
        if self._held is None:  # else the hold's end reads on
            self._read_again()

    def hold(self, clock: Any, seconds: float) -> None:
        """Read and handle nothing more from the bot for ``seconds`` (what it sends meanwhile waits):
        the cost of its unusable lines (``BotBudget.unusable_line_hold_s``) falls on its own match."""
        transport: Any = self.transport
        if seconds <= 0 or self._held is not None or transport is None or transport.disconnecting:
            return
        self.paused = True
        transport.pauseProducing()
        self._held = clock.callLater(seconds, self._release)

    def _release(self) -> None:
        self._held = None
        if not self.reading_paused:  # else the back-pressure's end (resumeProducing) reads on
            self._read_again()

    def _read_again(self) -> None:
        """Read from the bot again, and handle the lines read before the pause or the hold."""
        self.paused = False
        transport: Any = self.transport
        if transport is not None:
            transport.resumeProducing()
        seatio.data_received(self.io, b"")

    def stopProducing(self) -> None:
        """The transport is going away; nothing to stop."""

    def unsent_bytes(self) -> int:
        """Output the bot has not taken yet, in bytes."""
        return seatio.unsent_bytes(self.transport)

    # -- sending ----------------------------------------------------------

    def queue_line(self, text: str) -> None:
        """Queue one line (ending it with ``\\r\\n``); it goes out with the next send.

        The dealer queues the states of a seat that is not to act, and the
        final state of a hand: they go out together with the next line sent
        to that seat (its next turn), in order, in one send. At most
        :attr:`MAX_QUEUED_LINES` wait; one more sends them all at once.
        """
        seatio.queue_line(self.io, text)

    #: Queued lines (:meth:`queue_line`) that may wait for the next send.
    MAX_QUEUED_LINES = 64

    def flush_lines(self) -> None:
        """Send the queued lines, if any."""
        seatio.flush_lines(self.io)

    def send_line(self, text: str) -> None:
        """Send the queued lines, if any, and ``text`` after them, in one send.

        Every line of a seat goes out in the order it was given, queued or not.
        """
        seatio.send_line(self.io, text)

    def close(self) -> None:
        """Send what is queued, then close the connection once writes are out."""
        self.flush_lines()
        seatio.closed(self.io)
        transport: Any = self.transport
        if transport is not None:
            _unregister(transport)  # else loseConnection waits for us forever
            transport.loseConnection()

    def abort(self) -> None:
        """Drop the connection now, unsent output and all."""
        seatio.closed(self.io)
        transport: Any = self.transport
        if transport is not None:
            _unregister(transport)
            transport.abortConnection()


def _unregister(transport: Any) -> None:
    if transport.producer is not None:
        transport.unregisterProducer()

"""Seating: one listening port per seat, the handshake of each connection, and the seats taken.

The Twisted way: a :class:`SeatFactory` per seat's port owns the connections
made to it, each a :class:`dealer.seat.SeatProtocol`, until one of them sends a
valid ``VERSION`` line and gets the seat (the port then closes); the others are
closed, saying why. :class:`Seating` holds the factories of a match: it opens the
ports, waits for every seat to be taken (within ``--start_timeout``) and closes
what is left when the match ends.

A port takes up to ``BotBudget.max_candidates`` connections at once; one that
sends something else first, or nothing within the handshake limit, is closed and
the seat goes on waiting, so squatters cannot keep the real bot out. Messages
about a connection name its address, not the player, who may not have arrived yet.

Nothing here runs per action (pure Python); the connection's own per-line work is
compiled (:mod:`dealer.seatio`). Tests drive it with ``task.Clock`` and
``StringTransport`` (tests/dealer/test_seating.py).
"""

from __future__ import annotations

import re
import _socket
from collections.abc import Callable, Sequence

from twisted.internet import defer
from twisted.internet.error import CannotListenError
from twisted.internet.interfaces import IAddress
from twisted.internet.protocol import Factory

from acpc_lbr.runtime.exit_codes import EXIT_FAILED
from dealer import events as ev
from dealer.budget import BotBudget
from dealer.config import MatchAborted
from dealer.events import Cause, EventLog, Trace
from dealer.fds import shortage_note, watch_accept_failures
from dealer.interfaces import Clock, ListeningPort, MatchReactor, SocketReactor
from dealer.seat import SeatListener, SeatProtocol
from dealer.seats import Seat
from protocol.wire import scanf_unsigned

#: The protocol version this dealer speaks.
VERSION = (2, 0, 0)
#: The reference's ``sscanf(line, "VERSION:%u.%u.%u")``: C blanks, a sign, ASCII digits.
VERSION_LINE = re.compile(r"VERSION:[ \t\n\v\f\r]*([+-]?[0-9]+)\.[ \t\n\v\f\r]*([+-]?[0-9]+)"
                          r"\.[ \t\n\v\f\r]*([+-]?[0-9]+)")


def version_number(digits: str) -> int:
    """A VERSION field's value as the reference's ``%u`` stores it (``-2`` and 2**32 + 2 are
    not 2 and 2, but 4294967294 and 2), in linear time however many digits."""
    return scanf_unsigned(digits, 32)


def printable(text: str) -> str:
    """``text`` with each character outside printable ASCII written ``\\xNN`` (lines are latin-1)."""
    if text.isascii() and text.isprintable():
        return text
    return "".join(c if " " <= c <= "~" else f"\\x{ord(c):02x}" for c in text)


class SeatFactory(Factory):
    """One seat's port: builds a :class:`SeatProtocol` per connection and owns those that
    have not sent their first line (the candidates); the first valid ``VERSION`` line
    gets the seat (:meth:`hello`). It is the connections' :class:`dealer.seat.Handshake`.

    Args:
        seat: the seat this port is for.
        seating: the match's seating (clock, events, trace, limits; told when the seat is taken).
    """

    def __init__(self, seat: Seat, seating: Seating) -> None:
        self.seat = seat
        self.seating = seating
        self.port: ListeningPort | None = None
        #: Connections on this seat's port that have not sent VERSION yet.
        self.candidates: list[SeatProtocol] = []
        #: Why the last candidate was closed (for the start-timeout message).
        self.last_refusal: str | None = None
        self.ready = False  # its VERSION line was read

    def buildProtocol(self, addr: IAddress | None) -> SeatProtocol:
        seating = self.seating
        return SeatProtocol(self, seating.listener, self.seat.index, seating.max_line, seating.budget)

    def candidate(self, protocol: SeatProtocol) -> bool:
        """A connection arrived: it waits for its VERSION line (False: refused at once)."""
        seating, seat = self.seating, self.seat
        if seat.connected or not seating.accepting:
            return False
        budget = seating.budget
        self.candidates.append(protocol)
        if len(self.candidates) > budget.max_candidates:
            oldest = self.candidates.pop(0)
            self.refuse(oldest, f"{oldest.peer_label()} to {seat.label()} closed: "
                        f"more than {budget.max_candidates} connections waited to send VERSION")
        protocol.handshake_timer = seating.clock.callLater(
            seating.handshake_s, self._handshake_expired, protocol)
        seating.events.emit(ev.ConnectionOpened(seat=seat.index + 1, peer=protocol.peer_label()))
        return True

    def _handshake_expired(self, protocol: SeatProtocol) -> None:
        protocol.handshake_timer = None
        if protocol in self.candidates:
            self.candidates.remove(protocol)
            self.refuse(protocol, f"{protocol.peer_label()} to {self.seat.label()} "
                        f"sent no VERSION line within {self.seating.handshake_s:g} s")

    def refuse(self, protocol: SeatProtocol, why: str) -> None:
        """Close a connection that did not get the seat, saying why (naming the connection)."""
        seating = self.seating
        self.last_refusal = why
        seating.trace.line(f"WARNING: {why}")
        seating.trace.flush()
        seating.events.emit(ev.ConnectionRefused(seat=self.seat.index + 1, peer=protocol.peer_label(),
                                                 reason=why))
        protocol.cancel_handshake_timer()
        protocol.refuse()

    def hello(self, protocol: SeatProtocol, line: str) -> bool:
        """The first line of a candidate: True gives it the seat (a valid VERSION line)."""
        seat = self.seat
        if protocol not in self.candidates or seat.connected or not self.seating.accepting:
            return False
        self.candidates.remove(protocol)
        match = VERSION_LINE.match(line)
        if match is None:
            # A stranger's bytes: quoted in printable ASCII (no terminal escapes, no NUL in the .log).
            shown = printable(line[:100]) + ("" if len(line) <= 100 else f"... ({len(line)} bytes)")
            self.refuse(protocol, f"{protocol.peer_label()} to {seat.label()} "
                        f"sent an invalid version string {shown}")
            return False
        protocol.cancel_handshake_timer()
        self._seat(protocol)
        self._check_version(line, match)
        self.ready = True
        self.seating.events.emit(ev.SeatReady(seat=seat.index + 1, name=seat.name))
        self.seating.taken()
        return True

    def _seat(self, protocol: SeatProtocol) -> None:
        """Give ``protocol`` the seat: close the port and the other candidates."""
        seat, seating = self.seat, self.seating
        seat.connected = True
        seat.protocol = protocol
        seating.on_seated(seat, protocol)
        self.stop_listening()
        others, self.candidates = self.candidates, []
        for other in others:
            self.refuse(other, f"{other.peer_label()} to {seat.label()} closed: "
                        "another connection sent VERSION first")
        seating.events.emit(ev.SeatConnected(seat=seat.index + 1, name=seat.name,
                                             peer=protocol.peer_label()))

    def _check_version(self, line: str, match: re.Match[str]) -> None:
        """Warn, as the reference does, about a VERSION other than 2.0 (and play on)."""
        major, minor, _ = (version_number(g) for g in match.groups())
        if major != VERSION[0] or minor > VERSION[1]:
            self.seating.trace.line("ERROR: this server is currently using version 2.0.0")
            self.seating.events.emit(ev.VersionMismatch(seat=self.seat.index + 1, line=line[:100]))

    def candidate_lost(self, protocol: SeatProtocol) -> None:
        """A candidate closed before it got the seat."""
        if protocol in self.candidates:
            self.candidates.remove(protocol)
            protocol.cancel_handshake_timer()
            self.seating.events.emit(ev.ConnectionClosed(seat=self.seat.index + 1, peer=protocol.peer_label(),
                                                         reason="closed before sending VERSION"))

    def candidate_line_too_long(self, protocol: SeatProtocol, start: bytes, limit: int) -> None:
        """A candidate's first line passed ``limit`` bytes: no VERSION line is that long."""
        if protocol in self.candidates:
            self.candidates.remove(protocol)
            shown = printable(start.decode("latin-1"))
            self.refuse(protocol, f"{protocol.peer_label()} to {self.seat.label()} sent a first "
                        f"line longer than {limit} bytes, which no VERSION line is: {shown}...")

    def stop_listening(self) -> None:
        """Close the port if it is open."""
        if self.port is not None:
            self.port.stopListening()
            self.port = None

    def close_candidates(self) -> None:
        """The match is over: close the connections still waiting to send VERSION."""
        for candidate in self.candidates:
            candidate.cancel_handshake_timer()
            candidate.refuse()
        self.candidates = []


class Seating:
    """The seats' ports and handshakes of one match.

    Args:
        seats: the match's seats, in seat order.
        listener: where a seated connection's lines go (the hand loop).
        reactor: opens the ports (None: :meth:`listen` is not called, as in memory tests).
        clock: the handshake and start timers.
        events, trace: where connections and refusals are told.
        budget: the per-bot limits (``max_candidates``, ``handshake_s``, ...).
        max_line: each seat's line limit, in bytes.
        handshake_s: how long a new connection has to send its VERSION line.
        abort: ends the match (the start timeout).
        on_seated: told when a connection takes a seat, before the others are closed
            (the range-query relay attaches to it).
    """

    def __init__(self, seats: Sequence[Seat], listener: SeatListener, *, reactor: MatchReactor | None,
                 clock: Clock, events: EventLog, trace: Trace, budget: BotBudget, max_line: int,
                 handshake_s: float, abort: Callable[[MatchAborted], None],
                 on_seated: Callable[[Seat, SeatProtocol], None]) -> None:
        self.seats = list(seats)
        self.listener = listener
        self.reactor = reactor
        self.clock = clock
        self.events = events
        self.trace = trace
        self.budget = budget
        self.max_line = max_line
        self.handshake_s = handshake_s
        self.abort = abort
        self.on_seated = on_seated
        #: False once the match failed or ended: no connection gets a seat any more.
        self.accepting = True
        self.factories = [SeatFactory(seat, self) for seat in self.seats]
        self._all_seated: defer.Deferred[None] = defer.Deferred()

    def listen(self, ports: Sequence[int], bind: str, bound: Sequence[_socket.socket] = ()) -> list[int]:
        """Open one listening port per seat (0 or missing: any free port); returns their numbers.

        Args:
            ports, bind: the seats' ports and the interface.
            bound: the seats' sockets, already bound and listening (dealer/startup.py: the
                dealer printed its port line before loading Twisted): the reactor listens on
                them (``adoptStreamPort``) and they are closed here; ``ports`` then only names
                them in messages. Empty: the reactor opens the ports.

        Raises:
            MatchAborted: a port could not be opened (exit code 1).
        """
        tcp = self.reactor
        assert tcp is not None, "listening needs a reactor"
        wanted = list(ports) + [0] * (len(self.factories) - len(ports))
        watch_accept_failures()  # a seat refused for want of descriptors is then said so
        numbers = []
        for index, (factory, port) in enumerate(zip(self.factories, wanted)):
            try:
                if bound:
                    factory.port = self._adopt(bound[index], factory)
                else:
                    factory.port = tcp.listenTCP(port, factory, backlog=8, interface=bind)
            except (CannotListenError, OSError) as error:
                self.stop_listening()
                for listener in bound:
                    listener.close()
                why = error.socketError if isinstance(error, CannotListenError) else error
                raise MatchAborted(
                    Cause.STARTUP, f"cannot listen on port {port} for {factory.seat.label()}: {why}",
                    factory.seat.index, EXIT_FAILED,
                ) from error
            numbers.append(factory.port.getHost().port)
        self.events.emit(ev.Listening(ports=tuple(numbers), bind=bind))
        return numbers

    def _adopt(self, listener: _socket.socket, factory: SeatFactory) -> ListeningPort:
        """Listen on ``listener`` with the reactor, which takes a copy of its descriptor;
        ``listener`` itself is closed."""
        reactor = self.reactor
        if not isinstance(reactor, SocketReactor):
            raise TypeError(f"{type(reactor).__name__} cannot adopt a listening socket")
        try:
            return reactor.adoptStreamPort(listener.fileno(), listener.family, factory)
        finally:
            listener.close()

    def stop_listening(self) -> None:
        """Close every listening port that is still open."""
        for factory in self.factories:
            factory.stop_listening()

    def taken(self) -> None:
        """A seat was taken: once all are, :meth:`wait` returns."""
        if all(s.connected for s in self.seats) and not self._all_seated.called:
            self._all_seated.callback(None)

    async def wait(self, timeout_ms: int | None) -> None:
        """Wait until every seat is taken (then close the ports).

        Raises:
            MatchAborted: the match failed meanwhile (:meth:`fail`), or ``timeout_ms``
                passed first (cause ``no_connection``).
        """
        timer = None
        if timeout_ms is not None:
            timer = self.clock.callLater(timeout_ms / 1000.0, self._start_timeout, timeout_ms)
        try:
            await self._all_seated
        finally:
            if timer is not None and timer.active():
                timer.cancel()
        self.stop_listening()

    def _start_timeout(self, timeout_ms: int) -> None:
        missing = next(f for f in self.factories if not f.seat.connected)
        last = f" (last refused: {missing.last_refusal})" if missing.last_refusal else ""
        self.abort(MatchAborted(
            Cause.NO_CONNECTION,
            # No option named: the dealer's is --start_timeout, evaluate has none.
            f"timed out waiting for seat {missing.seat.index + 1} ({missing.seat.name}) to connect "
            f"within {timeout_ms / 1000.0:g} s{last}{shortage_note()}",
            missing.seat.index,
        ))

    def fail(self, failure: MatchAborted) -> None:
        """The match cannot go on: no more seats are given, and :meth:`wait` raises ``failure``."""
        self.accepting = False
        if not self._all_seated.called:
            self._all_seated.errback(failure)

    def close(self) -> None:
        """The match is over: close the ports and every connection still waiting to send VERSION."""
        self.accepting = False
        self.stop_listening()
        for factory in self.factories:
            factory.close_candidates()

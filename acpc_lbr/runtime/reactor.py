"""Installing Twisted's asyncio reactor (done once, by a command's ``main()``), and writing now.

Never installed at import time: pytest-twisted installs its own reactor for
the tests, and installing after ``twisted.internet.reactor`` was imported fails.

The reactor installed is Twisted's ``AsyncioSelectorReactor`` with one change
(:func:`lean_reactor_class`): a readable or writable socket is dispatched to
the reactor's own handler directly, not through ``twisted.python.log``'s
per-event logging context (``callWithLogger``), which only names the
connection in the legacy log of an exception; the reactor still logs such an
exception, as its ``_readOrWrite`` always does. The context cost ~3.5 us of
CPU per socket event, about a fifth of the dealer's work per action. And a TCP
connection whose protocol has a ``read_ready(reactor, transport)`` (a seat of
the dealer: :func:`dealer.seatio.read_ready`, compiled) is read by that
instead of by Twisted's ``_readOrWrite`` and ``doRead``: it must do what they
do (read once, hand the bytes to the protocol, close the connection on an
error, the end of the stream or an exception, as they would).

**Twisted's private names.** This is the one module that reaches into names
Twisted does not publish (an underscore): the lean reactor's dispatch, the
dealer's read step's fall-backs (:func:`read_by_twisted`,
:func:`disconnect_reader`, :func:`log_failure`), the unsent output of a
transport (:func:`unsent_bytes`) and :func:`write_now`. :data:`TWISTED_PRIVATE_NAMES`
lists them all, and tests/acpc_lbr/test_reactor.py fails loudly, naming the
missing one, if a Twisted release drops or renames any.

The asyncio event loop under it is the standard library's, except for a
command that asks for uvloop's (libuv, in C; a dependency on POSIX): the
dealer, which spends a good part of its CPU in the loop's dispatch of socket
events (uvloop takes ~3.5 us of CPU less per event here). Not for commands
that start processes: Twisted learns that a child exited from its SIGCHLD
handler, which uvloop's own signal handling keeps from running (``acpc-lbr
evaluate`` then waits forever for its opponent's exit). ``ACPC_LBR_EVENT_LOOP=asyncio``
puts the dealer on the standard library's loop too (acpc_lbr/runtime/eventloop.py).
"""

from __future__ import annotations

import asyncio
import errno
from typing import Any

from acpc_lbr.runtime.lazyimports import defer_unused_stdlib

defer_unused_stdlib()  # before the first Twisted import: http.cookiejar and the like load on use

from twisted.internet import abstract, tcp  # noqa: E402  (not the reactor: importing it installs none)
from twisted.python.failure import Failure  # noqa: E402

from acpc_lbr.runtime.eventloop import event_loop_choice  # noqa: E402

#: Every private name of Twisted this module uses, by the class that has it (the test checks
#: each still exists): the asyncio reactor's, its poller's, and a TCP connection's (a FileDescriptor's).
TWISTED_PRIVATE_NAMES: dict[str, tuple[str, ...]] = {
    "twisted.internet.asyncioreactor.AsyncioSelectorReactor": (
        "_asyncioEventloop", "_readers", "_writers", "_continuousPolling", "_unregisterFDInAsyncio",
        "_readOrWrite", "_disconnectSelectable", "_log",
    ),
    "twisted.internet.posixbase._ContinuousPolling": ("_readers", "_writers"),
    "twisted.internet.abstract.FileDescriptor": ("_tempDataBuffer", "_tempDataLen"),
}


def new_event_loop(prefer_uvloop: bool = False) -> asyncio.AbstractEventLoop:
    """A fresh asyncio event loop: the standard library's, or with ``prefer_uvloop``
    uvloop's unless it is missing or ``ACPC_LBR_EVENT_LOOP=asyncio``
    (:func:`acpc_lbr.runtime.eventloop.event_loop_choice`).

    Never prefer uvloop in a process that starts child processes (see the module).

    Raises:
        SystemExit: (a one-line error) ``ACPC_LBR_EVENT_LOOP`` names another
            loop, or ``uvloop`` when it is not installed.
    """
    if event_loop_choice(prefer_uvloop) == "uvloop":
        import uvloop

        return uvloop.new_event_loop()
    return asyncio.new_event_loop()


def event_loop_of(reactor: Any) -> asyncio.AbstractEventLoop:
    """The asyncio event loop under Twisted's asyncio ``reactor``.

    Raises:
        TypeError: ``reactor`` is not Twisted's asyncio reactor.
    """
    from twisted.internet import asyncioreactor

    if not isinstance(reactor, asyncioreactor.AsyncioSelectorReactor):
        raise TypeError(f"not Twisted's asyncio reactor: {type(reactor).__name__}")
    loop: asyncio.AbstractEventLoop = reactor._asyncioEventloop
    return loop


def install_asyncio_reactor(prefer_uvloop: bool = False) -> None:
    """Install the asyncio reactor on a fresh event loop (:func:`new_event_loop`; idempotent)."""
    import sys

    if "twisted.internet.reactor" in sys.modules:
        from twisted.internet import asyncioreactor, reactor

        if not isinstance(reactor, asyncioreactor.AsyncioSelectorReactor):
            raise RuntimeError("a non-asyncio Twisted reactor is already installed")
        return
    from twisted.internet.main import installReactor

    loop = new_event_loop(prefer_uvloop)
    asyncio.set_event_loop(loop)
    installReactor(lean_reactor_class()(loop))  # type: ignore[no-untyped-call]


def lean_reactor_class() -> Any:
    """``AsyncioSelectorReactor`` without the logging context around every socket event.

    ``addReader``/``addWriter`` as Twisted's, registering ``_readOrWrite``
    itself with the asyncio loop (Twisted registers it wrapped in
    ``callWithLogger``). Built on call: importing the reactor module is kept
    off the import path of the commands.
    """
    from twisted.internet import asyncioreactor

    class LeanAsyncioReactor(asyncioreactor.AsyncioSelectorReactor):
        def stop(self) -> None:
            # Twisted's SIGINT/SIGTERM handler schedules a stop for the next timed call; a
            # command that stopped the reactor itself meanwhile would see that stop raise
            # ReactorNotRunning, a traceback after its one line. Stopping twice is no error.
            from twisted.internet.error import ReactorNotRunning

            try:
                super().stop()  # type: ignore[no-untyped-call]
            except ReactorNotRunning:
                pass

        def addReader(self, reader: Any) -> None:
            if reader in self._readers or reader in self._continuousPolling._readers:
                return
            fd = reader.fileno()
            # A client connecting has no protocol yet (Twisted reads it for the
            # connect's outcome): it is read by Twisted's own step.
            read_ready = (getattr(getattr(reader, "protocol", None), "read_ready", None)
                          if isinstance(reader, tcp.Connection) else None)
            try:
                if read_ready is not None:
                    self._asyncioEventloop.add_reader(fd, read_ready, self, reader)
                else:
                    self._asyncioEventloop.add_reader(fd, self._readOrWrite, reader, True)
                self._readers[reader] = fd
            except OSError as error:
                self._unregisterFDInAsyncio(fd)  # type: ignore[no-untyped-call]
                if error.errno == errno.EPERM:  # e.g. a regular file: polled instead
                    self._continuousPolling.addReader(reader)  # type: ignore[no-untyped-call]
                else:
                    raise

        def addWriter(self, writer: Any) -> None:
            if writer in self._writers or writer in self._continuousPolling._writers:
                return
            fd = writer.fileno()
            try:
                self._asyncioEventloop.add_writer(fd, self._readOrWrite, writer, False)
                self._writers[writer] = fd
            except PermissionError:
                self._unregisterFDInAsyncio(fd)  # type: ignore[no-untyped-call]
                self._continuousPolling.addWriter(writer)  # type: ignore[no-untyped-call]
            except BrokenPipeError:
                self._unregisterFDInAsyncio(fd)  # type: ignore[no-untyped-call]
            except BaseException:
                self._unregisterFDInAsyncio(fd)  # type: ignore[no-untyped-call]
                raise

    return LeanAsyncioReactor


def write_now(transport: Any, data: bytes) -> bool:
    """Write ``data`` on a Twisted transport, straight to the socket when nothing waits before it.

    Twisted's ``write`` registers the socket for writing and sends on the
    next reactor turn: two epoll changes and a loop iteration per message,
    which for one-line messages costs more than the message. On a connected
    TCP transport with nothing buffered, the bytes go to ``socket.send`` at
    once; whatever the socket does not take (and every other transport, such
    as the tests' ``StringTransport``) goes through ``write``, so the order
    of bytes and the back-pressure are unchanged.

    Returns:
        True when the socket took every byte at once (nothing was queued).
    """
    if (isinstance(transport, tcp.Connection) and transport.connected
            and not transport.disconnecting and not transport.dataBuffer
            and not transport._tempDataBuffer):
        try:
            sent = transport.socket.send(data)
        except OSError:  # BlockingIOError included: write() queues it, or meets the error
            sent = 0
        if sent == len(data):
            return True
        data = data[sent:]
    transport.write(data)
    return False


def unsent_bytes(transport: Any) -> int:
    """Bytes written to ``transport`` that the peer has not taken yet (0 if unknown)."""
    if isinstance(transport, abstract.FileDescriptor):
        unsent: int = len(transport.dataBuffer) - transport.offset + transport._tempDataLen
        return unsent
    return 0


def read_by_twisted(reactor: Any, transport: Any) -> None:
    """Let Twisted's own read step handle a readable ``transport`` (one closed under us)."""
    reactor._readOrWrite(transport, True)


def disconnect_reader(reactor: Any, transport: Any, why: Failure | BaseException) -> None:
    """Close ``transport`` after a failed read, as Twisted's read step does (``why``: the reason)."""
    reactor._disconnectSelectable(transport, why, True)


def log_failure(reactor: Any) -> None:
    """Log the exception being handled, as the reactor logs one raised by a protocol."""
    reactor._log.failure(None)

"""acpc_lbr.runtime.reactor.write_now: straight to the socket only when nothing waits before the bytes."""

from __future__ import annotations

from typing import Any

import pytest
from twisted.internet import tcp
from twisted.internet.testing import StringTransport

from acpc_lbr.runtime.reactor import write_now


class _Socket:
    """Takes at most ``room`` bytes per send, or raises ``error``."""

    def __init__(self, room: int, error: OSError | None = None) -> None:
        self.room, self.error, self.sent = room, error, b""

    def send(self, data: bytes) -> int:
        if self.error is not None:
            raise self.error
        taken = data[: self.room]
        self.sent += taken
        return len(taken)


def _connection(socket: _Socket, buffered: bytes = b"", connected: bool = True) -> Any:
    """A TCP connection object without a reactor: its socket and its queued writes."""
    connection: Any = tcp.Connection.__new__(tcp.Connection)
    connection.socket = socket
    connection.connected = connected
    connection.disconnecting = False
    connection.dataBuffer = buffered
    connection._tempDataBuffer = []
    connection.written = []
    connection.write = connection.written.append
    return connection


def test_a_line_the_socket_takes_is_sent_now() -> None:
    socket = _Socket(room=100)
    connection = _connection(socket)
    write_now(connection, b"MATCHSTATE:0:1::|:c\r\n")
    assert socket.sent == b"MATCHSTATE:0:1::|:c\r\n" and connection.written == []


def test_what_the_socket_does_not_take_is_queued_after_it() -> None:
    socket = _Socket(room=4)
    connection = _connection(socket)
    write_now(connection, b"QUERY:l1\r\n")
    assert socket.sent == b"QUER" and connection.written == [b"Y:l1\r\n"]


def test_bytes_already_queued_keep_their_place() -> None:
    socket = _Socket(room=100)
    connection = _connection(socket, buffered=b"VERSION:2.0.0\r\n")
    write_now(connection, b"RANGE:q1:2:f=K0\r\n")
    assert socket.sent == b"" and connection.written == [b"RANGE:q1:2:f=K0\r\n"]


def test_a_socket_error_is_left_to_write() -> None:
    for error in (BlockingIOError(), ConnectionResetError()):
        connection = _connection(_Socket(room=100, error=error))
        write_now(connection, b"c\r\n")
        assert connection.written == [b"c\r\n"]


def test_other_transports_and_closed_connections_use_write() -> None:
    transport: Any = StringTransport()
    write_now(transport, b"f\r\n")
    assert transport.value() == b"f\r\n"
    socket = _Socket(room=100)
    closed = _connection(socket, connected=False)
    write_now(closed, b"f\r\n")
    assert socket.sent == b"" and closed.written == [b"f\r\n"]


_LEAN_SCRIPT = r"""
import socket, sys
from acpc_lbr.runtime.reactor import install_asyncio_reactor, lean_reactor_class
install_asyncio_reactor(prefer_uvloop=True)
from twisted.internet import asyncioreactor, protocol, reactor
from twisted.python import log
assert type(reactor).__name__ == "LeanAsyncioReactor", type(reactor)
assert isinstance(reactor, asyncioreactor.AsyncioSelectorReactor)
got = []

class Echo(protocol.Protocol):
    def dataReceived(self, data):
        got.append(data)
        if data == b"boom\n":
            raise ValueError("a handler bug")  # logged by the reactor; the connection drops
        self.transport.write(b"echo " + data)  # through addWriter

    def connectionLost(self, reason):
        got.append(reason.type.__name__)
        if len(got) > 2:
            reactor.stop()

class Factory(protocol.Factory):
    def buildProtocol(self, addr):
        return Echo()

port = reactor.listenTCP(0, Factory(), interface="127.0.0.1")
client = socket.create_connection(("127.0.0.1", port.getHost().port))
loop = reactor._asyncioEventloop

def drive():
    client.sendall(b"hello\n")
    echoed = client.recv(100)
    assert type(loop).__module__.split(".")[0] == sys.argv[1], type(loop)
    if sys.argv[1] == "asyncio":  # uvloop does not show its readers
        # The reader registered with asyncio is the reactor's own handler.
        handlers = [key.data[0]._callback for key in loop._selector.get_map().values() if key.data[0]]
        assert log.callWithLogger not in handlers, handlers
        assert sum(getattr(h, "__self__", None) is reactor for h in handlers) >= 2, handlers
    got.append(echoed)  # before "boom" goes out: the reactor's thread appends what it reads
    client.sendall(b"boom\n")

reactor.callLater(0.05, lambda: reactor.callInThread(drive))
reactor.callLater(10, reactor.stop)
reactor.run()
print(got)
"""


@pytest.mark.parametrize("loop", ["uvloop", "asyncio"])
def test_installed_reactor_dispatches_socket_events_without_the_logging_context(loop: str) -> None:
    """The installed reactor (LeanAsyncioReactor), on either event loop (ACPC_LBR_EVENT_LOOP),
    reads, writes, and drops a connection whose handler raises, as Twisted's asyncio reactor
    does; its asyncio readers are its own handler."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "ACPC_LBR_EVENT_LOOP": loop}
    done = subprocess.run([sys.executable, "-c", _LEAN_SCRIPT, loop], capture_output=True,
                          text=True, timeout=60, check=False, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "[b'hello\\n', b'echo hello\\n', b'boom\\n', 'ValueError']", \
        done.stdout + done.stderr[-2000:]
    assert "a handler bug" in done.stderr  # the reactor logged the failure


_READ_READY_SCRIPT = r"""
import socket
from acpc_lbr.runtime.reactor import install_asyncio_reactor
install_asyncio_reactor()
from twisted.internet import reactor, tcp

def registered(connection):
    [key] = [key for key in reactor._asyncioEventloop._selector.get_map().values()
             if key.fd == connection.fileno()]
    return key.data[0]._callback

class Seat:
    @staticmethod
    def read_ready(reactor, transport):
        pass

ours, _ = socket.socketpair()
connecting = tcp.Connection.__new__(tcp.Connection)  # a client whose connect is under way
connecting.socket, connecting.fileno = ours, ours.fileno
reactor.addReader(connecting)  # no protocol yet: Twisted's step
assert registered(connecting) == reactor._readOrWrite, registered(connecting)
reactor.removeReader(connecting)
seat = tcp.Connection(ours, Seat(), reactor)
reactor.addReader(seat)
assert registered(seat) is Seat.read_ready, registered(seat)
print("ok")
"""


def test_a_protocol_may_take_over_the_read_step_and_a_connecting_client_has_none() -> None:
    """The installed reactor reads a connection through its protocol's ``read_ready`` when it
    has one (the dealer's seats), and through Twisted's own step otherwise, also for a
    client whose connect is under way and which has no protocol yet (a remote dealer)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "ACPC_LBR_EVENT_LOOP": "asyncio"}  # uvloop does not show its readers
    done = subprocess.run([sys.executable, "-c", _READ_READY_SCRIPT], capture_output=True,
                          text=True, timeout=60, check=False, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "ok"


def test_an_unknown_event_loop_is_a_one_line_error() -> None:
    """ACPC_LBR_EVENT_LOOP names uvloop or asyncio; anything else stops the command with one line."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "ACPC_LBR_EVENT_LOOP": "trio"}
    script = "from acpc_lbr.runtime.reactor import install_asyncio_reactor; install_asyncio_reactor(True)"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, check=False, env=env)
    assert done.returncode == 1
    assert done.stderr.strip() == "error: ACPC_LBR_EVENT_LOOP must be uvloop or asyncio, not 'trio'"


def test_twisted_s_unused_stdlib_imports_wait_until_used() -> None:
    """Installing the reactor loads Twisted without executing http.cookiejar (and urllib.request,
    http.client, email under it), which Twisted imports for a deprecated alias; a caller that
    reads the module still gets all of it."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from acpc_lbr.runtime.reactor import install_asyncio_reactor\n"
        "install_asyncio_reactor(True)\n"
        "from twisted.internet import reactor, tcp, defer, protocol\n"
        "print(sorted(m for m in ('urllib.request', 'http.client', 'email.parser') if m in sys.modules))\n"
        "import http.cookiejar\n"
        "print(http.cookiejar.CookieJar.__name__, 'urllib.request' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == ["[]", "CookieJar True"]


def test_only_a_command_that_asks_gets_uvloop() -> None:
    """Without prefer_uvloop (commands that start processes) the loop is the standard
    library's, whatever ACPC_LBR_EVENT_LOOP says; the dealer's CLI asks for uvloop."""
    import asyncio
    import os
    from pathlib import Path
    from unittest import mock

    from acpc_lbr.runtime.eventloop import EVENT_LOOP_ENV
    from acpc_lbr.runtime.reactor import new_event_loop

    with mock.patch.dict(os.environ, {EVENT_LOOP_ENV: "uvloop"}):
        plain = new_event_loop()
        fast = new_event_loop(prefer_uvloop=True)
    try:
        assert isinstance(plain, asyncio.SelectorEventLoop)
        assert type(fast).__module__.split(".")[0] == "uvloop"
    finally:
        plain.close()
        fast.close()
    cli = (Path(__file__).resolve().parents[2] / "acpc_lbr" / "cli" / "dealer.py").read_text()
    assert "install_asyncio_reactor(prefer_uvloop=True)" in cli


def test_every_private_name_of_twisted_used_still_exists() -> None:
    """acpc_lbr/runtime/reactor.py is the one module that uses Twisted's private names; each one it
    lists is looked up on a live object of its class, so a Twisted release that drops or
    renames one fails here, by name, rather than deep in a match."""
    import asyncio
    import importlib
    import pathlib
    import re

    from twisted.internet import abstract, asyncioreactor

    from acpc_lbr.runtime.reactor import TWISTED_PRIVATE_NAMES

    loop = asyncio.new_event_loop()
    try:
        reactor = asyncioreactor.AsyncioSelectorReactor(loop)
        live = {
            "twisted.internet.asyncioreactor.AsyncioSelectorReactor": reactor,
            "twisted.internet.posixbase._ContinuousPolling": reactor._continuousPolling,
            "twisted.internet.abstract.FileDescriptor": abstract.FileDescriptor(reactor=reactor),
        }
        missing = [f"{where}.{name}" for where, names in TWISTED_PRIVATE_NAMES.items()
                   for name in names if not hasattr(live[where], name)]
        for where in TWISTED_PRIVATE_NAMES:
            module, _, name = where.rpartition(".")
            assert isinstance(live[where], getattr(importlib.import_module(module), name))
    finally:
        loop.close()
    assert not missing, f"Twisted no longer has: {', '.join(missing)} (acpc_lbr/runtime/reactor.py uses them)"
    # Every private attribute the module reads on a Twisted object is in the list.
    source = pathlib.Path(importlib.import_module("acpc_lbr.runtime.reactor").__file__ or "").read_text()
    used = set(re.findall(r"(?:reactor|self|transport|_continuousPolling)\._([A-Za-z]\w*)", source))
    listed = {name.lstrip("_") for names in TWISTED_PRIVATE_NAMES.values() for name in names}
    assert used <= listed, f"private names used but not listed: {sorted(used - listed)}"


def test_the_dealer_reaches_twisted_s_private_names_only_through_the_adapter() -> None:
    """No module of dealer/ or agents/ reads an underscore name of a Twisted object: they go
    through acpc_lbr/runtime/reactor.py (their own objects' names, such as a seat's ``_buffer``, are theirs)."""
    import pathlib
    import re

    root = pathlib.Path(__file__).resolve().parents[2]
    twisted_names = {"_readOrWrite", "_disconnectSelectable", "_log", "_tempDataLen", "_tempDataBuffer",
                     "_asyncioEventloop", "_readers", "_writers", "_continuousPolling",
                     "_unregisterFDInAsyncio", "_reactor"}
    found = []
    for package in ("dealer", "agents"):
        for path in sorted((root / package).glob("*.py")):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                for owner, name in re.findall(r"(\w+)\.(_[A-Za-z]\w*)", line):
                    if owner != "self" and name in twisted_names:
                        found.append(f"{path.relative_to(root)}:{number}: {name}")
    assert not found, "\n".join(found)

"""Installing Twisted's asyncio reactor (done once, by a command's ``main()``), and writing now.

Never installed at import time: pytest-twisted installs its own reactor for
the tests, and installing after ``twisted.internet.reactor`` was imported fails.
"""

from __future__ import annotations

import asyncio
from typing import Any


def install_asyncio_reactor() -> None:
    """Install the asyncio reactor on a fresh event loop (idempotent)."""
    import sys

    if "twisted.internet.reactor" in sys.modules:
        from twisted.internet import asyncioreactor, reactor

        if not isinstance(reactor, asyncioreactor.AsyncioSelectorReactor):
            raise RuntimeError("a non-asyncio Twisted reactor is already installed")
        return
    from twisted.internet import asyncioreactor

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    asyncioreactor.install(loop)  # type: ignore[no-untyped-call]


def write_now(transport: Any, data: bytes) -> None:
    """Write ``data`` on a Twisted transport, straight to the socket when nothing waits before it.

    Twisted's ``write`` registers the socket for writing and sends on the
    next reactor turn: two epoll changes and a loop iteration per message,
    which for one-line messages costs more than the message. On a connected
    TCP transport with nothing buffered, the bytes go to ``socket.send`` at
    once; whatever the socket does not take (and every other transport, such
    as the tests' ``StringTransport``) goes through ``write``, so the order
    of bytes and the back-pressure are unchanged.
    """
    from twisted.internet import tcp

    if (isinstance(transport, tcp.Connection) and transport.connected
            and not transport.disconnecting and not transport.dataBuffer
            and not transport._tempDataBuffer):
        try:
            sent = transport.socket.send(data)
        except OSError:  # BlockingIOError included: write() queues it, or meets the error
            sent = 0
        if sent == len(data):
            return
        data = data[sent:]
    transport.write(data)

"""Installing Twisted's asyncio reactor: done once, by a command's ``main()``.

Never at import time: pytest-twisted installs its own reactor for the tests,
and installing after ``twisted.internet.reactor`` was imported fails.
"""

from __future__ import annotations

import asyncio


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

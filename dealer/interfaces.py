"""What the dealer needs of Twisted's reactor, as typing Protocols.

Twisted states these as zope interfaces (``IReactorTime``, ``IReactorTCP``,
``IDelayedCall``, ``IListeningPort``), which mypy cannot check a value against
(an interface's methods have no ``self``); a ``Protocol`` names the few
methods used, and the running reactor (and ``twisted.internet.task.Clock`` in
tests) has them. The module imports nothing of the project, so any dealer
module (and the commands above) can use it without an import circle.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from twisted.internet.address import IPv4Address
from twisted.internet.defer import Deferred
from twisted.internet.protocol import Factory


class DelayedCall(Protocol):
    """``IDelayedCall``: a call scheduled by :meth:`Clock.callLater`."""

    def active(self) -> bool: ...

    def cancel(self) -> None: ...


class Clock(Protocol):
    """``IReactorTime``: the time source of deadlines, budgets and delayed calls."""

    def seconds(self) -> float: ...

    def callLater(
        self, delay: float, callable: Callable[..., object], *args: object, **kw: object
    ) -> DelayedCall: ...


class ListeningPort(Protocol):
    """``IListeningPort``: a port being listened on."""

    def getHost(self) -> IPv4Address: ...

    def stopListening(self) -> Deferred[None]: ...


class MatchReactor(Clock, Protocol):
    """``IReactorTCP`` and ``IReactorTime``: what a :class:`dealer.match.Match` needs of its reactor."""

    def listenTCP(self, port: int, factory: Factory, backlog: int = ..., interface: str = ...) -> ListeningPort: ...


@runtime_checkable
class SocketReactor(Protocol):
    """``IReactorSocket``: listens on a socket opened elsewhere (the dealer's, bound before
    Twisted is loaded: dealer/startup.py)."""

    def adoptStreamPort(self, fileDescriptor: int, addressFamily: socket.AddressFamily,
                        factory: Factory) -> ListeningPort: ...


__all__ = ["Clock", "DelayedCall", "ListeningPort", "MatchReactor", "SocketReactor"]

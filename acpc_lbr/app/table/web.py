"""The table's web server: one page, server-sent events out, small JSON POSTs in.

Everything a browser sends is a stranger's input. Each request is bounded
before it is read (:data:`MAX_BODY` bytes: a larger body is refused unread,
:class:`BoundedRequest`), rate-limited (:class:`TokenBucket`, per table and per
address), parsed as JSON of a fixed shape (:func:`read_message`) and checked
with the rules (:meth:`HumanSeat.act <acpc_lbr.app.table.seat.HumanSeat.act>`).
A table is reached only by its number *and* its secret token (compared in
constant time), so a request can never touch another table; and one stream
(tab) holds a seat at a time: a newer tab takes it over and the older one is
told so, its actions refused.

Routes::

    GET  /                         the page (one self-contained HTML file)
    GET  /api/menu                 the games and bots this server offers
    POST /api/tables               sit down: {game, opponent, baseline, hands} -> {table, token}
    GET  /api/tables/N/events?token=T   the table's snapshots (text/event-stream)
    POST /api/tables/N/act         {token, stream, hand, betting, action, to?}
    POST /api/tables/N/leave       {token, stream}

Games and bots come only from the server's command line: a page cannot name a
file or a program to run.
"""

from __future__ import annotations

import hmac
import io
import json
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Protocol, cast

from twisted.internet import task
from twisted.protocols import policies
from twisted.web import http, resource, server

from acpc_lbr.app.evaluate.processes import EvaluateReactor
from acpc_lbr.app.table.seat import Refusal
from acpc_lbr.app.table.session import GameChoice, Player, Status, TableSession, TableSpec
from dealer.busypoll import MatchesPlaying
from dealer.interfaces import DelayedCall
from dealer.metrics import DealerMetrics

#: The largest request body read, in bytes; a larger one is refused unread.
MAX_BODY = 2048
#: Hands a table may have.
MAX_HANDS = 10_000
#: Finished tables kept for a reload, beyond which the oldest is forgotten.
KEEP_FINISHED = 32
#: A table no tab has shown for this long is ended (its seat would only check and fold).
ABANDONED_S = 600.0
#: Seconds between the keep-alive comments of an event stream.
KEEPALIVE_S = 15.0


class HttpRequest(Protocol):
    """What the server uses of a Twisted web request (``twisted.web`` has no type hints)."""

    method: bytes
    postpath: list[bytes]
    args: dict[bytes, list[bytes]]
    content: Any
    finished: bool

    def setHeader(self, name: bytes, value: bytes) -> None: ...

    def setResponseCode(self, code: int) -> None: ...

    def write(self, data: bytes) -> None: ...

    def finish(self) -> None: ...

    def notifyFinish(self) -> Any: ...

    def getClientAddress(self) -> Any: ...


class TokenBucket:
    """``rate`` requests a second on average, ``burst`` at once.

    >>> now = [0.0]
    >>> bucket = TokenBucket(1.0, 2, lambda: now[0])
    >>> [bucket.take() for _ in range(3)]
    [True, True, False]
    >>> now[0] = 1.0; bucket.take()
    True
    """

    def __init__(self, rate: float, burst: int, clock: Callable[[], float]) -> None:
        self.rate, self.burst, self.clock = rate, burst, clock
        self.tokens = float(burst)
        self.stamp = clock()

    def take(self) -> bool:
        """Spend one token if there is one."""
        now = self.clock()
        self.tokens = min(float(self.burst), self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens < 1.0:
            return False
        self.tokens -= 1.0
        return True


class BoundedRequest(server.Request):
    """A request whose body is kept only up to :data:`MAX_BODY` bytes (the rest is dropped unread)."""

    too_large = False

    def gotLength(self, length: int | None) -> None:
        """Keep the body in memory, at most :data:`MAX_BODY` bytes of it."""
        self.too_large = length is not None and length > MAX_BODY
        self.body = io.BytesIO()
        self.content = self.body

    def handleContentChunk(self, data: bytes) -> None:
        """Store the chunk while the body is within the bound."""
        if self.too_large or self.body.tell() + len(data) > MAX_BODY:
            self.too_large = True
            return
        self.body.write(data)


class ConnectionCap(policies.WrappingFactory):
    """The web server's factory, with at most ``total`` connections open, ``per_address`` from one address.

    A connection over either bound is closed as it arrives; open ones (an event
    stream per tab) are not disturbed.
    """

    def __init__(self, site: server.Site, total: int = 256, per_address: int = 32) -> None:
        super().__init__(site)  # type: ignore[no-untyped-call]
        self.total, self.per_address = total, per_address
        self.open: dict[str, int] = {}

    def buildProtocol(self, addr: Any) -> Any:
        """A connection, or None (closed) over a bound."""
        host = getattr(addr, "host", "?")
        if sum(self.open.values()) >= self.total or self.open.get(host, 0) >= self.per_address:
            return None
        self.open[host] = self.open.get(host, 0) + 1
        return super().buildProtocol(addr)

    def unregisterProtocol(self, p: Any) -> None:
        """Count a closed connection out."""
        super().unregisterProtocol(p)  # type: ignore[no-untyped-call]
        host = getattr(p.getPeer(), "host", "?")
        self.open[host] -= 1
        if not self.open[host]:
            del self.open[host]


@dataclass(frozen=True)
class Field:
    """One field of a JSON message: its type, whether required, and its bounds."""

    kind: type
    required: bool = True
    longest: int = 64
    low: int = 0
    high: int = 2**31 - 1


def read_message(body: bytes, shape: dict[str, Field]) -> dict[str, Any]:
    """A JSON object with exactly the fields of ``shape`` (the optional ones may be missing).

    Raises:
        Refusal: anything else, with why.

    >>> read_message(b'{"action": "c"}', {"action": Field(str)})
    {'action': 'c'}
    >>> read_message(b'{"action": 3}', {"action": Field(str)})
    Traceback (most recent call last):
    acpc_lbr.app.table.seat.Refusal: action must be a str
    """
    try:
        message = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):  # RecursionError: "[[[[..." nested deeper than Python's stack
        raise Refusal(400, "the message is not JSON") from None
    if not isinstance(message, dict):
        raise Refusal(400, "the message must be a JSON object")
    unknown = sorted(set(message) - set(shape))
    if unknown:
        raise Refusal(400, f"unknown field {unknown[0][:40]!r}")
    for name, spec in shape.items():
        if name not in message:
            if spec.required:
                raise Refusal(400, f"{name} is missing")
            continue
        value = message[name]
        if spec.kind is int and (isinstance(value, bool) or not isinstance(value, int)):
            raise Refusal(400, f"{name} must be an integer")
        if not isinstance(value, spec.kind):
            raise Refusal(400, f"{name} must be a {spec.kind.__name__}")
        if isinstance(value, str) and len(value) > spec.longest:
            raise Refusal(400, f"{name} is longer than {spec.longest} characters")
        if isinstance(value, int) and not spec.low <= value <= spec.high:
            raise Refusal(400, f"{name} must be in {spec.low}..{spec.high}")
    return message


_CREATE = {"game": Field(str), "opponent": Field(str), "baseline": Field(str, required=False),
           "hands": Field(int, low=1, high=MAX_HANDS), "key": Field(str, required=False)}
ACT_SHAPE = {"token": Field(str), "stream": Field(str), "hand": Field(int), "betting": Field(str, longest=1024),
        "action": Field(str, longest=1), "to": Field(int, required=False)}
_LEAVE = {"token": Field(str), "stream": Field(str)}


@dataclass(frozen=True)
class Limits:
    """The server's bounds (the command line's)."""

    tables: int = 8
    action_seconds: float = 30.0
    per_table_rate: float = 8.0
    per_table_burst: int = 20
    per_address_rate: float = 20.0
    per_address_burst: int = 60
    sit_down_rate: float = 0.2
    sit_down_burst: int = 4


class Table:
    """A session, its secret token, its one live stream (tab), and its rate limit.

    Args:
        number: the table's number.
        spec: what it plays.
        tables: the server (its reactor, logs folder and limits).
    """

    def __init__(self, number: int, spec: TableSpec, tables: TableServer) -> None:
        self.token = secrets.token_urlsafe(18)
        limits = tables.limits
        self.bucket = TokenBucket(limits.per_table_rate, limits.per_table_burst, tables.reactor.seconds)
        self.stream: HttpRequest | None = None
        self.stream_id = ""
        self.pending: DelayedCall | None = None
        #: Since when no tab shows the table (None: one does).
        self.alone_since: float | None = None
        self.session = TableSession(number, spec, tables.reactor, tables.out, lambda: tables.changed(self),
                                    tables.metrics, tables.playing)


class TableServer(resource.Resource):
    """The whole web side: the page, the menu and the tables.

    Args:
        games, players: what the page may choose (keys -> choices).
        reactor: the running reactor.
        out: the folder of the logs.
        limits: the bounds.
        key: the secret a page must give to sit down (None: none, on loopback).
        seed: the first table's deal seed (the next ones count up).
        metrics: the Prometheus metrics of the tables' matches (``--metrics-port``), or None.
    """

    isLeaf = True

    def __init__(self, games: dict[str, GameChoice], players: dict[str, Player], reactor: EvaluateReactor,
                 out: Path, limits: Limits, key: str | None, seed: int,
                 metrics: DealerMetrics | None = None) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.games, self.players, self.reactor, self.out = games, players, reactor, out
        self.limits, self.key, self.seed, self.metrics = limits, key, seed, metrics
        self.tables: dict[int, Table] = {}
        #: The matches of every table play in this process: one count of them, started at
        #: one as a table's own (TableSession says why).
        self.playing = MatchesPlaying(count=1)
        self.addresses: dict[str, TokenBucket] = {}
        self.sit_downs = TokenBucket(limits.sit_down_rate, limits.sit_down_burst, reactor.seconds)
        self.page = resources.files("acpc_lbr.app.table").joinpath("page.html").read_bytes()
        self.keepalive = task.LoopingCall(self._keepalive)
        self.keepalive.clock = cast(Any, reactor)
        self.keepalive.start(KEEPALIVE_S, now=False)

    # -- dispatch ------------------------------------------------------------

    def render(self, request: HttpRequest) -> bytes | int:
        """Route one request; every refusal is a JSON ``{"error": ...}`` with its status."""
        try:
            return self._route(request)
        except Refusal as refusal:
            return _json(request, {"error": refusal.message}, refusal.status)

    def _route(self, request: HttpRequest) -> bytes | int:
        path = [p.decode("ascii", "replace") for p in request.postpath]
        method = request.method
        self._address_limit(request)
        if method == b"GET" and path in ([""], []):
            return self._page(request)
        if path[:1] != ["api"]:
            raise Refusal(404, "no such page")
        if method == b"POST" and isinstance(request, BoundedRequest) and request.too_large:
            raise Refusal(413, f"the message is larger than {MAX_BODY} bytes; nothing was done")
        if method == b"GET" and path == ["api", "menu"]:
            return _json(request, self.menu())
        if method == b"POST" and path == ["api", "tables"]:
            return _json(request, self.sit_down(_body(request), request))
        if len(path) == 4 and path[1] == "tables":
            return self._table_route(request, method, path[2], path[3])
        raise Refusal(404, "no such page")

    def _table_route(self, request: HttpRequest, method: bytes, number: str, what: str) -> bytes | int:
        if method == b"GET" and what == "events":
            token = (request.args.get(b"token") or [b""])[0].decode("ascii", "replace")
            return self.open_stream(self._table(number, token), request)
        if method != b"POST" or what not in ("act", "leave"):
            raise Refusal(404, "no such page")
        message = read_message(_body(request), ACT_SHAPE if what == "act" else _LEAVE)
        table = self._table(number, message["token"])
        if not table.bucket.take():
            raise Refusal(429, f"too many messages: at most {self.limits.per_table_rate:g} a second; "
                               "this one was dropped")
        if message["stream"] != table.stream_id:
            raise Refusal(409, "this seat is open in another tab or window: act there, or reload this one")
        if what == "leave":
            table.session.leave()
            return _json(request, {"ok": True})
        if table.session.status is not Status.PLAYING:
            raise Refusal(409, "the match is over")
        action = table.session.seat.act(message["hand"], message["betting"], message["action"],
                                        message.get("to"))
        return _json(request, {"ok": True, "played": action.text()})

    def _address_limit(self, request: HttpRequest) -> None:
        address = getattr(request.getClientAddress(), "host", "?")
        bucket = self.addresses.get(address)
        if bucket is None:
            if len(self.addresses) > 10_000:
                self.addresses.clear()
            bucket = self.addresses[address] = TokenBucket(
                self.limits.per_address_rate, self.limits.per_address_burst, self.reactor.seconds)
        if not bucket.take():
            raise Refusal(429, "too many requests from this address; slow down")

    def _table(self, number: str, token: str) -> Table:
        table = self.tables.get(int(number)) if number.isdigit() and len(number) < 10 else None
        # One answer for a wrong table and a wrong token: neither says whether the other exists.
        if table is None or not hmac.compare_digest(table.token.encode(), token.encode("utf-8", "replace")):
            raise Refusal(403, "wrong or missing token for this table (open the link the table gave you)")
        return table

    # -- the page and the menu ----------------------------------------------------

    def _page(self, request: HttpRequest) -> bytes:
        request.setHeader(b"content-type", b"text/html; charset=utf-8")
        request.setHeader(b"content-security-policy",
                          b"default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                          b"connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'")
        request.setHeader(b"x-content-type-options", b"nosniff")
        request.setHeader(b"referrer-policy", b"no-referrer")
        return self.page

    def menu(self) -> dict[str, Any]:
        """The choices the page offers."""
        return {
            "games": [{"key": k, "limit": g.game.is_limit, "bigBlind": g.game.big_blind}
                      for k, g in self.games.items()],
            "players": [{"key": k, "name": p.name} for k, p in self.players.items()],
            "keyRequired": self.key is not None, "seconds": self.limits.action_seconds,
            "maxHands": MAX_HANDS,
        }

    def sit_down(self, body: bytes, request: HttpRequest) -> dict[str, Any]:
        """Make a table.

        Raises:
            Refusal: a wrong key, an unknown choice, or no room.
        """
        message = read_message(body, _CREATE)
        if self.key is not None and not hmac.compare_digest(self.key.encode(),
                                                            message.get("key", "").encode("utf-8", "replace")):
            raise Refusal(403, "this server needs its key to open a table (it is in the address it printed)")
        game = self.games.get(message["game"])
        opponent = self.players.get(message["opponent"])
        baseline_key = message.get("baseline", message["opponent"])
        baseline = None if baseline_key == "" else self.players.get(baseline_key)
        if game is None or opponent is None or (baseline_key and baseline is None):
            raise Refusal(400, "unknown game or bot")
        if game.game.num_players != 2:
            raise Refusal(400, "the table plays heads-up games only")
        if sum(t.session.status is not Status.OVER for t in self.tables.values()) >= self.limits.tables:
            raise Refusal(503, f"all {self.limits.tables} tables are in play; try again later")
        if not self.sit_downs.take():
            raise Refusal(429, "too many tables opened just now; try again in a few seconds")
        number = max(self.tables, default=0) + 1
        spec = TableSpec(game, opponent, baseline, message["hands"], (self.seed + number) % 2**32,
                         self.limits.action_seconds)
        table = Table(number, spec, self)
        self.tables[number] = table
        self._forget_finished()
        table.session.start()
        return {"table": number, "token": table.token}

    def _forget_finished(self) -> None:
        finished = [n for n, t in self.tables.items() if t.session.status is Status.OVER]
        for number in finished[: max(0, len(finished) - KEEP_FINISHED)]:
            table = self.tables.pop(number)
            for series in table.session.series:
                series.retire()
            if table.stream is not None:
                table.stream.finish()

    # -- the event stream ------------------------------------------------------

    def open_stream(self, table: Table, request: HttpRequest) -> int:
        """Give ``request`` the seat's stream; an older tab's stream is told and closed."""
        old = table.stream
        if old is not None:
            _send(old, "closed", {"reason": "this seat was opened in another tab or window"})
            old.finish()
        table.stream, table.stream_id = request, secrets.token_urlsafe(9)
        request.setHeader(b"content-type", b"text/event-stream")
        request.setHeader(b"cache-control", b"no-cache")
        _send(request, "hello", {"stream": table.stream_id})
        _send(request, "state", table.session.snapshot())

        def gone(_: object) -> None:
            if table.stream is request:
                table.stream = None
        request.notifyFinish().addBoth(gone)
        return server.NOT_DONE_YET

    def changed(self, table: Table) -> None:
        """Coalesce the changes of one reactor turn into one snapshot."""
        if table.pending is None or not table.pending.active():
            table.pending = self.reactor.callLater(0.0, self._push, table)

    def _push(self, table: Table) -> None:
        if table.stream is not None:
            _send(table.stream, "state", table.session.snapshot())

    def _keepalive(self) -> None:
        """Keep the streams open, and end the tables nobody has watched for :data:`ABANDONED_S`."""
        now = self.reactor.seconds()
        for table in self.tables.values():
            if table.stream is not None:
                table.stream.write(b": keep-alive\n\n")
                table.alone_since = None
            elif table.session.status is Status.PLAYING:
                table.alone_since = table.alone_since if table.alone_since is not None else now
                if now - table.alone_since >= ABANDONED_S:
                    table.session.leave(f"no page showed the table for {ABANDONED_S / 60:g} minutes")

    def close(self) -> None:
        """End every table (the server is stopping): their logs keep the finished hands."""
        # The bots in this process lose their connections because of it; the logs say why.
        logging.getLogger("agents").setLevel(logging.CRITICAL)
        if self.keepalive.running:
            self.keepalive.stop()
        for table in self.tables.values():
            if table.session.status is not Status.OVER:
                table.session.leave("the table's server was stopped")


def _body(request: HttpRequest) -> bytes:
    content = request.content
    return content.getvalue() if isinstance(content, io.BytesIO) else b""


def _send(request: HttpRequest, event: str, data: dict[str, Any]) -> None:
    request.write(f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode())


def _json(request: HttpRequest, data: dict[str, Any], status: int = http.OK) -> bytes:
    request.setResponseCode(status)
    request.setHeader(b"content-type", b"application/json")
    request.setHeader(b"cache-control", b"no-store")
    return json.dumps(data).encode()

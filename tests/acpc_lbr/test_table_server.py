"""The table's server in memory: what a browser may send, and what it gets for anything else.

No sockets: the HTTP requests go through Twisted's own HTTP channel on a
``StringTransport``, the dealer's matches listen on a ``MemoryReactorClock``,
and the person's seat is fed the dealer's MATCHSTATE lines by hand.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.internet.address import IPv4Address
from twisted.internet.testing import MemoryReactorClock, StringTransport
from twisted.web import server

from acpc_lbr.app.table import web
from acpc_lbr.app.table.offers import games_offered, players_offered
from acpc_lbr.app.table.seat import HumanSeat, Refusal, timeout_action
from acpc_lbr.app.table.web import (
    ACT_SHAPE,
    KEEPALIVE_S,
    MAX_BODY,
    BoundedRequest,
    ConnectionCap,
    Limits,
    TableServer,
    read_message,
)

NOLIMIT = "holdem.nolimit.2p.reverse_blinds"


class Browser:
    """A table server on a memory reactor, and HTTP requests to it through real HTTP parsing."""

    def __init__(self, tmp_path: Path, key: str | None = None, limits: Limits | None = None) -> None:
        self.reactor = MemoryReactorClock()
        self.tables = TableServer(games_offered([], tmp_path), players_offered([], []), self.reactor,  # type: ignore[arg-type]
                                  tmp_path, limits or Limits(action_seconds=5.0), key, seed=11)
        self.site = server.Site(self.tables)
        self.site.requestFactory = BoundedRequest

    def open(self, method: str, path: str, body: bytes = b"", version: str = "1.1") -> tuple[StringTransport, Any]:
        """Send one request; the transport (for streams) and the channel."""
        address = IPv4Address("TCP", "127.0.0.1", 40000)
        channel = self.site.buildProtocol(address)
        transport = StringTransport(peerAddress=address)
        channel.makeConnection(transport)
        head = (f"{method} {path} HTTP/{version}\r\nHost: t\r\nContent-Length: {len(body)}\r\n"
                "Content-Type: application/json\r\n\r\n")
        channel.dataReceived(head.encode() + body)
        return transport, channel

    def call(self, method: str, path: str, message: Any = None, raw: bytes | None = None) -> tuple[int, Any]:
        """One request with a JSON body; the status and the JSON answer."""
        body = raw if raw is not None else (json.dumps(message).encode() if message is not None else b"")
        transport, _ = self.open(method, path, body)
        head, _, payload = transport.value().partition(b"\r\n\r\n")
        return int(head.split(b" ", 2)[1]), json.loads(payload) if payload else None

    def sit_down(self, **fields: Any) -> tuple[int, str]:
        """A new table against always-call; its number and token."""
        message = {"game": NOLIMIT, "opponent": "always-call", "hands": 10} | fields
        status, answer = self.call("POST", "/api/tables", message)
        assert status == 200, answer
        return answer["table"], answer["token"]

    def stream(self, table: int, token: str) -> tuple[StringTransport, str]:
        """Open the table's event stream (HTTP/1.0: not chunked); the transport and the stream id."""
        transport, _ = self.open("GET", f"/api/tables/{table}/events?token={token}", version="1.0")
        return transport, events(transport)[0][1]["stream"]

    def seat(self, table: int) -> tuple[HumanSeat, StringTransport]:
        """The person's seat, connected to a memory transport (as the dealer would)."""
        seat = self.tables.tables[table].session.seat
        wire = StringTransport()
        seat.makeConnection(wire)
        wire.clear()
        return seat, wire


def events(transport: StringTransport) -> list[tuple[str, Any]]:
    """The server-sent events written so far, as (event, data)."""
    text = transport.value().partition(b"\r\n\r\n")[2].decode()
    found = []
    for block in text.split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if not line.startswith(":"))
        if "event" in lines:
            found.append((lines["event"], json.loads(lines["data"])))
    return found


@pytest.fixture
def browser(tmp_path: Path) -> Browser:
    return Browser(tmp_path)


def _act(browser: Browser, table: int, token: str, stream: str, **fields: Any) -> tuple[int, Any]:
    message = {"token": token, "stream": stream, "hand": 0, "betting": "c", "action": "c"} | fields
    return browser.call("POST", f"/api/tables/{table}/act", message)


def _to_act(browser: Browser) -> tuple[int, str, str, HumanSeat, StringTransport]:
    """A table whose person (position 0, the big blind) is to act after the opponent's limp."""
    table, token = browser.sit_down()
    _, stream = browser.stream(table, token)
    seat, wire = browser.seat(table)
    seat.dataReceived(b"MATCHSTATE:0:0:c:6cTh|\r\n")
    assert seat.decision is not None
    return table, token, stream, seat, wire


def test_a_legal_raise_goes_to_the_dealer(browser: Browser) -> None:
    """A raise inside the legal range is sent to the dealer as the ACPC reply to the state."""
    table, token, stream, _, wire = _to_act(browser)
    status, answer = _act(browser, table, token, stream, action="r", to=250)
    assert (status, answer) == (200, {"ok": True, "played": "r250"})
    assert wire.value() == b"MATCHSTATE:0:0:c:6cTh|:r250\r\n"


@pytest.mark.parametrize(("fields", "status", "says"), [
    ({"action": "f"}, 400, "fold is not legal here"),
    ({"action": "r", "to": 150}, 400, "outside the legal range 200..20000"),
    ({"action": "r", "to": 20001}, 400, "outside the legal range 200..20000"),
    ({"action": "r"}, 400, "a raise needs an amount"),
    ({"action": "c", "to": 5}, 400, "takes no amount"),
    ({"action": "x"}, 400, "must be f (fold), c (check/call) or r (raise)"),
    ({"action": "r", "to": True}, 400, "to must be an integer"),
    ({"betting": "cr300"}, 409, "that decision has passed"),
    ({"hand": 3}, 409, "that decision has passed"),
    ({"extra": 1}, 400, "unknown field"),
])
def test_an_illegal_action_is_refused_and_changes_nothing(
        browser: Browser, fields: dict[str, Any], status: int, says: str) -> None:
    """Illegal actions, out-of-range raises, stale decisions and odd fields: refused, the hand waits."""
    table, token, stream, seat, wire = _to_act(browser)
    got, answer = _act(browser, table, token, stream, **fields)
    assert got == status and says in answer["error"]
    assert wire.value() == b"" and seat.decision is not None
    assert _act(browser, table, token, stream)[0] == 200  # the hand goes on


def test_a_one_megabyte_message_is_refused_unread(browser: Browser) -> None:
    """A 1 MB body is answered 413 and dropped (at most MAX_BODY bytes kept); the hand is untouched."""
    table, token, stream, seat, wire = _to_act(browser)
    message = json.dumps({"token": token, "stream": stream, "hand": 0, "betting": "c", "action": "c",
                          "pad": "x" * (1 << 20)}).encode()
    status, answer = browser.call("POST", f"/api/tables/{table}/act", raw=message)
    assert status == 413 and f"larger than {MAX_BODY} bytes" in answer["error"]
    assert wire.value() == b"" and seat.decision is not None


def test_a_flood_is_cut_off_and_other_tables_play_on(browser: Browser) -> None:
    """Past the per-table burst, messages get 429 and do nothing; another table is not slowed."""
    table, token, stream, seat, wire = _to_act(browser)
    statuses = [_act(browser, table, token, stream, action="f")[0] for _ in range(30)]
    assert statuses[0] == 400 and statuses[-1] == 429
    assert statuses.count(429) == 30 - browser.tables.limits.per_table_burst
    other, other_token = browser.sit_down()
    _, other_stream = browser.stream(other, other_token)
    other_seat, other_wire = browser.seat(other)
    other_seat.dataReceived(b"MATCHSTATE:0:0:c:2c2d|\r\n")
    assert _act(browser, other, other_token, other_stream)[0] == 200
    assert other_wire.value() == b"MATCHSTATE:0:0:c:2c2d|:c\r\n"
    assert wire.value() == b"" and seat.decision is not None
    browser.reactor.advance(1.0)  # the bucket refills: the flooded table plays again
    assert _act(browser, table, token, stream)[0] == 200


@pytest.mark.parametrize("token", ["", "wrong", "x" * 64])
def test_a_wrong_or_missing_token_is_refused(browser: Browser, token: str) -> None:
    """Without the table's token nothing is read or played, whatever the table number."""
    table, right, stream, seat, wire = _to_act(browser)
    assert _act(browser, table, token, stream)[0] == 403
    assert browser.call("GET", f"/api/tables/{table}/events?token={token}")[0] == 403
    assert _act(browser, 99, right, stream)[0] == 403
    assert wire.value() == b"" and seat.decision is not None


def test_another_tables_token_cannot_reach_this_one(browser: Browser) -> None:
    """Table 2's token opens nothing at table 1."""
    table, _, stream, seat, wire = _to_act(browser)
    _, other_token = browser.sit_down()
    assert _act(browser, table, other_token, stream)[0] == 403
    assert wire.value() == b""


def test_two_tabs_on_one_seat(browser: Browser) -> None:
    """A second tab takes the seat: the first is told and closed, and its actions are refused."""
    table, token, first, seat, wire = _to_act(browser)
    old_tab = browser.tables.tables[table].stream
    transport, second = browser.stream(table, token)
    assert old_tab is not None and old_tab.finished
    status, answer = _act(browser, table, token, first)
    assert status == 409 and "open in another tab" in answer["error"]
    assert wire.value() == b""
    assert [e for e, _ in events(transport)] == ["hello", "state"]
    assert _act(browser, table, token, second)[0] == 200


def test_the_clock_checks_or_folds_for_a_late_person(browser: Browser) -> None:
    """When the person's time is up the seat folds facing a bet and checks otherwise."""
    table, _, _, seat, wire = _to_act(browser)  # nothing to call: a check
    browser.reactor.advance(5.0)
    assert wire.value() == b"MATCHSTATE:0:0:c:6cTh|:c\r\n"
    seat.dataReceived(b"MATCHSTATE:0:1:r300:6cTh|\r\n")  # next hand, facing a raise: a fold
    browser.reactor.advance(4.9)
    assert seat.decision is not None
    browser.reactor.advance(0.2)
    assert wire.value().endswith(b"MATCHSTATE:0:1:r300:6cTh|:f\r\n") and seat.decision is None
    assert seat.log.timed_out == 2


def test_a_server_off_loopback_needs_its_key(tmp_path: Path) -> None:
    """Bound to the network, a table opens only with the server's key."""
    browser = Browser(tmp_path, key="sesame")
    message = {"game": NOLIMIT, "opponent": "always-call", "hands": 10}
    assert browser.call("POST", "/api/tables", message)[0] == 403
    assert browser.call("POST", "/api/tables", message | {"key": "wrong"})[0] == 403
    assert browser.call("POST", "/api/tables", message | {"key": "sesame"})[0] == 200
    assert browser.call("GET", "/api/menu")[1]["keyRequired"] is True


@pytest.mark.parametrize(("message", "says"), [
    ({"game": "../../etc/passwd", "opponent": "always-call", "hands": 5}, "unknown game or bot"),
    ({"game": NOLIMIT, "opponent": "rm -rf /", "hands": 5}, "unknown game or bot"),
    ({"game": NOLIMIT, "opponent": "always-call", "hands": 0}, "hands must be in 1..10000"),
    ({"game": NOLIMIT, "opponent": "always-call"}, "hands is missing"),
    ([1, 2], "must be a JSON object"),
    (None, "the message is not JSON"),
])
def test_sitting_down_takes_only_the_menus_choices(browser: Browser, message: Any, says: str) -> None:
    """A page names games and bots from the server's menu only: no file, no program."""
    raw = b"[" * 2000 if message is None else None  # nested deeper than Python's stack
    status, answer = browser.call("POST", "/api/tables", message, raw=raw)
    assert status == 400 and says in answer["error"]
    assert browser.tables.tables == {}


def test_tables_are_bounded(tmp_path: Path) -> None:
    """Past --max-tables tables in play, sitting down is refused (503)."""
    browser = Browser(tmp_path, limits=Limits(tables=1))
    browser.sit_down()
    status, answer = browser.call("POST", "/api/tables", {"game": NOLIMIT, "opponent": "always-call", "hands": 3})
    assert status == 503 and "tables are in play" in answer["error"]


def test_a_limit_raise_has_its_one_size() -> None:
    """In limit hold'em the seat sends a bare 'r', and refuses any other size."""
    from acpc_lbr.app.table.seat import _legal_action
    from protocol.gamedef import load_game
    from protocol.rules import State

    state = State(load_game("holdem.limit.2p.reverse_blinds"))
    assert _legal_action(state, "r", None).text() == "r"
    assert _legal_action(state, "r", 20).text() == "r"
    with pytest.raises(Refusal, match="only raise is to 20"):
        _legal_action(state, "r", 30)
    assert timeout_action(state).text() == "f"


def test_a_table_nobody_watches_is_ended(browser: Browser, monkeypatch: pytest.MonkeyPatch) -> None:
    """With no tab open for ABANDONED_S, the table is ended (as if the person had left)."""
    monkeypatch.setattr(web, "ABANDONED_S", 10.0)  # within the dealer's start timeout (no seat connects here)
    table, token = browser.sit_down()
    browser.stream(table, token)
    session = browser.tables.tables[table].session
    left: list[str] = []
    session.leave = left.append  # type: ignore[method-assign]
    browser.reactor.advance(KEEPALIVE_S + 1)  # a tab is open: nothing happens
    assert left == []
    stream = browser.tables.tables[table].stream
    assert stream is not None
    stream.finish()  # the tab is closed
    browser.reactor.advance(KEEPALIVE_S)
    browser.reactor.advance(KEEPALIVE_S)
    assert left and "no page showed the table for" in left[0]


def test_the_matches_have_the_dealers_metrics(tmp_path: Path) -> None:
    """With metrics on, each table's two matches get the dealer's series, labelled by match and seat."""
    from prometheus_client import CollectorRegistry, generate_latest

    from dealer.metrics import DealerMetrics

    registry = CollectorRegistry()
    browser = Browser(tmp_path)
    browser.tables.metrics = DealerMetrics(registry)
    browser.sit_down()
    text = generate_latest(registry).decode()
    assert 'match="table1-always-call",seat="human"' in text
    assert 'match="table1-always-call.baseline",seat="baseline"' in text


def test_connections_are_capped_per_address_and_in_all(browser: Browser) -> None:
    """Past the bounds a new connection is closed as it arrives; a closed one frees its place."""
    cap = ConnectionCap(browser.site, total=3, per_address=2)
    cap.doStart()
    one, two, three = (IPv4Address("TCP", host, 1) for host in ("10.0.0.1", "10.0.0.1", "10.0.0.2"))
    first = cap.buildProtocol(one)
    assert first is not None and cap.buildProtocol(two) is not None
    assert cap.buildProtocol(IPv4Address("TCP", "10.0.0.1", 2)) is None  # a third from one address
    assert cap.buildProtocol(three) is not None
    assert cap.buildProtocol(IPv4Address("TCP", "10.0.0.3", 1)) is None  # a fourth in all
    first.makeConnection(StringTransport(peerAddress=one))
    first.connectionLost(None)
    assert cap.buildProtocol(IPv4Address("TCP", "10.0.0.3", 1)) is not None


@settings(max_examples=100, deadline=None)
@given(st.one_of(st.binary(max_size=MAX_BODY),
                 st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                              lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=6),
                              max_leaves=20).map(lambda value: json.dumps(value).encode())))
def test_any_message_is_read_or_refused(body: bytes) -> None:
    """Whatever bytes come in, reading a message gives a checked dict or a Refusal, nothing else."""
    try:
        message = read_message(body, ACT_SHAPE)
    except Refusal as refusal:
        assert refusal.status == 400 and refusal.message
    else:
        assert set(message) <= set(ACT_SHAPE)


def test_every_table_counts_its_matches_in_the_servers_one_count(browser: Browser) -> None:
    """The tables' matches play in one process, with opponents that may play in it too: one
    count of matches playing for the server, started at one, so no match spends the time an
    opponent thinks making the next state ready ahead of its reply (dealer/turns.py)."""
    playing = browser.tables.playing
    assert playing.count == 1
    tables = [browser.sit_down()[0] for _ in range(2)]
    sessions = [browser.tables.tables[number].session for number in tables]
    matches = [m for s in sessions for m in (s.match, s.base_match) if m is not None]
    assert len(matches) >= 2 and all(match.playing is playing for match in matches)
    assert all(match.policy.playing is playing for match in matches)  # a playing one makes it 2 or more

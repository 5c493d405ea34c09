"""Small self-contained bot clients for the dealer tests (no dependency on agents/).

A :class:`TestBot` is a Twisted ``LineReceiver`` client: it sends a VERSION
line, reads every MATCHSTATE, and when it is its turn asks its strategy for a
reply. Strategies return the action text (``"c"``, ``"r300"``) or a
:class:`Misbehave` instruction; misbehaving bots are strategies too.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from twisted.internet import defer, endpoints
from twisted.internet.protocol import Protocol, connectionDone
from twisted.protocols.basic import LineReceiver
from twisted.python.failure import Failure

from protocol.gamedef import GameDef
from protocol.rules import State
from protocol.wire import MatchState, parse_matchstate
from tests.reference import REFERENCE_DIR

REFERENCE = REFERENCE_DIR


@dataclass(frozen=True)
class Misbehave:
    """What a strategy may return instead of an action.

    Attributes:
        kind: ``close`` (drop the connection), ``silent`` (never answer),
            ``raw`` (send ``text`` as the whole line), ``long`` (send a line of
            ``size`` bytes), ``stale`` (answer the first state ever received).
        text: the raw line for ``raw``.
        size: the line length for ``long``.
        then_reply: afterwards, answer normally.
    """

    kind: str
    text: str = ""
    size: int = 0
    then_reply: bool = False


Strategy = Callable[[MatchState, State], "str | Misbehave | None"]


def always_call(view: MatchState, state: State) -> str:
    """Check or call, always."""
    return "c"


def replay_strategy(actions_by_hand: dict[int, list[str]]) -> Strategy:
    """Replay a log's actions: the k-th action of hand h is the log's k-th."""

    def decide(view: MatchState, state: State) -> str:
        done = sum(len(a) for a in state.actions)
        return actions_by_hand[view.hand_id][done]

    return decide


_TOKEN = re.compile(r"[fc]|r\d*")


def actions_from_log(path: Path) -> dict[int, list[str]]:
    """hand id -> action tokens, from a reference ``.log``'s STATE lines."""
    actions: dict[int, list[str]] = {}
    for line in path.read_text().splitlines():
        if line.startswith("STATE:"):
            _, hand, betting = line.split(":")[:3]
            actions[int(hand)] = _TOKEN.findall(betting.replace("/", ""))
    return actions


def reference_lines(path: Path) -> list[str]:
    """The STATE and SCORE lines of a log."""
    return [
        line for line in path.read_text().splitlines() if line.startswith(("STATE:", "SCORE:"))
    ]


class TestBot(LineReceiver):
    """A scripted bot client.

    Args:
        game: the game.
        strategy: decides each reply.
        version: the first line sent (None: send nothing).
        misbehave_at: (hand id, when) -> Misbehave; ``when`` is ``"turn"`` (at its
            turn) or ``"any"`` (on the first state of that hand, acting or not).
    """

    __test__ = False
    delimiter = b"\n"
    MAX_LENGTH = 1 << 20

    def __init__(
        self,
        game: GameDef,
        strategy: Strategy = always_call,
        version: str | None = "VERSION:2.0.0",
        misbehave_at: dict[tuple[int, str], Misbehave] | None = None,
    ) -> None:
        self.game = game
        self.strategy = strategy
        self.version = version
        self.misbehave_at = dict(misbehave_at or {})
        self.received: list[str] = []
        self.sent: list[str] = []
        self.closed: defer.Deferred[None] = defer.Deferred()
        self.silent = False

    def connectionMade(self) -> None:
        if self.version is not None:
            self.send(self.version)

    def send(self, line: str) -> None:
        self.sent.append(line)
        assert self.transport is not None
        self.transport.write(line.encode("latin-1") + b"\r\n")

    def lineReceived(self, line: bytes) -> None:
        text = line.decode("ascii").rstrip("\r")
        self.received.append(text)
        if self.silent:
            return
        view = parse_matchstate(text, self.game)
        state = view.to_state(self.game)
        turn = not state.finished and state.current_player == view.position
        special = self.misbehave_at.pop((view.hand_id, "any"), None)
        if special is None and turn:
            special = self.misbehave_at.pop((view.hand_id, "turn"), None)
        if special is not None:
            self.do(special)
            if not special.then_reply:
                return
        if not turn:
            return
        reply = self.strategy(view, state)
        if isinstance(reply, Misbehave):
            self.do(reply)
        elif reply is not None:
            self.send(f"{text}:{reply}")

    def do(self, what: Misbehave) -> None:
        """Carry out a misbehaviour."""
        assert self.transport is not None
        if what.kind == "close":
            self.silent = True
            self.transport.loseConnection()
        elif what.kind == "silent":
            self.silent = True
        elif what.kind == "raw":
            self.send(what.text)
        elif what.kind == "stale":
            self.send(f"{self.received[0]}:c")
        elif what.kind == "long":
            self.transport.write(b"x" * what.size + b"\n")
        else:
            raise ValueError(what.kind)

    def connectionLost(self, reason: Failure = connectionDone) -> None:
        if not self.closed.called:
            self.closed.callback(None)


async def connect(reactor: Any, port: int, bot: Protocol) -> Protocol:
    """Connect ``bot`` to 127.0.0.1:``port``."""
    endpoint = endpoints.TCP4ClientEndpoint(reactor, "127.0.0.1", port)
    return await endpoints.connectProtocol(endpoint, bot)


@dataclass
class Seating:
    """Bots of one match, by seat."""

    bots: list[TestBot] = field(default_factory=list)

    async def connect_all(self, reactor: Any, ports: Iterable[int]) -> None:
        for bot, port in zip(self.bots, ports):
            await connect(reactor, port, bot)

"""Helpers of the dealer tests: run a match in-process against test bots."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from twisted.internet import task
from twisted.internet.testing import StringTransport

from dealer.events import Opener, open_record_file
from dealer.match import Match, MatchConfig, MatchResult
from dealer.seat import SeatProtocol
from protocol.gamedef import load_game
from tests.dealer.bots import TestBot, connect


def make_config(name: str, game: str = "nolimit", hands: int = 10, seed: int = 7,
                names: Sequence[str] = ("s1", "s2"), **options: Any) -> MatchConfig:
    """A MatchConfig with test-friendly defaults (no events file unless asked)."""
    options.setdefault("events", False)
    return MatchConfig(name=name, game_arg=game, game=load_game(game), hands=hands, seed=seed,
                       names=tuple(names), **options)


async def play(config: MatchConfig, bots: Sequence[Any], stderr: Any = None) -> MatchResult:
    """Listen, connect ``bots`` seat by seat, and play the match to its end."""
    from twisted.internet import reactor

    match = Match(config, reactor, stderr=stderr)
    ports = match.listen()
    finished = match.start()
    for bot, port in zip(bots, ports):
        if bot is not None:
            await connect(reactor, port, bot)
    result: MatchResult = await finished
    return result


def call_bots(config: MatchConfig) -> list[TestBot]:
    """One always-call bot per seat."""
    return [TestBot(config.game) for _ in config.names]


def log_lines(config: MatchConfig) -> list[str]:
    """The lines of a match's .log."""
    return Path(config.log_path).read_text().splitlines()


#: Matches started by :class:`MemoryTable`; the conftest aborts those a test leaves running.
OPEN_MATCHES: list[Match] = []


class MemoryTable:
    """A match whose seats are StringTransports, on a fake clock (no sockets)."""

    def __init__(self, config: MatchConfig, stderr: Any = None, opener: Opener = open_record_file) -> None:
        self.clock = task.Clock()
        self.match = Match(config, reactor=None, clock=self.clock, stderr=stderr, opener=opener)
        self.done = self.match.start()
        OPEN_MATCHES.append(self.match)
        self.protocols: list[SeatProtocol] = []
        self.transports: list[StringTransport] = []
        for seat in self.match.seats:
            protocol = seat.factory.buildProtocol(None)  # type: ignore[arg-type]
            transport = StringTransport()
            protocol.makeConnection(transport)
            self.protocols.append(protocol)
            self.transports.append(transport)

    def feed(self, seat: int, data: bytes | str, chunk: int = 0) -> None:
        """Deliver ``data`` from ``seat``, in pieces of ``chunk`` bytes (0: at once)."""
        raw = data.encode("ascii") if isinstance(data, str) else data
        step = chunk or len(raw)
        for i in range(0, len(raw), step):
            self.protocols[seat].dataReceived(raw[i : i + step])

    def take(self, seat: int) -> list[str]:
        """The lines sent to ``seat`` since the last call (each sent with CRLF)."""
        data = self.transports[seat].value()
        self.transports[seat].clear()
        assert data.endswith(b"\r\n") or not data
        return data.decode().split("\r\n")[:-1] if data else []

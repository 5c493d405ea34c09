"""Helpers of the dealer tests: run a match in-process against test bots."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from twisted.internet import defer, task
from twisted.internet.address import IPv4Address
from twisted.internet.testing import StringTransport
from twisted.test import iosim

from dealer import seatio
from dealer.busypoll import BusyPoll, MatchesPlaying
from dealer.events import Opener, open_record_file
from dealer.match import Match, MatchConfig, MatchResult
from dealer.seat import SeatProtocol
from dealer.sendstates import SendStates
from protocol.gamedef import load_game
from protocol.wire import parse_matchstate
from tests.dealer.bots import TestBot, connect


def make_config(name: str, game: str = "nolimit", hands: int = 10, seed: int = 7,
                names: Sequence[str] = ("s1", "s2"), **options: Any) -> MatchConfig:
    """A MatchConfig with test-friendly defaults (no events file unless asked)."""
    options.setdefault("events", False)
    return MatchConfig(name=name, game_arg=game, game=load_game(game), hands=hands, seed=seed,
                       names=tuple(names), **options)


async def play(config: MatchConfig, bots: Sequence[Any], stderr: Any = None,
               busy_poll: BusyPoll | None = None, opener: Opener = open_record_file) -> MatchResult:
    """Listen, connect ``bots`` seat by seat, and play the match to its end."""
    from twisted.internet import reactor

    match = Match(config, reactor, stderr=stderr, busy_poll=busy_poll, opener=opener)
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


def call_round(table: Any) -> tuple[list[str], bool]:
    """One pass over both seats of an in-memory ``table`` (``match``, ``transports``,
    ``take``, ``feed``): a seat to act on a MATCHSTATE calls; a closed seat is skipped.

    Returns the QUERY lines the bot in seat 1 was sent, and whether a seat acted.
    """
    game = table.match.game
    queries: list[str] = []
    moved = False
    for seat in (0, 1):
        if table.transports[seat].disconnecting:
            continue
        for line in table.take(seat):
            if line.startswith("QUERY:"):
                assert seat == 1
                queries.append(line)
            elif line.startswith("MATCHSTATE:"):
                view = parse_matchstate(line, game)
                state = view.to_state(game)
                if not state.finished and state.current_player == view.position:
                    table.feed(seat, line + ":c\r\n")
                    moved = True
    return queries, moved


class AlwaysPoll(BusyPoll):
    """A busy poll that decides to poll for every wait, and never spins (in memory)."""

    def __init__(self) -> None:
        super().__init__(lambda _: None, 1.0)

    def decide(self) -> bool:
        return True


class MemoryTable:
    """A match whose seats are StringTransports, on a fake clock (no sockets).

    With ``read_step``, :meth:`feed` delivers bytes as the CLI reactor's read step
    does (:func:`dealer.seatio.read_ready`): the state made ready for the reply is
    sent first (:func:`dealer.seatio.answer_ahead`), then the bytes go to the
    framing; ``sent_ahead`` counts the replies answered that way. The match
    then polls (:class:`AlwaysPoll`, unless ``busy_poll`` is given or ``poll`` is
    False) for every wait. Without ``read_step`` nothing would send a state made
    ready, and the match makes none (its count of matches playing starts at one, as
    if another played): the usual path alone, what the read-step runs are compared
    with. ``playing``: a count of matches playing shared with other tables (a
    process's matches share one). ``send_states``: made from the match's busy poll and
    count (:class:`dealer.sendstates.SendStates`; the match's own by default).
    """

    def __init__(self, config: MatchConfig, stderr: Any = None, opener: Opener = open_record_file,
                 read_step: bool = False, busy_poll: BusyPoll | None = None, poll: bool = True,
                 playing: MatchesPlaying | None = None,
                 send_states: Callable[[MatchesPlaying, BusyPoll | None], SendStates] | None = None,
                 ) -> None:
        self.read_step = read_step
        #: (A test may turn ``read_step`` off later, on a match that makes states ready.)
        self.built_without_read_step = not read_step
        self.sent_ahead = 0
        self.clock = task.Clock()
        if busy_poll is None and read_step and poll:
            busy_poll = AlwaysPoll()
        if playing is None and not read_step:
            playing = MatchesPlaying(count=1)
        if playing is None:
            playing = busy_poll.playing if busy_poll is not None else MatchesPlaying()
        self.match = Match(config, reactor=None, clock=self.clock, stderr=stderr, opener=opener,
                           busy_poll=busy_poll, playing=playing,
                           send_states=None if send_states is None else send_states(playing, busy_poll))
        self.done = self.match.start()
        OPEN_MATCHES.append(self.match)
        self.protocols: list[SeatProtocol] = []
        self.transports: list[StringTransport] = []
        for factory in self.match.seating.factories:
            protocol = factory.buildProtocol(None)
            transport = StringTransport()
            protocol.makeConnection(transport)
            self.protocols.append(protocol)
            self.transports.append(transport)

    def feed(self, seat: int, data: bytes | str, chunk: int = 0) -> None:
        """Deliver ``data`` from ``seat``, in pieces of ``chunk`` bytes (0: at once)."""
        raw = data.encode("ascii") if isinstance(data, str) else data
        step = chunk or len(raw)
        protocol = self.protocols[seat]
        for i in range(0, len(raw), step):
            piece = raw[i : i + step]
            ahead = protocol.ahead
            if self.read_step and ahead is not None:
                seatio.answer_ahead(protocol.io, ahead, piece)
                self.sent_ahead += ahead.sent_to is not None
            elif self.built_without_read_step:
                # The usual path alone: the runs the read step's are compared with.
                assert ahead is None, "a state was made ready for a match without the read step"
            protocol.dataReceived(piece)
        self.run_holds(seat)

    def run_holds(self, seat: int) -> None:
        """Run the fake clock through the seat's holds (``BotBudget.unusable_line_hold_s``: its
        lines wait after each unusable one past the first few), as real time would."""
        hold = self.match.config.budget.unusable_line_hold_s
        while self.transports[seat].producerState == "paused" and not self.done.called:
            self.clock.advance(hold)

    def play_turns(self, reply: Callable[[int, str, Any], str], rounds: int = 10_000,
                   seats: Sequence[int] | None = None) -> None:
        """Until no seat moves: each seat (of ``seats``, default all) whose turn its last
        MATCHSTATE shows is fed ``reply(seat, that line, its parsed view)`` (a seat whose
        transport closes stops); the other seats' lines are left unread."""
        game = self.match.game
        for _ in range(rounds):
            moved = False
            for seat in range(len(self.transports)) if seats is None else seats:
                lines = [line for line in self.take(seat) if line.startswith("MATCHSTATE:")]
                if not lines or self.transports[seat].disconnecting:
                    continue
                view = parse_matchstate(lines[-1], game)
                state = view.to_state(game)
                if not state.finished and state.current_player == view.position:
                    self.feed(seat, reply(seat, lines[-1], view))
                    moved = True
            if not moved:
                return

    def take(self, seat: int) -> list[str]:
        """The lines sent to ``seat`` since the last call (each sent with CRLF)."""
        data = self.transports[seat].value()
        self.transports[seat].clear()
        assert data.endswith(b"\r\n") or not data
        return data.decode().split("\r\n")[:-1] if data else []


class MemoryRun:
    """Matches and their bots on in-memory connections (``twisted.test.iosim``) and one ``task.Clock``.

    No sockets and no real time: when no bytes move, the clock jumps to the
    next scheduled call, so a 300 ms timeout costs nothing. Bots are the
    same protocols the socket tests connect (``TestBot`` and friends).
    """

    def __init__(self) -> None:
        self.clock = task.Clock()
        self.pumps: list[iosim.IOPump] = []
        self._port = 40000

    def start(self, config: MatchConfig, bots: Sequence[Any], stderr: Any = None,
              prepare: Callable[[Match], None] | None = None) -> defer.Deferred[MatchResult]:
        """Start ``config`` and connect ``bots`` seat by seat (None: that seat never connects);
        ``prepare`` gets the match first (to subscribe to its events, add hand hooks...)."""
        match = Match(config, reactor=None, clock=self.clock, stderr=stderr)
        if prepare is not None:
            prepare(match)
        done = match.start()
        OPEN_MATCHES.append(match)
        for factory, bot in zip(match.seating.factories, bots):
            if bot is not None:
                self.connect(factory.buildProtocol(None), bot)
        return done

    def connect(self, server: Any, client: Any) -> None:
        """Connect a dealer-side protocol and a bot, as from 127.0.0.1."""
        self._port += 1
        here, there = IPv4Address("TCP", "127.0.0.1", 18791), IPv4Address("TCP", "127.0.0.1", self._port)
        self.pumps.append(iosim.connect(
            server, iosim.FakeTransport(server, isServer=True, hostAddress=here, peerAddress=there),
            client, iosim.FakeTransport(client, isServer=False, hostAddress=there, peerAddress=here),
            greet=False, clock=self.clock,
        ))

    def run(self, *finished: defer.Deferred[Any], max_steps: int = 1_000_000) -> None:
        """Pump bytes and advance the clock until every ``finished`` has fired."""
        for _ in range(max_steps):
            if all(d.called for d in finished):
                return
            self.clock.advance(0)
            moved = [pump.pump(advanceClock=False) for pump in self.pumps]
            if any(moved):
                continue
            calls = self.clock.getDelayedCalls()
            assert calls, "nothing moves and nothing is scheduled: the matches are stuck"
            self.clock.advance(max(0.0, min(c.getTime() for c in calls) - self.clock.seconds()))
        raise AssertionError("the matches did not finish")

    def play(self, config: MatchConfig, bots: Sequence[Any], stderr: Any = None,
             prepare: Callable[[Match], None] | None = None) -> MatchResult:
        """Play one match to its end and return its result (``prepare``: see :meth:`start`)."""
        done = self.start(config, bots, stderr, prepare)
        self.run(done)
        result: MatchResult = done.result
        return result


"""The probe adapter: range-query answers for a bot that only speaks plain ACPC.

``acpc-lbr probe HOST PORT --game GAME [--samples K] [--instances N] -- BOT-COMMAND ...``

The adapter stands in for the bot toward the dealer. It runs N copies of the
unmodified bot; each connects to a small ACPC endpoint the adapter serves on
127.0.0.1 (``{host}`` and ``{port}`` in the command are filled in with it).

* Copy 0 plays the real match: the dealer's ``MATCHSTATE`` lines go to it
  verbatim, and its replies go back to the dealer verbatim. Its actions are
  therefore independent of the probes, which is what keeps LBR's result a
  lower bound (the paper's "sampled soft translation").
* Copies 1..N-1 are probed. For a ``QUERY``, the adapter writes the
  ``MATCHSTATE`` line of the queried decision point once per private hand
  (hands that share a card with the board are skipped), K times each, spread
  over the probing copies and pipelined (every line is written at once), and
  answers with the observed frequency of each queried action, in the
  compact version-2 encoding when the dealer reads it. Every probe line
  carries a hand number of its own, so no two lines are the same: a bot that
  skips a repeated line (as the SDK's do) still answers every probe, and each
  reply names the probe it answers.

What is counted is the action the dealer would apply: a reply goes through
the reference's leniency (:func:`protocol.rules.correct_action`), so an
illegal fold counts as the call it would become. In no-limit a queried
``r<total>`` counts only raises to exactly that total: a bot that randomises
its sizes spreads its raise mass over many totals, and each answer carries
only the mass on the queried ones (the adapter logs the answer's total mass).

The assumption, stated in docs/range-query.md: the bot's action depends only
on the ``MATCHSTATE`` line it receives (no memory across lines or hands).

Sampling error: a frequency from K samples has standard error
``sqrt(p (1 - p) / K)``; the adapter keeps the largest and the mean of it per
query in :class:`ProbeStats` and logs them when the match ends.
"""

from __future__ import annotations

import argparse
import logging
import math
import shlex
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
from twisted.internet import defer, protocol
from twisted.protocols.basic import LineReceiver
from twisted.python.failure import Failure

from protocol.errors import ProtocolError
from protocol.gamedef import GameDef, load_game
from protocol.rangecodec import SUPPORTED_VERSIONS, encode_answer, parse_versions
from protocol.rangequery import Query, RangeErrorReply, read_query
from protocol.rules import State, correct_action
from protocol.wire import MatchState, read_reply_action

log = logging.getLogger("acpc_lbr.probe")

VERSION_LINE = b"VERSION:2.0.0\r\n"
#: How long a query's probes may take before the query is refused.
DEFAULT_PROBE_TIMEOUT = 30.0
DEFAULT_SAMPLES = 100
DEFAULT_INSTANCES = 2
#: Probe lines number their hands 1, 2, ... modulo this (the protocol's hand numbers are uint32).
PROBE_HAND_NUMBERS = 1 << 31
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


@dataclass
class ProbeStats:
    """What the probes cost and how exact their answers are."""

    queries: int = 0
    refused: int = 0
    probes: int = 0
    max_standard_error: float = 0.0
    sum_mean_standard_error: float = 0.0
    copy_failures: int = 0

    @property
    def mean_standard_error(self) -> float:
        answered = self.queries - self.refused
        return self.sum_mean_standard_error / answered if answered else 0.0


@dataclass(eq=False)  # compared and hashed by identity: one per query
class _Probe:
    """One query being answered: counts per (action, hand) until every probe is back."""

    query: Query
    state: State
    rows: np.ndarray
    blocked: np.ndarray
    outstanding: int
    deferred: defer.Deferred[str] = field(default_factory=defer.Deferred)
    #: Reply token -> row of the action the dealer would apply (-1: not queried).
    #: The state is the same for every hand, so each token is judged once.
    rows_of: dict[str, int] = field(default_factory=dict)


class BotCopy(LineReceiver):
    """The adapter's side of one bot copy's ACPC connection."""

    delimiter = b"\n"
    MAX_LENGTH = 1 << 16

    def __init__(self, adapter: ProbeAdapter) -> None:
        self.adapter = adapter
        self.ready = False
        #: Probe lines written and not yet answered: line -> (probe, hand index).
        self.expected: dict[str, tuple[_Probe, int]] = {}

    def connectionMade(self) -> None:
        cast(Any, self.transport).setTcpNoDelay(True)

    def lineReceived(self, line: bytes) -> None:
        text = line.rstrip(b"\r").decode("ascii", "replace")
        if not self.ready:
            if text.startswith("VERSION:"):
                self.ready = True
                self.adapter.copy_ready(self)
            return
        if not text or text[0] in "#;":
            return
        self.adapter.copy_line(self, text)

    def lineLengthExceeded(self, line: bytes) -> None:
        self.adapter.copy_failed(self, f"a line longer than {self.MAX_LENGTH} bytes")
        cast(Any, self.transport).loseConnection()

    def connectionLost(self, reason: Failure = protocol.connectionDone) -> None:
        self.adapter.copy_failed(self, "disconnected")

    def send(self, text: str) -> None:
        cast(Any, self.transport).write(text.encode("ascii") + b"\r\n")


class DealerLink(LineReceiver):
    """The adapter's connection to the dealer, announcing range-query support."""

    delimiter = b"\n"
    MAX_LENGTH = 1 << 20

    def __init__(self, adapter: ProbeAdapter) -> None:
        self.adapter = adapter

    def connectionMade(self) -> None:
        out = cast(Any, self.transport)
        out.setTcpNoDelay(True)
        out.write(VERSION_LINE)
        out.write(("# range-query " + " ".join(map(str, SUPPORTED_VERSIONS)) + "\r\n").encode())

    def lineReceived(self, line: bytes) -> None:
        text = line.rstrip(b"\r").decode("ascii", "replace")
        self.adapter.dealer_line(text)

    def connectionLost(self, reason: Failure = protocol.connectionDone) -> None:
        self.adapter.dealer_lost()

    def send(self, text: str) -> None:
        cast(Any, self.transport).write(text.encode("ascii", "replace") + b"\r\n")


class ProbeAdapter:
    """Stands in for a plain bot toward a dealer; answers queries by probing copies of it.

    Args:
        game: the match's game.
        samples: K, probes per private hand and query.
        instances: N, copies of the bot (copy 0 plays; at least one more probes).
        reactor: the reactor (time for the probe timeout).
        probe_timeout: seconds a query's probes may take.
    """

    def __init__(self, game: GameDef, samples: int, instances: int, reactor: Any,
                 probe_timeout: float = DEFAULT_PROBE_TIMEOUT) -> None:
        if samples < 1 or instances < 2:
            raise ValueError("the adapter needs --samples >= 1 and --instances >= 2 "
                             "(copy 0 plays, the others are probed)")
        self.game = game
        self.samples = samples
        self.instances = instances
        self.reactor = reactor
        self.probe_timeout = probe_timeout
        self.copies: list[BotCopy] = []
        self.dealer: DealerLink | None = None
        self.answer_version = 1
        self.stats = ProbeStats()
        self.all_ready: defer.Deferred[None] = defer.Deferred()
        self.finished: defer.Deferred[None] = defer.Deferred()
        self._next_copy = 0
        self._probe_number = 0

    # -- the copies ---------------------------------------------------------

    def copy_factory(self) -> protocol.Factory:
        """The factory of the endpoint the copies connect to."""
        return protocol.Factory.forProtocol(lambda: BotCopy(self))

    def copy_ready(self, copy: BotCopy) -> None:
        self.copies.append(copy)
        if len(self.copies) == self.instances and not self.all_ready.called:
            self.all_ready.callback(None)

    def copy_line(self, copy: BotCopy, text: str) -> None:
        if copy is self.copies[0]:
            if self.dealer is not None:
                self.dealer.send(text)
            return
        sent, _, reply = text.rpartition(":")
        entry = copy.expected.pop(sent, None)
        if entry is None:
            log.warning("ignoring a line from probe copy %d that answers no probe: %.100s",
                        self.copies.index(copy), text)
            return
        probe, hand = entry
        if probe.deferred.called:  # refused already (timeout or a failed copy)
            return
        row = probe.rows_of.get(reply)
        if row is None:
            action, problem = read_reply_action(reply, self.game)
            applied, _ = correct_action(probe.state, action, problem)
            actions = probe.query.actions
            row = probe.rows_of[reply] = actions.index(applied) if applied in actions else -1
        if row >= 0:
            probe.rows[row, hand] += 1.0
        probe.outstanding -= 1
        if probe.outstanding == 0 and not probe.deferred.called:
            probe.deferred.callback(self._answer(probe))

    def copy_failed(self, copy: BotCopy, reason: str) -> None:
        if copy not in self.copies or self.finished.called:  # the match is over: copies leave
            return
        index = self.copies.index(copy)
        if index == 0:
            if not self.finished.called:
                log.error("the playing copy is gone (%s); closing the dealer connection", reason)
                if self.dealer is not None:
                    cast(Any, self.dealer.transport).loseConnection()
            return
        self.stats.copy_failures += 1
        log.warning("probe copy %d failed: %s", index, reason)
        pending = {probe for probe, _ in copy.expected.values()}
        copy.expected.clear()
        copy.ready = False  # it stays in the list, so the indices stay put, and is not used
        for probe in pending:
            self._refuse(probe, f"a probed copy of the bot {reason}")

    def _probers(self) -> list[BotCopy]:
        return [c for c in self.copies[1:] if c.ready]

    # -- the dealer ---------------------------------------------------------

    def dealer_line(self, text: str) -> None:
        if text.startswith("QUERY:"):
            self._query(text)
        elif text.startswith("# range-query-version"):
            try:
                versions = parse_versions(text[len("# range-query-version"):])
            except ProtocolError:
                return
            if len(versions) == 1 and versions[0] in SUPPORTED_VERSIONS:
                self.answer_version = versions[0]
        elif text.startswith("MATCHSTATE:") or not text.startswith("#"):
            self.copies[0].send(text)

    def dealer_lost(self) -> None:
        for copy in self.copies:
            if copy.transport is not None:
                cast(Any, copy.transport).loseConnection()
        if not self.finished.called:
            self.finished.callback(None)

    def _query(self, text: str) -> None:
        assert self.dealer is not None
        self.stats.queries += 1
        try:
            query, state = read_query(text, self.game)
            if state.finished or state.current_player != query.state.position:
                raise ProtocolError("the bot is not to act at this state")
        except ProtocolError as problem:
            self.stats.refused += 1
            qid = text.split(":")[1][:64] if text.count(":") else "?"
            self.dealer.send(RangeErrorReply(qid if qid.isalnum() else "0", problem.message).text())
            return
        probers = self._probers()
        if not probers:
            self.stats.refused += 1
            self.dealer.send(RangeErrorReply(query.qid, "no probe copy of the bot is left").text())
            return
        board = query.state.board_cards
        blocked = self.game.hands_sharing(board)
        hands = np.flatnonzero(~blocked)
        probe = _Probe(query, state, np.zeros((len(query.actions), self.game.num_hands)), blocked,
                       outstanding=len(hands) * self.samples)
        probe.deferred.addCallback(self.dealer.send)
        timer = self.reactor.callLater(self.probe_timeout, self._refuse, probe,
                                       f"the probes took over {self.probe_timeout:g} s")
        probe.deferred.addBoth(lambda result: (timer.cancel() if timer.active() else None,
                                               result)[1])
        cards = self.game.hand_cards
        position = query.state.position
        batches: list[list[str]] = [[] for _ in probers]
        for hand in hands:
            hole = tuple(() if p != position else tuple(int(c) for c in cards[hand])
                         for p in range(self.game.num_players))
            # The line's fields after the hand number, rendered once per hand.
            rest = MatchState(position, 0, query.state.betting, hole,
                              query.state.board).text().split(":", 3)[3]
            for _ in range(self.samples):
                self._probe_number = (self._probe_number + 1) % PROBE_HAND_NUMBERS
                line = f"MATCHSTATE:{position}:{self._probe_number}:{rest}"
                slot = self._next_copy % len(probers)
                self._next_copy += 1
                probers[slot].expected[line] = (probe, int(hand))
                batches[slot].append(line)
        for copy, lines in zip(probers, batches, strict=True):
            if lines:  # one write per copy: the probes are pipelined
                copy.send("\r\n".join(lines))
        self.stats.probes += len(hands) * self.samples

    def _refuse(self, probe: _Probe, reason: str) -> None:
        if probe.deferred.called:
            return
        self.stats.refused += 1
        for copy in self.copies[1:]:
            copy.expected = {line: e for line, e in copy.expected.items() if e[0] is not probe}
        probe.deferred.callback(RangeErrorReply(probe.query.qid, reason).text())

    def _answer(self, probe: _Probe) -> str:
        rows = probe.rows / self.samples
        rows[:, probe.blocked] = 0.0
        live = rows[:, ~probe.blocked]
        errors = np.sqrt(live * (1.0 - live) / self.samples)
        if errors.size:
            self.stats.max_standard_error = max(self.stats.max_standard_error, float(errors.max()))
            self.stats.sum_mean_standard_error += float(errors.mean())
        return encode_answer(probe.query.qid, probe.query.actions, rows, self.answer_version,
                             probe.blocked)


class _OneProtocol(protocol.ClientFactory):
    """A client factory for one ready-made protocol; ``connected`` fires or fails with it."""

    def __init__(self, link: DealerLink, connected: defer.Deferred[Any]) -> None:
        self.link = link
        self.connected = connected

    def buildProtocol(self, addr: Any) -> DealerLink:
        self.connected.callback(None)
        return self.link

    def clientConnectionFailed(self, connector: Any, reason: Failure) -> None:
        self.connected.errback(reason)


def fill_command(command: Sequence[str], host: str, port: int) -> list[str]:
    """The bot command with ``{host}`` and ``{port}`` filled in.

    >>> fill_command(["./bot", "{host}", "{port}"], "127.0.0.1", 5)
    ['./bot', '127.0.0.1', '5']
    """
    return [word.replace("{host}", host).replace("{port}", str(port)) for word in command]


async def run_adapter(adapter: ProbeAdapter, host: str, port: int,
                      launch: Callable[[int], Any]) -> ProbeStats:
    """Serve the copies, start them with ``launch(copy_port)``, then join the dealer."""
    reactor = adapter.reactor
    listening = reactor.listenTCP(0, adapter.copy_factory(), interface="127.0.0.1")
    copy_port = listening.getHost().port
    launched = launch(copy_port)

    def too_slow() -> None:
        if not adapter.all_ready.called:
            adapter.all_ready.errback(TimeoutError(
                f"{adapter.instances} copies of the bot did not all connect within 60 s"))

    timeout = reactor.callLater(60.0, too_slow)
    try:
        await adapter.all_ready
    finally:
        if timeout.active():
            timeout.cancel()
    link = DealerLink(adapter)
    adapter.dealer = link
    connected: defer.Deferred[Any] = defer.Deferred()
    link_factory: Any = _OneProtocol(link, connected)
    reactor.connectTCP(host, port, link_factory)
    await connected
    await adapter.finished
    await listening.stopListening()
    for process in launched or []:
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
    return adapter.stats


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="acpc-lbr probe",
        description="Stand in for a plain ACPC bot toward a dealer and answer range queries "
                    "by probing copies of it (docs/range-query.md, 'Bots that cannot be "
                    "modified').",
        usage="acpc-lbr probe HOST PORT --game GAME [--samples K] [--instances N] "
              "-- BOT-COMMAND ...",
    )
    parser.add_argument("host")
    parser.add_argument("port", type=int)
    parser.add_argument("--game", required=True, help="game name or .game file")
    parser.add_argument("--samples", type=int, default=DEFAULT_SAMPLES, metavar="K",
                        help=f"probes per private hand and query (default {DEFAULT_SAMPLES})")
    parser.add_argument("--instances", type=int, default=DEFAULT_INSTANCES, metavar="N",
                        help=f"copies of the bot: one plays, N-1 are probed (default "
                             f"{DEFAULT_INSTANCES})")
    parser.add_argument("--probe-timeout", type=float, default=DEFAULT_PROBE_TIMEOUT,
                        metavar="S", help="seconds a query's probes may take")
    return parser


def main(argv: Sequence[str]) -> int:
    """Run ``acpc-lbr probe``; 0 when the match ended normally."""
    words = list(argv)
    split = words.index("--") if "--" in words else len(words)
    args = _parser().parse_args(words[:split])
    command = words[split + 1:]
    if not command:
        print("acpc-lbr probe: give the bot command after '--'", file=sys.stderr)
        return EXIT_USAGE
    if len(command) == 1:
        command = shlex.split(command[0])
    try:
        game = load_game(args.game)
    except (ProtocolError, OSError) as problem:
        print(f"acpc-lbr probe: {problem}", file=sys.stderr)
        return EXIT_USAGE
    logging.basicConfig(level=logging.INFO, format="probe: %(message)s")
    from acpc_lbr.reactor import install_asyncio_reactor

    install_asyncio_reactor()
    from twisted.internet import reactor as installed

    reactor: Any = installed
    try:
        adapter = ProbeAdapter(game, args.samples, args.instances, reactor, args.probe_timeout)
    except ValueError as problem:
        print(f"acpc-lbr probe: {problem}", file=sys.stderr)
        return EXIT_USAGE
    outcome: list[Any] = []

    def launch(copy_port: int) -> list[subprocess.Popen[bytes]]:
        return [subprocess.Popen(fill_command(command, "127.0.0.1", copy_port),
                                 stdin=subprocess.DEVNULL)
                for _ in range(args.instances)]

    async def go() -> None:
        try:
            outcome.append(await run_adapter(adapter, args.host, args.port, launch))
        finally:
            reactor.stop()

    reactor.callWhenRunning(lambda: defer.ensureDeferred(go()).addErrback(outcome.append))
    reactor.run()
    if not outcome or not isinstance(outcome[0], ProbeStats):
        reason = outcome[0].getErrorMessage() if outcome else "interrupted"
        print(f"acpc-lbr probe: {reason}", file=sys.stderr)
        return EXIT_FAILED
    stats = outcome[0]
    log.info("%d queries (%d refused), %d probes, %d copy failures; standard error of an "
             "answer: largest %.4f, mean %.4f", stats.queries, stats.refused, stats.probes,
             stats.copy_failures, stats.max_standard_error,
             stats.mean_standard_error if math.isfinite(stats.mean_standard_error) else 0.0)
    return EXIT_OK

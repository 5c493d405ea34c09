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
only the mass on the queried ones (:class:`ProbeStats` keeps the answers'
total mass).

The assumption, stated in docs/range-query.md: the bot's action depends only
on the ``MATCHSTATE`` line it receives (no memory across lines or hands).
It is checked as far as it can be: each line the playing copy answers is
also probed K times, and over the match the playing copy's action types are
compared with the probed frequencies (:attr:`ProbeStats.verdict`).

Sampling error: a frequency from K samples has standard error
``sqrt(p (1 - p) / K)``; every answer carries the largest and the mean of it
in its optional ``se=`` part (protocol/rangecodec.py), and
:class:`ProbeStats` keeps them per query. A probed copy that disconnects,
sends a line answering no probe, or still owes a probe when a query's time
is up is dropped; its queries get a ``RANGEERROR`` and the match goes on.
``--stats FILE`` writes the statistics as JSON at the end (``acpc-lbr
evaluate --probe`` reads them into its results).

Speed: a hand's K probe lines are written to one copy in one write with the
rest of the query's, replies are framed a whole chunk at a time, counted in
a flat list, and each distinct reply token is judged once per query.
"""

from __future__ import annotations

import logging
import math
import shlex
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
from twisted.internet import defer, protocol
from twisted.protocols.basic import LineReceiver
from twisted.python.failure import Failure

from protocol.errors import ProtocolError
from protocol.gamedef import GameDef
from protocol.rangecodec import SUPPORTED_VERSIONS, encode_answer, parse_versions
from protocol.rangequery import Query, RangeErrorReply, read_query
from protocol.rules import ActionType, State, correct_action
from protocol.wire import MatchState, parse_matchstate_replayed, read_reply_action

log = logging.getLogger("acpc_lbr.probe")

VERSION_LINE = b"VERSION:2.0.0\r\n"
#: How long a query's probes may take before the query is refused.
DEFAULT_PROBE_TIMEOUT = 30.0
DEFAULT_SAMPLES = 100
DEFAULT_INSTANCES = 2
#: Probe lines number their hands 1, 2, ... modulo this (the protocol's hand numbers are uint32).
PROBE_HAND_NUMBERS = 1 << 31
#: The action types the consistency check compares (raise sizes pooled).
CHECKED_TYPES = (ActionType.FOLD, ActionType.CALL, ActionType.RAISE)
#: The consistency check flags a bot whose played action types stray further
#: than this many standard deviations from the probed frequencies.
INCONSISTENT_Z = 5.0


@dataclass
class ProbeStats:
    """What the probes cost, how exact their answers are, and whether the bot kept the assumption.

    Attributes:
        samples: K, probes per private hand and query.
        instances: N, copies of the bot.
        queries: queries received from the dealer.
        refused: queries answered with ``RANGEERROR``; ``refusals`` by cause
            (``not_to_act``, ``no_copy``, ``copy_failed``, ``timeout``).
        probes: probe lines written for queries.
        max_standard_error: the largest standard error of a value in an answer.
        sum_mean_standard_error: the sum over answers of their mean standard error.
        smallest_mass: the smallest total probability, over the asked actions,
            of a hand in an answer (below 1 when the bot took actions not asked,
            e.g. other raise sizes).
        sum_mean_mass: the sum over answers of their mean total probability.
        copy_failures: probed copies that disconnected, stalled or sent a line
            that answers no probe.
        checks: the playing copy's decisions compared with probes of the same line.
        check_probes: probe lines written for those comparisons.
        observed: per action type (fold, call, raise), how often the playing copy took it.
        expected: per type, the sum of its probed frequencies at the same lines.
        variance: per type, the estimated variance of ``observed - expected``.
    """

    samples: int = 0
    instances: int = 0
    queries: int = 0
    refused: int = 0
    refusals: dict[str, int] = field(default_factory=dict)
    probes: int = 0
    max_standard_error: float = 0.0
    sum_mean_standard_error: float = 0.0
    smallest_mass: float = 1.0
    sum_mean_mass: float = 0.0
    copy_failures: int = 0
    checks: int = 0
    check_probes: int = 0
    observed: list[float] = field(default_factory=lambda: [0.0] * len(CHECKED_TYPES))
    expected: list[float] = field(default_factory=lambda: [0.0] * len(CHECKED_TYPES))
    variance: list[float] = field(default_factory=lambda: [0.0] * len(CHECKED_TYPES))

    @property
    def answered(self) -> int:
        """Queries answered with a range."""
        return self.queries - self.refused

    @property
    def mean_standard_error(self) -> float:
        """The mean over answers of each answer's mean standard error (0: no answer)."""
        return self.sum_mean_standard_error / self.answered if self.answered else 0.0

    def refuse(self, cause: str) -> None:
        """Count one refused query."""
        self.refused += 1
        self.refusals[cause] = self.refusals.get(cause, 0) + 1

    def add_check(self, played: int, counts: Sequence[int]) -> None:
        """One decision of the playing copy: its action type, and K probes' counts per type."""
        k = self.samples
        self.checks += 1
        for t, count in enumerate(counts):
            p = count / k
            self.observed[t] += float(t == played)
            self.expected[t] += p
            # Var(I - p) = q (1 - q) (1 + 1/K), with q (1 - q) estimated without
            # bias by p (1 - p) K / (K - 1); K = 1 cannot estimate it: its bound.
            self.variance[t] += p * (1 - p) * (k + 1) / (k - 1) if k > 1 else 0.5

    @property
    def largest_z(self) -> float:
        """The largest ``|observed - expected| / sqrt(variance + 1)`` over the action types.

        The 1 added to the variance keeps a handful of decisions (or a
        deterministic bot, whose variance is 0) from reading as a deviation.
        """
        return max((abs(o - e) / math.sqrt(v + 1.0) for o, e, v in
                    zip(self.observed, self.expected, self.variance, strict=True)), default=0.0)

    @property
    def verdict(self) -> str:
        """``consistent``, ``inconsistent`` (:data:`INCONSISTENT_Z` exceeded) or ``not checked``."""
        if not self.checks:
            return "not checked"
        return "inconsistent" if self.largest_z > INCONSISTENT_Z else "consistent"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready copy (what ``acpc-lbr probe --stats`` writes)."""
        names = [t.value for t in CHECKED_TYPES]
        return {
            "samples": self.samples, "instances": self.instances, "queries": self.queries,
            "answered": self.answered, "refused": self.refused, "refusals": dict(self.refusals),
            "probes": self.probes, "copy_failures": self.copy_failures,
            "largest_standard_error": self.max_standard_error,
            "mean_standard_error": self.mean_standard_error,
            "smallest_answer_mass": self.smallest_mass if self.answered else None,
            "mean_answer_mass": self.sum_mean_mass / self.answered if self.answered else None,
            "consistency": {
                "verdict": self.verdict, "decisions": self.checks, "probes": self.check_probes,
                "largest_z": self.largest_z, "threshold_z": INCONSISTENT_Z,
                "observed": dict(zip(names, self.observed, strict=True)),
                "expected": dict(zip(names, self.expected, strict=True)),
            },
        }


@dataclass(eq=False)  # compared and hashed by identity: one per query or check
class _Probe:
    """Probes being answered: counts per (row, column) until every probe is back.

    A query's rows are its actions and its columns the private hands; a
    consistency check's rows are the action types and it has one column.
    """

    state: State
    num_rows: int
    num_columns: int
    outstanding: int
    finish: Callable[[_Probe], None]
    query: Query | None = None
    blocked: np.ndarray | None = None
    played: int = -1
    done: bool = False
    #: counts[row * num_columns + column], a flat list (cheap to increment).
    counts: list[int] = field(default_factory=list)
    #: No-limit: the legal raise-to range at the state, and the row of each queried size.
    raise_range: tuple[int, int] | None = None
    raise_rows: dict[int, int] = field(default_factory=dict)
    #: Reply token -> ``row * num_columns`` of the action the dealer would apply
    #: (-1: not counted). The state is the same for every probe: each token is judged once.
    offset_of: dict[str, int] = field(default_factory=dict)
    timer: Any = None

    def __post_init__(self) -> None:
        self.counts = [0] * (self.num_rows * self.num_columns)
        if not self.state.game.is_limit:
            self.raise_range = self.state.raise_range()
        if self.query is not None:
            self.raise_rows = {a.size: row for row, a in enumerate(self.query.actions)
                               if a.type is ActionType.RAISE}


class BotCopy(protocol.Protocol):
    """The adapter's side of one bot copy's ACPC connection.

    Framing is done here, a whole chunk at a time (the replies to pipelined
    probes arrive many to a chunk): one decode and one split per chunk.
    """

    MAX_LENGTH = 1 << 16

    def __init__(self, adapter: ProbeAdapter) -> None:
        self.adapter = adapter
        self.ready = False
        #: Probe lines written and not yet answered: line -> (probe, column).
        self.expected: dict[str, tuple[_Probe, int]] = {}
        self._buffer = b""

    def connectionMade(self) -> None:
        cast(Any, self.transport).setTcpNoDelay(True)

    def dataReceived(self, data: bytes) -> None:
        buffer = self._buffer + data if self._buffer else data
        end = buffer.rfind(b"\n")
        if end < 0 or len(buffer) - end > self.MAX_LENGTH:
            self._buffer = buffer[end + 1:]
            if len(self._buffer) > self.MAX_LENGTH:
                self._buffer = b""
                self.adapter.copy_failed(self, f"sent a line longer than {self.MAX_LENGTH} bytes")
                cast(Any, self.transport).loseConnection()
            return
        self._buffer = buffer[end + 1:]
        lines = buffer[:end].decode("ascii", "replace").replace("\r", "").split("\n")
        if not self.ready:
            for index, text in enumerate(lines):
                if text.startswith("VERSION:"):
                    self.ready = True
                    self.adapter.copy_ready(self)
                    lines = lines[index + 1:]
                    break
            else:
                return
        if lines:
            self.adapter.copy_lines(self, lines)

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
        samples: K, probes per private hand and query (and per checked decision).
        instances: N, copies of the bot (copy 0 plays; at least one more probes).
        reactor: the reactor (time for the probe timeout).
        probe_timeout: seconds a query's probes may take; a copy that still owes
            one of them then is dropped as stalled.
        check: also probe each decision of the playing copy (the consistency check).
    """

    def __init__(self, game: GameDef, samples: int, instances: int, reactor: Any,
                 probe_timeout: float = DEFAULT_PROBE_TIMEOUT, check: bool = True) -> None:
        if samples < 1 or instances < 2:
            raise ValueError("the adapter needs --samples >= 1 and --instances >= 2 "
                             "(copy 0 plays, the others are probed)")
        self.game = game
        self.samples = samples
        self.instances = instances
        self.reactor = reactor
        self.probe_timeout = probe_timeout
        self.check = check
        self.copies: list[BotCopy] = []
        self.dealer: DealerLink | None = None
        self.answer_version = 1
        self.stats = ProbeStats(samples=samples, instances=instances)
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

    def copy_lines(self, copy: BotCopy, lines: list[str]) -> None:
        """Lines from a copy: the playing copy's go to the dealer; a probed copy's are counted."""
        if copy is self.copies[0]:
            for text in lines:
                if text and text[0] not in "#;":
                    if self.dealer is not None:
                        self.dealer.send(text)
                    if self.check:
                        self._check_decision(text)
            return
        expected = copy.expected
        for text in lines:
            sent, _, reply = text.rpartition(":")
            entry = expected.pop(sent, None)
            if entry is None:
                if not text or text[0] in "#;":
                    continue  # a comment
                self.copy_failed(copy, f"sent a line that answers no probe: {text[:80]!r}")
                cast(Any, copy.transport).loseConnection()
                return
            probe, column = entry
            if probe.done:  # refused already (timeout or a failed copy)
                continue
            offset = probe.offset_of.get(reply)
            if offset is None:
                offset = self._offset_of(probe, reply)
            if offset >= 0:
                probe.counts[offset + column] += 1
            probe.outstanding -= 1
            if probe.outstanding == 0:
                probe.done = True
                probe.finish(probe)

    def _offset_of(self, probe: _Probe, reply: str) -> int:
        row = self._legal_raise_row(probe, reply)
        if row is None:
            action, problem = read_reply_action(reply, self.game)
            applied, _ = correct_action(probe.state, action, problem)
            if probe.query is None:
                row = CHECKED_TYPES.index(applied.type)
            else:
                actions = probe.query.actions
                row = actions.index(applied) if applied in actions else -1
        offset = probe.offset_of[reply] = row * probe.num_columns if row >= 0 else -1
        return offset

    def _legal_raise_row(self, probe: _Probe, reply: str) -> int | None:
        """The row of a plain ``r<total>`` reply already legal (the dealer applies it as
        sent), without the general path: a bot that randomises its sizes sends
        thousands of distinct ones. None: not such a reply."""
        if (probe.raise_range is None or reply[:1] != "r" or len(reply) > 12
                or not reply[1:].isdigit()):
            return None  # (a stack fits in 11 digits; int() of thousands would raise)
        size = int(reply[1:])
        low, high = probe.raise_range
        if not low <= size <= high:
            return None
        if probe.query is None:
            return CHECKED_TYPES.index(ActionType.RAISE)
        return probe.raise_rows.get(size, -1)

    def copy_failed(self, copy: BotCopy, reason: str) -> None:
        if copy not in self.copies or self.finished.called or not copy.ready:
            return  # unknown, the match is over (copies leave), or failed already
        index = self.copies.index(copy)
        if index == 0:
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
            self._refuse(probe, f"a probed copy of the bot {reason}", "copy_failed")

    def _probers(self) -> list[BotCopy]:
        return [c for c in self.copies[1:] if c.ready]

    def _next_numbers(self, count: int) -> range:
        """``count`` fresh probe hand numbers (every outstanding probe line is distinct)."""
        if self._probe_number + count >= PROBE_HAND_NUMBERS:
            self._probe_number = 0
        first = self._probe_number + 1
        self._probe_number += count
        return range(first, first + count)

    # -- the consistency check -----------------------------------------------

    def _check_decision(self, text: str) -> None:
        """Probe the line the playing copy just answered, K times, to compare its action."""
        sent, _, reply = text.rpartition(":")
        try:
            view, state = parse_matchstate_replayed(sent, self.game)
        except ProtocolError:
            return
        if state.finished or state.current_player != view.position:
            return
        probers = self._probers()
        if not probers:
            return
        action, problem = read_reply_action(reply, self.game)
        played = CHECKED_TYPES.index(correct_action(state, action, problem)[0].type)
        check = _Probe(state, len(CHECKED_TYPES), 1, self.samples, self._checked, played=played)
        # A copy that answers query probes but not these would otherwise leave them pending
        # for ever (K lines a decision): the same time limit drops it.
        check.timer = self.reactor.callLater(self.probe_timeout, self._stalled, check)
        head = f"MATCHSTATE:{view.position}:"
        rest = sent.split(":", 3)[3]
        lines = [f"{head}{n}:{rest}" for n in self._next_numbers(self.samples)]
        entry = (check, 0)
        share = -(-len(lines) // len(probers))
        for slot, copy in enumerate(probers):
            mine = lines[slot * share:(slot + 1) * share]
            if mine:
                copy.expected.update(dict.fromkeys(mine, entry))
                copy.send("\r\n".join(mine))
        self.stats.check_probes += self.samples

    def _checked(self, check: _Probe) -> None:
        if check.timer is not None and check.timer.active():
            check.timer.cancel()
        self.stats.add_check(check.played, check.counts)

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
            self.stats.refuse("not_to_act")
            qid = text.split(":")[1][:64] if text.count(":") else "?"
            self.dealer.send(RangeErrorReply(qid if qid.isalnum() else "0", problem.message).text())
            return
        probers = self._probers()
        if not probers:
            self.stats.refuse("no_copy")
            self.dealer.send(RangeErrorReply(query.qid, "no probe copy of the bot is left").text())
            return
        blocked = self.game.hands_sharing(query.state.board_cards)
        hands = np.flatnonzero(~blocked).tolist()
        samples = self.samples
        probe = _Probe(state, len(query.actions), self.game.num_hands, len(hands) * samples,
                       self._answer, query=query, blocked=blocked)
        probe.timer = self.reactor.callLater(self.probe_timeout, self._stalled, probe)
        cards = self.game.hand_cards
        position = query.state.position
        head = f"MATCHSTATE:{position}:"
        batches: list[list[str]] = [[] for _ in probers]
        expected = [copy.expected for copy in probers]
        count = len(probers)
        numbers = iter(self._next_numbers(len(hands) * samples))
        for hand in hands:
            hole = tuple(() if p != position else tuple(int(c) for c in cards[hand])
                         for p in range(self.game.num_players))
            # The line's fields after the hand number, rendered once per hand.
            rest = MatchState(position, 0, query.state.betting, hole,
                              query.state.board).text().split(":", 3)[3]
            lines = [f"{head}{next(numbers)}:{rest}" for _ in range(samples)]
            # A hand's K probes go to one copy, the hands in turn to each.
            slot = self._next_copy % count
            self._next_copy += 1
            expected[slot].update(dict.fromkeys(lines, (probe, hand)))
            batches[slot].extend(lines)
        for copy, lines in zip(probers, batches, strict=True):
            if lines:  # one write per copy: the probes are pipelined
                copy.send("\r\n".join(lines))
        self.stats.probes += len(hands) * samples

    def _stalled(self, probe: _Probe) -> None:
        """A query's probes took too long: refuse it, and drop the copies that still owe one."""
        probe.timer = None
        late = [copy for copy in self._probers()
                if any(entry[0] is probe for entry in copy.expected.values())]
        reason = f"the probes took over {self.probe_timeout:g} s"
        self._refuse(probe, reason, "timeout")
        for copy in late:
            self.copy_failed(copy, f"stalled (a probe unanswered after {self.probe_timeout:g} s)")
            if copy.transport is not None:
                cast(Any, copy.transport).loseConnection()

    def _refuse(self, probe: _Probe, reason: str, cause: str) -> None:
        """Give up on ``probe``: a query gets a ``RANGEERROR``, a check is left out."""
        if probe.done:
            return
        probe.done = True  # its probes still in flight are ignored when they come back
        if probe.timer is not None and probe.timer.active():
            probe.timer.cancel()
        if probe.query is not None:
            self.stats.refuse(cause)
            if self.dealer is not None:
                self.dealer.send(RangeErrorReply(probe.query.qid, reason).text())

    def _answer(self, probe: _Probe) -> None:
        if probe.timer is not None and probe.timer.active():
            probe.timer.cancel()
        assert probe.query is not None and probe.blocked is not None and self.dealer is not None
        rows = np.array(probe.counts, dtype=np.float64).reshape(probe.num_rows, -1)
        rows /= self.samples
        rows[:, probe.blocked] = 0.0
        live = rows[:, ~probe.blocked]
        errors = np.sqrt(live * (1.0 - live) / self.samples)
        error = (float(errors.max()), float(errors.mean())) if errors.size else (0.0, 0.0)
        stats = self.stats
        stats.max_standard_error = max(stats.max_standard_error, error[0])
        stats.sum_mean_standard_error += error[1]
        if live.size:
            mass = live.sum(axis=0)
            stats.smallest_mass = min(stats.smallest_mass, float(mass.min()))
            stats.sum_mean_mass += float(mass.mean())
        else:
            stats.sum_mean_mass += 1.0
        self.dealer.send(encode_answer(probe.query.qid, probe.query.actions, rows,
                                       self.answer_version, probe.blocked, sampling_error=error))


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


def summary(stats: ProbeStats) -> str:
    """The adapter's closing line (no mass or error figures when no query was answered)."""
    text = (f"{stats.queries} queries ({stats.refused} refused"
            + "".join(f", {n} {cause}" for cause, n in sorted(stats.refusals.items()))
            + f"), {stats.probes} probes, {stats.copy_failures} copy failures; ")
    if stats.answered:
        text += (f"standard error of an answer: largest {stats.max_standard_error:.4f}, mean "
                 f"{stats.mean_standard_error:.4f}; smallest answer mass {stats.smallest_mass:.4f}; ")
    else:
        text += "no query answered; "
    return text + (f"consistency: {stats.verdict} ({stats.checks} decisions, "
                   f"largest z {stats.largest_z:.2f})")


def fill_command(command: Sequence[str], host: str, port: int) -> list[str]:
    """The bot command with ``{host}`` and ``{port}`` filled in.

    >>> fill_command(["./bot", "{host}", "{port}"], "127.0.0.1", 5)
    ['./bot', '127.0.0.1', '5']
    """
    return [word.replace("{host}", host).replace("{port}", str(port)) for word in command]


def _command_text(args: Any) -> str:
    """A started process's command line, for a message."""
    if isinstance(args, (str, bytes)):
        return args if isinstance(args, str) else args.decode(errors="replace")
    return shlex.join(str(word) for word in args)


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
    processes = [p for p in launched or [] if isinstance(p, subprocess.Popen)]
    watcher: list[Any] = []

    def watch() -> None:
        """A copy that exits before it connects fails the start now, not after 60 s."""
        watcher.clear()
        if adapter.all_ready.called:
            return
        for process in processes:
            code = process.poll()
            if code is not None:
                adapter.all_ready.errback(RuntimeError(
                    f"a copy of the bot exited (status {code}) before it connected: "
                    f"{_command_text(process.args)}"))
                return
        watcher.append(reactor.callLater(0.2, watch))

    watch()
    try:
        await adapter.all_ready
    except BaseException:
        for process in processes:  # the copies that did start are not left running
            if process.poll() is None:
                process.kill()
        raise
    finally:
        if timeout.active():
            timeout.cancel()
        for call in watcher:
            if call.active():
                call.cancel()
    link = DealerLink(adapter)
    adapter.dealer = link
    connected: defer.Deferred[Any] = defer.Deferred()
    link_factory: Any = _OneProtocol(link, connected)
    reactor.connectTCP(host, port, link_factory)
    await connected
    await adapter.finished
    await listening.stopListening()
    deadline = time.monotonic() + 5.0  # five seconds for all the copies, not for each
    for process in launched or []:
        try:
            process.wait(timeout=max(deadline - time.monotonic(), 0.0))
        except subprocess.TimeoutExpired:
            process.kill()
    return adapter.stats



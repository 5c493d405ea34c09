"""Range-query traffic of one match: the dealer's own queries and the agents' relayed ones.

The dealer is the only party that talks to bots (docs/range-query.md). Two
kinds of traffic go through :class:`QueryRelay`:

* **The dealer's own queries** (:meth:`QueryRelay.ask`, exposed as
  :meth:`dealer.match.Match.ask_seat`): a ``QUERY`` with a dealer-chosen qid
  goes to a queryable seat; its ``RANGE`` answer (version 1 or 2) is decoded
  and checked once by :mod:`protocol.rangecodec` (N values per asked action,
  all finite, in [0, 1] for every hand that does not collide with the board,
  sums over the asked actions at most 1 + 1e-6, and at least 1 - 1e-3 when
  they are every legal action: a limit game's, or a no-limit game's facing an all-in) and returned as a float64
  array of shape ``(len(actions), num_hands)``. A ``RANGEERROR``,
  a malformed answer, no answer within ``t_query`` or a seat that does not
  answer queries raise :class:`QueryFailed`. Queries may be pipelined; each
  has its own deadline counted from when it was sent.
* **Agents' queries** (``QUERY:`` lines from a seat): checked against the
  hand being played (:meth:`QueryRelay.check_agent_query`), refused at once
  with ``QUERYERROR:<qid>:<reason>`` when they break a rule, else forwarded
  with a dealer qid; the checked answer is relayed as ``RANGE:<agent's qid>:…``
  (the bot's own bytes with the qid replaced, or the same numbers in version 1
  for an agent that did not say ``# range-answers 1 2``), and a failure
  becomes ``QUERYERROR`` for the agent, counted against the bot.
  The match goes on either way. An answer's optional sampling-error part
  (``se=<largest>,<mean>``, sent by the probe adapter) is checked, relayed
  with the answer and counted per seat (:class:`QueryCounts`).

While an agent has relayed queries out, its action clock is paused
(:meth:`QueryRelay.paused`): the match subtracts that time from what it
charges the agent, up to ``BotBudget.query_pause_decision_s`` per decision
and ``BotBudget.query_pause_hand_s`` per hand; beyond them the agent's clock
runs again, so an agent cannot stall a match with queries. The agent's own
budget (dealer/budget.py) also bounds its queries out at once
(``max_queries``: going over ends the match, charged to the agent) and the
length of a ``QUERY`` line (``max_query_bytes``, checked before any parsing: a
longer one is refused, and counts against the agent's budget of unusable
lines like any refused query). Unsolicited or late answers are dropped; the first
``BotBudget.logged_drops`` of a seat are logged one by one, the rest only
counted. Text sent back to an agent is made ASCII first (bot text may carry
any byte).

A seat answers queries when its bot announced it with the comment line
``# range-query 1 2`` (the answer versions it writes) after ``VERSION`` (the
reference dealer ignores ``#`` lines, so such a bot still plays under it), or
when the dealer was told so (``--queryable NAME``, version 1). The highest
version both speak is used; above 1 the bot is told with
``# range-query-version V``. A queryable seat's line limit is raised to 1 MiB.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

from twisted.internet import defer

from dealer import events as ev
from dealer.budget import BotBudget, Charge, LineKind, LineCosts
from dealer.config import DEFAULT_T_QUERY_MS, LARGEST_MAX_LINE
from dealer.events import EventLog, QueryCause
from dealer.interfaces import Clock
from dealer.seat import SeatProtocol
from protocol.deal import Deal
from protocol.errors import ParseError, ProtocolError
from protocol.gamedef import GameDef
from protocol.rules import Action, ActionType, State
from protocol.wire import MatchState

if TYPE_CHECKING:
    from protocol.arrays import BoolArray, FloatArray
    from protocol.rangequery import Query
# protocol.rangecodec (and numpy, which it reads answers with) and protocol.rangequery are
# imported by the methods that meet a range query: a match whose bots answer none, a plain
# dealer's, loads neither (its start-up; docs/dealer.md, "Start-up, the events file and memory").

#: Called with (queried state, actions, checked rows) for every answer relayed to an agent.
AnswerHook: TypeAlias = "Callable[[MatchState, tuple[Action, ...], FloatArray], None]"
#: One query: the decision point (as the asked seat would see it) and the actions asked about.
Question = tuple[MatchState, Sequence[Action]]
#: The hand being played: (live state, deal, seat of each position), or None between hands.
CurrentHand = tuple[State, Deal, list[int]]

#: The comment line by which a bot announces that it answers range queries,
#: followed by the answer versions it speaks (``# range-query 1 2``; none: 1).
ANNOUNCE_PREFIX = "# range-query"
#: The comment line by which an agent says which answer versions it reads
#: (``# range-answers 1 2``; an agent that does not say reads version 1).
READS_PREFIX = "# range-answers"
#: The dealer's reply to an announcement when the version chosen is above 1.
VERSION_REPLY = "# range-query-version"

# Reasons given to agents in QUERYERROR lines (docs/range-query.md lists them).
NOT_CURRENT_HAND = "not the current hand"
NOT_ON_LINE = "betting is not on the line played so far"
NOT_OPPONENT_TO_ACT = "the queried position is not to act at that point"
TOO_FAR_AHEAD = "more than one action past the betting played so far"
NOT_YOUR_STEP = "one step past the played betting must be the asking agent's own action"
STEP_ENDS_ROUND = "one step past the played betting must not end the round"
WRONG_BOARD = "board differs from the board at that point"
HOLE_CARDS_SHOWN = "hole-card slots must be empty"
NOT_QUERYABLE = "not queryable"
OWN_POSITION = "an agent cannot query its own position"
NO_HAND = "no hand is being played"


class QueryFailed(Exception):
    """A range query got no usable answer.

    Args:
        reason: why, in words (sent to agents as the QUERYERROR reason).
        cause: a short code: ``not_queryable``, ``range_error``,
            ``malformed``, ``timeout`` or ``closed``.
    """

    def __init__(self, reason: str, cause: QueryCause) -> None:
        super().__init__(reason)
        self.reason = reason
        self.cause = cause


@dataclass
class QueryCounts:
    """Per-seat query counters (for metrics and results).

    Attributes:
        answered: queries this seat answered with a valid range.
        failed: queries this seat failed (error, malformed, late), by cause.
        seconds: total time this seat took to answer (answered queries).
        relayed: agent queries from this seat relayed with an answer.
        refused: agent queries from this seat refused by the dealer.
        relay_failed: agent queries from this seat that were forwarded but
            got no valid answer.
        check_seconds: the dealer's time decoding and checking this seat's
            answers (part of the channel's cost, not the bot's).
        busy_seconds: time during which this seat had at least one query out
            (pipelined queries count once, unlike ``seconds``).
        sampled: answers that carried a sampling error (``se=``: a probed bot).
        largest_standard_error: the largest standard error over those answers.
        sum_mean_standard_error: the sum of their mean standard errors.
    """

    answered: int = 0
    failed: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    relayed: int = 0
    refused: int = 0
    relay_failed: int = 0
    check_seconds: float = 0.0
    busy_seconds: float = 0.0
    sampled: int = 0
    largest_standard_error: float = 0.0
    sum_mean_standard_error: float = 0.0

    @property
    def mean_standard_error(self) -> float:
        """The mean over sampled answers of each answer's mean standard error (0: none)."""
        return self.sum_mean_standard_error / self.sampled if self.sampled else 0.0

    def add_sampling_error(self, error: tuple[float, float] | None) -> None:
        """Count one answer's ``se=`` part (None: the answer had none)."""
        if error is not None:
            self.sampled += 1
            self.largest_standard_error = max(self.largest_standard_error, error[0])
            self.sum_mean_standard_error += error[1]

    @property
    def errors(self) -> int:
        """Queries this seat failed to answer."""
        return sum(self.failed.values())

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready copy."""
        return {"answered": self.answered, "errors": self.errors, "failed": dict(self.failed),
                "seconds": self.seconds, "relayed": self.relayed, "refused": self.refused,
                "relay_failed": self.relay_failed, "check_seconds": self.check_seconds,
                "busy_seconds": self.busy_seconds, "sampled_answers": self.sampled,
                "largest_standard_error": self.largest_standard_error,
                "mean_standard_error": self.mean_standard_error}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> QueryCounts:
        """The inverse of :meth:`to_dict` (a seating process's counters, read back by its parent)."""
        sampled = int(data["sampled_answers"])
        return cls(answered=int(data["answered"]), failed={str(k): int(v) for k, v in data["failed"].items()},
                   seconds=float(data["seconds"]), relayed=int(data["relayed"]),
                   refused=int(data["refused"]), relay_failed=int(data["relay_failed"]),
                   check_seconds=float(data["check_seconds"]), busy_seconds=float(data["busy_seconds"]),
                   sampled=sampled, largest_standard_error=float(data["largest_standard_error"]),
                   sum_mean_standard_error=float(data["mean_standard_error"]) * sampled)


@dataclass
class _Outstanding:
    seat: int
    actions: tuple[Action, ...]
    board: tuple[int, ...]
    sent: float
    answer: defer.Deferred[tuple[FloatArray, str]]
    timer: Any
    #: The asked actions are every legal action: the answer must be a whole strategy.
    complete: bool = False


def _values_or_errors(results: list[tuple[bool, Any]]) -> list[FloatArray | Exception]:
    """A settled DeferredList of queries: each one's checked array, or its exception."""
    return [value[0] if ok else value.value for ok, value in results]


def blocked_mask(game: GameDef, board: Sequence[int]) -> BoolArray:
    """Hands sharing a card with ``board`` (their answers are ignored); read-only, cached."""
    return game.hands_sharing(board)


def _flat(betting: Sequence[Sequence[Action]]) -> list[Action]:
    return [action for round_actions in betting for action in round_actions]


class QueryRelay:
    """The range-query traffic of one match, built from what it needs of it.

    Args:
        game: the match's game.
        seat_names: the player name of each seat.
        budget: the per-bot limits (pause caps, queries out, logged drops).
        clock: the time source (``seconds``, ``callLater``): the reactor, or
            ``task.Clock`` in tests.
        events: the match's event log.
        current_hand: returns the hand being played (None between hands).
        over_budget: ends the match, charged to a seat: ``(seat, what)``.
        t_query_ms: a bot's time limit per query, in milliseconds.
        queryable_names: seats with these player names answer queries
            without announcing it.
    """

    def __init__(self, game: GameDef, seat_names: Sequence[str], budget: BotBudget, clock: Clock,
                 events: EventLog, current_hand: Callable[[], CurrentHand | None],
                 over_budget: Callable[[int, str], None],
                 t_query_ms: int = DEFAULT_T_QUERY_MS, queryable_names: Sequence[str] = ()) -> None:
        self.game = game
        self.budget = budget
        self.clock = clock
        self.events = events
        self.current_hand = current_hand
        self.over_budget = over_budget
        self.t_query = t_query_ms / 1000.0
        n = len(seat_names)
        self.queryable = [name in queryable_names for name in seat_names]
        #: Per seat: the answer version it was asked to use (1 unless it announced more).
        self.versions = [1] * n
        #: Per seat: the answer versions it reads as an agent (1 unless it said more).
        self.reads: list[tuple[int, ...]] = [(1,)] * n
        self.counts = [QueryCounts() for _ in range(n)]
        self._protocols: list[SeatProtocol | None] = [None] * n
        self._outstanding: dict[str, _Outstanding] = {}
        self._next_qid = 0
        # The asking agent's clock pause: queries out, total paused, since when.
        self._out_for = [0] * n
        # The queried seat's busy time: queries out to it, since when.
        self._asked = [0] * n
        self._asked_since = [0.0] * n
        self._paused_total = [0.0] * n
        self._paused_since = [0.0] * n
        #: Per seat: its clock was ever paused by its queries. Until then
        #: paused() is 0 and begin_decision()/new_hand() change nothing, so
        #: the dealer's hand loop skips them.
        self.ever_paused = [False] * n
        # The pause credited to the agent's clock, capped per decision and per hand:
        # credit at the start of the current decision, raw pause then, credit used in this hand.
        self._cap_decision = budget.query_pause_decision_s
        self._cap_hand = budget.query_pause_hand_s
        self._credit_base = [0.0] * n
        self._raw_at_decision = [0.0] * n
        self._hand_credit = [0.0] * n
        #: Unsolicited or late answers dropped, per seat.
        self.dropped = [0] * n
        #: Per seat: its unusable lines (refused queries, ignored replies, dropped answers),
        #: budgeted per decision and per hand and logged one by one only up to a few per hand.
        self.line_costs = [LineCosts(budget) for _ in range(n)]
        self._last_hand = -1
        self._over_query_time = [False] * n
        self._closed = False
        #: Hooks seeing every checked answer, relayed to an agent or asked by the
        #: dealer itself (results keep them for the hand's IO: nothing asked twice).
        self.answer_hooks: list[AnswerHook] = []

    # -- connections -------------------------------------------------------

    def attach(self, seat: int, protocol: SeatProtocol) -> None:
        """Route the range-query lines of a new seat connection here."""
        self._protocols[seat] = protocol
        handlers = protocol.prefix_handlers
        handlers["RANGE"] = lambda line: self.answer_received(seat, line)  # RANGE: and RANGEERROR:
        handlers["QUERY"] = lambda line: self.agent_query_received(seat, line)
        handlers[READS_PREFIX] = lambda line: self.reads_received(seat, line)
        handlers[ANNOUNCE_PREFIX] = lambda line: self.announce_received(seat, line)
        if self.queryable[seat]:
            protocol.MAX_LENGTH = LARGEST_MAX_LINE

    def announce_received(self, seat: int, line: str) -> None:
        """``# range-query 1 2``: the seat answers queries from now on, in the highest common version.

        A version above 1 is confirmed to the bot with ``# range-query-version V``;
        a bot that announced version 1 only is sent nothing new.
        """
        # lazy: only range queries need it (numpy; see the module's imports)
        from protocol.rangecodec import SUPPORTED_VERSIONS, negotiate, parse_versions

        protocol = self._protocols[seat]
        try:
            version = negotiate(parse_versions(line[len(ANNOUNCE_PREFIX):]))
        except ProtocolError:
            version = None
        if version is None:
            self.events.emit(ev.SeatAnnounceRefused(seat=seat + 1, line=line[:100],
                                                    supported=tuple(SUPPORTED_VERSIONS)))
            return
        self.queryable[seat] = True
        self.versions[seat] = version
        # From now on every seat gets every state at once (dealer/match.py,
        # _begin_turn); the states a seat was holding back go out now.
        for held in self._protocols:
            if held is not None:
                held.flush_lines()
        if protocol is not None:
            protocol.MAX_LENGTH = LARGEST_MAX_LINE
            if version > 1:
                protocol.send_line(f"{VERSION_REPLY} {version}")
        self.events.emit(ev.SeatQueryable(seat=seat + 1, line=line[:100], version=version))

    def reads_received(self, seat: int, line: str) -> None:
        """``# range-answers 1 2``: the answer versions this agent reads."""
        # lazy: only range queries need it (numpy; see the module's imports)
        from protocol.rangecodec import parse_versions

        try:
            self.reads[seat] = parse_versions(line[len(READS_PREFIX):])
        except ProtocolError:
            pass  # it keeps reading version 1

    # -- the dealer's own queries --------------------------------------------

    def ask(self, seat: int, state: MatchState, actions: Sequence[Action]
            ) -> defer.Deferred[tuple[FloatArray, str]]:
        """Send one query to ``seat``; fires with (checked array, the answer's text after the qid).

        Fails with :class:`QueryFailed`.
        """
        return self._send_queries(seat, [(state, actions)])[0]

    def ask_all(self, seat: int, questions: Sequence[Question]) -> defer.Deferred[list[FloatArray | Exception]]:
        """Send several queries to ``seat`` in one write; fires once all are settled.

        Each query has its own deadline (``t_query`` from now); the bot answers
        them in order. Fires with, per query in order, its checked array
        ``(len(actions), num_hands)`` or the :class:`QueryFailed` it failed with.
        """
        settled = defer.DeferredList(self._send_queries(seat, questions), consumeErrors=True)
        return settled.addCallback(_values_or_errors)

    def _send_queries(self, seat: int, questions: Sequence[Question]
                      ) -> list[defer.Deferred[tuple[FloatArray, str]]]:
        if self._closed:
            return [defer.fail(QueryFailed("the match is over", QueryCause.CLOSED)) for _ in questions]
        protocol = self._protocols[seat]
        if not self.queryable[seat] or protocol is None:
            failed = []
            for _ in questions:
                self._count_failure(seat, QueryCause.NOT_QUERYABLE, NOT_QUERYABLE, 0.0)
                failed.append(defer.fail(QueryFailed(NOT_QUERYABLE, QueryCause.NOT_QUERYABLE)))
            return failed
        # lazy: only range queries need it (see the module's imports)
        from protocol.rangequery import Query, public_state

        clock = self.clock
        now = clock.seconds()
        lines: list[str] = []
        answers: list[defer.Deferred[tuple[FloatArray, str]]] = []
        for state, asked in questions:
            self._next_qid += 1
            qid = f"d{self._next_qid}"
            actions = tuple(asked)
            lines.append(Query(qid, public_state(state), actions).text())
            answer: defer.Deferred[tuple[FloatArray, str]] = defer.Deferred()
            timer = clock.callLater(self.t_query, self._expire, qid)
            self._outstanding[qid] = _Outstanding(seat, actions, state.board_cards, now, answer, timer,
                                                  self._every_legal_action(state, actions))
            if self._asked[seat] == 0:
                self._asked_since[seat] = now
            self._asked[seat] += 1
            answer.addCallback(self._notify_hooks, state, actions)
            answers.append(answer)
        if lines:
            protocol.send_line("\r\n".join(lines))
        return answers

    def _every_legal_action(self, state: MatchState, actions: Sequence[Action]) -> bool:
        """Whether ``actions`` are every legal action at ``state``: a limit game's, or a no-limit
        game's where no raise is legal (facing an all-in; otherwise it has a raise per size,
        which no query lists)."""
        asked = {action.type for action in actions}
        if ActionType.CALL not in asked or (not self.game.is_limit and ActionType.RAISE in asked):
            return False  # a call is always legal; a no-limit raise asked means one is legal
        try:  # a replay of the betting: only for the queries that may be complete
            legal = state.to_state(self.game).legal_actions()
        except ParseError:
            return False
        if not self.game.is_limit and ActionType.RAISE in legal:
            return False
        return bool(legal) and all(kind in asked for kind in legal)

    def _notify_hooks(self, result: tuple[FloatArray, str], state: MatchState,
                      actions: tuple[Action, ...]) -> tuple[FloatArray, str]:
        for hook in self.answer_hooks:
            hook(state, actions, result[0])
        return result

    def _settled(self, seat: int) -> None:
        """One query to ``seat`` is answered, failed or expired."""
        if self._asked[seat] > 0:
            self._asked[seat] -= 1
            if self._asked[seat] == 0:
                self.counts[seat].busy_seconds += self.clock.seconds() - self._asked_since[seat]
                self._check_query_time(seat)

    def _check_query_time(self, seat: int) -> None:
        """A bot past its match's query-time budget ends the match (once)."""
        limit = self.budget.query_seconds_match
        busy = self.counts[seat].busy_seconds
        if busy > limit and not self._over_query_time[seat] and not self._closed:
            self._over_query_time[seat] = True
            self.over_budget(seat, f"spent {busy:.0f} s answering range queries in this match "
                             f"(limit query_seconds_match {limit:g} s, --t_query_match)")

    # -- unusable lines ------------------------------------------------------

    def charge_line(self, seat: int, kind: LineKind, per_decision: bool = True) -> Charge:
        """Charge one unusable line of ``seat`` to its budgets (``LineCosts``): log it, count it,
        or end the match (then :attr:`Charge.OVER` is returned and the seat is over budget)."""
        current = self.current_hand()
        if current is not None:
            state = current[0]
            self._last_hand = hand = state.hand_id
            decision: int | None = len(_flat(state.actions)) if per_decision else None
        else:  # between hands: the lines count with the last hand's
            hand, decision = self._last_hand, -1 if per_decision else None
        costs = self.line_costs[seat]
        charge = costs.charge(kind, hand, decision)
        self.report_not_logged(seat)
        if charge == Charge.OVER:
            self.over_budget(seat, costs.over())
        elif charge == Charge.COUNT:
            self.hold(seat)
        return charge

    def hold(self, seat: int) -> None:
        """Hold back the seat's next lines for ``budget.unusable_line_hold_s`` (one unusable
        line past the first few of its kind in the hand: see :class:`dealer.budget.BotBudget`)."""
        protocol = self._protocols[seat]
        if protocol is not None and not self._closed:
            protocol.hold(self.clock, self.budget.unusable_line_hold_s)

    def report_not_logged(self, seat: int, final: bool = False) -> None:
        """One ``lines_not_logged`` event per kind for each finished hand whose lines were only counted."""
        for hand, kind, count in self.line_costs[seat].not_logged(final):
            self.events.emit(ev.LinesNotLogged(seat=seat + 1, hand=hand, kind=kind.value, count=count))

    def _expire(self, qid: str) -> None:
        pending = self._outstanding.pop(qid, None)
        if pending is None:
            return
        self._settled(pending.seat)
        reason = f"no answer within t_query {self.t_query * 1000:g} ms"
        self._fail(pending, QueryCause.TIMEOUT, reason)

    def answer_received(self, seat: int, line: str) -> None:
        """A ``RANGE:``/``RANGEERROR:`` line from a bot."""
        qid = line.split(":", 2)[1] if line.count(":") >= 2 else ""
        pending = self._outstanding.get(qid)
        if pending is None or pending.seat != seat:
            # Late (timed out already) or never asked: dropped (logged up to a budget).
            self.dropped[seat] += 1
            if self.charge_line(seat, LineKind.ANSWER_DROPPED, per_decision=False) == Charge.OVER:
                return
            if self.dropped[seat] <= self.budget.logged_drops:
                self.events.emit(ev.QueryAnswerDropped(seat=seat + 1, qid=qid[:20], line=line[:100]))
            return
        del self._outstanding[qid]
        self._settled(seat)
        if pending.timer.active():
            pending.timer.cancel()
        if line.startswith("RANGEERROR:"):
            # lazy: only range queries need it (see the module's imports)
            from protocol.rangequery import parse_range_error

            try:
                message = parse_range_error(line).message
            except ParseError as error:
                self._fail(pending, QueryCause.MALFORMED, f"malformed RANGEERROR: {error.message}")
            else:
                self._fail(pending, QueryCause.RANGE_ERROR, f"the bot could not answer: {message}")
            return
        if not line.startswith("RANGE:"):
            self._fail(pending, QueryCause.MALFORMED, "malformed answer")
            return
        # lazy: only range queries need it (numpy; see the module's imports)
        from protocol.rangecodec import answer_fields, check_rows, decode_body, sampling_error

        started = time.perf_counter()
        try:
            # Decoded and checked once, here; the agent gets the bot's bytes.
            _, body = answer_fields(line)
            values, _ = decode_body(body, pending.actions, self.game.num_hands)
            check_rows(values, blocked_mask(self.game, pending.board), pending.complete)
            error_part = sampling_error(body)
        except ParseError as error:
            self._fail(pending, QueryCause.MALFORMED, f"malformed answer: {error.message}")
            return
        finally:
            self.counts[seat].check_seconds += time.perf_counter() - started
        latency = self.clock.seconds() - pending.sent
        counts = self.counts[seat]
        counts.answered += 1
        counts.seconds += latency
        counts.add_sampling_error(error_part)
        events = self.events
        if events.hooks:
            events.notify(ev.QueryAnswered(seat=seat + 1, seconds=latency, actions=len(pending.actions)))
        pending.answer.callback((values, body))

    def _fail(self, pending: _Outstanding, cause: QueryCause, reason: str) -> None:
        latency = self.clock.seconds() - pending.sent
        self._count_failure(pending.seat, cause, reason, latency)
        pending.answer.errback(QueryFailed(reason, cause))

    def _count_failure(self, seat: int, cause: QueryCause, reason: str, latency: float) -> None:
        failed = self.counts[seat].failed
        failed[cause] = failed.get(cause, 0) + 1
        self.events.emit(ev.QueryErrored(seat=seat + 1, cause=cause, reason=reason[:200], seconds=latency))

    # -- agents' queries ---------------------------------------------------

    def agent_query_received(self, seat: int, line: str) -> None:
        """A ``QUERY:`` line from an agent: refuse it or relay it."""
        # lazy: only range queries need it (see the module's imports)
        from protocol.rangequery import is_query_id, read_query

        budget = self.budget
        if self._out_for[seat] >= budget.max_queries:
            self.over_budget(seat, f"sent a range query with {self._out_for[seat]} "
                             f"already outstanding (limit max_queries {budget.max_queries})")
            return
        oversized = len(line) > budget.max_query_bytes
        fields = (line[:100] if oversized else line).split(":", 2)  # an oversized line is not read
        qid = fields[1] if len(fields) >= 2 else ""
        if not is_query_id(qid):
            self.counts[seat].refused += 1
            if self.charge_line(seat, LineKind.QUERY_REFUSED) == Charge.LOG:
                self.events.emit(ev.QueryRefused(seat=seat + 1, reason="no valid qid", line=line[:100]))
            return
        if oversized:  # refused unparsed, and play goes on; a flood meets the line budgets
            self._refuse(seat, qid, f"query of {len(line)} bytes is longer than max_query_bytes "
                                    f"{budget.max_query_bytes}")
            return
        try:
            query, asked_state = read_query(line, self.game)
        except ParseError as error:
            reason = HOLE_CARDS_SHOWN if "no hole cards" in error.message else f"malformed query: {error.message}"
            self._refuse(seat, qid, reason)
            return
        try:
            target = self.check_agent_query(seat, query, asked_state)
        except QueryFailed as refusal:
            self._refuse(seat, qid, refusal.reason)
            return
        self._pause(seat)
        relayed = self.ask(target, query.state, query.actions)
        relayed.addCallbacks(self._relay_answer, self._relay_failure,
                             callbackArgs=(seat, qid, query), errbackArgs=(seat, qid))

    def check_agent_query(self, seat: int, query: Query, asked_state: State | None = None) -> int:
        """Check an agent's query against the hand being played.

        ``asked_state`` is the query's betting replayed, if the caller has it.

        Returns:
            The seat to forward it to.

        Raises:
            QueryFailed: a rule is broken (its reason goes to the agent).
        """
        current = self.current_hand()
        if current is None:
            raise QueryFailed(NO_HAND, QueryCause.REFUSED)
        state, deal, seat_of = current
        asked = query.state
        if asked.hand_id != state.hand_id:
            raise QueryFailed(NOT_CURRENT_HAND, QueryCause.REFUSED)
        if seat not in seat_of:
            raise QueryFailed(NO_HAND, QueryCause.REFUSED)
        own_position = seat_of.index(seat)
        target_position = asked.position
        if target_position == own_position:
            raise QueryFailed(OWN_POSITION, QueryCause.REFUSED)
        if asked_state is None:
            try:
                asked_state = asked.to_state(self.game)
            except ProtocolError as error:
                raise QueryFailed(f"malformed query: {error.message}", QueryCause.REFUSED) from error
        played = _flat(state.actions)
        wanted = _flat(asked.betting)
        if len(wanted) <= len(played):
            if wanted != played[: len(wanted)]:
                raise QueryFailed(NOT_ON_LINE, QueryCause.REFUSED)
        elif len(wanted) == len(played) + 1:
            if wanted[:-1] != played:
                raise QueryFailed(NOT_ON_LINE, QueryCause.REFUSED)
            if state.finished or state.current_player != own_position:
                raise QueryFailed(NOT_YOUR_STEP, QueryCause.REFUSED)
            if asked_state.round != state.round:
                raise QueryFailed(STEP_ENDS_ROUND, QueryCause.REFUSED)
        else:
            if wanted[: len(played)] == played:
                raise QueryFailed(TOO_FAR_AHEAD, QueryCause.REFUSED)
            raise QueryFailed(NOT_ON_LINE, QueryCause.REFUSED)
        if asked_state.finished or asked_state.current_player != target_position:
            raise QueryFailed(NOT_OPPONENT_TO_ACT, QueryCause.REFUSED)
        if len(asked.betting) != asked_state.round + 1:
            raise QueryFailed(NOT_ON_LINE, QueryCause.REFUSED)
        if tuple(asked.board) != tuple(deal.board[: asked_state.round + 1]):
            raise QueryFailed(WRONG_BOARD, QueryCause.REFUSED)
        target = seat_of[target_position]
        if not self.queryable[target]:
            raise QueryFailed(NOT_QUERYABLE, QueryCause.REFUSED)
        return target

    def _refuse(self, seat: int, qid: str, reason: str) -> None:
        from protocol.rangequery import QueryErrorReply  # lazy: only range queries need it

        self.counts[seat].refused += 1
        charge = self.charge_line(seat, LineKind.QUERY_REFUSED)
        if charge == Charge.OVER:
            return
        if charge == Charge.LOG:
            self.events.emit(ev.QueryRefused(seat=seat + 1, reason=reason))
        self._send(seat, QueryErrorReply(qid, reason).text())

    def _relay_answer(self, result: tuple[FloatArray, str], seat: int, qid: str,
                      query: Query) -> None:
        # lazy: only range queries need it (numpy; see the module's imports)
        from protocol.rangecodec import body_version, encode_answer, sampling_error

        self._resume(seat)
        self.counts[seat].relayed += 1
        values, body = result
        if body_version(body) in self.reads[seat]:
            self._send(seat, f"RANGE:{qid}:{body}")
        else:  # an agent that reads version 1 only gets the same numbers in decimals
            self._send(seat, encode_answer(qid, query.actions, values, 1,
                                           sampling_error=sampling_error(body)))

    def _relay_failure(self, failure: Any, seat: int, qid: str) -> None:
        from protocol.rangequery import QueryErrorReply  # lazy: only range queries need it

        self._resume(seat)
        self.counts[seat].relay_failed += 1
        error = failure.value
        reason = error.reason if isinstance(error, QueryFailed) else str(error)
        self._send(seat, QueryErrorReply(qid, reason).text())

    def _send(self, seat: int, text: str) -> None:
        protocol = self._protocols[seat]
        if protocol is not None and not self._closed:
            if not text.isascii():  # reasons may quote bot text, which may hold any byte
                text = text.encode("ascii", "replace").decode("ascii")
            protocol.send_line(text)

    # -- the asking agent's clock --------------------------------------------

    def _pause(self, seat: int) -> None:
        self.ever_paused[seat] = True
        if self._out_for[seat] == 0:
            self._paused_since[seat] = self.clock.seconds()
        self._out_for[seat] += 1

    def _resume(self, seat: int) -> None:
        if self._out_for[seat] <= 0:  # closed meanwhile
            return
        self._out_for[seat] -= 1
        if self._out_for[seat] == 0:
            self._paused_total[seat] += self.clock.seconds() - self._paused_since[seat]

    def _raw_paused(self, seat: int, now: float) -> float:
        total = self._paused_total[seat]
        if self._out_for[seat]:
            total += max(0.0, now - self._paused_since[seat])
        return total

    def paused(self, seat: int, now: float) -> float:
        """Seconds of ``seat``'s clock paused by its relayed queries, up to ``now``.

        Non-decreasing; within one decision it grows at most by the per-decision
        cap, and within one hand at most by the per-hand cap.
        """
        raw = self._raw_paused(seat, now) - self._raw_at_decision[seat]
        room = min(self._cap_decision, max(0.0, self._cap_hand - self._hand_credit[seat]))
        return self._credit_base[seat] + min(raw, room)

    def begin_decision(self, seat: int, now: float) -> None:
        """``seat`` is to act from ``now``: a new per-decision pause allowance."""
        credit = self.paused(seat, now)
        self._hand_credit[seat] += credit - self._credit_base[seat]
        self._credit_base[seat] = credit
        self._raw_at_decision[seat] = self._raw_paused(seat, now)

    def new_hand(self, now: float) -> None:
        """A hand starts at ``now``: new per-hand pause allowances."""
        for seat in range(len(self._protocols)):
            self._credit_base[seat] = self.paused(seat, now)
            self._raw_at_decision[seat] = self._raw_paused(seat, now)
            self._hand_credit[seat] = 0.0

    # -- ending ------------------------------------------------------------

    def close(self) -> None:
        """Fail every outstanding query (the match is over); later calls do nothing."""
        if self._closed:
            return
        self._closed = True
        pending, self._outstanding = self._outstanding, {}
        for item in pending.values():
            self._settled(item.seat)
            if item.timer.active():
                item.timer.cancel()
            item.answer.errback(QueryFailed("the match is over", QueryCause.CLOSED))
        for seat in range(len(self._protocols)):
            self._out_for[seat] = 0
            self.report_not_logged(seat, final=True)
            logged = self.budget.logged_drops
            if self.dropped[seat] > logged:
                self.events.emit(ev.QueryAnswersDropped(seat=seat + 1, dropped=self.dropped[seat],
                                                        not_logged=self.dropped[seat] - logged))

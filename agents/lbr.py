"""The networked Local Best Response agent (lbr.md; Lisy & Bowling, arXiv 1612.07547).

:class:`LbrAgent` is an :class:`~agents.client.AcpcClient` that plays LBR
through the dealer's range-query relay (docs/range-query.md):

* At each of its decisions in an active round it sends, in one pipelined
  batch, (1) for every opponent action on the line played so far that its
  range has not absorbed yet, ``QUERY`` at that opponent decision point for the
  played action, and (2) for every candidate raise (``fc``/``fcpa``/…),
  ``QUERY`` at the state one step past the played line (after its own raise)
  for the fold action. When all answers are in it updates its range
  (:class:`acpc_lbr.ranges.RangeTracker`, board cards removed round by round)
  and decides with :func:`acpc_lbr.lbr.decide`.
* Outside the active rounds it checks/calls at once and asks nothing: the
  range catches up on every round (passive ones too) at the next active
  decision, since every opponent decision point stays a valid query
  (a prefix of the played line) until the hand ends.
* When the opponent does not answer queries (``QUERYERROR … not queryable``)
  it says so on stderr, and ends the connection with exit status
  :data:`EXIT_NOT_QUERYABLE`.

Its time is split into :class:`LbrTiming`: waiting for query answers,
protocol work (reading lines, parsing answers, printing queries) and LBR's
own computation (equity and the decision).

Answers are decoded once with :mod:`protocol.rangecodec` (either version)
and not checked again: the dealer checked them already.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from twisted.internet import defer
from twisted.python.failure import Failure

from acpc_lbr.runtime.exit_codes import EXIT_NOT_QUERYABLE
from acpc_lbr.lbr import ActiveRounds, BettingOptions, EquityFunction, LbrPlayer
from agents.client import AcpcClient, Decision
from agents.tracking import SeatView
from protocol.arrays import FloatArray
from protocol.errors import ParseError
from protocol.gamedef import GameDef
from protocol.lines import board_by_round, line_views
from protocol.rangecodec import decode_answer
from protocol.rules import Action
from protocol.wire import MatchState

log = logging.getLogger(__name__)


#: Failed queries logged one by one; later ones are only counted (by reason, in the timing).
LOGGED_QUERY_FAILURES = 5


class OpponentNotQueryable(Exception):
    """The dealer says the opponent does not answer range queries."""


class QueryRefused(Exception):
    """The dealer refused or could not relay one query (QUERYERROR)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class LbrTiming:
    """Where the agent's time goes (seconds, summed over the match).

    Attributes:
        queries: waiting for range answers (the opponent's and the relay's time).
        protocol: reading and writing lines, parsing answers, printing queries.
        decode: the part of ``protocol`` spent decoding range answers.
        compute: LBR's own work: equity vectors, range updates and decisions.
        decisions: active decisions made (each with one query batch).
        passive: decisions outside the active rounds (check/call, no queries).
        queries_sent: range queries sent.
        query_errors: QUERYERROR answers.
        errors: QUERYERROR answers counted by reason (its text up to the first colon, 60 characters at most).
    """

    queries: float = 0.0
    protocol: float = 0.0
    decode: float = 0.0
    compute: float = 0.0
    decisions: int = 0
    passive: int = 0
    queries_sent: int = 0
    query_errors: int = 0
    errors: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready copy."""
        return {"queries_seconds": self.queries, "protocol_seconds": self.protocol,
                "decode_seconds": self.decode,
                "compute_seconds": self.compute, "active_decisions": self.decisions,
                "passive_decisions": self.passive, "queries_sent": self.queries_sent,
                "query_errors": self.query_errors, "query_error_reasons": dict(self.errors)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LbrTiming:
        """The inverse of :meth:`to_dict` (a seating process's timing, read back by its parent)."""
        return cls(queries=float(data["queries_seconds"]), protocol=float(data["protocol_seconds"]),
                   decode=float(data["decode_seconds"]), compute=float(data["compute_seconds"]),
                   decisions=int(data["active_decisions"]), passive=int(data["passive_decisions"]),
                   queries_sent=int(data["queries_sent"]), query_errors=int(data["query_errors"]),
                   errors={str(k): int(v) for k, v in data["query_error_reasons"].items()})


class LbrAgent(AcpcClient):
    """LBR as an ACPC client that asks the dealer for the opponent's ranges.

    It reads answers in every version (it sends ``# range-answers 1 2``).

    Args:
        game: a heads-up game.
        options: the raises LBR considers.
        active_rounds: the rounds in which LBR may raise or fold.
        equity: equity function (default: the game's, see
            :func:`acpc_lbr.lbr.equity_function`).
        announce_fatal: print to stderr when the opponent is not queryable
            (off when a caller reports it itself).
    """

    asks_queries = True

    def __init__(self, game: GameDef, options: BettingOptions, active_rounds: ActiveRounds,
                 equity: EquityFunction | None = None, announce_fatal: bool = True) -> None:
        super().__init__(game)
        self.announce_fatal = announce_fatal
        self.player = LbrPlayer(game, options, active_rounds, equity)
        self.timing = LbrTiming()
        #: Set (with its reason) when the agent gave up: the opponent is not queryable.
        self.fatal: str | None = None
        #: Write :attr:`timing` (JSON) here when the connection ends.
        self.timing_path: str | None = None
        self._hand_key: tuple[int, int] = (-1, -1)
        self._absorbed = 0  # opponent decisions of this hand already in the range
        self._qid = 0
        self._waiting: dict[str, tuple[tuple[Action, ...], defer.Deferred[dict[Action, FloatArray]]]] = {}
        self._empty_hole = tuple(() for _ in range(game.num_players))

    # -- lines ---------------------------------------------------------------

    def lineReceived(self, line: bytes) -> None:
        """Dispatch a line; its cost, less LBR's own computation, is protocol time."""
        start = time.perf_counter()
        compute = self.timing.compute
        super().lineReceived(line)
        self.timing.protocol += time.perf_counter() - start - (self.timing.compute - compute)

    def extension_line_received(self, text: str) -> None:
        """Answers to the agent's queries (read with numpy; the dealer checked them)."""
        qid = text.split(":", 2)[1] if text.count(":") >= 2 else ""
        waiting = self._waiting.pop(qid, None)
        if waiting is None:
            super().extension_line_received(text)
            return
        actions, answer = waiting
        if text.startswith("RANGE:"):
            started = time.perf_counter()
            try:
                rows = decode_answer(text, actions, self.game.num_hands).rows
            except ParseError as problem:
                answer.errback(QueryRefused(f"unreadable answer: {problem}"))
                return
            finally:
                self.timing.decode += time.perf_counter() - started
            answer.callback(dict(zip(actions, rows)))
            return
        reason = text.split(":", 2)[2]
        if "not queryable" in reason:
            answer.errback(OpponentNotQueryable(reason))
        else:
            answer.errback(QueryRefused(reason))

    def ask_rows(self, state: MatchState, actions: Sequence[Action], batch: list[str] | None = None
                 ) -> defer.Deferred[dict[Action, FloatArray]]:
        """Send one query about ``state`` (hole slots must be empty); fires with a row per action.

        With ``batch``, the line is added to it instead, for the caller to send
        the batch in one write (:meth:`~agents.client.AcpcClient.send_lines`).
        """
        self._qid += 1
        qid = f"l{self._qid}"
        actions = tuple(actions)
        answer: defer.Deferred[dict[Action, FloatArray]] = defer.Deferred()
        self._waiting[qid] = (actions, answer)
        tokens = ",".join(a.text() for a in actions)
        line = f"QUERY:{qid}:{state.body()}:{tokens}"
        if batch is None:
            self.send_line(line)
        else:
            batch.append(line)
        self.timing.queries_sent += 1
        return answer

    def connectionLost(self, reason: Any = None) -> None:
        """Fail the agent's own waiting queries, then the base class's."""
        waiting, self._waiting = self._waiting, {}
        for _, answer in waiting.values():
            answer.errback(QueryRefused("connection closed"))
        if self.timing_path is not None:
            import json

            report = {**self.timing.to_dict(), "range_inconsistencies": self.inconsistencies}
            with open(self.timing_path, "w", encoding="utf-8") as out:
                json.dump(report, out, indent=2)
        if reason is None:
            super().connectionLost()
        else:
            super().connectionLost(reason)

    # -- play ------------------------------------------------------------------

    def state_received(self, view: SeatView) -> None:
        """Start the range afresh at each new hand."""
        key = (view.hand_id, view.position)
        if key != self._hand_key:
            self._hand_key = key
            self._absorbed = 0
            self.player.start_hand(view.position, view.hole)

    def choose_action(self, view: SeatView) -> Decision:
        """Check/call outside the active rounds; otherwise ask, update the range, decide."""
        if self.fatal is not None:
            return Action.CALL
        state = view.state
        if not self.player.is_active(state):
            self.timing.passive += 1
            return Action.CALL
        return self._active_decision(view)

    async def _active_decision(self, view: SeatView) -> Action:
        state = view.state
        board = view.board
        me = view.position
        opponent = 1 - me
        # (1) the opponent's decisions on the line not yet in the range.
        points = line_views(state, board, opponent)
        fresh = points[self._absorbed :]
        asks: list[defer.Deferred[dict[Action, FloatArray]]] = []
        batch: list[str] = []  # every query of the decision in one write
        for point, action in fresh:
            asks.append(self.ask_rows(point, (action,), batch))
        # (2) fold probabilities after each candidate raise (one step past the line).
        candidates = self.player.candidates(state)
        betting = tuple(tuple(actions) for actions in state.actions)
        rounds_board = board_by_round(self.game, board, state.round + 1)
        for raise_action in candidates:
            last = betting[-1] + (raise_action,)
            ahead = MatchState(opponent, view.hand_id, betting[:-1] + (last,),
                               self._empty_hole, rounds_board)
            asks.append(self.ask_rows(ahead, (Action.FOLD,), batch))
        self.send_lines(batch)
        sent = time.perf_counter()
        results = await defer.DeferredList(asks, consumeErrors=True)
        self.timing.queries += time.perf_counter() - sent
        self.timing.decisions += 1
        fold_probs: dict[Action, FloatArray] = {}
        for index, (ok, value) in enumerate(results):
            if not ok:
                self._query_failed(cast(Failure, value).value)
                if self.fatal is not None:
                    return Action.CALL
            elif index >= len(fresh):  # a candidate raise's fold probabilities
                fold_probs[candidates[index - len(fresh)]] = value[Action.FOLD]
        start = time.perf_counter()
        # Range updates in line order, board cards removed as they appeared.
        for (ok, value), (point, action) in zip(results[: len(fresh)], fresh):
            self.player.observe_board(point.board_cards)
            if ok:
                self.player.observe_opponent(value[action])
        self._absorbed = len(points)
        decision = self.player.decide(state, board, fold_probs)
        self.timing.compute += time.perf_counter() - start
        return decision.action

    def _query_failed(self, error: BaseException | None) -> None:
        self.timing.query_errors += 1
        reason = error.reason if isinstance(error, QueryRefused) else str(error)
        key = reason.split(":")[0][:60]
        self.timing.errors[key] = self.timing.errors.get(key, 0) + 1
        if isinstance(error, OpponentNotQueryable) and self.fatal is None:
            self.fatal = f"the opponent does not answer range queries ({error})"
            if self.announce_fatal:
                print(f"acpc-lbr lbr: {self.fatal}; LBR cannot play against it. "
                      "Use a bot that answers range queries (docs/range-query.md), or the dealer's "
                      "--queryable option for a bot that does without announcing it.",
                      file=sys.stderr)
            self.failed = True
            factory = getattr(self, "factory", None)
            done = getattr(factory, "done", None)
            if done is not None and not done.called:
                done.callback(EXIT_NOT_QUERYABLE)
            self.out.loseConnection()
        elif self.timing.query_errors <= LOGGED_QUERY_FAILURES:
            log.warning("range query failed: %s%s", reason,
                        "; further failures are counted, not logged"
                        if self.timing.query_errors == LOGGED_QUERY_FAILURES else "")

    @property
    def inconsistencies(self) -> int:
        """Range inconsistencies over the match so far (lbr.md)."""
        return self.player.inconsistencies


def lbr_options() -> argparse.ArgumentParser:
    """The options of ``acpc-lbr play lbr`` (also listed by ``acpc-lbr play --help``)."""
    parser = argparse.ArgumentParser(prog="acpc-lbr play lbr", add_help=False)
    parser.add_argument("--bets", default="fcpa", help="fc, fcpa, 56bets or e.g. 0.5,1,min,allin")
    parser.add_argument("--rounds", default=None,
                        help="active rounds, 1-based, e.g. 3-4 or 1-4 (default: the game's last two)")
    parser.add_argument("--timing", default=None, help="write the time split (JSON) here at the end")
    return parser


def make_lbr_player(game: GameDef, seed: int | None, options: Sequence[str]) -> LbrAgent:
    """``acpc-lbr play lbr … --bets fcpa --rounds 3-4``: the agent from its own options.

    ``--rounds`` must lie within the game's rounds; by default the game's last two.
    """
    args, rest = lbr_options().parse_known_args(list(options))
    if rest:
        raise ValueError(f"unrecognised arguments: {' '.join(rest)}")
    if game.num_players != 2:
        raise ValueError("LBR plays heads-up games only")
    rounds = ActiveRounds.parse(args.rounds, game) if args.rounds is not None else ActiveRounds.last_two(game)
    agent = LbrAgent(game, BettingOptions.parse(args.bets), rounds)
    agent.timing_path = args.timing
    return agent

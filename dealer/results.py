"""A match's live results: the rows asked after each hand, the query log, the running estimators.

The live half of the results; the rest, free of Twisted and shared with
``acpc-lbr results``, is :mod:`acpc_lbr.results` (the document, the query log's
format, the step from a finished hand to its outcome,
:class:`acpc_lbr.results.outcomes.HandAccountant`).

The dealer measures one player (``--measure NAME``, default the first name)
against its opponent. After every hand it turns the hand into a
:class:`~acpc_lbr.estimators.HandOutcome`:

* the raw outcome is the measured player's value in the ``STATE`` line;
* a hand that ended in a fold keeps that value as its imaginary observation
  (IO); a showdown's IO is the measured player's expected value over every
  hand the opponent could have held on the line played
  (:func:`acpc_lbr.estimators.imaginary_observation`), weighted by
  w(h) = Π σ(s, h, a) over the opponent's actions a at states s on the line.

The σ rows come from the opponent itself: the answers the dealer already
relayed to an agent during the hand (:meth:`MatchResults.record_answer`) and,
for the rest, queries the dealer sends after the hand ends and before the
next deal (:meth:`MatchResults.after_hand`). Only showdowns need them. Every
showdown's rows go to ``MATCH.queries`` (JSON lines, rows stored exactly as
base64 float64: :class:`acpc_lbr.results.querylog.QueryLog`), so ``acpc-lbr
results MATCH.log`` recomputes every estimator from files alone
(:func:`acpc_lbr.results.files.results_from_files`) -- bit for bit, since both
paths feed the same numbers through the same step in the same order.

An opponent action to which the opponent's own answer gives probability 0
for the hand it really held is a *range inconsistency* of its answers:
counted, and reported with the results. A showdown whose queries failed, or
whose weights are all 0, keeps its raw value as its IO (counted as an IO
fallback): a substitution that does not depend on the cards, so IO stays
unbiased.

With AIVAT on (``aivat=True``), every hand -- folds too -- also gets its
AIVAT value (:mod:`acpc_lbr.aivat`): it needs, at every opponent decision,
the rows of every action :func:`acpc_lbr.aivat.correction_actions` lists and
of the played one (the played one's alone before
:func:`acpc_lbr.aivat.first_opponent_round`). Relayed answers are reused; the
rest is one dealer query per decision. The rows go to the same query log (``"aivat"`` in the hand's
line), so ``acpc-lbr results`` recomputes AIVAT from the files too.
"""

from __future__ import annotations

import copy
import heapq
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import numpy as np
from twisted.internet import defer

from acpc_lbr.aivat import AivatSetup
from acpc_lbr.estimators import HandOutcome, MatchEstimates
from acpc_lbr.results.document import (
    LbrOptions,
    ResultsConfig,
    ResultsDocument,
    dumps,
    player_results,
    results_document,
)
from acpc_lbr.results.merge import merge_documents
from acpc_lbr.results.outcomes import (
    HandAccountant,
    OpponentDecision,
    Tally,
    aivat_requests,
    log_values,
    opponent_decisions,
)
from acpc_lbr.results.querylog import AivatRows, QueryLog
from acpc_lbr.results.table import format_table
from dealer.coreload import ThreadRunner, load_equity_function
from dealer.events import Cause, EventHook, EventRecord, MatchEnded, RangeInconsistency
from dealer.interfaces import Clock, ListeningPort
from dealer.match import Match, MatchResult
from dealer.relay import QueryRelay, Question
from protocol.arrays import FloatArray
from protocol.deal import Deal
from protocol.gamedef import GameDef
from protocol.rangecodec import proves_not_a_strategy
from protocol.rules import Action, State
from protocol.wire import LogState, MatchState, log_state_for

if TYPE_CHECKING:
    # Loaded only with --metrics-port (DealerResults): prometheus_client and twisted.web
    # are not on the path of a dealer without metrics.
    from dealer.metrics import DealerMetrics, MatchMetrics

#: ``ask(seat, [(state, actions), ...])``: queries sent together (``QueryRelay.ask_all``); per
#: query in order, its rows ``(len(actions), num_hands)`` or the exception it failed with.
AskFunction = Callable[[int, Sequence[Question]], Awaitable[list[FloatArray | Exception]]]


@dataclass
class _IoRows:
    """What IO needs of one showdown: per opponent decision its σ row (None: a query failed)."""

    decisions: list[OpponentDecision] = field(default_factory=list)
    rows: list[FloatArray] | None = None
    #: Where each row came from: ``relayed``, ``aivat`` or ``asked``.
    sources: list[str] = field(default_factory=list)
    failure: str | None = None


# -- live: one match inside the dealer ------------------------------------------------------


class MatchResults:
    """The results side of one live match (one half of a duplicate pair).

    Args:
        game: the game.
        match_name: the match name (for the query log header).
        measured: the measured player's name.
        half: 0, or 1 for the mirrored match of a duplicate pair.
        query_log: where to write the rows (None: nowhere).
        ask: the dealer's own query primitive (``QueryRelay.ask_all``); None
            when the match has no queryable opponent machinery.
        queryable: ``queryable(seat) -> bool``: whether asking is worth it.
        notify: tells the subscribers (metrics) of an event (``EventLog.notify``).
        sink: receives every :class:`HandOutcome` (a duplicate collector).
        aivat: also compute every hand's AIVAT value (its rows asked after every hand).
        seed: the match's deal seed (AIVAT's sampling stream).
        keep_outcomes: also keep every outcome in :attr:`outcomes` (for tests and
            callers that read them; a live dealer does not, so that its memory does
            not grow with the hands played: the sink has them).
        load_in_thread: runs a function in a worker thread (the reactor's pool): the
            compute core's first load goes there (:func:`load_equity_function`); None:
            it loads where it is first used.
    """

    def __init__(
        self,
        game: GameDef,
        match_name: str,
        measured: str,
        half: int = 0,
        query_log: Path | None = None,
        ask: AskFunction | None = None,
        queryable: Callable[[int], bool] | None = None,
        notify: EventHook | None = None,
        sink: Callable[[HandOutcome], None] | None = None,
        append: bool = False,
        aivat: bool = False,
        seed: int = 0,
        keep_outcomes: bool = False,
        load_in_thread: ThreadRunner | None = None,
    ) -> None:
        if game.num_players != 2 and (ask is not None or aivat):
            raise ValueError("IO and AIVAT are computed for heads-up matches only")
        self.game = game
        self.aivat = aivat
        #: What fixes the AIVAT values besides cards and answers (recorded in the query log).
        self.aivat_setup = AivatSetup.for_game(game) if aivat and ask is not None else None
        self.seed = seed
        self.match_name = match_name
        self.measured = measured
        self.half = half
        self.ask = ask
        self.queryable = queryable
        self.notify = notify
        self.sink = sink
        #: Every outcome, in hand order, with ``keep_outcomes`` (else stays empty).
        self.outcomes: list[HandOutcome] = []
        self._keep = keep_outcomes
        #: Each finished hand's step to its outcome, as ``acpc-lbr results`` takes it from the files
        #: (IO's equity vectors shared with the LBR agents of the process).
        self.accountant = HandAccountant(game, measured, half, io=True, aivat=aivat, aivat_setup=self.aivat_setup,
                                         seed=seed, io_equity=True)
        self.tally: Tally = self.accountant.tally
        self.any_rows = False
        self._answers: dict[tuple[int, str, str], FloatArray] = {}
        self._query_log_path = query_log
        self._query_log: QueryLog | None = None
        self._append = append
        #: Runs the compute core's first load in a worker thread (:func:`load_equity_function`);
        #: None: it loads on first use, where it is used.
        self.load_in_thread = load_in_thread

    def record_answer(self, state: MatchState, actions: Sequence[Action], rows: FloatArray) -> None:
        """An answer the dealer relayed during the hand (reused after it)."""
        betting = state.betting_text()
        for action, row in zip(actions, np.asarray(rows, dtype=np.float64)):
            self._answers[(state.hand_id, betting, action.text())] = row

    def will_ask(self, opponent_seat: int) -> bool:
        """Whether this hand's IO will be computed (the opponent can be asked)."""
        return self.ask is not None and (self.queryable is None or self.queryable(opponent_seat))

    def plain_hand(self, hand_id: int, chips: float, showdown: bool = False) -> HandOutcome:
        """Account for a hand without IO (the cheap path: no replay, no LogState)."""
        outcome = self.accountant.plain(hand_id, chips, showdown)
        self._done(outcome)
        return outcome

    def _done(self, outcome: HandOutcome) -> None:
        """Give a hand's outcome to the sink (and keep it, if asked to)."""
        if self._keep:
            self.outcomes.append(outcome)
        if self.sink is not None:
            self.sink(outcome)

    def _log(self) -> QueryLog | None:
        if self._query_log is None and self._query_log_path is not None:
            self._query_log = QueryLog(
                self._query_log_path,
                {"match": self.match_name, "measured": self.measured, "half": self.half,
                 "num_hands": self.game.num_hands, "aivat": self.aivat,
                 "aivat_setup": None if self.aivat_setup is None else self.aivat_setup.record()},
                append=self._append,
            )
        return self._query_log

    async def after_hand(self, hand: LogState, seat_of: Sequence[int], state: State | None = None) -> HandOutcome:
        """Account for a finished hand; asks the opponent for missing rows first.

        Args:
            hand: the hand as written to the ``.log``.
            seat_of: seat of each position in this hand.
            state: the hand's finished state, if the caller has it (else ``hand`` is replayed).
        """
        position = hand.names.index(self.measured)
        opponent = 1 - position
        opponent_seat = seat_of[opponent]
        can_ask = self.will_ask(opponent_seat)
        if can_ask:
            self._log()  # a match with IO has a query log, even before its first showdown
            if self.load_in_thread is not None and self.accountant.needs_compute_core():
                self.accountant.equity = await load_equity_function(self.game, self.load_in_thread)
        aivat: AivatRows | None = None
        asked: set[tuple[int, str, str]] = set()
        if can_ask and self.aivat:
            # First, so that one query per decision serves both AIVAT and IO.
            aivat = await self._aivat_rows(hand, opponent, opponent_seat, asked)
        final = hand.to_state(self.game) if state is None else state
        io_line = can_ask and final.is_showdown
        io = _IoRows()
        if io_line:
            io = await self._io_rows(hand, opponent, opponent_seat, asked, final)
        if io_line or aivat is not None:
            log = self._log()
            if log is not None:
                log.hand(hand.hand_id, opponent, io.decisions, io.rows, io.sources, io.failure,
                         io=io_line, aivat=aivat)
        self._answers = {k: v for k, v in self._answers.items() if k[0] > hand.hand_id}
        return self._account(hand, io.rows, None if aivat is None else aivat.rows, can_ask, final)

    async def _io_rows(self, hand: LogState, opponent: int, opponent_seat: int,
                       asked: set[tuple[int, str, str]], state: State) -> _IoRows:
        """The σ rows of every opponent decision of a showdown: kept answers, else asked.

        The missing rows are asked together, in one write (one round trip per
        hand); the first failure on the line leaves the hand without rows.
        ``asked``: the keys of the rows the dealer asked for AIVAT (their source is ``aivat``).
        """
        io = _IoRows(opponent_decisions(self.game, hand, opponent, state))
        keys = [(hand.hand_id, d.state.betting_text(), d.action.text()) for d in io.decisions]
        kept = [self._answers.get(key) for key in keys]  # before asking: answers are kept too
        missing = [i for i, row in enumerate(kept) if row is None]
        replies: dict[int, FloatArray | Exception] = {}
        if missing:
            assert self.ask is not None
            questions = [(io.decisions[i].state, [io.decisions[i].action]) for i in missing]
            replies = dict(zip(missing, await self.ask(opponent_seat, questions)))
        rows: list[FloatArray] = []
        for index, (key, row) in enumerate(zip(keys, kept)):
            if row is not None:
                rows.append(row)
                io.sources.append("aivat" if key in asked else "relayed")
                continue
            reply = replies[index]
            if isinstance(reply, Exception):  # QueryFailed or a closed match: no IO for this hand
                io.failure = str(getattr(reply, "reason", reply)) or type(reply).__name__
                self.tally.query_errors += 1
                self._proof_of_lies(hand.hand_id, io.failure)
                return io  # rows None
            rows.append(np.asarray(reply, dtype=np.float64)[0])
            io.sources.append("asked")
        # Counted once the hand has its rows, as the query log counts them (a failed
        # hand's log line records no rows, so none of its answers count there either).
        self.tally.dealer_queries += len(missing)
        io.rows = rows
        self.any_rows = True
        return io

    def _account(self, hand: LogState, rows: list[FloatArray] | None,
                 aivat_rows: list[dict[str, FloatArray]] | None, asked: bool, state: State) -> HandOutcome:
        """The hand's outcome (:meth:`HandAccountant.outcome`), told to the subscribers and the sink.

        ``asked``: the opponent could be asked this hand (else its outcome has no IO or AIVAT value).
        """
        outcome, result = self.accountant.outcome(hand, rows, aivat_rows, state, asked=asked)
        if result.inconsistencies and self.notify is not None:
            self.notify(RangeInconsistency(hand=hand.hand_id, count=result.inconsistencies))
        self._done(outcome)
        return outcome

    async def _aivat_rows(
        self, hand: LogState, opponent: int, opponent_seat: int, asked: set[tuple[int, str, str]]
    ) -> AivatRows:
        """Every row AIVAT needs: relayed ones reused, the rest one query per decision.

        The rows the dealer asks for are kept for the hand's IO too; their keys go to ``asked``.
        """
        requests = aivat_requests(self.game, hand, opponent)
        decisions = [decision for decision, _ in requests]
        found: list[dict[str, FloatArray]] = []
        asked_texts: list[list[str]] = []
        pending: list[tuple[int, list[Action]]] = []
        for index, (decision, actions) in enumerate(requests):
            betting = decision.state.betting_text()
            rows: dict[str, FloatArray] = {}
            missing: list[Action] = []
            for action in actions:
                row = self._answers.get((hand.hand_id, betting, action.text()))
                if row is None:
                    missing.append(action)
                else:
                    rows[action.text()] = row
            found.append(rows)
            asked_texts.append([a.text() for a in missing])
            if missing:
                pending.append((index, missing))
        replies: list[FloatArray | Exception] = []
        if pending:
            assert self.ask is not None
            # Sent together, in one write: one round trip per hand, not per decision.
            replies = await self.ask(opponent_seat, [(requests[i][0].state, missing) for i, missing in pending])
        failure: str | None = None
        answered: list[list[str]] = [[] for _ in requests]
        for (index, missing), reply in zip(pending, replies):
            if isinstance(reply, Exception):  # as for IO: no AIVAT for this hand
                self.tally.query_errors += 1
                failure = failure or str(getattr(reply, "reason", reply)) or type(reply).__name__
                continue
            self.tally.dealer_queries += 1
            answered[index] = asked_texts[index]
            betting = requests[index][0].state.betting_text()
            array = np.asarray(reply, dtype=np.float64)
            for action, row in zip(missing, array):
                found[index][action.text()] = row
                self._answers[(hand.hand_id, betting, action.text())] = row
                asked.add((hand.hand_id, betting, action.text()))
        if failure is not None:
            errors = sum(1 for reply in replies if isinstance(reply, Exception))
            self._proof_of_lies(hand.hand_id, failure)
            return AivatRows(decisions, None, answered, failure, errors=errors)
        return AivatRows(decisions, found, asked_texts)

    def _proof_of_lies(self, hand_id: int, failure: str) -> None:
        """A hand whose (first) failed query is an answer refused as not a strategy counts as a
        range inconsistency: proof that the answers are not the play (as the query log's
        reader counts it, :func:`read_query_log`)."""
        if proves_not_a_strategy(failure):
            self.tally.range_inconsistencies += 1
            if self.notify is not None:
                self.notify(RangeInconsistency(hand=hand_id, count=1))

    def close(self) -> None:
        """Close the query log."""
        if self._query_log is not None:
            self._query_log.close()


class LiveEstimates:
    """The running estimators of one results document (a match or a duplicate pair).

    Live figures for the metrics come from running accumulators. The final
    estimators are built as the hands come, in canonical order (by deal, then
    half: :func:`acpc_lbr.results.estimates_from_outcomes`'s order), so they
    equal what ``acpc-lbr results`` computes from the files, trajectory
    included, while memory stays flat in hands played: no outcome is kept
    once every outcome before it in that order has come. Each half's outcomes
    come in deal order (the hand hooks are chained); an outcome waits only
    for the other half of a duplicate pair to reach its deal.

    Args:
        name: the document's name.
        big_blind: the game's big blind.
        publish: called with the running estimators after every hand.
        halves: the halves whose outcomes come here (``(0,)``, or ``(0, 1)`` for a pair).
        document: build the final estimators (False when no document will be
            made: then :meth:`final` refuses, and nothing is kept per hand).
            A document lists the halves still without their partner (to merge
            with a mirror played elsewhere), so with one half it keeps a few
            numbers per hand.
        live: keep the running figures (False when nothing reads them: a plain
            dealer's results, there for the query log; :attr:`running` stays empty).
    """

    def __init__(self, name: str, big_blind: int, publish: Callable[[str, MatchEstimates], None] | None = None,
                 halves: Sequence[int] = (0,), document: bool = True, live: bool = True) -> None:
        self.name = name
        self.big_blind = big_blind
        self._halves = tuple(halves)
        #: Read after every hand with ``live()`` only (the document's figures are exact).
        self.running = MatchEstimates.live_only(pairs=len(self._halves) > 1)
        self._live = live
        self.publish = publish
        #: Hands accounted for.
        self.hands = 0
        self._ordered: MatchEstimates | None = MatchEstimates() if document else None
        #: Outcomes that may still have one before them in canonical order: (deal, half, outcome).
        self._waiting: list[tuple[int, int, HandOutcome]] = []
        #: The last deal each half has given.
        self._last: dict[int, int] = {}

    def add(self, outcome: HandOutcome) -> None:
        """Account for one hand and publish the running figures."""
        self.hands += 1
        if self._live:
            self.running.add(outcome)
        ordered = self._ordered
        if ordered is not None:
            self._last[outcome.half] = outcome.deal
            heapq.heappush(self._waiting, (outcome.deal, outcome.half, outcome))
            while self._waiting and self._in_order(*self._waiting[0][:2]):
                ordered.add(heapq.heappop(self._waiting)[2])
        if self.publish is not None and self._live:
            self.publish(self.name, self.running)

    def expect_halves(self, halves: Sequence[int]) -> None:
        """Outcomes of ``halves`` come here (e.g. a mirror played in another process, whose
        outcomes its caller adds): to be said before the first outcome, since the canonical
        order waits on every half that will come."""
        if self.hands:
            raise ValueError(f"{self.name}: the halves are fixed once outcomes have come")
        self._halves = tuple(halves)
        self.running.pairs = len(self._halves) > 1

    def _in_order(self, deal: int, half: int) -> bool:
        """Whether no outcome still to come goes before (deal, half): every other half's next
        outcome (a later deal than its last) does not."""
        for other in self._halves:
            if other != half:
                last = self._last.get(other)
                if last is None or (last + 1, other) < (deal, half):
                    return False
        return True

    @property
    def waiting(self) -> int:
        """Outcomes held back for the canonical order (at most the lag between the halves)."""
        return len(self._waiting)

    def final(self) -> MatchEstimates:
        """The estimators over every outcome so far, in canonical order.

        Raises:
            ValueError: built with ``document=False``.
        """
        if self._ordered is None:
            raise ValueError(f"{self.name}: no document was asked for: the final estimators were not kept")
        if not self._waiting:
            return self._ordered
        estimates = copy.deepcopy(self._ordered)
        for _, _, outcome in sorted(self._waiting, key=lambda item: item[:2]):
            estimates.add(outcome)
        return estimates


# -- wiring into the dealer: a match, or a match and its mirror ------------------------------


class ResultsGroup:
    """The results of one group of matches: a match, or a match and its mirror (``--duplicate``).

    Attaches a :class:`MatchResults` to each match (awaited after every hand,
    through ``Match.hand_hooks``), keeps the answers the dealer relays, feeds
    the running estimators and, when given, the Prometheus series of each
    match (an :class:`~dealer.events.EventLog` subscriber).

    Args:
        matches: the group's matches (the mirror second).
        measured: the measured player (default: the first match's first name).
        metrics: a :class:`dealer.metrics.DealerMetrics`, or None.
        lbr: LBR options for the results' configuration, if known.
        query_logs: write ``MATCH.queries`` beside each ``MATCH.log``.
        io: ask the opponent for its range after each showdown (imaginary
            observations); False keeps only the raw and duplicate estimators.
        aivat: also compute AIVAT (needs ``io``: the same query machinery).
        halves: the half of each match (default 0, 1, ...; a process playing
            only the mirror gives ``(1,)``).
        keep_outcomes: each :class:`MatchResults` keeps its outcomes (tests read them).
        document: a results document will be asked for (:meth:`document`); without
            one nothing is kept per hand for it.
        live: something reads the running figures (metrics, a progress display).
        load_in_thread: runs the compute core's first load in a worker thread
            (:mod:`dealer.coreload`); None: it loads where it is first used.
    """

    def __init__(
        self,
        matches: Sequence[Match],
        measured: str | None = None,
        metrics: DealerMetrics | None = None,
        lbr: LbrOptions | None = None,
        query_logs: bool = True,
        io: bool = True,
        aivat: bool = False,
        halves: Sequence[int] | None = None,
        keep_outcomes: bool = False,
        document: bool = True,
        live: bool = True,
        load_in_thread: ThreadRunner | None = None,
    ) -> None:
        first = matches[0]
        self.matches = list(matches)
        self.game: GameDef = first.game
        self.name: str = first.config.name
        self.measured = measured if measured is not None else first.config.names[0]
        if self.measured not in first.config.names:
            raise ValueError(f"--measure {self.measured}: not a player of {self.name}")
        self.lbr = lbr
        self.match_metrics: list[MatchMetrics] = []
        self.started = 0.0
        #: Heads-up: IO and AIVAT can be computed; more players: raw results only.
        self.heads_up = self.game.num_players == 2
        io, aivat = io and self.heads_up, aivat and self.heads_up
        own_halves = list(range(len(self.matches)) if halves is None else halves)
        self.live = LiveEstimates(self.name, self.game.big_blind, self._publish, own_halves, document, live)
        self.results: list[MatchResults] = []
        for half, match in zip(own_halves, self.matches):
            config = match.config
            relay = match.relay

            def queryable(seat: int, relay: QueryRelay = relay) -> bool:
                return relay.queryable[seat]
            part = MatchResults(
                self.game, config.name, self.measured, half,
                query_log=Path(f"{config.name}.queries") if query_logs and config.write_log else None,
                ask=match.relay.ask_all if io else None, queryable=queryable,
                notify=match.events.notify, sink=self.live.add, append=config.resume,
                aivat=aivat, seed=config.seed, keep_outcomes=keep_outcomes,
                load_in_thread=load_in_thread,
            )
            self.results.append(part)
            match.hand_hooks.append(self._hand_hook(match, part))
            self._keep_answers(relay, part)
            if metrics is not None:  # labelled by the match name, not the log folder
                observer = metrics.match(Path(config.name).name, config.names)
                self.match_metrics.append(observer)
                match.events.subscribe(observer.observe)

    @staticmethod
    def _keep_answers(relay: QueryRelay, part: MatchResults) -> None:
        # Every answer the relay checks (an agent's relayed query or the
        # dealer's own) is kept for the hand's IO, so nothing is asked twice.
        relay.answer_hooks.append(part.record_answer)

    def _hand_hook(self, match: Match, part: MatchResults) -> Callable[[State, Deal, Sequence[int]], Awaitable[None]]:
        # The IO queries of hand h are answered while hand h+1 is played: the
        # hook starts hand h's accounting (after hand h-1's, so outcomes and the
        # query log stay in hand order) and waits only for hand h-1's, or for
        # everything after the match's last hand. A slow bot delays the match
        # by at most a hand; the dealer does not wait a round trip per showdown.
        tail: list[defer.Deferred[None]] = [defer.succeed(None)]

        async def account(previous: defer.Deferred[None], state: State, deal: Deal,
                          seat_of: Sequence[int]) -> None:
            await previous
            names = tuple(match.config.names[s] for s in seat_of)
            position = names.index(self.measured)
            recorded = match.result.hand_values.get(state.hand_id)
            if recorded is not None:  # by seat, as the dealer computed them for the .log
                values = log_values([recorded[s] for s in seat_of])
            else:
                values = log_values(state.values(deal.hole, deal.board_cards))
            if not self.heads_up or not part.will_ask(seat_of[1 - position]):
                part.plain_hand(state.hand_id, values[position], state.is_showdown)
                return
            # (The hand's final state, queued for the opponent's next send, goes out
            # before any query: a query is sent with the lines queued before it.)
            await part.after_hand(log_state_for(state, deal, values, names), seat_of, state)

        async def after_hand(state: State, deal: Deal, seat_of: Sequence[int]) -> None:
            previous = tail[0]
            current = defer.ensureDeferred(account(previous, state, deal, list(seat_of)))
            tail[0] = current
            last = state.hand_id >= match.config.hands - 1
            await (current if last else previous)

        return after_hand

    def _publish(self, name: str, estimates: MatchEstimates) -> None:
        if self.match_metrics:  # the group's estimate lives on its first match (published when read)
            self.match_metrics[0].estimates_changed(estimates, self.game.big_blind)

    def document(self, outcomes: Sequence[MatchResult], timings: dict[str, float] | None = None) -> ResultsDocument:
        """The results document (``outcomes``: each match's :class:`~dealer.match.MatchResult`)."""
        first = self.matches[0].config
        counts: dict[str, int] = {
            "hands": self.live.hands,
            "errors": sum(1 for r in outcomes if r.exit_code != 0),
            "timeouts": sum(1 for r in outcomes if r.cause in (Cause.TIMEOUT, Cause.OUT_OF_TIME)),
            "disconnects": sum(1 for r in outcomes if r.cause == Cause.DISCONNECT),
            "invalid_actions": sum(sum(r.corrections) for r in outcomes),
            "dealer_queries": sum(p.tally.dealer_queries for p in self.results),
            "range_inconsistencies": sum(p.tally.range_inconsistencies for p in self.results),
            "showdowns": sum(p.tally.showdowns for p in self.results),
            "io_fallbacks": sum(p.tally.io_fallbacks for p in self.results),
            "aivat_fallbacks": sum(p.tally.aivat_fallbacks for p in self.results),
        }
        queries = query_errors = 0
        query_seconds = 0.0
        for match in self.matches:
            for seat_counts in match.relay.counts:
                queries += seat_counts.answered + seat_counts.errors
                query_errors += seat_counts.errors
                query_seconds += seat_counts.seconds
        counts["queries"] = queries
        counts["query_errors"] = query_errors
        setup = self.results[0].aivat_setup if self.results else None
        config: ResultsConfig = {
            "game": first.game_arg,
            "players": list(first.names),
            "measured": self.measured,
            "seed": first.seed,
            "hands": first.hands,
            "duplicate": len(self.matches) > 1,
            "lbr": self.lbr,
            "matches": [m.config.name for m in self.matches],
            "aivat": None if setup is None else setup.record(),
        }
        all_timings = {"query_seconds": query_seconds}
        all_timings.update(timings or {})
        players = None
        if not self.heads_up:  # each player's raw result, from the values the .log got
            players = player_results(
                ((m.config.names, values) for m, r in zip(self.matches, outcomes)
                 for _, values in sorted(r.hand_values.items())), self.game.big_blind, first.names)
        return results_document(config, self.live.final(), self.game.big_blind, counts, all_timings, players)

    def close(self) -> None:
        """Close the query logs."""
        for part in self.results:
            part.close()


def worker_threads(reactor: Clock) -> ThreadRunner | None:
    """The reactor's worker threads (``deferToThreadPool``), or None for a clock without any
    (the tests' ``task.Clock``: the compute core then loads where it is first used)."""
    get_pool = getattr(reactor, "getThreadPool", None)
    if get_pool is None:
        return None
    from twisted.internet import threads  # lazy: only with results

    return lambda function: threads.deferToThreadPool(reactor, get_pool(), function)  # type: ignore[arg-type]


class DealerResults:
    """Results and metrics of every match of a dealer process (``dealer/cli.py``): every estimator
    of a heads-up match, each player's raw result of a match of more players.

    Args:
        matches: groups of matches (a match, or a match and its mirror).
        reactor: for the metrics endpoint and the grace timers.
        measure: the measured player (default: each group's first name).
        results_json: write the results document here (several groups: one per group beside it,
            and their merge when they merge; :meth:`_write_documents`).
        metrics_port: serve ``/metrics`` on this port (None: no metrics).
        metrics_bind: the endpoint's interface.
        metrics_grace: seconds a finished match's series stay visible.
        lbr: LBR options for the results' configuration, if known.
        stream: where the results table goes (stderr).
        io: compute imaginary observations (the dealer's own range queries).
        table: print the results table on ``stream`` at the end.
        aivat: also compute AIVAT.
        live: something reads the running figures besides the metrics (a progress display).
    """

    def __init__(
        self,
        matches: Sequence[Sequence[Match]],
        reactor: Clock,
        measure: str | None = None,
        results_json: str | None = None,
        metrics_port: int | None = None,
        metrics_bind: str = "127.0.0.1",
        metrics_grace: float = 60.0,
        lbr: LbrOptions | None = None,
        stream: TextIO | None = None,
        io: bool = True,
        table: bool = True,
        aivat: bool = False,
        live: bool = True,
    ) -> None:
        self.reactor = reactor
        self.results_json = results_json
        self.table = table
        self.stream = stream if stream is not None else sys.stderr
        self.started = time.time()
        self.metrics: DealerMetrics | None = None
        if metrics_port is not None:
            from dealer.metrics import DealerMetrics  # lazy: prometheus_client only with metrics

            self.metrics = DealerMetrics()
        self.metrics_grace = metrics_grace
        self.groups = [
            ResultsGroup(group, measure, self.metrics, lbr, io=io or aivat, aivat=aivat,
                         document=table or results_json is not None,
                         live=live or self.metrics is not None,
                         load_in_thread=worker_threads(reactor))
            for group in matches
        ]
        self.listening: ListeningPort | None = None
        #: Matches of this process that have ended (:meth:`_on_finish`).
        self._finished = 0
        if self.metrics is not None:
            for group in self.groups:
                for match, observer in zip(group.matches, group.match_metrics):
                    match.events.subscribe(self._on_finish(observer))
            from dealer.metrics import serve_metrics  # lazy: as above

            stream = self.stream
            self.listening = serve_metrics(self.metrics, int(metrics_port or 0), metrics_bind,
                                           report=lambda line: print(line, file=stream, flush=True))
            host = self.listening.getHost()
            print(f"METRICS http://{host.host}:{host.port}/metrics", file=self.stream, flush=True)

    def linger(self) -> float:
        """Seconds the process keeps serving ``/metrics`` after its last match (announced on
        stderr), so a last scrape gets the final values: the grace, when metrics are on."""
        if self.listening is None or self.metrics_grace <= 0:
            return 0.0
        host = self.listening.getHost()
        print(f"METRICS final values stay on http://{host.host}:{host.port}/metrics for "
              f"{self.metrics_grace:g} s (--metrics-grace; Ctrl-C ends the wait)",
              file=self.stream, flush=True)
        return self.metrics_grace

    def _on_finish(self, observer: MatchMetrics) -> EventHook:
        """A finished match's series go a grace after its end while other matches of the process
        still play; the last match's stay until the process ends (its report, its SCORE line, then
        :meth:`linger`): a grace counted from the match's end could run out before the one the
        process announces after its SCORE line (found when a test scraped a few seconds late)."""
        def hook(event: EventRecord) -> None:
            if isinstance(event, MatchEnded):
                self._finished += 1
                if self._finished < sum(len(group.matches) for group in self.groups):
                    self.reactor.callLater(self.metrics_grace, observer.retire)

        return hook

    def documents(self, by_name: dict[str, MatchResult]) -> list[ResultsDocument]:
        """One results document per group (``by_name``: MatchResult by match name)."""
        wall = time.time() - self.started
        return [
            group.document([by_name[m.config.name] for m in group.matches], {"wall_seconds": wall})
            for group in self.groups
        ]

    def report(self, by_name: dict[str, MatchResult]) -> list[ResultsDocument]:
        """Print each group's table, write the JSON document, close the query logs."""
        if not self.table and self.results_json is None:
            # Nobody reads the documents (-q without --table or --results-json):
            # do not compute them.
            for group in self.groups:
                group.close()
            return []
        docs = self.documents(by_name)
        for group, doc in zip(self.groups, docs):
            group.close()
            if self.table:
                self.stream.write(f"RESULTS {group.name}\n" + format_table(doc))
        self.stream.flush()
        if self.results_json is not None and docs:
            self._write_documents(docs)
        return docs

    def _write_documents(self, docs: Sequence[ResultsDocument]) -> None:
        """``--results-json FILE``: one group's document in FILE; with several groups, one
        document per group (``FILE`` with ``.MATCH`` before its suffix) and, when they merge
        (batches of one pairing, dealt from different seeds), the merge in FILE; each path
        written is named on the stream."""
        path = Path(self.results_json or "")
        if len(docs) == 1:
            path.write_text(dumps(docs[0]), encoding="utf-8")
            return
        written = []
        for group, doc in zip(self.groups, docs):
            own = path.with_name(f"{path.stem}.{group.name.replace('/', '_')}{path.suffix}")
            own.write_text(dumps(doc), encoding="utf-8")
            written.append(str(own))
        try:
            path.write_text(dumps(merge_documents(docs)), encoding="utf-8")
            merged = f"{path} (the {len(docs)} matches merged: one estimate)"
        except ValueError as error:
            path.unlink(missing_ok=True)  # not an older run's figures under this run's name
            merged = f"no {path}: the matches do not merge ({error})"
        print(f"RESULTS JSON: one document per match: {', '.join(written)}; {merged}",
              file=self.stream, flush=True)

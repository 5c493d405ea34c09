"""ACPC clients on Twisted: the connection base and the strategy-driven bot.

:class:`AcpcClient` speaks the client side of the ACPC protocol exactly as the
reference dealer expects it (docs/dealer.md; the ACPC protocol 2.0.0): it sends
``VERSION:2.0.0\\r\\n`` first, reads lines up to ``\\n`` (a ``\\r`` before it is
dropped), ignores ``#``/``;`` comment lines, follows every MATCHSTATE line with
a :class:`~agents.tracking.HandTracker`, and answers only when it is the one to
act, once, with the state exactly as received plus ``:<action>\\r\\n``.

:class:`StrategyBot` plugs a :data:`~agents.sdk.Strategy` into it: it samples
its real action from the strategy's policy with its own seeded generator and
answers range queries (``QUERY`` lines on the same connection) with the
policy's probabilities, which never draw from that generator.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, cast

import numpy as np
from twisted.internet import defer, error, protocol
from twisted.protocols.basic import LineReceiver
from twisted.python.failure import Failure

from acpc_lbr.runtime.reactor import write_now
from agents.sdk import Mix, PublicView, Strategy, blocked_hands, hand_of, played
from agents.tracking import HandTracker, SeatView
from protocol.errors import ParseError, ProtocolError
from protocol.gamedef import GameDef
from protocol.rangecodec import (
    SUM_TOLERANCE,
    SUPPORTED_VERSIONS,
    RangeAnswer,
    check_rows,
    encode_answer,
    parse_versions,
    read_answer,
)
from protocol.rangequery import (
    Query,
    QueryErrorReply,
    RangeErrorReply,
    parse_query_error,
    parse_range_error,
    public_state,
    read_query,
)
from protocol.rules import Action, correct_action
from protocol.wire import MatchState

log = logging.getLogger(__name__)

#: What :meth:`AcpcClient.choose_action` returns: an action now, or later.
Decision = Action | defer.Deferred[Action] | Coroutine[Any, Any, Action]
#: What :meth:`AcpcClient.ask` gives: the answer, or the dealer's refusal.
QueryResult = RangeAnswer | QueryErrorReply

#: The handshake line; the reference dealer reads it before anything else.
VERSION_LINE = b"VERSION:2.0.0\r\n"
#: Sent after VERSION by a bot that answers range queries, with the answer
#: versions it speaks (dealer/relay.py); the reference dealer ignores '#'
#: lines, so such a bot still runs under it.
QUERYABLE_LINE = ("# range-query " + " ".join(map(str, SUPPORTED_VERSIONS)) + "\r\n").encode("ascii")
#: Sent after VERSION by an agent that asks queries: the answer versions it reads.
READS_LINE = ("# range-answers " + " ".join(map(str, SUPPORTED_VERSIONS)) + "\r\n").encode("ascii")
#: The dealer's choice of answer version, sent to a bot that announced several.
VERSION_REPLY = b"# range-query-version"


class AcpcClient(LineReceiver):
    """One connection to an ACPC dealer, as one seat.

    Subclasses implement :meth:`choose_action`; they may also override
    :meth:`state_received` (every MATCHSTATE line), :meth:`query_received`
    (``QUERY`` lines) and :meth:`extension_line_received` (``RANGE``,
    ``RANGEERROR``, ``QUERYERROR`` lines, for agents that ask queries).

    Args:
        game: the match's game definition.
    """

    delimiter = b"\n"
    #: Send :data:`READS_LINE` after VERSION (clients that ask range queries).
    asks_queries = False
    #: Dealer lines are short (the reference caps them at 4095 characters), but
    #: range-query traffic can be long: allow generous lines, refuse longer ones.
    MAX_LENGTH = 1 << 20

    def __init__(self, game: GameDef) -> None:
        self.game = game
        self.tracker = HandTracker(game)
        self.lines_received = 0
        self.actions_sent = 0
        #: Set when the client itself ended the connection over a protocol error.
        self.failed = False
        self._last_answered = ""
        #: The answer version the dealer asked for (1 until it says otherwise).
        self.answer_version = 1
        self._cards_checked = -1  # the hand whose hole cards were checked
        self._deck = frozenset(game.deck)
        self._query_count = 0
        self._pending: dict[str, tuple[Query, defer.Deferred[QueryResult]]] = {}

    # -- connection ------------------------------------------------------

    def connectionMade(self) -> None:
        """Send the version line first, with Nagle off (one small line per action)."""
        # Twisted's transports are zope interfaces, opaque to mypy: hold it as Any.
        self.out: Any = cast(Any, self.transport)
        set_no_delay = getattr(self.out, "setTcpNoDelay", None)
        if set_no_delay is not None:
            set_no_delay(True)
        self.out.write(VERSION_LINE)
        if self.asks_queries:
            self.out.write(READS_LINE)

    def lineReceived(self, line: bytes) -> None:
        """Dispatch one line from the dealer."""
        if line.endswith(b"\r"):
            line = line[:-1]
        self.lines_received += 1
        if not line or line[:1] in (b"#", b";"):
            if line.startswith(VERSION_REPLY):
                self._version_chosen(line[len(VERSION_REPLY):])
            return
        text = line.decode("ascii", "replace")
        if text.startswith("MATCHSTATE:"):
            self._matchstate_received(text)
        elif text.startswith("QUERY:"):
            self.query_received(text)
        elif text.startswith(("RANGE:", "RANGEERROR:", "QUERYERROR:")):
            self.extension_line_received(text)
        else:
            log.warning("ignoring unknown line from the dealer: %.200s", text)

    def _version_chosen(self, words: bytes) -> None:
        try:
            versions = parse_versions(words.decode("ascii", "replace"))
        except ProtocolError:
            log.warning("ignoring unreadable version reply: %.100r", words)
            return
        if len(versions) == 1 and versions[0] in SUPPORTED_VERSIONS:
            self.answer_version = versions[0]
        else:
            log.warning("ignoring version reply %.100r (we speak %s)", words, SUPPORTED_VERSIONS)

    def lineLengthExceeded(self, line: bytes) -> None:
        """A line over :attr:`MAX_LENGTH`: refuse it by closing the connection."""
        log.error("line from the dealer longer than %d bytes; disconnecting", self.MAX_LENGTH)
        self.failed = True
        self.out.loseConnection()

    # -- play ------------------------------------------------------------

    def _matchstate_received(self, text: str) -> None:
        if self.failed:
            return
        try:
            view = self._read_state(text)
        except ProtocolError as problem:
            # A dealer sends only states of its game, so an unreadable one
            # almost always means the bot was started for another game; waiting
            # would stall the match until the dealer's t_response. Leave now.
            game = self.game
            log.error(
                "cannot read the dealer's state with this bot's game (%s, %d players, %d rounds, "
                "%d hole cards): %s. The dealer is most likely playing another game: start the bot "
                "with the dealer's game (--game). Disconnecting.",
                "limit" if game.is_limit else "no-limit", game.num_players, game.num_rounds,
                game.num_hole_cards, problem,
            )
            self.failed = True
            self.out.loseConnection()
            return
        self.state_received(view)
        if view.to_act and text != self._last_answered:
            self._last_answered = text
            decision = self.choose_action(view)
            if isinstance(decision, Action):
                self._send_action(decision, text)
            else:
                # An agent that waits (e.g. for range answers) returns a
                # Deferred or a coroutine; the reply goes out when it fires.
                waiting: defer.Deferred[Action] = defer.ensureDeferred(decision)
                waiting.addCallback(self._send_action, text)
                waiting.addErrback(self._decision_failed, text)

    def _read_state(self, text: str) -> SeatView:
        """The tracker's view of a MATCHSTATE line; the hole cards are checked once a hand.

        Raises:
            ProtocolError: the line is not a state of this bot's game.
        """
        view = self.tracker.update(text)
        if view.hand_id != self._cards_checked:
            hole = view.hole
            if len(hole) != self.game.num_hole_cards or not set(hole) <= self._deck:
                raise ParseError(f"hole cards {view.cards_text!r} are not this game's", text)
            self._cards_checked = view.hand_id
        return view

    def _send_action(self, action: Action, text: str) -> None:
        write_now(self.out, f"{text}:{action.text()}\r\n".encode("ascii"))
        self.actions_sent += 1

    def _decision_failed(self, failure: Failure, text: str) -> None:
        if failure.check(error.ConnectionDone, error.ConnectionLost):  # type: ignore[no-untyped-call]
            return
        log.error("decision failed; calling instead: %s", failure.getErrorMessage())
        self._send_action(Action.CALL, text)

    def state_received(self, view: SeatView) -> None:
        """Hook: every MATCHSTATE line, before any answer (default: nothing)."""

    def choose_action(self, view: SeatView) -> Decision:
        """The action to send; called once per decision, only when it is our turn.

        Returns:
            The action, or a Deferred or coroutine that gives it later (the
            reply is sent then; if it fails the client calls).
        """
        raise NotImplementedError

    # -- range-query extension --------------------------------------------

    def query_received(self, text: str) -> None:
        """Hook: a ``QUERY`` line. A plain ACPC client cannot answer: RANGEERROR."""
        qid = _query_id(text)
        if qid is not None:
            self.send_line(RangeErrorReply(qid, "this bot does not answer range queries").text())

    def ask(self, state: MatchState, actions: Sequence[Action]) -> defer.Deferred[QueryResult]:
        """Send a range query about ``state`` (hole cards are blanked) to the dealer.

        Queries may be pipelined; answers are matched by qid.

        Returns:
            A Deferred that fires with the checked :class:`RangeAnswer`, or with
            a :class:`QueryErrorReply` when the dealer refused or could not
            relay the query. It fails with :class:`ParseError` for a malformed
            or invalid answer, and with the connection's reason if it closes.
        """
        self._query_count += 1
        qid = f"q{self._query_count}"
        query = Query(qid, public_state(state), tuple(actions))
        answer: defer.Deferred[QueryResult] = defer.Deferred()
        self._pending[qid] = (query, answer)
        self.send_line(query.text())
        return answer

    def extension_line_received(self, text: str) -> None:
        """Route a ``RANGE``/``RANGEERROR``/``QUERYERROR`` line to the :meth:`ask` it answers."""
        qid = _query_id(text)
        pending = self._pending.pop(qid, None) if qid is not None else None
        if pending is None:
            log.warning("ignoring range-query answer not asked for: %.200s", text)
            return
        query, answer = pending
        try:
            if text.startswith("RANGE:"):
                blocked = blocked_hands(self.game, query.state.board_cards)
                answer.callback(read_answer(text, query.actions, self.game.num_hands, blocked))
            elif text.startswith("QUERYERROR:"):
                answer.callback(parse_query_error(text))
            else:  # a bot's own refusal, if a dealer passes it on as is
                refusal = parse_range_error(text)
                answer.callback(QueryErrorReply(refusal.qid, refusal.message))
        except ParseError as problem:
            answer.errback(problem)

    def connectionLost(self, reason: Failure = protocol.connectionDone) -> None:
        """Fail every query still waiting for its answer."""
        pending, self._pending = self._pending, {}
        for _, answer in pending.values():
            answer.errback(reason)
        super().connectionLost(reason)

    def send_line(self, text: str) -> None:
        """Write one line (CRLF appended), to the socket at once when it can take it."""
        write_now(self.out, text.encode("ascii") + b"\r\n")

    def send_lines(self, texts: Sequence[str]) -> None:
        """Write several lines in one send (a pipelined batch of queries)."""
        if texts:
            write_now(self.out, ("\r\n".join(texts) + "\r\n").encode("ascii"))


def _query_id(text: str) -> str | None:
    """The qid of a QUERY, RANGE, RANGEERROR or QUERYERROR line, if it has a well-formed one."""
    fields = text.split(":", 2)
    if len(fields) >= 2 and fields[1].isalnum() and fields[1].isascii():
        return fields[1]
    return None


class StrategyBot(AcpcClient):
    """A bot driven by one :data:`~agents.sdk.Strategy`: it plays and answers queries.

    Args:
        game: the match's game definition.
        strategy: public view -> policy over every private hand.
        rng: the generator used for the bot's real actions, and only for them.
    """

    def __init__(self, game: GameDef, strategy: Strategy, rng: np.random.Generator) -> None:
        super().__init__(game)
        self.strategy = strategy
        self.rng = rng
        self.queries_answered = 0
        self.queries_refused = 0
        self._hand_key: tuple[int, str] = (-1, "")
        self._hand = 0

    def connectionMade(self) -> None:
        """Send VERSION, then announce that this bot answers range queries."""
        super().connectionMade()
        self.out.write(QUERYABLE_LINE)

    def choose_action(self, view: SeatView) -> Action:
        """Sample the action for the hand actually held; fall back to a call on error."""
        state = view.state
        hole_key = (view.hand_id, view.cards_text.split("/", 1)[0])
        if hole_key != self._hand_key:
            self._hand = hand_of(self.game, view.hole)
            self._hand_key = hole_key
        public = PublicView(self.game, state, view.position, view.board)
        try:
            action = self.strategy(public).sample(self._hand, self.rng)
        except Exception:
            log.exception("strategy failed; calling instead")
            return Action.CALL
        if not state.is_legal(action):
            corrected, _ = correct_action(state, action)
            log.warning("strategy chose illegal %s; sending %s", action.text(), corrected.text())
            return corrected
        return action

    def query_received(self, text: str) -> None:
        """Answer a QUERY with RANGE (or RANGEERROR) from the strategy's probabilities."""
        qid = _query_id(text)
        if qid is None:
            log.warning("ignoring query without a valid id: %.200s", text)
            return
        try:
            reply = self.answer_query(text)
            self.queries_answered += 1
        except ProtocolError as problem:
            reply = RangeErrorReply(qid, problem.message).text()
            self.queries_refused += 1
        except Exception as problem:  # a strategy bug must not end the match
            log.exception("strategy failed on a query")
            reply = RangeErrorReply(qid, f"strategy failed: {problem!r}").text()
            self.queries_refused += 1
        self.send_line(reply)

    def answer_query(self, text: str) -> str:
        """The RANGE line for a QUERY line.

        Raises:
            ProtocolError: the query is malformed, not at a decision of this
                bot, or the strategy's answer is not a valid range.
        """
        game = self.game
        query, state = read_query(text, game)
        if state.finished:
            raise ParseError("the hand is over at this state")
        if state.current_player != query.state.position:
            raise ParseError(f"position {query.state.position} is not to act at this state")
        board = query.state.board_cards
        policy = played(self.strategy, PublicView(game, state, query.state.position, board))
        probabilities = np.array(
            policy.probabilities(query.actions, game.num_hands), dtype=np.float64
        )
        if probabilities.shape != (len(query.actions), game.num_hands):
            raise ParseError(f"strategy gave shape {probabilities.shape}")
        # Hands sharing a card with the board are ignored by the protocol;
        # zero them so that whatever the strategy put there stays valid.
        blocked = blocked_hands(game, board)
        probabilities[:, blocked] = 0.0
        try:
            check_rows(probabilities, blocked)
            if isinstance(policy, Mix):  # the rows asked can be fine while the whole mix is not
                _check_total(policy, game.num_hands, blocked)
        except ParseError as problem:
            raise ParseError(f"the strategy's answer is not a valid range: {problem.message}") from None
        return encode_answer(query.qid, query.actions, probabilities, self.answer_version, blocked)


def _check_total(policy: Mix, num_hands: int, blocked: np.ndarray) -> None:
    """Refuse a mix whose weights add up to more than 1, or to no positive weight, for a hand
    the board does not block.

    The SDK plays the weights normalised: a total above 1 would make every
    answer larger than the probability the bot really plays with; a hand with
    no positive weight cannot be sampled (the bot calls), so no answer is its play.

    Raises:
        ParseError: the first such hand.
    """
    live = policy.totals(num_hands)
    totals = np.where(blocked, 0.0, live)
    worst = int(totals.argmax())
    if not totals[worst] <= 1.0 + SUM_TOLERANCE:
        raise ParseError(f"hand {worst}: the policy's weights add up to {float(totals[worst])!r}, more than 1")
    empty = np.flatnonzero(~blocked & ~(live > 0.0))
    if empty.size:
        raise ParseError(f"hand {int(empty[0])}: the policy has no positive weight")


class BotFactory(protocol.ClientFactory):
    """Makes one client and reports how its connection ended.

    Args:
        make_client: builds the protocol instance.

    Attributes:
        done: fires with the exit status: 0 when the dealer closed the
            connection cleanly (the end of a match), 1 when the connection
            failed or was reset; a client may fire it first with its own
            status (:data:`acpc_lbr.runtime.exit_codes.EXIT_NOT_QUERYABLE`).
    """

    def __init__(self, make_client: Callable[[], AcpcClient]) -> None:
        self.make_client = make_client
        self.done: defer.Deferred[int] = defer.Deferred()
        self.client: AcpcClient | None = None

    def buildProtocol(self, addr: Any) -> AcpcClient:
        """Build the single client of this factory."""
        self.client = self.make_client()
        self.client.factory = self
        return self.client

    def clientConnectionFailed(self, connector: Any, reason: Failure) -> None:
        """Could not connect: status 1."""
        log.error("could not connect to the dealer: %s", reason.getErrorMessage())
        self._finish(1)

    def clientConnectionLost(self, connector: Any, reason: Failure) -> None:
        """EOF from the dealer is the normal end of a match: status 0."""
        clean = reason.check(error.ConnectionDone)  # type: ignore[no-untyped-call]
        failed = self.client is not None and self.client.failed
        if clean and not failed:
            self._finish(0)
        else:
            if not clean:  # a clean close after the client failed is its own: it said why
                log.error("connection to the dealer lost: %s", reason.getErrorMessage())
            self._finish(1)

    def _finish(self, status: int) -> None:
        if not self.done.called:
            self.done.callback(status)


def seeded_rng(seed: int | None) -> np.random.Generator:
    """The bot's generator: seeded for reproducible matches, else from OS entropy."""
    return np.random.default_rng(seed)

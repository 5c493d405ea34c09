"""Agents that ask range queries: AcpcClient.ask and decisions that wait for answers."""

from __future__ import annotations

from typing import Any

import pytest
from twisted.internet import defer
from twisted.internet.error import ConnectionDone
from twisted.internet.testing import StringTransport
from twisted.python.failure import Failure

from agents.client import AcpcClient, QueryResult
from agents.tracking import SeatView
from protocol.errors import ParseError
from protocol.gamedef import load_game
from protocol.rangecodec import RangeAnswer
from protocol.rangequery import QueryErrorReply
from protocol.rules import Action
from protocol.wire import parse_matchstate

GAME = load_game("leduc")


class Asker(AcpcClient):
    """Asks the opponent's fold probability before each decision; raises if it is high."""

    def __init__(self) -> None:
        super().__init__(GAME)
        self.results: list[QueryResult] = []

    async def choose_action(self, view: SeatView) -> Action:  # type: ignore[override]
        """Ask about folding to a raise, then decide from the answer."""
        ahead = parse_matchstate(view.line, GAME)
        result = await self.ask(ahead, [Action.FOLD, Action.CALL])
        self.results.append(result)
        if isinstance(result, RangeAnswer) and result.rows[0].max() > 0.5:
            return Action.RAISE
        return Action.CALL


def connected(client: AcpcClient) -> StringTransport:
    """Attach to an in-memory transport, version line cleared."""
    transport = StringTransport()
    client.makeConnection(transport)
    transport.clear()
    return transport


def written(transport: StringTransport) -> list[str]:
    """Lines written so far (and clear)."""
    lines = transport.value().decode().split("\r\n")[:-1]
    transport.clear()
    return lines


def test_ask_sends_a_blanked_query_and_resolves_with_the_checked_answer() -> None:
    """ask() writes QUERY with hole slots empty; the RANGE with its qid fires the Deferred."""
    client = Asker()
    transport = connected(client)
    state = parse_matchstate("MATCHSTATE:0:4:r:Ks|", GAME)
    results: list[Any] = []
    client.ask(state, [Action.FOLD, Action.CALL]).addCallback(results.append)
    client.ask(state, [Action.CALL]).addCallback(results.append)
    assert written(transport) == ["QUERY:q1:0:4:r:|:f,c", "QUERY:q2:0:4:r:|:c"]
    # Answers may come back in any order: they are matched by qid.
    client.dataReceived(b"QUERYERROR:q2:not the current hand\r\n")
    client.dataReceived(b"RANGE:q1:c=0,0,1,1,1,1;f=1,1,0,0,0,0\r\n")
    assert results[0] == QueryErrorReply("q2", "not the current hand")
    assert isinstance(results[1], RangeAnswer) and results[1].qid == "q1"


@pytest.mark.parametrize(
    "answer",
    [
        b"RANGE:q1:f=1,1,1,1,1,1;c=1,0,0,0,0,0",  # sums to 2 for hand 0
        b"RANGE:q1:f=1,1,1",  # too few values, and c missing
        b"RANGE:q1:f=x",  # not a number
    ],
)
def test_an_invalid_answer_fails_the_deferred_with_parse_error(answer: bytes) -> None:
    """A malformed or rule-breaking RANGE fails the waiting Deferred with ParseError."""
    client = Asker()
    connected(client)
    failures: list[Failure] = []
    client.ask(
        parse_matchstate("MATCHSTATE:0:4:r:Ks|", GAME), [Action.FOLD, Action.CALL]
    ).addErrback(failures.append)
    client.dataReceived(answer + b"\r\n")
    assert failures and failures[0].check(ParseError)


def test_decision_waits_for_the_answer_then_replies_once() -> None:
    """An async choose_action sends its reply only after the RANGE arrives, and uses it."""
    client = Asker()
    transport = connected(client)
    client.dataReceived(b"MATCHSTATE:0:4::Ks|\r\n")
    assert written(transport) == ["QUERY:q1:0:4::|:f,c"]
    client.dataReceived(b"RANGE:q1:f=0.9,0.9,0.9,0.9,0.9,0.9;c=0.1,0.1,0.1,0.1,0.1,0.1\r\n")
    assert written(transport) == ["MATCHSTATE:0:4::Ks|:r"]
    assert client.actions_sent == 1


def test_a_refused_query_still_leads_to_an_action() -> None:
    """QUERYERROR is data, not a failure: the agent decides without the answer."""
    client = Asker()
    transport = connected(client)
    client.dataReceived(b"MATCHSTATE:0:4::Ks|\r\n")
    written(transport)
    client.dataReceived(b"QUERYERROR:q1:opponent does not answer queries\r\n")
    assert written(transport) == ["MATCHSTATE:0:4::Ks|:c"]


def test_pending_queries_fail_when_the_connection_closes() -> None:
    """Queries still out when the dealer hangs up fail with the connection's reason."""
    client = Asker()
    connected(client)
    failures: list[Failure] = []
    client.ask(parse_matchstate("MATCHSTATE:0:4::Ks|", GAME), [Action.CALL]).addErrback(
        failures.append
    )
    client.connectionLost(Failure(ConnectionDone()))
    assert failures and failures[0].check(ConnectionDone)


def test_unasked_answers_are_ignored() -> None:
    """A RANGE for an unknown qid changes nothing and writes nothing."""
    client = Asker()
    transport = connected(client)
    client.dataReceived(b"RANGE:zz:c=1,1,1,1,1,1\r\n")
    assert transport.value() == b""


def test_a_failing_decision_calls() -> None:
    """A decision Deferred that fails makes the client call rather than hang."""

    class Broken(AcpcClient):
        def choose_action(self, view: SeatView) -> defer.Deferred[Action]:
            return defer.fail(RuntimeError("boom"))

    client = Broken(GAME)
    transport = connected(client)
    client.dataReceived(b"MATCHSTATE:0:4::Ks|\r\n")
    assert written(transport) == ["MATCHSTATE:0:4::Ks|:c"]


def test_an_agent_and_an_sdk_bot_understand_each_other() -> None:
    """Queries an agent asks, relayed verbatim to a call-raise bot, come back as the bot's true range."""
    import numpy as np

    from agents.bots import call_raise
    from agents.client import StrategyBot

    agent = Asker()
    agent_out = connected(agent)
    bot = StrategyBot(GAME, call_raise, np.random.default_rng(0))
    bot_out = connected(bot)
    results: list[Any] = []
    state = parse_matchstate("MATCHSTATE:1:4:r:|Ks", GAME)
    agent.ask(state, [Action.FOLD, Action.CALL, Action.RAISE]).addCallback(results.append)
    agent.ask(parse_matchstate("MATCHSTATE:1:4:rrc/:|Ks/Qh", GAME), [Action.CALL]).addCallback(
        results.append
    )
    for line in written(agent_out):
        bot.dataReceived(line.encode() + b"\r\n")
    for line in written(bot_out):
        agent.dataReceived(line.encode() + b"\r\n")
    first, second = results
    assert isinstance(first, RangeAnswer) and first.rows.tolist() == [
        [0.0] * 6,
        [0.5] * 6,
        [0.5] * 6,
    ]
    assert isinstance(second, QueryErrorReply) and "not to act" in second.reason

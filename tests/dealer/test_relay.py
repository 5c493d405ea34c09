"""The dealer's range-query relay, in memory: refusals, bot failures, pipelining, the paused clock.

Match: no-limit hold'em, seed 42 (hand 0: seat 1 = position 1 holds 2hAc and
acts first, seat 0 = position 0 holds 7d3d; transcripts/nl1000.trace). Seat 0
is the asking agent, seat 1 the bot, which announces ``# range-query 1``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from twisted.internet import defer

from dealer import relay as relay_module
from dealer.config import LARGEST_MAX_LINE
from dealer.relay import QueryFailed
from protocol.rules import Action
from protocol.wire import parse_matchstate
from tests.dealer.harness import MemoryTable, make_config

N = 1326
def table(in_tmp: Path, announce: bool = True, **overrides: Any) -> MemoryTable:
    """Both seats connected and past VERSION; the bot (seat 1) is to act in hand 0."""
    config = make_config("rq", hands=2, seed=42, names=("agent", "bot"), **overrides)
    t = MemoryTable(config)
    t.feed(0, "VERSION:2.0.0\r\n")
    t.feed(1, "VERSION:2.0.0\r\n" + ("# range-query 1\r\n" if announce else ""))
    assert t.take(1) == ["MATCHSTATE:1:0::|2hAc"]
    assert t.take(0) == ["MATCHSTATE:0:0::7d3d|"]
    return t


def rows(*values: str) -> str:
    """A RANGE body: one ``action=`` row of N copies of a value per pair."""
    parts = []
    for pair in values:
        token, value = pair.split("=")
        parts.append(f"{token}=" + ",".join([value] * N))
    return ";".join(parts)


def refusal(t: MemoryTable, query: str) -> str:
    """Send ``query`` from the agent; the QUERYERROR reason it gets at once (nothing forwarded)."""
    t.feed(0, query + "\r\n")
    assert t.take(1) == []
    (line,) = t.take(0)
    tag, qid, reason = line.split(":", 2)
    assert (tag, qid) == ("QUERYERROR", "a")
    return reason


def bot_calls(t: MemoryTable) -> None:
    """The bot limps: betting 'c', the agent (position 0) to act."""
    t.feed(1, "MATCHSTATE:1:0::|2hAc:c\r\n")
    assert t.take(0) == ["MATCHSTATE:0:0:c:7d3d|"]
    t.take(1)


def test_a_valid_query_is_forwarded_and_its_answer_relayed(in_tmp: Path) -> None:
    """A query at the bot's decision point goes out with a dealer qid; the answer comes back under the agent's."""
    t = table(in_tmp)
    t.feed(0, "QUERY:a:1:0::|:f,c\r\n")
    (forwarded,) = t.take(1)
    assert forwarded.startswith("QUERY:") and forwarded.endswith(":1:0::|:f,c")
    dealer_qid = forwarded.split(":")[1]
    assert dealer_qid != "a"
    hooked: list[Any] = []
    t.match.relay.answer_hooks.append(lambda *args: hooked.append(args))
    t.feed(1, f"RANGE:{dealer_qid}:{rows('f=0', 'c=0.25')}\r\n")
    assert t.take(0) == [f"RANGE:a:{rows('f=0', 'c=0.25')}"]
    ((state, actions, values),) = hooked  # results reuse relayed answers
    assert state.body() == "1:0::|" and actions == (Action.FOLD, Action.CALL)
    assert values[1].tolist() == [0.25] * N
    counts = t.match.relay.counts
    assert (counts[1].answered, counts[1].errors, counts[0].relayed) == (1, 0, 1)


@pytest.mark.parametrize(
    ("setup", "query", "reason"),
    [
        (None, "QUERY:a:1:5::|:c", relay_module.NOT_CURRENT_HAND),
        ("call", "QUERY:a:1:0:r300:|:f,c", relay_module.NOT_ON_LINE),
        ("call", "QUERY:a:1:0:c:|:f,c", relay_module.NOT_OPPONENT_TO_ACT),
        ("call", "QUERY:a:1:0:cr300r900:|:f,c", relay_module.TOO_FAR_AHEAD),
        (None, "QUERY:a:1:0:c:|:f,c", relay_module.NOT_YOUR_STEP),
        ("call", "QUERY:a:1:0:cc/:|/2c3c4c:c", relay_module.STEP_ENDS_ROUND),
        (None, "QUERY:a:1:0::|2hAc:c", relay_module.HOLE_CARDS_SHOWN),
        (None, "QUERY:a:0:0::|:c", relay_module.OWN_POSITION),
    ],
    ids=["wrong-hand", "not-a-prefix", "opponent-not-to-act", "two-steps-past",
         "step-not-by-agent", "step-ends-round", "hole-cards", "own-position"],
)
def test_refusal_rules(in_tmp: Path, setup: str | None, query: str, reason: str) -> None:
    """Each broken rule is refused at once with its QUERYERROR reason, and counted."""
    t = table(in_tmp)
    if setup == "call":
        bot_calls(t)
    assert refusal(t, query) == reason
    assert t.match.relay.counts[0].refused == 1


def test_one_step_past_by_the_agent_is_accepted(in_tmp: Path) -> None:
    """The played betting plus the agent's own raise, with the bot then to act, is forwarded."""
    t = table(in_tmp)
    bot_calls(t)
    t.feed(0, "QUERY:a:1:0:cr300:|:f\r\n")
    (forwarded,) = t.take(1)
    assert forwarded.endswith(":1:0:cr300:|:f")


def test_wrong_board_is_refused(in_tmp: Path) -> None:
    """A flop query naming other flop cards than the ones dealt is refused."""
    t = table(in_tmp)
    bot_calls(t)
    t.feed(0, "MATCHSTATE:0:0:c:7d3d|:c\r\n")  # the agent checks: flop, agent first
    (flop_state,) = t.take(0)
    t.take(1)
    board = parse_matchstate(flop_state, t.match.game).board
    assert len(board[1]) == 3
    t.feed(0, flop_state + ":c\r\n")  # agent checks; the bot is to act at 'cc/c'
    t.take(0)
    t.take(1)
    good = flop_state.split(":")[4].split("/", 1)[1]
    wrong = "2c3c4c" if "2c" not in good else "5d6d7h"
    assert refusal(t, f"QUERY:a:1:0:cc/c:|/{wrong}:f,c") == relay_module.WRONG_BOARD
    t.feed(0, f"QUERY:b:1:0:cc/c:|/{good}:f,c\r\n")
    assert len(t.take(1)) == 1  # the right board is forwarded


def test_opponent_that_does_not_answer_queries_is_refused(in_tmp: Path) -> None:
    """Without an announcement (or --queryable) the bot is never queried."""
    t = table(in_tmp, announce=False)
    assert refusal(t, "QUERY:a:1:0::|:c") == relay_module.NOT_QUERYABLE


def test_queryable_option_marks_a_seat_and_raises_its_line_limit(in_tmp: Path) -> None:
    """--queryable NAME makes a seat queryable without announcing; its line limit becomes 1 MiB."""
    t = table(in_tmp, announce=False, queryable=("bot",))
    assert t.protocols[1].MAX_LENGTH == LARGEST_MAX_LINE
    assert t.protocols[0].MAX_LENGTH < LARGEST_MAX_LINE
    t.feed(0, "QUERY:a:1:0::|:c\r\n")
    assert len(t.take(1)) == 1


def test_malformed_query_is_refused(in_tmp: Path) -> None:
    """An unreadable query gets QUERYERROR 'malformed query: …'."""
    t = table(in_tmp)
    assert refusal(t, "QUERY:a:1:0::|:x7").startswith("malformed query")


@pytest.mark.parametrize(
    ("answer", "cause"),
    [
        ("RANGE:{qid}:garbage", "malformed"),
        ("RANGE:{qid}:c=" + ",".join(["1"] * (N - 1)), "malformed"),
        ("RANGE:{qid}:c=" + ",".join(["1.5"] * N), "malformed"),
        ("RANGE:{qid}:c=1;f=1", "malformed"),
        ("RANGEERROR:{qid}:cannot", "range_error"),
    ],
    ids=["garbage", "too-few-numbers", "above-one", "wrong-actions", "rangeerror"],
)
def test_bad_bot_answers_become_queryerror_and_the_match_goes_on(
    in_tmp: Path, answer: str, cause: str
) -> None:
    """A bad answer is a QUERYERROR for the agent and a count against the bot; play continues."""
    t = table(in_tmp)
    t.feed(0, "QUERY:a:1:0::|:c\r\n")
    (forwarded,) = t.take(1)
    t.feed(1, answer.format(qid=forwarded.split(":")[1]) + "\r\n")
    (line,) = t.take(0)
    assert line.startswith("QUERYERROR:a:")
    assert t.match.relay.counts[1].failed == {cause: 1}
    t.feed(1, "MATCHSTATE:1:0::|2hAc:f\r\n")
    assert t.take(0)[0] == "MATCHSTATE:0:0:f:7d3d|"


def test_no_answer_in_time_is_a_queryerror_and_a_late_answer_is_dropped(in_tmp: Path) -> None:
    """t_query passes without an answer: QUERYERROR; the answer arriving later goes nowhere."""
    t = table(in_tmp, t_query_ms=2000)
    t.feed(0, "QUERY:a:1:0::|:c\r\n")
    (forwarded,) = t.take(1)
    t.clock.advance(1.9)
    assert t.take(0) == []
    t.clock.advance(0.2)
    (line,) = t.take(0)
    assert line.startswith("QUERYERROR:a:") and "t_query" in line
    t.feed(1, f"RANGE:{forwarded.split(':')[1]}:{rows('c=1')}\r\n")
    assert t.take(0) == []
    assert t.match.relay.counts[1].failed == {"timeout": 1}
    t.feed(1, "MATCHSTATE:1:0::|2hAc:f\r\n")
    assert t.take(0)[0] == "MATCHSTATE:0:0:f:7d3d|"


def test_pipelined_queries_are_answered_in_order(in_tmp: Path) -> None:
    """Three queries out before any answer; answers relayed under each agent qid, in order."""
    t = table(in_tmp)
    bot_calls(t)
    t.feed(0, "QUERY:x:1:0::|:c\r\nQUERY:y:1:0:cr300:|:f\r\nQUERY:z:1:0:cr20000:|:f\r\n")
    forwarded = t.take(1)
    assert len(forwarded) == 3
    qids = [line.split(":")[1] for line in forwarded]
    assert len(set(qids)) == 3
    t.feed(1, "".join(f"RANGE:{q}:{rows(('c' if i == 0 else 'f') + '=0.' + str(i))}\r\n"
                      for i, q in enumerate(qids)))
    relayed = t.take(0)
    assert [line.split(":")[1] for line in relayed] == ["x", "y", "z"]
    assert relayed[1].endswith("f=" + ",".join(["0.1"] * N))


def test_the_agents_clock_pauses_while_its_queries_are_out(in_tmp: Path) -> None:
    """3 s waiting for the bot's answer, with t_response 1 s: the agent is charged only its own time."""
    t = table(in_tmp, t_response_ms=1000, t_query_ms=5000)
    bot_calls(t)  # the agent (seat 0) is to act
    t.clock.advance(0.25)
    t.feed(0, "QUERY:a:1:0:cr300:|:f\r\n")
    (forwarded,) = t.take(1)
    t.clock.advance(3.0)
    t.feed(1, f"RANGE:{forwarded.split(':')[1]}:{rows('f=1')}\r\n")
    t.clock.advance(0.5)
    t.feed(0, "MATCHSTATE:0:0:c:7d3d|:c\r\n")
    assert t.take(1)[0].startswith("MATCHSTATE:1:0:cc/:|2hAc/")
    assert t.match.seats[0].match_time == pytest.approx(0.75)
    assert not t.done.called  # no timeout: the match is still going


def test_the_clock_still_runs_out_without_queries(in_tmp: Path) -> None:
    """Control for the test above: the same wait without a query out ends the match."""
    t = table(in_tmp, t_response_ms=1000)
    bot_calls(t)
    t.clock.advance(1.01)
    assert t.done.called
    assert t.done.result.cause == "timeout"


@pytest.mark.parametrize("valid", [True, False])
def test_ask_seat_returns_the_checked_array_or_raises(in_tmp: Path, valid: bool) -> None:
    """Match.ask_seat: rows in the asked order as float64 (N,), or QueryFailed for a RANGEERROR."""
    t = table(in_tmp)
    state = parse_matchstate("MATCHSTATE:1:0::|2hAc", t.match.game)
    results: list[Any] = []
    asked = defer.ensureDeferred(t.match.ask_seat(1, state, [Action.FOLD, Action.CALL]))
    asked.addBoth(results.append)
    (forwarded,) = t.take(1)
    assert forwarded.endswith(":1:0::|:f,c")  # hole cards blanked
    qid = forwarded.split(":")[1]
    if valid:
        t.feed(1, f"RANGE:{qid}:{rows('c=0.75', 'f=0.25')}\r\n")
        (values,) = results
        assert values.dtype == np.float64 and values.shape == (2, N)
        assert values[0].tolist() == [0.25] * N and values[1].tolist() == [0.75] * N
    else:
        t.feed(1, f"RANGEERROR:{qid}:no\r\n")
        (failure,) = results
        assert failure.check(QueryFailed)
        assert failure.value.cause == "range_error"


def test_ask_all_sends_every_query_in_one_write_and_gives_each_its_answer_or_failure(in_tmp: Path) -> None:
    """QueryRelay.ask_all (the dealer's IO queries of a hand): one write to the bot; once every
    query is settled, per query in order its checked rows or the QueryFailed it failed with."""
    t = table(in_tmp)
    state = parse_matchstate("MATCHSTATE:1:0::|2hAc", t.match.game)
    writes: list[bytes] = []
    transport = t.transports[1]
    original = transport.write
    transport.write = lambda data: (writes.append(data), original(data))[1]  # type: ignore[method-assign]
    results: list[Any] = []
    t.match.relay.ask_all(1, [(state, [Action.CALL]), (state, [Action.FOLD]), (state, [Action.FOLD, Action.CALL])]
                          ).addCallback(results.append)
    assert len(writes) == 1
    qids = [line.split(":")[1] for line in t.take(1)]
    assert len(qids) == 3 and len(set(qids)) == 3
    t.feed(1, f"RANGE:{qids[0]}:{rows('c=0.75')}\r\n")
    t.feed(1, f"RANGEERROR:{qids[1]}:no\r\n")
    assert results == []  # not before every query is settled
    t.feed(1, f"RANGE:{qids[2]}:{rows('f=0.25', 'c=0.75')}\r\n")
    (replies,) = results
    assert replies[0].shape == (1, N) and replies[0][0].tolist() == [0.75] * N
    assert isinstance(replies[1], QueryFailed) and replies[1].cause == "range_error"
    assert replies[2].shape == (2, N) and replies[2][0].tolist() == [0.25] * N


def test_ask_seat_refuses_a_seat_that_does_not_answer_queries(in_tmp: Path) -> None:
    """Asking a plain ACPC bot fails at once with cause not_queryable; nothing is sent."""
    t = table(in_tmp, announce=False)
    state = parse_matchstate("MATCHSTATE:1:0::|2hAc", t.match.game)
    results: list[Any] = []
    defer.ensureDeferred(t.match.ask_seat(1, state, [Action.CALL])).addBoth(results.append)
    assert results[0].value.cause == "not_queryable"
    assert t.take(1) == []


def test_query_events_reach_subscribers(in_tmp: Path) -> None:
    """Subscribers see 'query' (with latency) for an answer and 'query_error' for a failure."""
    t = table(in_tmp)
    from dealer.events import EventRecord, QueryAnswered

    seen: list[EventRecord] = []
    t.match.events.subscribe(seen.append)
    t.feed(0, "QUERY:a:1:0::|:c\r\nQUERY:b:1:0::|:c\r\n")
    first, second = (line.split(":")[1] for line in t.take(1))
    t.clock.advance(0.5)
    t.feed(1, f"RANGE:{first}:{rows('c=1')}\r\nRANGEERROR:{second}:no\r\n")
    names = [e.EVENT for e in seen if e.EVENT.startswith("query")]
    assert names == ["query", "query_error"]
    assert isinstance(seen[0], QueryAnswered)
    assert seen[0].seconds == pytest.approx(0.5) and seen[0].seat == 2


def test_a_v1_bot_is_sent_nothing_new_and_its_answers_pass_verbatim(in_tmp: Path) -> None:
    """'# range-query 1' (or no list): version 1, no reply line; the decimal answer is relayed as sent."""
    t = table(in_tmp)
    assert t.match.relay.versions[1] == 1
    t.feed(0, "# range-answers 1 2\r\nQUERY:a:1:0::|:c\r\n")
    (forwarded,) = t.take(1)  # the query only: no version line went to the bot
    assert forwarded.startswith("QUERY:")
    t.feed(1, f"RANGE:{forwarded.split(':')[1]}:{rows('c=0.5')}\r\n")
    assert t.take(0) == [f"RANGE:a:{rows('c=0.5')}"]


def test_a_v2_bot_is_told_version_2_and_its_bytes_reach_a_v2_agent_verbatim(in_tmp: Path) -> None:
    """'# range-query 1 2' gets '# range-query-version 2'; a v2 answer is checked once and forwarded as sent."""
    from protocol.rangecodec import encode_answer

    t = table(in_tmp, announce=False)
    t.feed(1, "# range-query 1 2\r\n")
    assert t.take(1) == ["# range-query-version 2"]
    assert t.match.relay.versions[1] == 2 and t.match.relay.queryable[1]
    t.feed(0, "# range-answers 1 2\r\nQUERY:a:1:0::|:f,c\r\n")
    (forwarded,) = t.take(1)
    qid = forwarded.split(":")[1]
    values = np.zeros((2, N))
    values[1, ::2] = 0.75
    answer = encode_answer(qid, [Action.FOLD, Action.CALL], values, 2)
    assert ":2:f=K0.0;c=F" in answer
    t.feed(1, answer + "\r\n")
    assert t.take(0) == [answer.replace(f"RANGE:{qid}:", "RANGE:a:", 1)]
    assert t.match.relay.counts[1].answered == 1 and t.match.relay.counts[1].check_seconds > 0


def test_a_v2_answer_reaches_a_v1_agent_in_decimals(in_tmp: Path) -> None:
    """An agent that did not say it reads version 2 gets the same numbers as a version-1 line."""
    from protocol.rangecodec import decode_answer, encode_answer

    t = table(in_tmp, announce=False)
    t.feed(1, "# range-query 2\r\n")
    t.take(1)
    t.feed(0, "QUERY:a:1:0::|:c\r\n")
    (forwarded,) = t.take(1)
    values = np.linspace(0.0, 1.0, N)[None, :]
    t.feed(1, encode_answer(forwarded.split(":")[1], [Action.CALL], values, 2, precision="float64") + "\r\n")
    (relayed,) = t.take(0)
    answer = decode_answer(relayed, [Action.CALL], N)
    assert answer.version == 1 and answer.qid == "a"
    np.testing.assert_allclose(answer.rows, values, atol=5e-13)


@pytest.mark.parametrize("line", ["# range-query 3", "# range-query two"])
def test_an_announcement_without_a_common_version_leaves_the_seat_unqueryable(
    in_tmp: Path, line: str
) -> None:
    """A bot announcing only versions the dealer does not speak is not queried (and is told nothing)."""
    t = table(in_tmp, announce=False)
    t.feed(1, line + "\r\n")
    assert t.take(1) == []
    assert not t.match.relay.queryable[1]
    assert refusal(t, "QUERY:a:1:0::|:c") == relay_module.NOT_QUERYABLE


@pytest.mark.parametrize(
    "answer",
    ["RANGE:{qid}:2:c=F" + "A" * 10, "RANGE:{qid}:2:c=F!" + "A" * 1767, "RANGE:{qid}:3:c=K1",
     "RANGE:{qid}:2:c=K-0.5", "RANGE:{qid}:2:c=KNaN"],
    ids=["wrong-length", "bad-base64", "unknown-version", "negative", "nan"],
)
def test_bad_v2_answers_become_queryerror(in_tmp: Path, answer: str) -> None:
    """Malformed version-2 answers are refused like malformed decimals: QUERYERROR, counted 'malformed'."""
    t = table(in_tmp, announce=False)
    t.feed(1, "# range-query 1 2\r\n")
    t.take(1)
    t.feed(0, "QUERY:a:1:0::|:c\r\n")
    (forwarded,) = t.take(1)
    t.feed(1, answer.format(qid=forwarded.split(":")[1]) + "\r\n")
    (line,) = t.take(0)
    assert line.startswith("QUERYERROR:a:malformed answer")
    assert t.match.relay.counts[1].failed == {"malformed": 1}


def test_busy_time_counts_pipelined_queries_once(in_tmp: Path) -> None:
    """Two queries out together for 0.5 s: 'seconds' sums both latencies, 'busy_seconds' counts 0.5 s."""
    t = table(in_tmp)
    t.feed(0, "QUERY:a:1:0::|:c\r\nQUERY:b:1:0::|:f\r\n")
    first, second = (line.split(":")[1] for line in t.take(1))
    t.clock.advance(0.25)
    t.feed(1, f"RANGE:{first}:{rows('c=1')}\r\n")
    t.clock.advance(0.25)
    t.feed(1, f"RANGE:{second}:{rows('f=0')}\r\n")
    counts = t.match.relay.counts[1]
    assert counts.seconds == pytest.approx(0.75) and counts.busy_seconds == pytest.approx(0.5)


def test_the_sampling_error_part_is_relayed_and_counted(in_tmp: Path) -> None:
    """An answer's 'se=' part reaches a v2 agent verbatim and a v1 agent re-encoded; the relay counts it per seat."""
    from protocol.rangecodec import decode_answer, encode_answer

    t = table(in_tmp, announce=False)
    t.feed(1, "# range-query 1 2\r\n")
    t.take(1)
    values = np.full((1, N), 0.5)
    for agent_reads, error in (("# range-answers 1 2\r\n", (0.05, 0.02)), ("", (0.125, 0.0625))):
        t.match.relay.reads[0] = (1,)
        t.feed(0, f"{agent_reads}QUERY:a:1:0::|:c\r\n")
        (forwarded,) = t.take(1)
        answer = encode_answer(forwarded.split(":")[1], [Action.CALL], values, 2, sampling_error=error)
        t.feed(1, answer + "\r\n")
        (relayed,) = t.take(0)
        decoded = decode_answer(relayed, [Action.CALL], N)
        assert decoded.sampling_error == error and decoded.rows.tolist() == values.tolist()
        assert decoded.version == (2 if agent_reads else 1)
    counts = t.match.relay.counts[1]
    assert (counts.answered, counts.sampled) == (2, 2)
    assert counts.to_dict()["largest_standard_error"] == 0.125
    assert counts.to_dict()["mean_standard_error"] == (0.02 + 0.0625) / 2


@pytest.mark.parametrize("part", ["se=0.1", "se=0.1,0.2", "se=2,1", "se=NaN,0", "se=0.1,x"])
def test_a_bad_sampling_error_part_is_a_malformed_answer(in_tmp: Path, part: str) -> None:
    """The 'se=' part is checked like the rest: two decimals, 0 <= mean <= largest <= 1."""
    t = table(in_tmp, announce=False)
    t.feed(1, "# range-query 1 2\r\n")
    t.take(1)
    t.feed(0, "QUERY:a:1:0::|:c\r\n")
    (forwarded,) = t.take(1)
    t.feed(1, f"RANGE:{forwarded.split(':')[1]}:2:c=K1;{part}\r\n")
    (line,) = t.take(0)
    assert line.startswith("QUERYERROR:a:malformed answer") and "sampling error" in line


@pytest.mark.parametrize(
    ("asked", "answer", "relayed"),
    [
        ("f,c,r", ("f=0.2", "c=0.3", "r=0.5"), True),  # a whole strategy
        ("f,c,r", ("f=0.333333", "c=0.333333", "r=0.333333"), True),  # six decimals
        ("f,c,r", ("f=0.2", "c=0.2", "r=0.2"), False),  # 0.6: not a strategy
        ("f,c", ("f=0.2", "c=0.2"), True),  # not every action asked: less than 1 is fine
    ],
    ids=["whole", "six-decimals", "short", "partial-query"],
)
def test_an_answer_over_every_legal_action_must_be_a_whole_strategy(
        in_tmp: Path, asked: str, answer: tuple[str, ...], relayed: bool) -> None:
    """Limit hold'em: asked every legal action, a bot whose probabilities of a hand sum to
    less than 1 answers with something that is not a strategy (such a liar moved AIVAT by
    a thousand mbb/g unflagged); the answer fails, counted against the bot."""
    config = make_config("rq", game="limit", hands=2, seed=42, names=("agent", "bot"))
    t = MemoryTable(config)
    t.feed(0, "VERSION:2.0.0\r\n")
    t.feed(1, "VERSION:2.0.0\r\n# range-query 1\r\n")
    assert t.take(1) == ["MATCHSTATE:1:0::|2hAc"]
    t.take(0)
    _assert_whole_strategy_check(t, f"QUERY:a:1:0::|:{asked}", answer, relayed)


def _assert_whole_strategy_check(t: MemoryTable, query: str, answer: tuple[str, ...], relayed: bool) -> None:
    """The agent sends ``query``, the bot answers ``answer``: relayed as it is, or refused as
    not a strategy (and counted against the bot)."""
    t.feed(0, query + "\r\n")
    (forwarded,) = t.take(1)
    t.feed(1, f"RANGE:{forwarded.split(':')[1]}:{rows(*answer)}\r\n")
    (line,) = t.take(0)
    if relayed:
        assert line == f"RANGE:a:{rows(*answer)}"
        assert t.match.relay.counts[1].errors == 0
    else:
        assert line.startswith("QUERYERROR:a:") and "< 1 over every legal action" in line, line
        assert t.match.relay.counts[1].errors == 1


@pytest.mark.parametrize(
    ("betting", "answer", "relayed"),
    [
        ("cr20000", ("f=0.2", "c=0.8"), True),  # facing all-in: fold and call are the whole strategy
        ("cr20000", ("f=0.2", "c=0.2"), False),  # 0.4: not a strategy
        ("cr300", ("f=0.2", "c=0.2"), True),  # a raise is legal: fold and call are not everything
    ],
    ids=["all-in-whole", "all-in-short", "raise-legal"],
)
def test_a_no_limit_answer_over_every_legal_action_must_be_a_whole_strategy(
        in_tmp: Path, betting: str, answer: tuple[str, ...], relayed: bool) -> None:
    """No-limit: facing an all-in, no raise is legal and fold, call are every legal action,
    as in a limit game; an answer short of 1 there is not a strategy. The check was for
    limit games only, so a liar's 0.4 there was relayed (and fed AIVAT)."""
    t = table(in_tmp)
    bot_calls(t)
    _assert_whole_strategy_check(t, f"QUERY:a:1:0:{betting}:|:f,c", answer, relayed)

"""Issue 33, round three: variants of the attacks that the bench did not have (bench/bench_hostile.py
runs each beside an honest match; docs/reliability.md has the table).

Each test plays the attack against an in-memory table (a clock of our own, no sockets), so it runs
in milliseconds and asserts the bound, not a time.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from acpc_lbr.runtime.exit_codes import EXIT_OK
from dealer.budget import BotBudget
from protocol.wire import MatchState
from tests.dealer.harness import MemoryTable, make_config
from tests.dealer.test_hostile import candidate, ended, started


def test_a_version_line_sent_a_byte_a_second_is_cut_off_at_the_handshake_limit(in_tmp: Path) -> None:
    """A connection that sends its VERSION line a byte a second keeps the deadline it got when it
    connected: each byte does not buy it more time. It is closed at ``handshake_s``, named, while
    a real bot that connects meanwhile gets the seat and the match starts."""
    stderr = io.StringIO()
    t = MemoryTable(make_config("m", hands=3, seed=42, budget=BotBudget(handshake_s=2.0)), stderr=stderr)
    drip, drip_transport = candidate(t, 0, "10.0.0.9")
    for byte in b"VERSION:2.0":  # 11 bytes, one a second: past the limit before the line ends
        if drip_transport.disconnecting:
            break
        drip.dataReceived(bytes([byte]))
        t.clock.advance(1.0)
    assert drip_transport.disconnecting and not drip.accepted
    assert t.clock.seconds() <= 3.0  # closed at the limit, not at the end of the line
    assert "connection 10.0.0.9:40000 to seat 1 (s1) sent no VERSION line within 2 s" in stderr.getvalue()
    real = [candidate(t, seat, "10.0.1.1") for seat in (0, 1)]  # the real bots (the harness's own
    for protocol, _ in real:  # connections, silent, were cut off at the limit too)
        protocol.dataReceived(b"VERSION:2.0.0\r\n")
    assert all(protocol.accepted for protocol, _ in real) and not t.done.called
    assert real[0][1].value().startswith(b"MATCHSTATE:0:0:")  # the match started


def test_a_dripping_squatter_that_reconnects_never_holds_the_seat(in_tmp: Path) -> None:
    """The drip again and again, each time it is cut off: the seat stays free for the first valid
    VERSION, and the match's start timeout, not the drip, decides when waiting ends, quoting it."""
    stderr = io.StringIO()
    config = make_config("m", hands=3, seed=42, start_timeout_ms=9000, budget=BotBudget(handshake_s=2.0))
    t = MemoryTable(config, stderr=stderr)
    t.feed(0, "VERSION:2.0.0\r\n")  # seat 1 is taken; seat 2 sees only the drip (and the harness's silent one)
    for _ in range(5):
        drip, transport = candidate(t, 1, "10.0.0.9")
        drip.dataReceived(b"VERS")
        t.clock.advance(2.0)
        assert transport.disconnecting and not drip.accepted
    t.clock.advance(0.5)  # 10.5 s: past the start timeout
    result = ended(t)
    assert "10.0.0.9:40000 to seat 2" in result.message and "sent no VERSION line within 2 s" in result.message
    assert result.message.count("\n") == 0


def test_refused_queries_just_under_both_budgets_play_on_a_few_logged_per_hand(in_tmp: Path) -> None:
    """63 refused queries before each action (of 64 a decision), at most 255 a hand (of 256), for a
    whole match: the match plays to its end; each hand logs 5 refusals and one count of the rest,
    so the events file grows by a few lines a hand, not 255; and every refusal past the fifth of a
    hand holds the agent's next line back (its own time, not the process's)."""
    budget = BotBudget()
    t = started(events=True, hands=6)
    sent: dict[int, int] = {}

    def reply(seat: int, line: str, view: MatchState) -> str:
        extra = 0
        if seat == 1:
            extra = min(budget.max_unusable_decision - 1, budget.max_unusable_hand - 1 - sent.get(view.hand_id, 0))
            sent[view.hand_id] = sent.get(view.hand_id, 0) + extra
        return f"QUERY:a1:1:{view.hand_id + 1000}::|:c\r\n" * extra + f"{line}:c\r\n"

    t.play_turns(reply, 1000)
    result = ended(t)
    assert result.exit_code == EXIT_OK and len(sent) == 6
    # Four decisions of 63 a hand (always-call): 252, within 4 of the hand's budget too.
    assert min(sent.values()) == 4 * (budget.max_unusable_decision - 1) > budget.max_unusable_hand - 5
    events = [json.loads(line) for line in Path("m.events.jsonl").read_text().splitlines()]
    assert sum(e["event"] == "query_refused" for e in events) == budget.logged_per_hand * len(sent)
    counted = {e["hand"]: e["count"] for e in events if e["event"] == "lines_not_logged"}
    assert counted == {hand: count - budget.logged_per_hand for hand, count in sent.items()}
    held = sum(count - budget.logged_per_hand for count in sent.values()) * budget.unusable_line_hold_s
    assert t.clock.seconds() >= held * 0.99


def test_a_seat_that_never_reads_and_queries_under_the_budget_ends_at_t_response(in_tmp: Path) -> None:
    """Never reading, a seat cannot act; a refused query every 40 ms (about 50 a decision, under the
    64) neither pauses its clock nor buys it time: the match ends at ``t_response``, charged to it,
    in one line; what the dealer sent it meanwhile is its state and one answer per query."""
    # No hold after each refusal (it would only slow the seat's own reading; the test is about the clock).
    t = started(t_response_ms=2000, budget=BotBudget(unusable_line_hold_s=0.0))
    for _ in range(60):
        if t.done.called:
            break
        t.feed(1, "QUERY:a1:1:999999::|:c\r\n")
        t.clock.advance(0.04)
    result = ended(t)
    assert 1.99 <= t.clock.seconds() <= 2.05
    assert (result.seat, result.exit_code != EXIT_OK) == (1, True) and "seat 2" in result.message
    assert "timeout 2" in result.message
    assert result.message.count("\n") == 0
    sent = t.take(1)
    assert sum(line.startswith("QUERYERROR:") for line in sent) <= 51 and len(sent) <= 53

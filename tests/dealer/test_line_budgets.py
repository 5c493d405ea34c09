"""A bot's per-line costs are budgeted (dealer/budget.py ``LineCosts``; issue 33).

Refused queries, ignored replies and unsolicited answers count against a
per-decision and a per-hand budget; past the first few of a kind in a hand
they are counted, not logged one by one (one ``lines_not_logged`` event per
kind and hand); and the time a bot spends answering range queries is bounded
per match (``query_seconds_match``). In memory, on a fake clock.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from acpc_lbr.runtime.exit_codes import EXIT_OK
from dealer.budget import BotBudget, Charge, LineCosts, LineKind
from tests.dealer.harness import MemoryTable, make_config
from tests.dealer.test_hostile import ended, started
from tests.dealer.test_hostile_io import IoTable, answer, row


def test_line_costs_log_a_few_per_hand_then_count_then_end() -> None:
    """Five of a kind per hand are logged, the rest counted and reported once the hand is over;
    one line past a budget is OVER, naming the budget."""
    costs = LineCosts(BotBudget(max_unusable_decision=8, max_unusable_hand=12, logged_per_hand=5))
    charges = [costs.charge(LineKind.REPLY_IGNORED, 0, 3) for _ in range(7)]
    assert charges == [Charge.LOG] * 5 + [Charge.COUNT] * 2
    assert costs.charge(LineKind.QUERY_REFUSED, 0, 4) == Charge.LOG  # a new decision
    assert costs.not_logged() == []  # hand 0 is not over yet
    assert costs.charge(LineKind.QUERY_REFUSED, 1, 0) == Charge.LOG
    assert costs.not_logged() == [(0, LineKind.REPLY_IGNORED, 2)]
    assert [costs.charge(LineKind.QUERY_REFUSED, 1, 0) for _ in range(8)][-1] == Charge.OVER
    assert "9 unusable lines at one decision of hand 1" in costs.over()
    assert "limit max_unusable_decision 8" in costs.over()
    for decision in range(3):
        costs.charge(LineKind.REPLY_IGNORED, 2, decision)
    assert [costs.charge(LineKind.ANSWER_DROPPED, 2, None) for _ in range(10)][-1] == Charge.OVER
    assert "13 unusable lines in hand 2" in costs.over() and "max_unusable_hand 12" in costs.over()


def test_a_flood_of_refused_queries_ends_the_agents_match_at_the_decision_budget(in_tmp: Path) -> None:
    """Before: 20,000 refused QUERY lines per turn made 20 hands take 111 s, 63 s of CPU and a 180 MB
    events file. Now the 65th refusal of a decision ends the agent's match, and the file stays small."""
    t = started(events=True)
    t.feed(1, "QUERY:a1:1:0::|:c\r\n" * 20_000)
    result = ended(t)
    # Past the first five, each refusal held its next line back (the 65th ended it): the flood
    # cost the agent's own time, not the process's.
    assert t.clock.seconds() == pytest.approx(59 * BotBudget().unusable_line_hold_s)
    assert (result.cause, result.seat) == ("over_budget", 1)
    assert "65 unusable lines at one decision of hand 0" in result.message
    assert "limit max_unusable_decision 64" in result.message
    events = [json.loads(line) for line in Path("m.events.jsonl").read_text().splitlines()]
    assert sum(e["event"] == "query_refused" for e in events) == BotBudget().logged_per_hand
    (gathered,) = [e for e in events if e["event"] == "lines_not_logged"]
    assert (gathered["seat"], gathered["hand"], gathered["kind"], gathered["count"]) == (2, 0, "query_refused", 60)
    assert Path("m.events.jsonl").stat().st_size < 20_000
    assert sum(line.startswith("QUERYERROR:") for line in t.take(1)) == 64


def _play_with_junk(t: MemoryTable, junk: int, rounds: int = 10_000) -> None:
    """Both seats call; seat 2 sends ``junk`` unparsable lines before each of its replies."""
    t.play_turns(lambda seat, line, view: ("junk\r\n" * junk if seat == 1 else "") + f"{line}:c\r\n", rounds)


def test_ignored_lines_within_the_budgets_are_logged_a_few_per_hand(in_tmp: Path) -> None:
    """Before: 99 ignored lines before each reply wrote 69 MB of events and 17 MB of stderr per
    1,000 hands. Now, per hand, five are logged (event and WARNING line) and the rest counted in
    one lines_not_logged event; play goes on while the hand's total stays within its budget."""
    stderr = io.StringIO()
    t = MemoryTable(make_config("m", hands=6, seed=42, events=True), stderr=stderr)
    t.feed(0, "VERSION:2.0.0\r\n")
    t.feed(1, "VERSION:2.0.0\r\n")
    _play_with_junk(t, junk=20)
    result = ended(t)
    assert result.exit_code == EXIT_OK and result.ignored[1] > 6 * 20
    events = [json.loads(line) for line in Path("m.events.jsonl").read_text().splitlines()]
    ignored = [e for e in events if e["event"] == "reply_ignored"]
    gathered = [e for e in events if e["event"] == "lines_not_logged"]
    assert len(ignored) == 6 * BotBudget().logged_per_hand
    assert sorted(e["hand"] for e in gathered) == list(range(6))
    assert sum(e["count"] for e in gathered) + len(ignored) == result.ignored[1]
    assert stderr.getvalue().count("WARNING: bad state format") == 6 * BotBudget().logged_per_hand


def test_ignored_lines_past_the_hand_budget_end_the_match(in_tmp: Path) -> None:
    """99 ignored lines before each reply (under --max_ignored 100): the hand budget ends it."""
    t = started()
    _play_with_junk(t, junk=99)
    result = ended(t)
    assert (result.cause, result.seat) == ("over_budget", 1)
    assert "unusable lines in hand 0" in result.message and "max_unusable_hand 256" in result.message


def test_a_bot_slow_on_every_query_is_bounded_per_match(in_tmp: Path) -> None:
    """Before: a bot answering every query just inside t_query made each hand take that long,
    with nothing to stop it (25 hours for 10,000 hands). Now its query time is budgeted per match."""
    table = IoTable(hands=50, budget=BotBudget(query_seconds_match=2.0))
    batches = 0
    while (queries := table.play_until_queried()):
        batches += 1
        table.t.clock.advance(0.45)  # just inside the 0.5 s t_query
        table.t.feed(1, "".join(answer(q, row(k)) for k, q in enumerate(queries)))
        if table.done:
            break
    result = table.result()
    assert (result.cause, result.seat) == ("over_budget", 1)
    assert "answering range queries in this match (limit query_seconds_match 2 s" in result.message
    assert batches == 5  # 5 x 0.45 s > 2 s

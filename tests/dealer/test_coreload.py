"""dealer.coreload: the compute core's first load runs in a worker thread, once per process and
game, and a match with a queryable opponent awaits it instead of loading it on the reactor thread."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from twisted.internet import defer

from dealer import coreload
from dealer.results import MatchResults, worker_threads
from protocol.deal import DealSource
from protocol.gamedef import load_game
from protocol.rules import Action, State
from protocol.wire import log_state_for

HOLDEM = load_game("holdem.limit.2p.reverse_blinds")


class _Runner:
    """A worker pool that runs nothing until told: the load's Deferred, and how often it was asked."""

    def __init__(self) -> None:
        self.calls: list[Callable[[], Any]] = []
        self.loading: defer.Deferred[Any] = defer.Deferred()

    def __call__(self, function: Callable[[], Any]) -> defer.Deferred[Any]:
        self.calls.append(function)
        return self.loading


@pytest.fixture(autouse=True)
def no_loads_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(coreload, "_LOADS", {})


def _result(waiting: defer.Deferred[Any]) -> Any:
    """The Deferred's result so far (kept in it), or "still waiting"."""
    got: list[Any] = []

    def keep(result: Any) -> Any:
        got.append(result)
        return result

    waiting.addBoth(keep)
    return got[0] if got else "still waiting"


def test_one_load_serves_every_waiter_before_and_after_it_ends() -> None:
    runner = _Runner()
    first, second = (coreload.load_equity_function(HOLDEM, runner) for _ in range(2))
    assert len(runner.calls) == 1 and _result(first) == _result(second) == "still waiting"

    def function(hero: Sequence[int], board: Sequence[int]) -> Any:
        return None

    runner.loading.callback(function)
    assert _result(first) is function and _result(second) is function
    assert _result(coreload.load_equity_function(HOLDEM, runner)) is function
    assert len(runner.calls) == 1


def test_a_failed_load_fails_every_waiter() -> None:
    runner = _Runner()
    before = coreload.load_equity_function(HOLDEM, runner)
    runner.loading.errback(ImportError("no numba"))
    after = coreload.load_equity_function(HOLDEM, runner)
    for waiting in (before, after):
        failure = _result(waiting)
        assert failure.check(ImportError)
        waiting.addErrback(lambda failure: failure.trap(ImportError))  # handled: not logged


def test_the_load_uses_every_streets_kernel_with_a_short_switch_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loader thread gives the GIL back every half millisecond while it loads, and the
    interval is restored after; each street's kernel (and the preflop table) is used once."""
    seen: list[tuple[int, float]] = []

    def equity(hero: Sequence[int], board: Sequence[int]) -> Any:
        seen.append((len(board), sys.getswitchinterval()))
        return np.zeros(1326)

    monkeypatch.setattr(coreload, "equity_function", lambda game: equity)
    before = sys.getswitchinterval()
    assert coreload._warm_equity_function(HOLDEM) is equity
    assert sorted(length for length, _ in seen) == [0, 3, 4, 5]
    assert all(interval == coreload.LOAD_SWITCH_INTERVAL < before for _, interval in seen)
    assert sys.getswitchinterval() == before


def _showdown(hand_id: int) -> tuple[Any, list[int], State]:
    """A checked-down hold'em hand to showdown, as the dealer logs it."""
    deal = DealSource(7).deal(HOLDEM)
    state = State(HOLDEM, hand_id)
    while not state.finished:
        state.apply(Action.CALL)
    values = [float(v) for v in state.values(deal.hole, deal.board_cards)]
    return log_state_for(state, deal, values, ("lbr", "bot")), [0, 1], state


def test_a_match_with_a_queryable_opponent_awaits_the_threaded_load(tmp_path: Path) -> None:
    """The hand's accounting waits for the worker thread's load (it is not done where it is
    used), then computes the hand's IO with the function loaded there."""
    async def ask(seat: int, questions: Any) -> list[Any]:
        return [np.full((len(actions), 1326), 1.0 / len(actions)) for _, actions in questions]

    runner = _Runner()
    results = MatchResults(HOLDEM, "m", "lbr", query_log=tmp_path / "m.queries", ask=ask,
                           keep_outcomes=True, load_in_thread=runner)
    record, seat_of, state = _showdown(0)
    accounting = defer.ensureDeferred(results.after_hand(record, seat_of, state))
    assert len(runner.calls) == 1 and not accounting.called  # waits for the load
    from acpc_lbr.lbr import equity_function

    used: list[int] = []

    def counted(hero: Sequence[int], board: Sequence[int]) -> Any:
        used.append(len(board))
        return equity_function(HOLDEM)(hero, board)

    runner.loading.callback(counted)
    assert accounting.called and results.accountant.equity is counted
    (outcome,) = results.outcomes
    assert used and outcome.io_chips is not None
    results.close()


def test_the_dealers_reactor_lends_its_threads_and_a_test_clock_none() -> None:
    from twisted.internet import reactor, task

    assert worker_threads(task.Clock()) is None
    assert worker_threads(reactor) is not None  # type: ignore[arg-type]

"""The compute core's first load, in a worker thread: no match of the process waits for it.

A dealer whose opponent answers range queries computes each hand's IO and
AIVAT values with LBR's equity function of the game. In hold'em that is the
compute core's (numba): its first use imports numba and loads the compiled
kernels, about a second of CPU (more with a cold cache). Done where it is
first used, on the reactor thread, that second stops every match of the
process, however polite their bots; a bench saw the honest match beside a
range-answering bot lose a third of its hands per second to it
(docs/reliability.md). Here the load runs in one of the reactor's worker
threads, once per process and game; the match that needs it awaits it (its
accounting lags a hand or so, as it does for a slow answer), and the others
play on. While the load runs, the interpreter switches threads every
:data:`LOAD_SWITCH_INTERVAL` seconds instead of every 5 ms, so the reactor
thread, which wakes for every line, is not held for a whole interval each
time the loader has the GIL.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

from twisted.internet import defer
from twisted.python.failure import Failure

from acpc_lbr.lbr import EquityFunction, equity_function
from protocol.gamedef import GameDef

#: Runs a function in a worker thread; its Deferred fires on the reactor thread with the result.
ThreadRunner = Callable[[Callable[[], Any]], "defer.Deferred[Any]"]

#: The interpreter's thread switch interval while the compute core loads (seconds).
LOAD_SWITCH_INTERVAL = 0.0005

#: Cards of one hand on each street, to load each street's kernel (and the preflop table).
_WARM_HERO = (0, 5)
_WARM_BOARDS: tuple[tuple[int, ...], ...] = ((), (10, 20, 30), (10, 20, 30, 40), (10, 20, 30, 40, 50))


def load_equity_function(game: GameDef, run_in_thread: ThreadRunner) -> defer.Deferred[EquityFunction]:
    """LBR's equity function of ``game``, its kernels loaded, from a worker thread (``run_in_thread``);
    the same load for every caller of the process, started by the first."""
    load = _LOADS.get(game)
    if load is None:
        load = _LOADS[game] = _Load(run_in_thread(lambda: _warm_equity_function(game)))
    return load.wait()


class _Load:
    """One load: its result for every waiter, before or after it is done."""

    def __init__(self, loading: defer.Deferred[EquityFunction]) -> None:
        self.function: EquityFunction | None = None
        self.failure: Failure | None = None
        self.waiting: list[defer.Deferred[EquityFunction]] = []
        loading.addCallbacks(self._loaded, self._failed)

    def wait(self) -> defer.Deferred[EquityFunction]:
        if self.function is not None:
            return defer.succeed(self.function)
        if self.failure is not None:
            return defer.fail(self.failure)
        waiter: defer.Deferred[EquityFunction] = defer.Deferred()
        self.waiting.append(waiter)
        return waiter

    def _loaded(self, function: EquityFunction) -> None:
        self.function = function
        waiting, self.waiting = self.waiting, []
        for waiter in waiting:
            waiter.callback(function)

    def _failed(self, failure: Failure) -> None:
        self.failure = failure
        waiting, self.waiting = self.waiting, []
        for waiter in waiting:
            waiter.errback(failure)


_LOADS: dict[GameDef, _Load] = {}
_SWITCH_LOCK = threading.Lock()


def _warm_equity_function(game: GameDef) -> EquityFunction:
    """(In the worker thread.) The equity function, each street's kernel used once."""
    with _SWITCH_LOCK:
        previous = sys.getswitchinterval()
        sys.setswitchinterval(min(previous, LOAD_SWITCH_INTERVAL))
        try:
            function = equity_function(game)
            for board in _WARM_BOARDS:
                function(_WARM_HERO, board)
            return function
        finally:
            sys.setswitchinterval(previous)

"""A function's work, counted rather than timed: the measure of the linear-time tests.

Bot text reaches parsers and framers, so each must cost time linear in its
input. Timing that on a shared machine is noise (a CPU-time ratio once failed
CI at 93 against a bound of 96), so these tests count instead, exactly and
repeatably:

* **steps**: Python bytecode instructions executed plus calls made (to Python
  and to C functions). Every Python-level loop shows here.
* **allocated bytes**: summed instruction by instruction, as the most memory
  held during the instruction less what was held before it (tracemalloc).
  Work a single C call does in proportion to its input copies or builds
  something, and shows here: a slice, a join, ``text = char + text``.

What neither sees is work inside one C call that allocates nothing (a
backtracking regex): the parsers of bot text use only patterns without nested
repetition for that reason. A module of the compiled group runs no bytecode, so its
source is loaded afresh with :func:`source_module` and counted there: the
compiled build is the same algorithm.

tracemalloc counts the whole process, so every count runs in a forked child, where the
counting thread is the only thread: a thread an earlier test left behind on the same test
worker (two CI runs saw one churn 50 MB a second through every count) cannot add to it.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import pickle
import signal
import sys
import traceback
import tracemalloc
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parent.parent

Measured = TypeVar("Measured")


@dataclass(frozen=True)
class Work:
    """What one call of a function cost (see the module's docstring)."""

    steps: int
    allocated: int

    def within(self, small: Work, factor: int, slack: float = 3.0) -> bool:
        """True when this cost, of an input ``factor`` times larger than ``small``'s, is at most
        ``slack * factor`` times ``small`` in both counts (linear, with room for constants)."""
        bound = slack * factor
        return self.steps <= bound * max(small.steps, 1) and self.allocated <= bound * max(small.allocated, 1)


def work_of(function: Callable[[], object], repeats: int = 3) -> Work:
    """Count the steps and allocated bytes of ``function()`` (its result is dropped), in a
    forked child where no other thread runs (the module's docstring). It is called once
    before, untraced, so that what a first call does once (an import, a cache filled) is not
    counted; the counting's own allocations are taken off. Of ``repeats`` counts the fewest
    bytes is kept (a thread ``function`` starts itself may allocate beside it); the steps
    are per thread (sys.settrace) and the same each time."""
    return in_a_fork(lambda: _work_here(function, repeats))


def _work_here(function: Callable[[], object], repeats: int) -> Work:
    function()
    counts = [_counted(function) for _ in range(repeats)]
    steps = min(steps for steps, _ in counts)
    allocated = min(allocated for _, allocated in counts)
    return Work(steps, max(allocated - round(_counting_bytes_per_step() * steps), 0))


def in_a_fork(run: Callable[[], Measured]) -> Measured:
    """``run()`` in a forked child of this process, its result (picklable) sent back through a
    pipe; where the system cannot fork, here. For any process-wide measurement (tracemalloc,
    the garbage collector's objects) that another thread must not reach."""
    if not hasattr(os, "fork"):
        return run()
    read_end, write_end = os.pipe()
    with warnings.catch_warnings():  # 3.12 warns of forking a process with threads: the child runs none
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: only this thread exists here
        try:
            os.close(read_end)
            try:
                payload = pickle.dumps((True, run()))
            except BaseException:
                payload = pickle.dumps((False, traceback.format_exc()))
            with os.fdopen(write_end, "wb") as pipe:
                pipe.write(payload)
        finally:
            os._exit(0)  # no exit handlers, no flushed buffers of the parent's: they are the parent's
    os.close(write_end)
    data = b""
    try:
        with os.fdopen(read_end, "rb") as pipe:
            data = pipe.read()
    finally:
        if not data:  # interrupted here (a test's timeout), or the child died: it goes too
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _, status = os.waitpid(pid, 0)
    if not data:
        raise AssertionError(f"the counting child died (wait status {status}) before it answered")
    try:
        ok, value = pickle.loads(data)
    except Exception as error:  # noqa: BLE001 (said as the helper's own failure)
        raise AssertionError(f"the counting child's answer does not read: {error!r}") from error
    if not ok:
        raise AssertionError(f"the counted function failed in the counting child:\n{value}")
    return value  # type: ignore[no-any-return]


@functools.cache
def _counting_bytes_per_step() -> float:
    """What counting one step allocates itself (the counters' new ints, about 64 bytes):
    measured on two loops that allocate nothing, so that constants cancel."""

    def loop(n: int) -> Callable[[], object]:
        def run() -> None:
            step = 0
            while step < n:  # small ints: cached, nothing allocated
                step += 1

        return run

    (steps_1, bytes_1), (steps_2, bytes_2) = _counted(loop(100)), _counted(loop(200))
    return (bytes_2 - bytes_1) / (steps_2 - steps_1)


def _counted(function: Callable[[], object]) -> tuple[int, int]:
    """(steps, allocated bytes) of ``function()``, the counting's own allocations included."""
    steps = 0
    allocated = 0
    held = 0

    def count() -> None:
        nonlocal steps, allocated, held
        current, peak = tracemalloc.get_traced_memory()
        allocated += max(peak - held, 0)
        tracemalloc.reset_peak()
        held = current
        steps += 1

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        count()
        return local

    def call(frame: FrameType, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes = True
        count()
        return local

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "c_call":
            count()

    tracemalloc.start()
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    sys.setprofile(profile)
    sys.settrace(call)
    try:
        function()
    finally:
        sys.settrace(None)
        sys.setprofile(None)
        tracemalloc.stop()
    return steps, allocated


@functools.cache
def source_module(name: str) -> ModuleType:
    """A fresh copy of module ``name`` run from its source (``protocol.wire`` ->
    protocol/wire.py), whatever the build: the compiled group's modules run no bytecode,
    so their loops are counted here. The copy imports the installed modules it uses."""
    path = ROOT.joinpath(*name.split(".")).with_suffix(".py")
    spec = importlib.util.spec_from_file_location(f"_source_of_{name.replace('.', '_')}", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while they are made
    spec.loader.exec_module(module)
    return module

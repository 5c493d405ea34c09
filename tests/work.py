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
"""

from __future__ import annotations

import functools
import importlib.util
import sys
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


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
    """Count the steps and allocated bytes of ``function()`` (its result is dropped). It is
    called once before, untraced, so that what a first call does once (an import, a cache
    filled) is not counted; the counting's own allocations are taken off.

    tracemalloc sees every thread of the process, and a full test run leaves threads behind
    (Twisted's pool, a reader of a child's pipe): their allocations can land inside a count
    (one CI run saw 880 KB where the call allocates 204 KB). They only ever add, so the
    fewest bytes over ``repeats`` counts is the call's own; the steps are per thread
    (sys.settrace) and the same each time."""
    function()
    counts = [_counted(function) for _ in range(repeats)]
    steps = min(steps for steps, _ in counts)
    allocated = min(allocated for _, allocated in counts)
    return Work(steps, max(allocated - round(_counting_bytes_per_step() * steps), 0))


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

"""Processes we start die with us: a process group per child, and death with the parent.

``evaluate`` starts programs it does not control (``--opponent-cmd`` bots, the
probe adapter and its copies of the bot, the mirrored seating's process), and
those may start helpers of their own. Each child we start:

* leads a process group of its own, which its own children join unless they
  leave it on purpose; so one ``killpg`` reaches a bot and every helper it
  forked (:func:`kill_group`), however it was started;
* gets ``SIGKILL`` from the kernel when the process that started it dies
  (``PR_SET_PDEATHSIG``, Linux), even if that one is killed with ``SIGKILL``
  and can clean nothing up.

Twisted's ``spawnProcess`` takes no ``preexec_fn``, so its children start
through a small launcher (:func:`grouped_argv`: ``python -S -c``, a few tens of
milliseconds) that does both and then ``exec``\\s the command, keeping the
pid: the child's pid is its group's id. ``subprocess.Popen`` children take
:func:`child_setup` as their ``preexec_fn`` instead.

Every group started here is remembered (:data:`STARTED`), so a command that is
stopped (SIGINT, SIGTERM) can end them all before it exits
(:func:`end_groups`).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence

#: ``prctl`` option: the signal a process gets when its parent dies (Linux).
PR_SET_PDEATHSIG = 1

#: The launcher of :func:`grouped_argv`: a group of its own, SIGKILL with the parent, then the
#: command (argv[1]: the parent's pid, to catch a parent that died before PDEATHSIG was set).
_LAUNCHER = """\
import os, sys
os.setpgid(0, 0)
try:
    import ctypes
    ctypes.CDLL(None).prctl(1, 9)
except (OSError, AttributeError):
    pass
if os.getppid() != int(sys.argv[1]):
    os._exit(1)
try:
    os.execvp(sys.argv[2], sys.argv[2:])
except OSError as error:
    sys.stderr.write(f"cannot run {sys.argv[2]}: {error.strerror}\\n")
    os._exit(127)
"""

#: The process groups this process started (their leaders' pids).
STARTED: set[int] = set()


def _prctl() -> Callable[[int, int], int] | None:
    """libc's ``prctl`` (None off Linux). Resolved in the parent: a forked child must not load libraries."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        function: Callable[[int, int], int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return function


def die_with_parent(signum: int = signal.SIGKILL) -> None:
    """In the calling process: receive ``signum`` when its parent dies (Linux; elsewhere nothing)."""
    prctl = _prctl()
    if prctl is not None:
        prctl(PR_SET_PDEATHSIG, signum)


def child_setup(new_group: bool = True, signum: int = signal.SIGKILL) -> Callable[[], None] | None:
    """A ``preexec_fn`` for ``subprocess.Popen``: a group of its own (``new_group``) and ``signum``
    when this process dies (SIGTERM for a child of ours that then ends its own children).
    None where processes have no groups (Windows)."""
    if os.name != "posix":
        return None
    prctl = _prctl()

    def setup() -> None:
        if new_group:
            os.setpgid(0, 0)
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, signum)

    return setup


def grouped_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` run through the launcher: the same program, the same pid, in a group of its own
    and killed when this process dies (unchanged where processes have no groups)."""
    if os.name != "posix":
        return list(argv)
    return [sys.executable, "-S", "-c", _LAUNCHER, str(os.getpid()), *argv]


def started(pid: int) -> None:
    """Remember a group this process started (its leader's pid)."""
    STARTED.add(pid)


def kill_group(pid: int, signum: int) -> None:
    """Send ``signum`` to the group led by ``pid`` (a group with nobody left: nothing)."""
    if os.name != "posix":
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signum)


def group_alive(pid: int) -> bool:
    """Whether anyone of the group led by ``pid`` still runs."""
    if os.name != "posix":
        return False
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def end_groups(grace: float = 2.0) -> None:
    """End every group started here: SIGTERM, then SIGKILL to what is left after ``grace`` seconds.

    Called when a command is stopped, after its own orderly stop; it blocks for
    at most ``grace`` seconds (only while a group still runs).
    """
    groups = sorted(STARTED)
    for pid in groups:
        kill_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        for pid in groups:  # a leader that exited is reaped here: a zombie would count as alive
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
        if not any(group_alive(pid) for pid in groups):
            break
        time.sleep(0.02)
    for pid in groups:
        kill_group(pid, signal.SIGKILL)
    STARTED.clear()

"""Processes we start die with us: a process group per child, and death with the parent.

``evaluate`` starts programs it does not control (``--opponent-cmd`` bots, the
probe adapter and its copies of the bot, the mirrored seating's process), and
those may start helpers of their own. Each child we start:

* leads a process group of its own, which its own children join unless they
  leave it on purpose; so one ``killpg`` reaches a bot and every helper it
  forked (:func:`kill_group`), however it was started;
* dies, with its whole group, when the process that started it dies
  (``PR_SET_PDEATHSIG``, Linux), even if that one is killed with ``SIGKILL``
  and can clean nothing up.

Twisted's ``spawnProcess`` takes no ``preexec_fn``, so its children start
through a small launcher (:func:`grouped_argv`: ``python -S -c``, a few tens of
milliseconds and a small process per child) that leads the group, runs the
command in it, exits with its status, and kills the whole group if the parent
dies: the pid Twisted sees is the group's id. ``subprocess.Popen`` children take
:func:`child_setup` as their ``preexec_fn`` instead.

Every group started here is remembered (:data:`STARTED`), so a command that is
stopped (SIGINT, SIGTERM) can end them all before it exits
(:func:`end_groups`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence

#: ``prctl`` option: the signal a process gets when its parent dies (Linux).
PR_SET_PDEATHSIG = 1

#: The launcher of :func:`grouped_argv` (argv[1]: the parent's pid; the command follows). It
#: leads a new process group, forks the command into it and waits for it, exiting with its
#: status. When the parent dies, the kernel sends it SIGUSR2 (PR_SET_PDEATHSIG) and it kills
#: its whole group, helpers included: so nothing outlives even a parent killed with SIGKILL.
#: It ignores SIGINT and SIGTERM itself (a stop sent to the group is for the command), and
#: gives the command the default disposition of every signal it changed, as a spawn does
#: (Python ignores SIGPIPE and SIGXFSZ).
_LAUNCHER = """\
import os, signal, sys
os.setpgid(0, 0)
def end(signum, frame):
    os.killpg(0, signal.SIGKILL)
signal.signal(signal.SIGUSR2, end)
try:
    import ctypes
    ctypes.CDLL(None).prctl(1, signal.SIGUSR2)
except (OSError, AttributeError):
    pass
if os.getppid() != int(sys.argv[1]):
    end(0, None)
for name in ("SIGINT", "SIGTERM"):
    signal.signal(getattr(signal, name), signal.SIG_IGN)
child = os.fork()
if child == 0:
    for name in ("SIGINT", "SIGTERM", "SIGUSR2", "SIGPIPE", "SIGXFSZ"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    except OSError as error:
        sys.stderr.write(f"cannot run {sys.argv[2]}: {error.strerror}\\n")
    os._exit(127)
_, status = os.waitpid(child, 0)
if os.WIFSIGNALED(status):
    signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
    os.kill(os.getpid(), os.WTERMSIG(status))
os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)
"""

#: The process groups this process started (their leaders' pids).
STARTED: set[int] = set()


def _prctl() -> Callable[[int, int], int] | None:
    """libc's ``prctl`` (None off Linux). Resolved in the parent: a forked child must not load libraries."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # lazy: only a process that starts children, or dies with its parent, needs it

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
    """``argv`` run through the launcher: the same program and exit status, in a group of its own
    (led by the launcher, whose pid is the group's id), all of it killed when this process dies
    (unchanged where processes have no groups)."""
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

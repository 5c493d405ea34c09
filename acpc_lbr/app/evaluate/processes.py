"""The processes ``acpc-lbr evaluate`` starts: an ``--opponent-cmd`` program per seating.

Each runs in a process group of its own, its output is kept (up to
:data:`OPPONENT_LOG_LIMIT`) in ``opponentN.out``, and its last lines are quoted
when a match ends early (:func:`program_said`). :class:`EvaluateReactor` says
what an evaluation needs of its Twisted reactor.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from twisted.internet import defer, protocol
from twisted.internet.error import ProcessExitedAlready
from twisted.python.failure import Failure

from acpc_lbr.runtime import children
from acpc_lbr.runtime.exit_codes import (
    EXIT_FAILED,
)
from agents.client import BotFactory
from dealer.events import Cause
from dealer.interfaces import MatchReactor
from dealer.match import Match, MatchAborted


class _Process(Protocol):
    """A spawned process (``IProcessTransport``): its pid, what stops it, its pipes' close."""

    pid: int | None

    def signalProcess(self, signalID: str | int) -> None: ...

    def loseConnection(self) -> None: ...


class EvaluateReactor(MatchReactor, Protocol):
    """What an evaluation needs of its Twisted reactor (its ``IReactor*`` interfaces; a
    Protocol because zope interfaces are opaque to mypy): a match's, and more."""

    def connectTCP(self, host: str, port: int, factory: BotFactory) -> object: ...

    def spawnProcess(self, processProtocol: protocol.ProcessProtocol, executable: str,
                     args: list[str], env: dict[str, str]) -> _Process: ...

    def addSystemEventTrigger(self, phase: str, eventType: str, callable: Callable[..., object],
                              *args: object) -> object: ...

    def removeSystemEventTrigger(self, triggerID: object) -> None: ...

    def callWhenRunning(self, callable: Callable[..., object], *args: object) -> object: ...

    def run(self) -> None: ...

    def stop(self) -> None: ...


#: How much of an ``--opponent-cmd`` program's output (stdout and stderr) its log keeps.
OPPONENT_LOG_LIMIT = 16 << 20


class OpponentProcess:
    """One external opponent process (``--opponent-cmd``), in a process group of its own.

    ``ended`` fires when the program itself exits, not when its output pipes
    close: a helper it forked may hold them open for as long as it likes, and
    the matches' end must not wait for it (:mod:`acpc_lbr.runtime.children`). Whatever
    is left of its group then is killed (:meth:`finish`).
    """

    def __init__(self, reactor: EvaluateReactor, argv: list[str], log_path: Path) -> None:
        self.ended: defer.Deferred[int] = defer.Deferred()
        self.command = shlex.join(argv)
        #: The match's seat the program plays (set by the caller).
        self.seat: Any = None
        self.log = open(log_path, "wb")  # noqa: SIM115 (closed when the process ends)
        self.logged = 0
        outer = self

        class _Watcher(protocol.ProcessProtocol):
            def outReceived(self, data: bytes) -> None:
                outer.write_log(data)

            def errReceived(self, data: bytes) -> None:
                outer.write_log(data)

            def processExited(self, reason: Failure) -> None:
                code = getattr(reason.value, "exitCode", None)
                if not outer.ended.called:
                    outer.ended.callback(int(code or 0))

            def processEnded(self, reason: Failure) -> None:
                outer.log.close()

        launched = children.grouped_argv(argv)
        self.transport = reactor.spawnProcess(_Watcher(), launched[0], launched, env=dict(os.environ))
        self.pid: int | None = self.transport.pid
        if self.pid is not None:
            children.started(self.pid)

    def write_log(self, data: bytes) -> None:
        """Keep the first :data:`OPPONENT_LOG_LIMIT` bytes of the program's output; drop the rest.

        Each piece is flushed to the file as it comes: an evaluation that is
        interrupted stops before the process ends (and the log is closed), and
        the program's output must be on disk all the same (the interpreter's
        shutdown collects nothing: ``acpc_lbr.cli.run``)."""
        room = OPPONENT_LOG_LIMIT - self.logged
        if room >= 0 and not self.log.closed:
            self.log.write(data[:room])
            if len(data) > room:
                self.log.write(b"\n# acpc-lbr: output beyond %d bytes dropped\n" % OPPONENT_LOG_LIMIT)
            self.log.flush()
        self.logged += len(data)

    async def finish(self, reactor: EvaluateReactor, grace: float) -> None:
        """Wait for the program to exit (its group is killed after ``grace`` seconds), then kill
        what is left of its group and stop reading its pipes."""
        if not self.ended.called:
            timer = reactor.callLater(grace, self._kill)
            await self.ended
            if timer.active():
                timer.cancel()
        self._kill()
        if self.pid is not None:
            children.STARTED.discard(self.pid)
        with contextlib.suppress(Exception):  # pipes already closed
            self.transport.loseConnection()

    def connected(self) -> bool:
        """Whether the program's seat ever connected (a seat never set: assumed so)."""
        return self.seat is None or bool(self.seat.connected)

    def stop(self) -> None:
        """Ask the program and its helpers to end (SIGTERM to its group)."""
        self._signal(signal.SIGTERM, "TERM")

    def _kill(self) -> None:
        self._signal(signal.SIGKILL, "KILL")

    def _signal(self, signum: int, name: str) -> None:
        if self.pid is not None and os.name == "posix":
            children.kill_group(self.pid, signum)
            return
        with contextlib.suppress(ProcessExitedAlready, OSError):
            self.transport.signalProcess(name)


def exited_before_connecting(status: int, match: Match, seat: int, command: str, log: Path) -> int:
    """An opponent program that exits before its seat is connected ends the match now,
    saying so, with its last words (else the match would wait out its start timeout and blame LBR)."""
    if not match.seats[seat].connected:
        said = program_said(log)
        match.abort(MatchAborted(
            Cause.STARTUP,
            f"the opponent program exited (status {status}) before it connected: {command} "
            + (f"(it said: {said}; its output: {log})" if said else f"(its output: {log})"),
            seat, EXIT_FAILED,
        ))
    return status


#: How much of a program's output :func:`program_said` quotes: its last lines, each cut short.
SAID_LINES, SAID_LINE_CHARS = 3, 300


def program_said(log: Path) -> str | None:
    r"""The last lines a program wrote (its output file's last 8 KiB), joined by ' / ', each cut
    to :data:`SAID_LINE_CHARS` with unprintable characters as '?' (a terminal escape from a bot
    stays text); None when it wrote nothing or the file is unreadable.

    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile("wb", suffix=".out") as f:
    ...     _ = f.write(b"starting\nERROR: bad game \x1b[31m(kuhn)\nbye\n"); f.flush()
    ...     program_said(Path(f.name))
    "'starting' / 'ERROR: bad game ?[31m(kuhn)' / 'bye'"
    """
    try:
        with open(log, "rb") as file:
            file.seek(0, os.SEEK_END)
            file.seek(max(file.tell() - 8192, 0))
            text = file.read().decode("utf-8", errors="replace")
    except OSError:
        return None
    lines = [line.strip() for line in text.splitlines() if line.strip()][-SAID_LINES:]
    if not lines:
        return None
    clean = ["".join(c if c.isprintable() else "?" for c in line[:SAID_LINE_CHARS]) for line in lines]
    return " / ".join(repr(line) for line in clean)

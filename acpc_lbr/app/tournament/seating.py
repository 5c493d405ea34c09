"""One seating of one duplicate match: a dealer process and fresh entrant processes.

:func:`play_seating` starts ``acpc-lbr dealer`` for one ACPC match, reads its
port line, starts one new process per seat (no memory carries over from
another match, as in the ACPC), waits for the match to end and says what
happened: played to the end, or a :class:`Fault` charged to an entrant (or
to nobody, when the dealer itself failed).

Everything it starts is a process group of its own and is killed, group and
all, before it returns: a bot that forks a helper leaves nothing behind. What
leaves the group (``setsid``, a double fork) still carries the seating's tag in
its environment and is found and killed by it (:func:`kill_tagged`). A
bot's output goes to ``NAME.out`` in the seating's folder and is capped
(:data:`OUTPUT_LIMIT`); past the cap the bot is stopped and charged. The
function is synchronous and its arguments are plain data, so it runs as well
in a thread of the driver as on a Dask worker.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Literal

#: What went wrong, by kind (the ACPC's and OpenSpiel's referees' categories).
FaultKind = Literal["crash", "never_connected", "timeout", "invalid_action", "disconnect",
                    "protocol_error", "dealer"]
FAULT_KINDS: tuple[FaultKind, ...] = ("crash", "never_connected", "timeout", "invalid_action",
                                      "disconnect", "protocol_error", "dealer")

#: The dealer's causes of an early end (dealer/events.py ``Cause``), as fault kinds.
CAUSE_KINDS: dict[str, FaultKind] = {
    "disconnect": "disconnect", "timeout": "timeout", "out_of_time": "timeout", "idle": "timeout",
    "garbage": "protocol_error", "line_too_long": "protocol_error", "over_budget": "protocol_error",
    "not_reading": "protocol_error", "no_connection": "never_connected",
}
#: Bytes of output a bot may write in one seating before it is stopped (stdout and stderr together).
OUTPUT_LIMIT = 32 * 1024 * 1024
#: Seconds the driver waits for the dealer's port line.
PORTS_TIMEOUT = 60.0
#: Seconds a bot may take to exit after its dealer ended, before its group is killed.
EXIT_GRACE = 3.0
#: Seconds the dealer gets to notice a seat whose process exited, before it is stopped.
NOTICE_GRACE = 2.0
POLL_SECONDS = 0.02
#: Set in the environment of every process a seating starts: its folder (see :func:`kill_tagged`).
TAG_VARIABLE = "ACPC_LBR_TOURNAMENT_SEATING"
#: Set by the driver on SIGINT, SIGTERM or SIGHUP: every seating in this process stops its processes at once.
STOP = threading.Event()


@dataclass(frozen=True)
class SeatingJob:
    """Everything one seating needs, as plain data.

    Attributes:
        folder: this attempt's folder (made afresh).
        game_arg: the game for the dealer and for ``acpc-lbr play``.
        game_file: the path ``{game}`` stands for.
        names: player names in seat order.
        commands: each seat's command line, with ``{port}`` still to fill.
        hands, seed: the match.
        dealer_options: time limits and such.
        python: the interpreter of ``acpc-lbr``.
        output_limit: bytes of output allowed per bot.
    """

    folder: str
    game_arg: str
    names: tuple[str, ...]
    commands: tuple[tuple[str, ...], ...]
    hands: int
    seed: int
    dealer_options: tuple[str, ...]
    python: str = sys.executable
    output_limit: int = OUTPUT_LIMIT


@dataclass(frozen=True)
class Fault:
    """One thing that went wrong; ``entrant`` None: the dealer's own failure."""

    entrant: str | None
    kind: FaultKind
    message: str
    fatal: bool = True
    count: int = 1


@dataclass(frozen=True)
class SeatingReport:
    """How a seating ended: ``ok`` when every hand was played and logged."""

    ok: bool
    folder: str
    faults: tuple[Fault, ...] = ()
    seconds: float = 0.0
    hands: int = 0
    exit_codes: dict[str, int | None] = field(default_factory=dict)


def seating_tag(folder: str | Path) -> str:
    """The value of :data:`TAG_VARIABLE` for the processes of one seating folder (or a prefix of it)."""
    return os.path.abspath(folder).rstrip(os.sep) + os.sep


def _start_group(argv: list[str], cwd: str, stdout: IO[bytes] | int, stderr: IO[bytes] | int
                 ) -> subprocess.Popen[bytes]:
    # A session of its own: killpg reaches the process and anything it forks; the tag
    # reaches what escapes the session too (setsid, a double fork).
    env = {**os.environ, TAG_VARIABLE: seating_tag(cwd)}
    return subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                            start_new_session=True, env=env)


def kill_tagged(prefix: str) -> int:
    """SIGKILL every process whose :data:`TAG_VARIABLE` starts with ``prefix``; how many.

    A bot's helper that left its process group (``setsid``, a double fork) still
    carries the tag it inherited. Read from ``/proc``: on a system without it,
    the process groups are all that is killed.
    """
    needle = f"{TAG_VARIABLE}={prefix}".encode()
    killed = 0
    for _ in range(5):  # again, for what forked while the list was read
        found = [pid for pid in _pids() if _tagged(pid, needle)]
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        killed += len(found)
        if not found:
            break
    return killed


def start_reaper(prefix: str) -> subprocess.Popen[bytes]:
    """A process that kills every process tagged ``prefix`` once this one has ended, however it ended.

    A driver killed with SIGKILL cleans nothing up, and its dealers and bots,
    each in a session of its own, would play on (a bot that never connects
    would live for good). The reaper waits on a pipe whose other end only this
    process holds: the kernel closes it when this process ends, SIGKILL
    included, and the reaper then runs :func:`kill_tagged`. It sits in a
    session of its own and ignores SIGINT, SIGTERM and SIGHUP, so that a
    closed terminal or a signal to the driver's group does not take it first.

    Not ``PR_SET_PDEATHSIG`` in each child: that fires when the *thread* that
    started the child ends, it needs a ``preexec_fn``, which is not safe in a
    process with threads, and it would miss a helper that left its group.

    It carries the tag itself, so that the next driver of the event (which
    kills what is tagged before it starts anything) ends a reaper still at work.
    """
    code = "import sys; from acpc_lbr.app.tournament.seating import reap; reap(sys.argv[1])"
    return subprocess.Popen([sys.executable, "-c", code, prefix], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                            env={**os.environ, TAG_VARIABLE: prefix})


def reap(prefix: str) -> None:
    """The reaper's body (:func:`start_reaper`): wait for the end of stdin, then kill what is tagged."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        while sys.stdin.buffer.read(1 << 16):
            pass
    kill_tagged(prefix)


def stop_reaper(reaper: subprocess.Popen[bytes]) -> None:
    """End a reaper of this process: it kills what is tagged (nothing, after an orderly end) and exits."""
    if reaper.stdin is not None:
        reaper.stdin.close()
    try:
        reaper.wait(timeout=10)
    except subprocess.TimeoutExpired:
        reaper.kill()
        reaper.wait()


def _pids() -> list[int]:
    try:
        return [int(entry) for entry in os.listdir("/proc") if entry.isdigit() and int(entry) != os.getpid()]
    except OSError:
        return []


def _tagged(pid: int, needle: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            environ = handle.read()
    except OSError:  # gone, or not ours
        return False
    return any(item.startswith(needle) for item in environ.split(b"\0"))


def _kill_group(process: subprocess.Popen[bytes], sig: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)


def _read_ports(dealer: subprocess.Popen[bytes], count: int) -> list[int] | None:
    """The dealer's first stdout line as ``count`` ports, or None if it never came."""
    assert dealer.stdout is not None
    deadline = time.monotonic() + PORTS_TIMEOUT
    buffer = b""
    fd = dealer.stdout.fileno()
    while b"\n" not in buffer and time.monotonic() < deadline and len(buffer) < 4096:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            buffer += chunk
        elif dealer.poll() is not None:
            break
    words = buffer.split(b"\n", 1)[0].split()
    if len(words) != count or not all(w.isdigit() for w in words):
        return None
    return [int(w) for w in words]


def _tail(path: Path, lines: int = 2, limit: int = 400) -> str:
    """The last lines of a file, in one line (for a fault's message)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, os.fstat(handle.fileno()).st_size - 4096))
            text = handle.read().decode(errors="replace")
    except OSError:
        return ""
    kept = [line.strip() for line in text.splitlines() if line.strip()][-lines:]
    joined = " | ".join(kept)
    return joined if len(joined) <= limit else joined[: limit - 3] + "..."


def _exit_text(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with status {code}"


class _Seats:
    """The bot processes of one seating and what was seen of them."""

    def __init__(self, job: SeatingJob, folder: Path) -> None:
        self.job = job
        self.folder = folder
        self.processes: list[subprocess.Popen[bytes] | None] = []
        self.outputs: list[Path] = []
        self.early_exit: dict[int, int] = {}  # seat -> exit code, for an exit while the dealer ran
        self.own_exit: dict[int, int] = {}  # seat -> exit code of a process that ended by itself
        self.flooded: set[int] = set()
        self.start_errors: dict[int, str] = {}

    def start(self, ports: list[int]) -> None:
        for seat, (name, command) in enumerate(zip(self.job.names, self.job.commands)):
            argv = [word.replace("{port}", str(ports[seat])) for word in command]
            out = self.folder / f"{name}.out"
            self.outputs.append(out)
            with open(out, "wb") as handle:
                try:
                    self.processes.append(_start_group(argv, str(self.folder), handle, subprocess.STDOUT))
                except OSError as error:
                    self.processes.append(None)
                    self.start_errors[seat] = f"cannot start {argv[0]!r}: {error.strerror or error}"

    def watch(self) -> int | None:
        """Note exits and floods; the seat that just exited or flooded, if any."""
        for seat, process in enumerate(self.processes):
            if process is None or seat in self.early_exit or seat in self.flooded:
                continue
            code = process.poll()
            if code is not None:
                self.early_exit[seat] = self.own_exit[seat] = code
                return seat
            with contextlib.suppress(OSError):
                if self.outputs[seat].stat().st_size > self.job.output_limit:
                    self.flooded.add(seat)
                    _kill_group(process)
                    return seat
        return None

    def finish(self) -> dict[str, int | None]:
        """Let the bots exit, then kill every group (and what it forked); their exit codes."""
        deadline = time.monotonic() + EXIT_GRACE
        for process in self.processes:
            if process is None:
                continue
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
        codes: dict[str, int | None] = {}
        for seat, (name, process) in enumerate(zip(self.job.names, self.processes)):
            if process is None:
                codes[name] = None
                continue
            if process.poll() is not None and seat not in self.flooded:
                self.own_exit.setdefault(seat, process.returncode)
            _kill_group(process)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=5)
            codes[name] = process.returncode
        return codes


def play_seating(job: SeatingJob) -> SeatingReport:
    """Play one seating to its end and report it (never raises for a bot's failure)."""
    started = time.monotonic()
    folder = Path(job.folder)
    if folder.exists():
        shutil.rmtree(folder)  # an attempt cut short by a kill: start it again, clean
    folder.mkdir(parents=True)
    argv = [job.python, "-m", "acpc_lbr.cli", "dealer", "match", job.game_arg, str(job.hands),
            str(job.seed), *job.names, "-q", *job.dealer_options]
    with open(folder / "dealer.err", "wb") as err:
        dealer = _start_group(argv, str(folder), subprocess.PIPE, err)
    seats = _Seats(job, folder)
    try:
        ports = _read_ports(dealer, len(job.names))
        if ports is None:
            _kill_group(dealer)
            dealer.wait()
            why = _tail(folder / "dealer.err") or _exit_text(dealer.returncode)
            return SeatingReport(False, job.folder, (Fault(None, "dealer", f"the dealer did not start: {why}"),),
                                 time.monotonic() - started)
        seats.start(ports)
        stopped = _wait(dealer, seats)
        codes = seats.finish()
    finally:
        for process in (dealer, *[p for p in seats.processes if p is not None]):
            _kill_group(process)
        kill_tagged(seating_tag(folder))
        if dealer.stdout is not None:
            dealer.stdout.close()
        dealer.wait()
    faults, hands = _classify(job, folder, seats, dealer.returncode, stopped, codes)
    ok = dealer.returncode == 0 and not any(f.fatal for f in faults) and hands == job.hands
    return SeatingReport(ok, job.folder, tuple(faults), time.monotonic() - started, hands, codes)


def _wait(dealer: subprocess.Popen[bytes], seats: _Seats) -> int | None:
    """Wait for the dealer; stop it when a bot left and the dealer did not notice. The seat blamed."""
    if seats.start_errors:
        seat = min(seats.start_errors)
        _kill_group(dealer, signal.SIGTERM)
        dealer.wait()
        return seat
    while dealer.poll() is None:
        if STOP.is_set():
            _kill_group(dealer, signal.SIGTERM)
            dealer.wait()
            return None
        leaving = seats.watch()
        if leaving is not None:
            # A bot that was seated makes the dealer end the match (disconnect); one that
            # never connected would leave it waiting for --start_timeout.
            try:
                dealer.wait(timeout=NOTICE_GRACE)
            except subprocess.TimeoutExpired:
                _kill_group(dealer, signal.SIGTERM)
                dealer.wait()
                return leaving
            return None
        _wait_for_exit(dealer, POLL_SECONDS)
    return None


def _wait_for_exit(process: subprocess.Popen[bytes], seconds: float) -> None:
    """Wait up to ``seconds`` for ``process`` to exit, waking as it does (a pidfd where the
    system has them), so that the next seating does not wait out a polling step."""
    try:
        fd = os.pidfd_open(process.pid)
    except (AttributeError, OSError):  # not Linux >= 5.3, or already reaped
        time.sleep(seconds)
        return
    try:
        select.select([fd], [], [], seconds)
    finally:
        os.close(fd)


def _dealer_events(folder: Path) -> tuple[dict[str, object] | None, dict[str, object] | None]:
    """The dealer's ``match_aborted`` and closing events from its events file (None: absent)."""
    aborted = ended = None
    with contextlib.suppress(OSError), open(folder / "match.events.jsonl", "rb") as handle:
        for raw in handle:
            if len(raw) > 65536 or b'"match_' not in raw:
                continue
            with contextlib.suppress(ValueError):
                record = json.loads(raw)
                if record.get("event") == "match_aborted" and aborted is None:
                    aborted = record
                elif record.get("event") in ("match_finished", "match_ended_early"):
                    ended = record
    return aborted, ended


def _classify(job: SeatingJob, folder: Path, seats: _Seats, dealer_code: int | None,
              stopped: int | None, codes: dict[str, int | None]) -> tuple[list[Fault], int]:
    """The faults of a finished seating, and how many hands its dealer finished.

    The dealer says which seat ended the match and why; what the seat's
    process did says more: one that exited by itself with an error status (or
    before it ever connected) crashed, whatever the dealer saw of it.
    """
    aborted, ended = _dealer_events(folder)
    hands = int(ended.get("hands", 0)) if ended else 0  # type: ignore[call-overload]
    faults: list[Fault] = []
    corrections = ended.get("corrections", ()) if ended else ()
    for position, count in enumerate(corrections if isinstance(corrections, list) else ()):
        if isinstance(count, int) and count > 0:
            faults.append(Fault(job.names[position], "invalid_action",
                                f"{count} invalid action(s) corrected by the dealer", fatal=False, count=count))
    if dealer_code == 0 and ended is not None and ended.get("event") == "match_finished":
        return faults, hands
    seat: int | None = stopped
    cause: str | None = None
    said = ""
    if seat is None and aborted is not None and isinstance(aborted.get("seat"), int):
        seat = int(aborted["seat"]) - 1  # type: ignore[call-overload]  # the dealer's seats are 1-based
        cause, said = str(aborted.get("cause")), str(aborted.get("error", ""))
    if seat is None or not 0 <= seat < len(job.names):
        why = (str(aborted.get("error")) if aborted else "") or _tail(folder / "dealer.err") \
            or f"the dealer {_exit_text(dealer_code)}"
        faults.append(Fault(None, "dealer", why))
        return faults, hands
    name = job.names[seat]
    own = seats.own_exit.get(seat)
    unseated = cause in (None, "no_connection")
    # The dealer ended the match on this seat first (too slow, garbage, a line too long):
    # that is the fault, and the bot's exit on the closed connection is only its echo.
    dealer_first = cause is not None and cause not in ("disconnect", "no_connection")
    kind: FaultKind
    if seat in seats.start_errors:
        kind, message = "crash", seats.start_errors[seat]
    elif seat in seats.flooded:
        kind, message = "protocol_error", f"wrote over {job.output_limit // 2**20} MiB of output; stopped"
    elif own is not None and (own != 0 or unseated) and not dealer_first:
        kind = "crash"
        message = f"{_exit_text(own)} {'before connecting' if unseated else 'during the match'}"
    elif own == 0 and cause == "disconnect":
        kind, message = "disconnect", "closed its connection and exited (status 0) before the match ended"
    else:
        kind, message = CAUSE_KINDS.get(str(cause), "dealer"), said or "never connected"
        ignored = ended.get("ignored", []) if ended else []
        count = ignored[seat] if isinstance(ignored, list) and seat < len(ignored) else 0
        if kind == "timeout" and isinstance(count, int) and count > 0:
            # Its lines were read and refused while it was due: garbage, not slowness.
            kind, message = "protocol_error", f"{message}, after {count} unparsable or stale line(s)"
    tail = _tail(folder / f"{name}.out") if kind in ("crash", "never_connected", "disconnect") else ""
    faults.append(Fault(name, kind, f"{message} (its output: {tail})" if tail else message))
    return faults, hands

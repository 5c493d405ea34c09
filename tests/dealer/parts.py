"""Building the dealer's parts alone, in memory, for their own tests (no Match, no sockets).

Each part takes what it needs as arguments (dependency injection): a ``task.Clock``
for time, an :class:`dealer.events.EventLog` without a file, a memory opener for the
writers, and an ``abort`` that records the failure. Nothing is patched, so the same
tests run on the compiled parts.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from twisted.internet import task

from dealer.busypoll import BusyPoll, MatchesPlaying
from dealer.config import MatchAborted, MatchConfig, MatchResult
from dealer.events import EventLog, RecordFile, Trace
from dealer.relay import QueryRelay
from dealer.seats import Seat
from dealer.turns import TurnPolicy


class MemoryFile(io.BytesIO):
    """A file that keeps its bytes after it is closed (for the writers' tests)."""

    def close(self) -> None:
        self.kept = self.getvalue()
        super().close()

    def text(self) -> str:
        return (self.kept if self.closed else self.getvalue()).decode("utf-8")


class MemoryOpener:
    """An ``Opener`` whose files live in memory, by path."""

    def __init__(self) -> None:
        self.files: dict[Path, MemoryFile] = {}

    def __call__(self, path: Path, append: bool) -> RecordFile:
        raw = self.files.get(path) if append else None
        if raw is None or raw.closed:
            raw = self.files[path] = MemoryFile()
        return RecordFile(path, raw)

    def text(self, path: Path | str) -> str:
        return self.files[Path(path)].text()


class Aborts:
    """An ``abort`` callable that records the failures it is given."""

    def __init__(self) -> None:
        self.failures: list[MatchAborted] = []

    def __call__(self, failure: MatchAborted) -> None:
        self.failures.append(failure)


class Polling(BusyPoll):
    """A busy poll that decides to poll for every wait, and never spins (in memory)."""

    def __init__(self) -> None:
        super().__init__(lambda _: None, 1.0)

    def decide(self) -> bool:
        return True


class Parts:
    """The shared pieces of a match's parts: seats, clock, events, trace, relay, result."""

    def __init__(self, config: MatchConfig, trace: bool = False) -> None:
        self.config = config
        self.clock = task.Clock()
        self.stderr = io.StringIO()
        self.trace = Trace(self.stderr, trace)
        self.events = EventLog(config.name, None)
        self.seats = [Seat(i, name) for i, name in enumerate(config.names)]
        self.aborts = Aborts()
        self.current: Any = None
        self.relay = QueryRelay(config.game, config.names, config.budget, self.clock, self.events,
                                lambda: self.current, lambda seat, what: None)
        self.result = MatchResult(config.name, config.names, [0.0] * len(self.seats))

    def policy(self, busy_poll: BusyPoll | None = None) -> TurnPolicy:
        playing = busy_poll.playing if busy_poll is not None else MatchesPlaying()
        return TurnPolicy(self.config, self.seats, self.clock, self.relay, busy_poll,
                          self.trace.messages, self.aborts, playing)

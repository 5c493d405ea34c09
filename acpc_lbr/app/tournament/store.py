"""The event's directory: its manifest, every match's logs and a record per finished match.

Layout of ``--out DIR``::

    DIR/event.json                      what the event is (its identity and fingerprint)
    DIR/event.game                      the game file ({game} in entrant commands)
    DIR/matches/A-vs-B/m000/s0/try0/    one seating's attempt: match.log, match.events.jsonl,
                                        dealer.err, NAME.out per entrant
    DIR/matches/A-vs-B/m000/record.json the finished match: scores, logs' hashes, faults

A record is written whole (a temporary file renamed over it) only once every
seating of its match has ended, so a SIGKILL leaves either no record (the
match is played again from its seed) or a whole one (the match is kept):
no match is lost half-way or counted twice. Running the same command again
reads the records, checks each kept match against its logs (the hash of every
log it names, and a fresh scoring of them), and plays what is missing.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from acpc_lbr.app.tournament.event import Event, EventError, MatchJob

VERSION = 1


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` so that ``path`` is never seen half-written."""
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def check_writable(path: Path, option: str) -> None:
    """Refuse at the start a results file that could not be written at the end of the event.

    The file is written by :func:`write_atomically`, through a temporary file
    beside it: that one is created (and removed) here.

    Raises:
        EventError: one line naming the option, the path and why.
    """
    temporary = path.with_name(path.name + ".tmp")
    try:
        if path.is_dir():
            raise IsADirectoryError(21, "Is a directory")
        existed = temporary.exists()
        with open(temporary, "a", encoding="utf-8"):
            pass
        if not existed:
            temporary.unlink()
    except OSError as error:
        raise EventError(f"cannot write {option} {path}: {error.strerror or error}") from None


class EventStore:
    """The directory of one event."""

    def __init__(self, root: Path, event: Event) -> None:
        self.root = root
        self.event = event
        self._lock: int | None = None

    def _take_lock(self) -> None:
        """One driver per directory: a second would replay and delete the first's seatings."""
        fd = os.open(self.root / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise EventError(f"another acpc-lbr tournament is running in {self.root}; "
                             "wait for it or stop it first") from None
        self._lock = fd  # held until this process ends, however it ends

    @property
    def game_file(self) -> Path:
        return self.root / "event.game"

    def open(self, game_text: str) -> bool:
        """Create the directory, or check that it holds this same event; True when resuming.

        Raises:
            EventError: the directory holds another event, or cannot be written.
        """
        manifest = self.root / "event.json"
        identity = {"format": "acpc-lbr-tournament-event", "version": VERSION,
                    "fingerprint": self.event.fingerprint(), "event": self.event.identity()}
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            self._take_lock()
            if manifest.exists():
                try:
                    found = json.loads(manifest.read_text())
                except (OSError, ValueError) as error:
                    raise EventError(f"{manifest}: unreadable ({error}); use another --out") from None
                if not isinstance(found, dict) or found.get("fingerprint") != identity["fingerprint"]:
                    differs = _differences(found.get("event") if isinstance(found, dict) else None,
                                           identity["event"])
                    raise EventError(f"{self.root} holds another event ({differs}); use another --out "
                                     "or the same settings to resume it")
                return True
            (self.root / "matches").mkdir(exist_ok=True)
            self.game_file.write_text(game_text)
            write_atomically(manifest, json.dumps(identity, indent=1, sort_keys=True) + "\n")
        except OSError as error:
            raise EventError(f"cannot write the event directory {self.root}: "
                             f"{error.strerror or error}") from None
        return False

    def match_folder(self, job: MatchJob) -> Path:
        return self.root / "matches" / job.pairing_id / f"m{job.match:03d}"

    def seating_folder(self, job: MatchJob, seating: int, attempt: int) -> Path:
        return self.match_folder(job) / f"s{seating}" / f"try{attempt}"

    def record_path(self, job: MatchJob) -> Path:
        return self.match_folder(job) / "record.json"

    def read_record(self, job: MatchJob) -> dict[str, Any] | None:
        """The match's record if it is whole and its logs are unchanged; None: play it (again)."""
        path = self.record_path(job)
        try:
            record = json.loads(path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return None
        if not isinstance(record, dict) or record.get("key") != job.key or record.get("seed") != job.seed:
            return None
        for seating in record.get("seatings", []):
            if seating.get("log_sha256") is None:
                continue
            log = self.root / seating["log"]
            try:
                if file_sha256(log) != seating["log_sha256"]:
                    return None
            except OSError:
                return None
        return record

    def write_record(self, job: MatchJob, record: dict[str, Any]) -> None:
        self.match_folder(job).mkdir(parents=True, exist_ok=True)  # none if no seating could start
        write_atomically(self.record_path(job), json.dumps(record, sort_keys=True) + "\n")

    def forget(self, job: MatchJob) -> None:
        with contextlib.suppress(OSError):
            self.record_path(job).unlink()


def _differences(found: object, wanted: object) -> str:
    if not isinstance(found, dict) or not isinstance(wanted, dict):
        return "an unreadable manifest"
    keys = [k for k in wanted if found.get(k) != wanted[k]]
    return "different " + ", ".join(keys) if keys else "a different fingerprint"

"""The dealer's file descriptors: how many are open, the share only seats may use, and saying so.

A dealer process holds one descriptor per seat connection, per log file and
per listening port; its limit is ``RLIMIT_NOFILE`` (1,024 by default on many
systems). Anything else that accepts connections -- today the metrics port
(:mod:`dealer.metrics`) -- must leave :data:`SEAT_FD_RESERVE` descriptors free,
so that no amount of scraping keeps a bot from its seat. And when a seat
cannot be reached because the process is out of descriptors, the message
says so (:func:`shortage_note`) instead of only blaming the bot that did
not connect.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from twisted.logger import globalLogPublisher

try:
    import resource
except ImportError:  # Windows: no RLIMIT_NOFILE to read; no reserve is kept
    resource = None  # type: ignore[assignment]

#: Descriptors only seats (and the match's own files) may use: other listeners refuse a
#: connection that would leave fewer free. Two seats, their files and a few squatters per
#: seat take well under this; a dealer of many matches at once wants a higher ``ulimit -n``.
SEAT_FD_RESERVE = 128
#: Fewer free descriptors than this and the process counts as out of them (:func:`shortage_note`).
SHORTAGE = 8
#: Where the open descriptors are listed (Linux; /dev/fd on macOS and the BSDs).
_FD_DIRECTORIES = ("/proc/self/fd", "/dev/fd")


def fd_limit() -> int | None:
    """The process's soft limit on open descriptors (None: unknown or unlimited)."""
    if resource is None:
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else int(soft)


def open_fds() -> int | None:
    """Descriptors open in this process now (None: the system does not list them)."""
    for directory in _FD_DIRECTORIES:
        try:
            return len(os.listdir(directory)) - 1  # the listing's own descriptor
        except OSError:
            continue
    return None


def free_fds() -> int | None:
    """Descriptors this process may still open (None: unknown)."""
    limit, used = fd_limit(), open_fds()
    if limit is None or used is None:
        return None
    return limit - used


class _AcceptFailures:
    """Connections the process's listeners could not accept for want of descriptors.

    Twisted accepts and at once closes a connection when ``accept`` fails with
    EMFILE (it keeps one descriptor in reserve for that), and logs it; this
    counts those log events, so a seat that never connected can be explained
    after the fact, when the descriptors may be free again.
    """

    def __init__(self) -> None:
        self.count = 0
        self.watching = False

    def observe(self, event: Mapping[str, object]) -> None:
        """A Twisted log observer (it must open nothing: it runs when descriptors are out)."""
        text = event.get("log_format")
        if isinstance(text, str) and text.startswith(("EMFILE encountered", "Could not accept new connection")):
            self.count += 1


ACCEPT_FAILURES = _AcceptFailures()


def watch_accept_failures() -> None:
    """Count failed accepts from now on (:data:`ACCEPT_FAILURES`; called once a match listens)."""
    if not ACCEPT_FAILURES.watching:
        globalLogPublisher.addObserver(ACCEPT_FAILURES.observe)  # type: ignore[arg-type]  # a callable observer
        ACCEPT_FAILURES.watching = True


def shortage_note() -> str:
    """``" (the dealer ran out of file descriptors ...)"`` when it is, or was, else ``""``."""
    free = free_fds()
    short = free is not None and free < SHORTAGE
    if not short and not ACCEPT_FAILURES.count:
        return ""
    refused = (f"{ACCEPT_FAILURES.count} connection(s) could not be accepted"
               if ACCEPT_FAILURES.count else "connections could not be accepted")
    return (f" (the dealer ran out of file descriptors: {refused}; {open_fds()} open now, "
            f"limit {fd_limit()}; raise 'ulimit -n')")

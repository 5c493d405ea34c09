"""A dealer process up to its port line, without Twisted: its sockets bound, its files open.

A launcher (``acpc-lbr tournament``, a script, the bench) starts the bots when it
reads the dealer's port line, and a tournament starts thousands of dealers, so the
line comes as soon as the run is known to go ahead. Importing Twisted and its
asyncio reactor takes about 0.2 s of CPU, which is most of a dealer's start-up;
so :func:`prepare` binds every seat's listening socket with the standard
library's ``_socket`` (the C module under ``socket``, without the enum classes
that module builds at import, a few ms) and opens every file the matches write, the command prints
the port lines, and only then is Twisted loaded and given the sockets
(:meth:`dealer.seating.Seating.listen`, ``adoptStreamPort``). A bot that
connects in between waits in the kernel's backlog, as it does with the
reference dealer, and is seated once the reactor runs.

Whatever can refuse the run is found here, before the port line, so a refused
run prints no ports (exit code 1, one ``ERROR:`` line): a port in use, the
``--results-json`` folder missing, files that cannot be opened for writing (of
every match: one match among others whose files cannot be opened fails alone,
at its start, while the others play).
The module imports no Twisted (tests/dealer/test_startup.py checks the imports
before the port line).
"""

from __future__ import annotations

import _socket
import argparse
import errno
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from dealer.config import MatchConfig

if TYPE_CHECKING:
    from dealer.events import RecordFile
# dealer.events (its 29 dataclasses: ~20 ms) is imported after the port line, or on a refusal.

#: The backlog of a seat's listening socket (as the Twisted port's, ``listenTCP(backlog=8)``): the
#: connections the kernel completes before the dealer accepts them, while it loads Twisted.
SEAT_BACKLOG = 8


class StartupRefused(Exception):
    """The run cannot start (exit code 1, no port line); the message says why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def address_family(bind: str) -> int:
    """The family of a listening address, as Twisted's ``listenTCP`` picks it: IPv6 for an
    IPv6 literal (a scope ``%eth0`` allowed), else IPv4 (a host name is resolved by ``bind``)."""
    try:
        _socket.inet_pton(_socket.AF_INET6, bind.partition("%")[0])
    except (OSError, ValueError):
        return _socket.AF_INET
    return _socket.AF_INET6


def bind_seats(config: MatchConfig) -> list[_socket.socket]:
    """One listening socket per seat of ``config`` (its ``ports``; 0 or missing: any free port),
    on ``config.bind``, non-blocking.

    Raises:
        StartupRefused: a port could not be opened (the sockets opened so far are closed).
    """
    wanted = list(config.ports) + [0] * (len(config.names) - len(config.ports))
    family = address_family(config.bind)
    sockets: list[_socket.socket] = []
    for index, port in enumerate(wanted):
        listener = _socket.socket(family, _socket.SOCK_STREAM)
        try:
            # As Twisted's port: a port left in TIME_WAIT by the last match can be listened on again.
            listener.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
            listener.bind((config.bind, port))
            listener.listen(SEAT_BACKLOG)
            listener.setblocking(False)
        except OSError as error:
            listener.close()
            for opened in sockets:
                opened.close()
            raise StartupRefused(f"cannot listen on port {port} for seat {index + 1} "
                                 f"({config.names[index]}): {error}") from error
        sockets.append(listener)
    return sockets


def port_line(ports: Sequence[Sequence[int]]) -> str:
    """The port line of a group, from each match's ports in seat order: a match's ports;
    a match and its mirror, NAME1's and NAME2's port in the match, then in the mirror."""
    if len(ports) == 2:
        return " ".join(map(str, [*ports[0], *ports[1][::-1]]))
    return " ".join(map(str, ports[0]))


def port_number(listener: _socket.socket) -> int:
    """The port a listening socket is bound to."""
    port: int = listener.getsockname()[1]
    return port


class OpenedFiles:
    """The files of the matches, opened before the port line; an ``Opener`` of
    :class:`dealer.match.Match` that hands each one over when the match opens it.

    Only the descriptor is opened early (truncated, or for appending when resuming):
    the :class:`dealer.events.RecordFile` is made at hand-over, after a resumed file's
    cut last line was dropped, so that it starts from the file's end at that time.
    A file the match does not ask for (none: the same rule picks them) is opened then.
    """

    def __init__(self) -> None:
        self._raw: dict[Path, tuple[BinaryIO, bool]] = {}

    def open(self, config: MatchConfig) -> None:
        """Open the files ``config``'s match writes: its events file, ``.log`` and ``.tlog``.

        Raises:
            StartupRefused: one cannot be opened for writing (``cannot write FILE: why``);
                those of the match opened already are closed.
        """
        paths = ([config.events_path] if config.events else []) + (
            [config.log_path] if config.write_log else []) + ([config.tlog_path] if config.write_tlog else [])
        for path in paths:
            try:
                raw = open(path, "ab" if config.resume else "wb", buffering=0)  # noqa: SIM115 (handed over)
            except OSError as error:
                for opened in paths:
                    if opened in self._raw:
                        self._raw.pop(opened)[0].close()
                from dealer.events import WriteFailed  # lazy: see the imports

                raise StartupRefused(WriteFailed(path, error).message) from error
            self._raw[path] = (raw, config.resume)

    def __call__(self, path: Path, append: bool) -> RecordFile:
        """The file opened early for ``path`` (or, when none was, ``path`` opened now)."""
        from dealer.events import RecordFile, open_record_file  # lazy: see the imports

        opened = self._raw.pop(path, None)
        if opened is None or opened[1] != append:
            if opened is not None:
                opened[0].close()
            return open_record_file(path, append)
        return RecordFile(path, opened[0])

    def close(self) -> None:
        """Close the files not handed over (the run was refused)."""
        for raw, _ in self._raw.values():
            raw.close()
        self._raw.clear()


class DealerStartup:
    """What a dealer process has ready at its port line: a listening socket per seat of
    every match, and its files open (:func:`prepare`).

    Attributes:
        groups: the matches, by group (a match and, with ``--duplicate``, its mirror).
        sockets: each match's listening sockets in seat order, by match name (taken by
            :meth:`take_sockets`).
        ports: each match's port numbers in seat order, by match name.
        files: the files opened early (the matches' ``Opener``).
    """

    def __init__(self, groups: Sequence[Sequence[MatchConfig]]) -> None:
        self.groups = groups
        self.sockets: dict[str, list[_socket.socket]] = {}
        self.files = OpenedFiles()
        self.ports: dict[str, list[int]] = {}

    def port_lines(self) -> list[str]:
        """The port line of each group (:func:`port_line`)."""
        return [port_line([self.ports[c.name] for c in group]) for group in self.groups]

    def take_sockets(self, name: str) -> list[_socket.socket]:
        """The listening sockets of match ``name``, handed over (the caller closes them)."""
        return self.sockets.pop(name)

    def close(self) -> None:
        """Close what was not handed over: the run does not go ahead."""
        for sockets in self.sockets.values():
            for listener in sockets:
                listener.close()
        self.sockets.clear()
        self.files.close()


def prepare(groups: Sequence[Sequence[MatchConfig]], options: argparse.Namespace) -> DealerStartup:
    """Bind every match's ports, check the ``--results-json`` folder, then open every
    match's files: what can refuse the run, before its port line.

    Ports come first: a clash leaves no file created or truncated. A match whose files
    cannot be opened fails alone, at its start, as it always has (exit code 1; the
    other matches play): its files are opened again then, and the same error is said.
    When that is every match, the run is refused.

    Raises:
        StartupRefused: the run cannot start (everything opened so far is closed).
    """
    startup = DealerStartup(groups)
    try:
        for group in groups:
            for config in group:
                startup.sockets[config.name] = bind_seats(config)
                startup.ports[config.name] = [port_number(s) for s in startup.sockets[config.name]]
        check_results_folder(options)
        refusals = []
        for group in groups:
            for config in group:
                try:
                    startup.files.open(config)
                except StartupRefused as refused:
                    refusals.append(refused)
        if refusals and len(refusals) == sum(len(group) for group in groups):
            raise refusals[0]
    except StartupRefused:
        startup.close()
        raise
    return startup


def check_results_folder(options: argparse.Namespace) -> None:
    """The folder ``--results-json`` writes to exists (found now, not after the match).

    Raises:
        StartupRefused: it does not, or is not a folder.
    """
    results_json = getattr(options, "results_json", None)
    if not results_json:
        return
    folder = Path(results_json).parent
    if not folder.is_dir():
        raise StartupRefused(f"cannot write {results_json}: "
                             f"{os.strerror(errno.ENOTDIR if folder.exists() else errno.ENOENT)}")


def results_before_port_line(options: argparse.Namespace, stderr_is_terminal: bool) -> bool:
    """Whether the results are set up before the port line: something reads them during
    the match (the table, ``--results-json``, the metrics, a progress display), and
    setting them up can still fail (the metrics port) or print (its number). Then the
    port line follows the Twisted import; a plain dealer prints it before."""
    silent = options.silent
    progress_shown = not silent and ((options.quiet and stderr_is_terminal) or options.progress_every > 0)
    table = not (options.quiet or silent) or options.table
    return bool(table or options.results_json or options.metrics_port is not None or progress_shown)

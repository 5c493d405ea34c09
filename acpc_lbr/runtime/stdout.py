"""Subcommands of the acpc-lbr command line that live in the compute core."""

from __future__ import annotations

import os
import sys


def drop_stdout() -> None:
    """Send whatever is still written to standard output to ``/dev/null``: its reader has
    gone (a ``BrokenPipeError``), and the interpreter's last flush must not fail again
    (the Python documentation's recipe, "Note on SIGPIPE")."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)

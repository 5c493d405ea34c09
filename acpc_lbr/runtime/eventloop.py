"""Which asyncio event loop a command runs on, chosen without loading Twisted or uvloop.

The dealer asks for uvloop's loop (acpc_lbr/runtime/reactor.py says why, and why
not for commands that start processes); ``ACPC_LBR_EVENT_LOOP=asyncio`` puts it on
the standard library's. The choice is read here, apart from the reactor, so that
the dealer refuses a bad setting before its port line, which it prints before
Twisted is loaded (dealer/startup.py).
"""

from __future__ import annotations

import importlib.util
import os
from typing import Literal

#: Environment variable choosing the event loop of a command that prefers uvloop:
#: ``uvloop`` (the default when installed) or ``asyncio`` (the standard library's).
EVENT_LOOP_ENV = "ACPC_LBR_EVENT_LOOP"


def event_loop_choice(prefer_uvloop: bool) -> Literal["uvloop", "asyncio"]:
    """The loop a command gets: with ``prefer_uvloop``, uvloop's unless it is missing or
    ``ACPC_LBR_EVENT_LOOP=asyncio``; without, the standard library's.

    Raises:
        SystemExit: (a one-line error) ``ACPC_LBR_EVENT_LOOP`` names another
            loop, or ``uvloop`` when it is not installed.
    """
    if not prefer_uvloop:
        return "asyncio"
    choice = os.environ.get(EVENT_LOOP_ENV, "")
    if choice not in ("", "uvloop", "asyncio"):
        raise SystemExit(f"error: {EVENT_LOOP_ENV} must be uvloop or asyncio, not {choice!r}")
    if choice == "asyncio":
        return "asyncio"
    if importlib.util.find_spec("uvloop") is None:
        if choice == "uvloop":
            raise SystemExit(f"error: {EVENT_LOOP_ENV}=uvloop but uvloop is not installed")
        return "asyncio"
    return "uvloop"

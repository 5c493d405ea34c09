"""The events file's per-hand line (``hand_finished``), built and batched in compiled code.

A match writes one ``hand_finished`` line per hand to ``MATCH.events.jsonl``
(:class:`dealer.events.EventLog`); issue 32 asks that the file cost at most 5%
of the dealer's throughput. The line is built here as text, with the bytes of
:func:`dealer.events.json_line` for a :class:`dealer.events.HandFinished`
record (tests/dealer/test_events.py compares them), and kept in
:class:`PendingLines` until a batch is due (:data:`BATCH_BYTES`,
:data:`BATCH_SECONDS`). The hand loop (:mod:`dealer.handloop`) calls it
directly when only the file listens: this module is compiled with it
(protocol._variant.GROUP), so a hand's line costs no Python call. The event
log hands the kept lines to its file before any other line
(:meth:`dealer.events.EventLog.flush`), so the file's order is the events'.
"""

from __future__ import annotations

import datetime
import json
import json.encoder
import math
import time
from collections.abc import Callable
from typing import Any, Final

#: ``hand_finished`` lines (debug events) wait in memory until this many bytes are
#: pending, or :data:`BATCH_SECONDS` have passed, or another event comes: one write
#: per batch instead of one per hand. The ``.log`` is the record of the hands; this
#: file may lose the last batch if the dealer is killed.
BATCH_BYTES: Final = 4096
BATCH_SECONDS: Final = 1.0


class _Stamped:
    """The last second stamped and its text (``isoformat`` costs more than the rest of a
    line). Native attributes: compiled, a list's items would be compared as objects."""

    def __init__(self) -> None:
        self.second = -1
        self.text = ""


_STAMPED: Final = _Stamped()


def utc_stamp(now_ns: int) -> str:
    """``now_ns`` (ns since the epoch) as structlog's ``TimeStamper(fmt="iso", utc=True)``
    writes it: ``datetime.isoformat()`` with ``Z`` for ``+00:00`` (no fraction at .000000)."""
    micros = now_ns // 1000
    second = micros // 1_000_000
    stamped = _STAMPED
    if second != stamped.second:
        stamped.text = datetime.datetime.fromtimestamp(second, datetime.timezone.utc).strftime(
            "%Y-%m-%dT%H:%M:%S")
        stamped.second = second
    fraction = micros - second * 1_000_000
    if not fraction:
        return f"{stamped.text}Z"
    # Six digits: a seventh, leading 1 keeps the zeros a plain str() would drop (cheaper than a format).
    return f"{stamped.text}.{str(fraction + 1_000_000)[1:]}Z"


def _json_fallback(value: object) -> object:
    """What structlog's ``JSONRenderer`` writes for a value JSON has no form for."""
    return repr(value)


#: json.dumps's own C encoder, made once (``json.dumps(data, default=...)`` makes one per
#: call, half of its cost here), with json.dumps's settings: the same bytes. No circular
#: check: an event's fields are plain values.
_MAKE_ENCODER: Any = getattr(json.encoder, "c_make_encoder", None)  # private to json: untyped
_ENCODE: Callable[[object, int], list[str]] | None = (
    None if _MAKE_ENCODER is None else _MAKE_ENCODER(
        None, _json_fallback, json.encoder.encode_basestring_ascii, None, ": ", ", ", False, False, True))


def hand_finished_line(match_json: str, hand: int, betting: str, values: tuple[float, ...],
                       stamp: str) -> str:
    """The JSON line of ``HandFinished(hand=hand, betting=betting, values=values)``
    (:func:`json_line`'s bytes; ``match_json`` is the match name as a JSON string), built
    without the record and its dict: a quarter of :func:`json_line`'s CPU, once per hand
    (tests/dealer/test_events.py compares the two)."""
    return (f'{{"match": {match_json}, "hand": {hand}, "betting": {_json_string(betting)}, '
            f'"values": {_json_values(values)}, "event": "hand_finished", "level": "debug", '
            f'"timestamp": "{stamp}"}}\n')


#: A string as json.dumps writes it (ASCII only, as ``ensure_ascii``).
_json_string: Final[Callable[[str], str]] = json.encoder.encode_basestring_ascii


def _json_values(values: tuple[float, ...]) -> str:
    """A hand's values as json.dumps writes them (a list). They are chip counts, few distinct
    ones in a match, so each tuple's text is made once (:data:`_VALUES_TEXT`; a float's
    ``repr`` costs more than the rest of the line)."""
    text = _VALUES_TEXT.get(values)
    # As objects: compiled, a float-typed loop variable would turn an int into a float.
    items: tuple[object, ...] = values
    if text is not None:
        # Kept only for floats; an int or bool tuple equal to one, (7, -7) or (True, -1.0),
        # has its own text.
        for value in items:
            if type(value) is not float:
                text = None
                break
    if text is None:
        text = f"[{', '.join([_json_number(value) for value in items])}]"
        # Not with a zero (0.0 and -0.0 are equal keys with two texts), nor NaN or an int.
        if (len(_VALUES_TEXT) < _VALUES_TEXTS and 0.0 not in items
                and all(type(value) is float and math.isfinite(value) for value in items)):
            _VALUES_TEXT[values] = text
    return text


def _whole_text(value: object) -> str | None:
    """``json.dumps(value)`` for a whole, nonzero float below 2**53 in magnitude (its integer
    and ``.0``), else None. (Zero is not: -0.0 is written with its sign.)"""
    if type(value) is not float:
        return None
    number: float = value  # unboxed once the type is known: the comparisons below are C's
    if number and -_WHOLE_EXACT < number < _WHOLE_EXACT:
        whole = int(number)
        if whole == number:
            return f"{whole}.0"
    return None


#: The JSON text of the hands' values met so far (at most :data:`_VALUES_TEXTS` of them).
_VALUES_TEXT: Final[dict[tuple[float, ...], str]] = {}
_VALUES_TEXTS: Final = 4096


#: Below this magnitude every whole float is exact, and ``repr`` writes it as its integer and ``.0``.
_WHOLE_EXACT: Final = 2.0**53


def _json_number(value: object) -> str:
    """One number as json.dumps writes it."""
    whole = _whole_text(value)  # chip counts: a tenth of a float's repr
    if whole is not None:
        return whole
    if _ENCODE is None:
        return json.dumps(value)
    return "".join(_ENCODE(value, 0))


class PendingLines:
    """The debug lines of an events file since its last write, and the batch's clock.

    The event log counts every debug line here (:meth:`batched`); the hand loop
    adds each finished hand's line (:meth:`add`), which waits in :attr:`lines`
    until the event log hands it to its file (``EventLog.flush``, or before any
    other line it writes).

    Args:
        match_json: the match name as a JSON string (every line names it).
    """

    def __init__(self, match_json: str) -> None:
        self.match_json = match_json
        #: ``hand_finished`` lines the hand loop added, not yet given to the file.
        self.lines: list[str] = []
        #: Bytes of debug lines since the last flush, and when the first of them came
        #: (``time.monotonic``).
        self.pending = 0
        self.pending_since = 0.0
        #: A file takes the lines (False: none, or it failed or closed; :meth:`add` is not called).
        self.open = False

    def batched(self, size: int) -> bool:
        """Count a debug line of ``size`` characters; whether it may wait for a later write."""
        now = time.monotonic()
        if not self.pending:
            self.pending_since = now
        self.pending += size
        return self.pending < BATCH_BYTES and now - self.pending_since < BATCH_SECONDS

    def add(self, hand: int, betting: str, values: tuple[float, ...]) -> bool:
        """Keep the line of finished hand ``hand``; True when the batch is due (the caller
        then flushes the event log)."""
        line = hand_finished_line(self.match_json, hand, betting, values, utc_stamp(time.time_ns()))
        self.lines.append(line)
        return not self.batched(len(line))

    def take(self) -> str:
        """The kept lines, joined, and none kept any more."""
        text = "".join(self.lines)
        self.lines.clear()
        return text

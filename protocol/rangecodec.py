"""Range answers (``RANGE`` lines), versions 1 and 2: encode, decode and check, with numpy.

This is the one home of the answer format (docs/range-query.md): the SDK
encodes with it, the dealer's relay decodes and checks each answer once with
it and forwards the bot's own bytes, and the agents decode with it. Every
function runs in time linear in the length of its input, loops in Python only
over the actions of the query (never over hands or characters), and raises
only :class:`~protocol.errors.ParseError`.

Version 1 (decimal text)::

    RANGE:<qid>:<action>=<p0>,<p1>,...,<pN-1>;<action>=...

Version 2 (compact; a version field after the qid)::

    RANGE:<qid>:2:<action>=<form><data>;<action>=...

with one of three forms per action:

* ``K<decimal>``: the same probability for every hand (a card-blind bot);
* ``F<base64>``: N little-endian IEEE-754 float32, base64 (RFC 4648, padded);
* ``D<base64>``: N little-endian IEEE-754 float64, base64 (RFC 4648, padded).

Either version may end with one optional part, the answer's sampling error
(an answer estimated by sampling, as the probe adapter's; agents/probe.py)::

    ...;se=<largest>,<mean>

the largest and the mean standard error of the answer's values (over the
asked actions and the hands that do not collide with the board), decimals
with 0 <= mean <= largest <= 1. :func:`sampling_error` reads it; decoding
ignores it.

>>> from protocol.rules import Action
>>> line = encode_answer("q7", [Action.CALL, Action.FOLD], np.array([[1.0, 0.25], [0.0, 0.5]]), 2)
>>> line
'RANGE:q7:2:c=FAACAPwAAgD4=;f=FAAAAAAAAAD8='
>>> answer = decode_answer(line, (Action.FOLD, Action.CALL), 2)
>>> answer.version, answer.rows.tolist()
(2, [[0.0, 0.5], [1.0, 0.25]])
>>> decode_answer("RANGE:q7:c=1,0.25;f=0,0.5", (Action.CALL, Action.FOLD), 2).rows.tolist()
[[1.0, 0.25], [0.0, 0.5]]
>>> encode_answer("q8", [Action.CALL], np.ones((1, 1326)), 2)
'RANGE:q8:2:c=K1.0'
>>> sampled = encode_answer("q9", [Action.CALL], np.ones((1, 2)), 1, sampling_error=(0.05, 0.0125))
>>> sampled, sampling_error(answer_fields(sampled)[1])
('RANGE:q9:c=1,1;se=0.05,0.0125', (0.05, 0.0125))
"""

from __future__ import annotations

import binascii
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from protocol.arrays import BoolArray, FloatArray
from protocol.errors import ParseError
from protocol.rangequery import is_query_id, parse_action_token
from protocol.rules import Action


#: The versions of the answer format this module reads and writes.
SUPPORTED_VERSIONS = (1, 2)
#: When the requested actions are every legal action, their probabilities may sum to this
#: much less than 1 (looser than :data:`SUM_TOLERANCE`: a bot writing six decimals,
#: 0.333333 three times, must pass; a strategy that is not one, such as 2/3, must not).
SHORTFALL_TOLERANCE = 1e-3
#: Sums of probabilities over the requested actions may exceed 1 by this much.
SUM_TOLERANCE = 1e-6
#: The longest decimal accepted in a ``K`` part (a float's repr is at most 24).
MAX_CONSTANT_LENGTH = 40

# One decimal number, written so that every string has at most one way to
# match (no nested or adjacent ambiguous repeats): matching is linear.
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
# The characters of a version-1 row: one character class, linear by construction.
_ROW_CHARACTERS = re.compile(r"[0-9.eE+,\-]*\Z")
_FORMS: dict[str, np.dtype[np.floating[Any]]] = {"F": np.dtype("<f4"), "D": np.dtype("<f8")}
#: The name of the optional last part of an answer: its sampling error.
ERROR_PART = "se="
#: The longest sampling-error part accepted (two decimals and a comma).
MAX_ERROR_PART_LENGTH = 2 * MAX_CONSTANT_LENGTH + 1


@dataclass(frozen=True)
class RangeAnswer:
    """A decoded answer, rows in the order of the query's actions.

    Attributes:
        qid: the answer's id.
        actions: the actions, in the query's order.
        rows: float64 array ``(len(actions), num_hands)``, read-only.
        version: the answer format the bot used (1 or 2).
        sampling_error: ``(largest, mean)`` standard error the answer says
            its values carry (its ``se=`` part), or None (exact, or not said).
    """

    qid: str
    actions: tuple[Action, ...]
    rows: FloatArray
    version: int
    sampling_error: tuple[float, float] | None = None

    def row(self, action: Action) -> FloatArray:
        """The probabilities of ``action`` for every hand.

        Raises:
            KeyError: ``action`` is not in the answer.
        """
        if action not in self.actions:
            raise KeyError(action)
        row: FloatArray = self.rows[self.actions.index(action)]
        return row


# -- negotiation ----------------------------------------------------------------


def parse_versions(words: str) -> tuple[int, ...]:
    """The versions listed after an announcement: ``"1 2"`` -> ``(1, 2)``; nothing means 1.

    >>> parse_versions(" 1 2"), parse_versions("")
    ((1, 2), (1,))

    Raises:
        ParseError: a word that is not a small positive number.
    """
    items = words.split()
    if not items:
        return (1,)
    if len(items) > 16 or not all(w.isdigit() and w.isascii() and len(w) <= 3 for w in items):
        raise ParseError("versions are small numbers separated by spaces", words[:100])
    return tuple(sorted({int(w) for w in items}))


def negotiate(theirs: Iterable[int], ours: Iterable[int] = SUPPORTED_VERSIONS) -> int | None:
    """The highest version both sides speak, or None.

    >>> negotiate((1, 2)), negotiate((1,)), negotiate((3,))
    (2, 1, None)
    """
    common = set(theirs) & set(ours)
    return max(common) if common else None


# -- decode ---------------------------------------------------------------------


def answer_fields(line: str) -> tuple[str, str]:
    """``(qid, body)`` of a ``RANGE`` line: the body is everything after the qid.

    The relay forwards the body unchanged under the agent's qid.

    Raises:
        ParseError: not ``RANGE:<qid>:...`` with a well-formed qid.
    """
    text = line.rstrip("\r\n")
    tag, _, rest = text.partition(":")
    qid, colon, body = rest.partition(":")
    if tag != "RANGE" or not colon:
        raise ParseError("an answer is RANGE:<qid>:...", line[:200])
    if not is_query_id(qid):
        raise ParseError("a query id is one or more letters and digits", line[:200])
    return qid, body


def decode_answer(line: str, actions: Sequence[Action], num_hands: int) -> RangeAnswer:
    """Read a ``RANGE`` line (either version) answering a query about ``actions``.

    Only the form is checked here (every asked action once, N values each,
    numbers that parse); :func:`check_rows` checks the values.

    Args:
        line: the line (a trailing CR/LF is ignored).
        actions: the actions the query asked about; the rows come back in this order.
        num_hands: N, the game's number of private hands.

    Raises:
        ParseError: anything malformed, or an unknown version.
    """
    qid, body = answer_fields(line)
    rows, version = decode_body(body, actions, num_hands)
    return RangeAnswer(qid, tuple(actions), rows, version, sampling_error(body))


def body_version(body: str) -> int:
    """The version of an answer body already decoded (cheap: reads its first characters).

    >>> body_version("2:c=K1"), body_version("c=1,0")
    (2, 1)
    """
    head, colon, _ = body[:8].partition(":")
    return int(head) if colon and head.isdigit() else 1


def decode_body(body: str, actions: Sequence[Action], num_hands: int) -> tuple[FloatArray, int]:
    """Rows ``(len(actions), num_hands)`` and version of an answer's body (after the qid).

    Raises:
        ParseError: see :func:`decode_answer`.
    """
    version = 1
    head, colon, rest = body.partition(":")
    if colon:
        if not (head.isdigit() and head.isascii() and len(head) <= 3):
            raise ParseError("an answer's version is a number", body[:100])
        version = int(head)
        if version not in SUPPORTED_VERSIONS or version == 1:
            raise ParseError(f"unknown range answer version {head}", body[:100])
        body = rest
    head, semicolon, last = body.rpartition(";")
    if semicolon and last.startswith(ERROR_PART):
        _read_error_part(last)
        body = head
    if body.count(";") + 1 != len(actions):
        raise ParseError(f"an answer has one part per asked action ({len(actions)})", body[:200])
    index = {action: k for k, action in enumerate(actions)}
    rows = np.empty((len(actions), num_hands), dtype=np.float64)
    seen = [False] * len(actions)
    for part in body.split(";"):
        token, equals, data = part.partition("=")
        if not equals:
            raise ParseError("each answer part is <action>=<values>", part[:100])
        k = index.get(parse_action_token(token[:20]), -1)
        if k < 0 or seen[k]:
            raise ParseError("answer does not match the query's actions "
                             f"({token[:20]!r} not asked, or answered twice)", part[:100])
        seen[k] = True
        if version == 1:
            rows[k] = _decimal_row(data, num_hands, token)
        else:
            rows[k] = _compact_row(data, num_hands, token)
    rows.flags.writeable = False
    return rows, version


def sampling_error(body: str) -> tuple[float, float] | None:
    """The ``se=<largest>,<mean>`` part of an answer body, or None when it has none.

    >>> sampling_error("2:c=K1;se=0.1,0.02"), sampling_error("c=1,1")
    ((0.1, 0.02), None)

    Raises:
        ParseError: a malformed part (not two decimals with 0 <= mean <= largest <= 1).
    """
    _, semicolon, last = body.rpartition(";")
    if not semicolon or not last.startswith(ERROR_PART):
        return None
    return _read_error_part(last)


def _read_error_part(part: str) -> tuple[float, float]:
    text = part[len(ERROR_PART):]
    largest, comma, mean = text.partition(",")
    if (len(text) > MAX_ERROR_PART_LENGTH or not comma or not _NUMBER.match(largest)
            or not _NUMBER.match(mean)):
        raise ParseError("the sampling error is se=<largest>,<mean>", part[:100])
    values = float(largest), float(mean)
    if not 0.0 <= values[1] <= values[0] <= 1.0:
        raise ParseError("a sampling error has 0 <= mean <= largest <= 1", part[:100])
    return values


def _decimal_row(data: str, num_hands: int, token: str) -> FloatArray:
    if data.count(",") + 1 != num_hands:
        raise ParseError(f"action {token}: {data.count(',') + 1} values, expected {num_hands}")
    if not _ROW_CHARACTERS.match(data):
        bad = re.search(r"[^0-9.eE+,\-]", data)
        raise ParseError("not a decimal number", data[max(0, bad.start() - 10) : bad.start() + 10]
                         if bad else data[:50])
    try:
        return np.array(data.split(","), dtype=np.float64)
    except ValueError as error:
        # The characters are right but an item is not a number ("1e", "..",
        # ""); numpy's message names it.
        raise ParseError(f"action {token}: not a decimal number ({str(error)[:80]})") from None


def _compact_row(data: str, num_hands: int, token: str) -> npt.NDArray[np.floating[Any]] | float:
    """One version-2 row: a float (``K``, for every hand) or the row's raw values (widened on assignment)."""
    form, payload = data[:1], data[1:]
    if form == "K":
        if len(payload) > MAX_CONSTANT_LENGTH or not _NUMBER.match(payload):
            raise ParseError(f"action {token}: K needs one decimal number", payload[:50])
        return float(payload)
    dtype = _FORMS.get(form)
    if dtype is None:
        raise ParseError(f"action {token}: unknown form (K, F or D)", data[:20])
    size = num_hands * dtype.itemsize
    expected = 4 * ((size + 2) // 3)
    if len(payload) != expected:
        raise ParseError(f"action {token}: {form} needs {expected} base64 characters "
                         f"({num_hands} values), got {len(payload)}")
    try:
        raw = binascii.a2b_base64(payload.encode("latin-1"), strict_mode=True)
    except (binascii.Error, ValueError) as error:
        raise ParseError(f"action {token}: bad base64 ({error})") from None
    if len(raw) != size:
        raise ParseError(f"action {token}: {len(raw)} bytes, expected {size}")
    return np.frombuffer(raw, dtype=dtype)


# -- check ----------------------------------------------------------------------


def check_rows(rows: FloatArray, blocked: BoolArray | None = None, complete: bool = False) -> None:
    """The value rules of an answer, vectorised.

    Every value is finite; for every hand not flagged in ``blocked`` (hands
    sharing a card with the board) each value is in [0, 1] and the values of a
    hand over the asked actions sum to at most 1 + :data:`SUM_TOLERANCE`; and
    when the asked actions are every legal action (``complete``), to at least
    1 - :data:`SHORTFALL_TOLERANCE`: then they are the whole strategy at the
    state, and less is not one (answers that could not be how the bot plays).

    Args:
        rows: float64 ``(actions, num_hands)``.
        blocked: bool ``(num_hands,)``, or None (no hand is blocked).
        complete: the asked actions are every legal action at the state.

    Raises:
        ParseError: a rule is broken (the message names the first offender).
    """
    if rows.size and rows.min() >= 0.0 and rows.max() <= 1.0 and (
            rows.sum(axis=0).max() <= 1.0 + SUM_TOLERANCE) and not complete:
        return  # every hand passes, blocked or not (NaN fails every comparison)
    finite = np.isfinite(rows)
    if not finite.all():
        action, hand = np.argwhere(~finite)[0]
        raise ParseError(f"row {action}, hand {hand}: {rows[action, hand]!r} is not finite")
    live = rows if blocked is None or not blocked.any() else rows[:, ~blocked]
    if not live.size:
        return
    outside = (live < 0.0) | (live > 1.0)
    if outside.any():
        action, column = np.argwhere(outside)[0]
        raise ParseError(f"row {action}: {live[action, column]!r} is not in [0, 1]")
    sums = live.sum(axis=0)
    worst = int(sums.argmax())
    if sums[worst] > 1.0 + SUM_TOLERANCE:
        raise ParseError(f"probabilities of a hand sum to {float(sums[worst])!r} > 1")
    short = int(sums.argmin())
    if complete and sums[short] < 1.0 - SHORTFALL_TOLERANCE:
        raise ParseError(f"probabilities of a hand sum to {float(sums[short])!r} {NOT_A_STRATEGY}")


#: The end of the message of an answer refused because it is not a strategy
#: (:func:`check_rows` with ``complete``); it stays in the reasons built on it.
NOT_A_STRATEGY = "< 1 over every legal action"


def proves_not_a_strategy(reason: str) -> bool:
    """Whether a query's failure ``reason`` is an answer refused as not a strategy: proof that
    the bot's answers are not its play, as a range inconsistency is.

    >>> proves_not_a_strategy("malformed answer: probabilities of a hand sum to 0.6 < 1 over every legal action")
    True
    >>> proves_not_a_strategy("timed out")
    False
    """
    return reason.endswith(NOT_A_STRATEGY)


def read_answer(line: str, actions: Sequence[Action], num_hands: int,
                blocked: BoolArray | None = None) -> RangeAnswer:
    """:func:`decode_answer` then :func:`check_rows`: an answer fit to use.

    Raises:
        ParseError: malformed, or a value rule broken.
    """
    answer = decode_answer(line, actions, num_hands)
    check_rows(answer.rows, blocked)
    return answer


# -- encode ---------------------------------------------------------------------


def format_probability(value: float) -> str:
    """Print a probability as a plain decimal: ``0``, ``1``, ``0.25``, ``0.000050505``.

    Twelve decimals at most (error below 5e-13), trailing zeros stripped, no
    exponent.

    >>> format_probability(1.0), format_probability(1 / 19801)
    ('1', '0.0000505025')
    """
    if value == 0.0:
        return "0"
    if value == 1.0:
        return "1"
    text = f"{value:.12f}".rstrip("0").rstrip(".")
    return text if text not in ("", "-0") else "0"


def format_probabilities(values: Iterable[float]) -> str:
    """Comma-separated :func:`format_probability` texts, formatted in one pass.

    >>> format_probabilities([0.0, 1.0, 0.5, -0.0, 1 / 3])
    '0,1,0.5,0,0.333333333333'
    """
    items = [float(v) for v in values]
    distinct = set(items)
    if len(distinct) * 8 < len(items):
        # Few distinct values (a bot's constant rows, zeros on the board's
        # hands): print each value once.
        text_of = {value: format_probability(value) for value in distinct}
        return ",".join([text_of[value] for value in items])
    # One C-level %-format for the whole row, then strip each item's zeros.
    texts = ("%.12f," * len(items) % tuple(items)).split(",")[:-1]
    trimmed = [text.rstrip("0").rstrip(".") for text in texts]
    return ",".join(["0" if text == "-0" else text for text in trimmed])


def encode_answer(qid: str, actions: Sequence[Action], rows: npt.ArrayLike, version: int,
                  blocked: BoolArray | None = None, precision: str = "auto",
                  sampling_error: tuple[float, float] | None = None) -> str:
    """A ``RANGE`` line for ``rows`` (one row per action, in hand order).

    Args:
        qid: the query's id.
        actions: the actions, one per row.
        rows: ``(len(actions), num_hands)`` probabilities.
        version: 1 (decimal text) or 2 (compact).
        blocked: hands whose values are ignored (a version-2 row constant
            over the other hands is sent as one ``K`` number).
        precision: version 2 only: ``"float32"`` (``F``), ``"float64"``
            (``D``, exact) or ``"auto"`` (``F`` unless a positive value would
            round to 0 in float32, then ``D``).

    Raises:
        ValueError: unknown version or precision, or a shape mismatch.
    """
    array = np.asarray(rows, dtype=np.float64)
    if array.ndim != 2 or array.shape[0] != len(actions):
        raise ValueError(f"rows of shape {array.shape} for {len(actions)} actions")
    if version == 1:
        parts = [f"{a.text()}={format_probabilities(row.tolist())}" for a, row in zip(actions, array)]
        return f"RANGE:{qid}:{';'.join(parts)}{_error_part(sampling_error)}"
    if version != 2:
        raise ValueError(f"unknown range answer version {version}")
    if precision not in ("auto", "float32", "float64"):
        raise ValueError(f"unknown precision {precision!r}")
    # The live hands' columns, row-major (``array[:, ~blocked]`` is column-major,
    # which makes every row reduction below strided and several times slower).
    live = array if blocked is None or not blocked.any() else array.take(np.flatnonzero(~blocked), axis=1)
    # Whole-array reductions, once: which rows are constant over the live hands,
    # and (auto) which lose a positive value to float32.
    if live.shape[1]:
        constant = (live.min(axis=1) == live.max(axis=1)).tolist()
        first = live[:, 0].tolist()
    else:
        constant, first = [False] * len(actions), [0.0] * len(actions)
    narrow = array if all(constant) else array.astype("<f4")
    if precision == "auto" and not all(constant):
        widen = (np.count_nonzero(narrow, axis=1) != np.count_nonzero(array, axis=1)).tolist()
    else:
        widen = [precision == "float64"] * len(actions)
    out = []
    for k, action in enumerate(actions):
        if constant[k]:
            out.append(f"{action.text()}=K{first[k]!r}")
            continue
        form, data = ("D", array[k].astype("<f8")) if widen[k] else ("F", narrow[k])
        text = binascii.b2a_base64(data.tobytes(), newline=False).decode("ascii")
        out.append(f"{action.text()}={form}{text}")
    return f"RANGE:{qid}:2:{';'.join(out)}{_error_part(sampling_error)}"


def _error_part(error: tuple[float, float] | None) -> str:
    """``;se=<largest>,<mean>`` (shortest round-trip decimals), or nothing."""
    if error is None:
        return ""
    largest, mean = (min(max(0.0, float(v)), 1.0) for v in error)
    return f";{ERROR_PART}{largest!r},{min(mean, largest)!r}"

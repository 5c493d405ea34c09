"""The query log, ``MATCH.queries``: the opponent's range answers a match's results rest on.

The dealer writes it as hands finish (:class:`QueryLog`, called by the live
pipeline in ``dealer/results.py``): a header line, then one JSON line per hand
that needed rows, each row stored exactly (base64 of zlib-compressed
little-endian float64, :func:`encode_row`). ``acpc-lbr results`` reads it back
within stated bounds (:func:`read_query_log`: :data:`QUERY_LOG_LINE_LIMIT`,
rows inflated no further than their length, at most :data:`MAX_AIVAT_ROWS`
rows per decision) and checks that it is the log of the match it is given with
(:func:`check_query_log`). The format is in docs/results.md.
"""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import IO, NotRequired, TypedDict, cast

import numpy as np

from acpc_lbr.aivat import AivatRecord
from acpc_lbr.runtime.bounded import bounded_lines, inflate, loads_json
from acpc_lbr.results.outcomes import (
    OpponentDecision,
    aivat_requests,
    opponent_decisions,
)
from protocol.arrays import FloatArray
from protocol.gamedef import GameDef
from protocol.rangecodec import proves_not_a_strategy
from protocol.wire import LogState

#: Version of the ``.queries`` file format (2: the header records the AIVAT setup, ``aivat_setup``).
QUERY_LOG_VERSION = 2


#: Versions :func:`read_query_log` reads (1 has no AIVAT setup: its AIVAT is not recomputed).
READABLE_QUERY_LOG_VERSIONS = (1, 2)


@dataclass(frozen=True)
class AivatRows:
    """What AIVAT needs of one hand: per opponent decision, a row per action.

    Attributes:
        decisions: the opponent's decisions on the line.
        rows: per decision ``{action text: σ(s, ·, action)}`` for every action
            of :func:`aivat_actions`; None when a query failed.
        asked: per decision, the actions the dealer asked about itself (on
            a failure: those of the queries that were answered).
        failure: why ``rows`` is None.
        errors: the failed queries (the queries go out together).
    """

    decisions: list[OpponentDecision]
    rows: list[dict[str, FloatArray]] | None
    asked: list[list[str]]
    failure: str | None = None
    errors: int = 0


class QueryLogHeader(TypedDict, total=False):
    """The first line of a ``.queries`` file (files of older versions may lack the AIVAT keys)."""

    type: str
    version: int
    match: str
    measured: str
    half: int
    num_hands: int
    aivat: bool
    #: The AIVAT setup (:meth:`acpc_lbr.aivat.AivatSetup.record`; version 2 on, None without AIVAT).
    aivat_setup: AivatRecord | None


class DecisionRow(TypedDict):
    """One opponent decision of a showdown: its betting, the action, where the row came from, the row."""

    betting: str
    action: str
    source: str
    row: str


class AivatDecisionRows(TypedDict):
    """One opponent decision's AIVAT rows: the actions the dealer asked about, a row per action."""

    betting: str
    asked: list[str]
    rows: dict[str, str]


class QueryLogHand(TypedDict):
    """One hand's line of a ``.queries`` file."""

    type: str
    hand: int
    opponent_position: int
    failed: NotRequired[str]
    decisions: NotRequired[list[DecisionRow]]
    aivat_failed: NotRequired[str]
    aivat_asked: NotRequired[int]
    aivat_errors: NotRequired[int]
    aivat: NotRequired[list[AivatDecisionRows]]


def encode_row(row: FloatArray) -> str:
    """A row of probabilities, exactly: base64 of zlib-compressed little-endian float64."""
    data = np.ascontiguousarray(row, dtype="<f8")
    bits = data.view(np.uint64)  # compared as bits: 0.0 and -0.0 differ, NaNs are equal
    if len(bits) and bits[0] == bits[-1] and (bits == bits[0]).all():  # card-blind bots: a constant row
        return _encoded_constant(data[:1].tobytes(), len(data))
    # Level 1: a hand's rows are written while the next hand is played; level 6 took 3.5x the
    # CPU (130 against 38 us for a constant row) for half the bytes of a row that is 90 bytes anyway.
    return base64.b64encode(zlib.compress(data.tobytes(), 1)).decode("ascii")


@lru_cache(maxsize=64)
def _encoded_constant(value: bytes, length: int) -> str:
    """:func:`encode_row` of ``length`` copies of one float64 (given as its 8 bytes)."""
    return base64.b64encode(zlib.compress(value * length, 1)).decode("ascii")


def decode_row(text: str, length: int) -> FloatArray:
    """Inverse of :func:`encode_row`, for a row of ``length`` probabilities.

    The data may not inflate past ``8 * length`` bytes (a zlib bomb in a
    crafted file stops there: :func:`acpc_lbr.runtime.bounded.inflate`).

    Raises:
        ValueError: not base64 of zlib data, or not ``length`` float64 values.
    """
    if not isinstance(text, str):
        raise ValueError(f"a row is {type(text).__name__}, not base64 text")
    try:
        packed = base64.b64decode(text, validate=True)
    except ValueError as error:  # binascii.Error
        raise ValueError(f"a row is not base64 ({error})") from None
    data = inflate(packed, 8 * length)
    if len(data) != 8 * length:
        raise ValueError(f"a row holds {len(data)} bytes, not {length} float64 values")
    return np.frombuffer(data, dtype="<f8").astype(np.float64)


class QueryLog:
    """Writer of ``MATCH.queries``: a header line, then one JSON line per showdown.

    Each hand line holds the opponent's position and, per opponent decision
    on the line, its betting, the action, where the row came from
    (``relayed`` or ``asked``) and the row; or ``"failed": reason``.
    """

    def __init__(self, path: Path, header: QueryLogHeader, append: bool = False) -> None:
        self.path = path
        resumed = append and path.exists() and path.stat().st_size > 0
        self._file: IO[str] | None = open(path, "a" if append else "w", encoding="ascii")  # noqa: SIM115
        if not resumed:
            first: QueryLogHeader = {"type": "header", "version": QUERY_LOG_VERSION}
            first.update(header)
            self._write(first)

    def _write(self, record: QueryLogHeader | QueryLogHand) -> None:
        if self._file is not None:
            self._file.write(json.dumps(record, separators=(",", ":")) + "\n")
            self._file.flush()

    def hand(
        self,
        hand_id: int,
        opponent_position: int,
        decisions: Sequence[OpponentDecision],
        rows: Sequence[FloatArray] | None,
        sources: Sequence[str],
        failure: str | None,
        io: bool = True,
        aivat: AivatRows | None = None,
    ) -> None:
        """Record one hand's rows (or why there are none).

        ``io``: the IO rows are part of the line (a showdown); ``aivat``: the
        hand's AIVAT rows, when AIVAT is on.
        """
        record: QueryLogHand = {"type": "hand", "hand": hand_id, "opponent_position": opponent_position}
        if io and rows is None:
            record["failed"] = failure or "no answers"
        elif io and rows is not None:
            record["decisions"] = [
                {"betting": d.state.betting_text(), "action": d.action.text(), "source": s, "row": encode_row(r)}
                for d, r, s in zip(decisions, rows, sources)
            ]
        if aivat is not None:
            if aivat.rows is None:
                record["aivat_failed"] = aivat.failure or "no answers"
                record["aivat_asked"] = sum(1 for texts in aivat.asked if texts)  # queries answered
                record["aivat_errors"] = aivat.errors
            else:
                record["aivat"] = [
                    {"betting": d.state.betting_text(), "asked": list(asked),
                     "rows": {a: encode_row(r) for a, r in found.items()}}
                    for d, found, asked in zip(aivat.decisions, aivat.rows, aivat.asked)
                ]
        self._write(record)

    def close(self) -> None:
        """Close the file."""
        if self._file is not None:
            self._file.close()
            self._file = None


@dataclass
class QueryLogData:
    """What a ``.queries`` file holds: the header and, per hand, its rows (None: failed)."""

    header: QueryLogHeader
    rows: dict[int, list[FloatArray] | None]
    queries: int = 0
    #: Per hand, AIVAT's rows per opponent decision (None: failed); empty without AIVAT.
    aivat: dict[int, list[dict[str, FloatArray]] | None] = field(default_factory=dict)
    #: Failed queries recorded in the file.
    failures: int = 0
    #: Hands whose recorded failure is an answer refused as not a strategy
    #: (:func:`protocol.rangecodec.proves_not_a_strategy`), IO's and AIVAT's apart.
    not_strategies: int = 0
    #: Per hand with rows, the (betting, action) of each opponent decision they are for.
    lines: dict[int, list[tuple[str, str]]] = field(default_factory=dict)
    #: Per hand with AIVAT rows, the betting of each opponent decision they are for.
    aivat_lines: dict[int, list[str]] = field(default_factory=dict)


#: The longest line a ``.queries`` file may hold. A hand's line holds a row per opponent
#: decision (and AIVAT's, up to three per decision), each at most ~14 KB of base64 for
#: hold'em's 1,326 hands: a no-limit hand of a hundred opponent decisions with AIVAT
#: writes under 6 MB. Longer is a crafted or broken file, refused unread past this.
QUERY_LOG_LINE_LIMIT = 64 << 20


#: The most hands a row may be for when no game is given (the header's ``num_hands``).
MAX_ROW_HANDS = 1 << 16


#: AIVAT asks at most this many rows per opponent decision (:func:`acpc_lbr.aivat.correction_actions`:
#: fold, call and one raise).
MAX_AIVAT_ROWS = 3


def read_query_log(path: Path, num_hands: int | None = None,
                   actions_of: Mapping[int, int] | None = None) -> QueryLogData:
    """Read a ``.queries`` file (a torn last line is ignored), within bounds.

    Args:
        num_hands: the game's hands, each row's length (None: the header's,
            at most :data:`MAX_ROW_HANDS`).
        actions_of: per hand of the match's log, the actions played in it.
            When given, the rows of a hand the log does not hold are not
            decoded (they are counted, not used), and a hand may not list
            more decisions than it had actions. So the rows kept take at most
            ``8 * num_hands * (1 + MAX_AIVAT_ROWS)`` bytes per action of the log.

    Raises:
        ValueError: no header, an unknown version, a line longer than
            :data:`QUERY_LOG_LINE_LIMIT`, or a line that is not a query log
            record (a row that is not ``num_hands`` float64 values, too many
            decisions, a field of the wrong type), in one line naming the line.
    """
    reader = _QueryLogReader(path, num_hands, actions_of)
    with open(path, encoding="ascii", errors="replace") as file:
        for number, line in enumerate(bounded_lines(file, QUERY_LOG_LINE_LIMIT, path), 1):
            if not line.endswith("\n"):
                break
            try:
                reader.line(loads_json(line, f"{path}:{number}"))
            except (KeyError, TypeError, AttributeError) as error:
                raise ValueError(f"{path}:{number}: not a query log record ({type(error).__name__}: "
                                 f"{str(error)[:200]})") from None
            except ValueError as error:
                message = str(error)
                raise ValueError(message if message.startswith(str(path)) else
                                 f"{path}:{number}: {message[:300]}") from None
    return reader.data()


def actions_per_hand(hands: Iterable[LogState]) -> dict[int, int]:
    """Per hand of a log, the actions played in it (:func:`read_query_log`'s ``actions_of``)."""
    return {hand.hand_id: sum(len(actions) for actions in hand.betting) for hand in hands}


@dataclass
class _QueryLogReader:
    """The records of one ``.queries`` file so far (:func:`read_query_log`)."""

    path: Path
    num_hands: int | None
    actions_of: Mapping[int, int] | None
    header: QueryLogHeader | None = None
    rows: dict[int, list[FloatArray] | None] = field(default_factory=dict)
    aivat: dict[int, list[dict[str, FloatArray]] | None] = field(default_factory=dict)
    lines: dict[int, list[tuple[str, str]]] = field(default_factory=dict)
    aivat_lines: dict[int, list[str]] = field(default_factory=dict)
    queries: int = 0
    failures: int = 0
    not_strategies: int = 0

    def data(self) -> QueryLogData:
        if self.header is None:
            raise ValueError(f"{self.path}: not a query log (no header line)")
        return QueryLogData(self.header, self.rows, self.queries, self.aivat, self.failures,
                            self.not_strategies, self.lines, self.aivat_lines)

    def line(self, record: object) -> None:
        """Take one line's JSON value."""
        if not isinstance(record, dict):
            raise ValueError(f"a {type(record).__name__}, not a query log record")
        if record.get("type") == "header":
            self._header(record)
        elif record.get("type") == "hand":
            if self.header is None:
                raise ValueError("a hand before the header line")
            self._hand(cast(QueryLogHand, record))

    def _header(self, record: Mapping[str, object]) -> None:
        if record.get("version") not in READABLE_QUERY_LOG_VERSIONS:
            raise ValueError(f"{self.path}: unknown query log version {str(record.get('version'))[:40]!r}")
        if self.num_hands is None:
            claimed = record.get("num_hands")
            if type(claimed) is not int or not 1 <= claimed <= MAX_ROW_HANDS:
                raise ValueError(f"num_hands {str(claimed)[:40]!r} is not a count of hands in 1..{MAX_ROW_HANDS}")
            self.num_hands = claimed
        self.header = cast(QueryLogHeader, record)

    def _decode(self, hand_id: int, texts: Sequence[object]) -> list[FloatArray] | None:
        """The rows of one hand's ``texts`` (None: a hand the log does not hold, not decoded)."""
        assert self.num_hands is not None
        if self.actions_of is None:
            return [decode_row(cast(str, text), self.num_hands) for text in texts]
        actions = self.actions_of.get(hand_id)
        if actions is None:
            return None
        if len(texts) > actions * (1 + MAX_AIVAT_ROWS):
            raise ValueError(f"hand {hand_id} lists {len(texts)} rows for the {actions} actions the log has")
        return [decode_row(cast(str, text), self.num_hands) for text in texts]

    def _hand(self, record: QueryLogHand) -> None:
        """One hand's record, typed as the writer's (a field of another type raises TypeError,
        KeyError or AttributeError, which :func:`read_query_log` turns into its one line)."""
        hand_id = int(record["hand"])
        if "decisions" in record:
            decisions = list(record["decisions"])
            decoded = self._decode(hand_id, [d["row"] for d in decisions])
            if decoded is not None:
                self.rows[hand_id] = decoded
                self.lines[hand_id] = [(str(d["betting"]), str(d["action"])) for d in decisions]
            # (source "aivat": a row of AIVAT's own queries, counted with them)
            self.queries += sum(1 for d in decisions if d.get("source") == "asked")
        elif "failed" in record:
            self.rows[hand_id] = None
            self.failures += 1
            self.not_strategies += proves_not_a_strategy(str(record["failed"]))
        if "aivat" in record:
            aivat_decisions = list(record["aivat"])
            rows_at: list[object] = [d["rows"] for d in aivat_decisions]
            if not all(isinstance(rows, dict) and len(rows) <= MAX_AIVAT_ROWS for rows in rows_at):
                raise ValueError(f"hand {hand_id}: an AIVAT decision's rows are not a map of at most "
                                 f"{MAX_AIVAT_ROWS} actions to rows")
            maps = cast(list[dict[str, object]], rows_at)
            decoded = self._decode(hand_id, [text for rows in maps for text in rows.values()])
            if decoded is not None:
                found = iter(decoded)
                self.aivat[hand_id] = [{str(a): next(found) for a in rows} for rows in maps]
                self.aivat_lines[hand_id] = [str(d["betting"]) for d in aivat_decisions]
            self.queries += sum(1 for d in aivat_decisions if d.get("asked"))
        elif "aivat_failed" in record:
            self.aivat[hand_id] = None
            self.failures += int(record.get("aivat_errors", 1))
            self.queries += int(record.get("aivat_asked", 0))
            self.not_strategies += proves_not_a_strategy(str(record["aivat_failed"]))


def check_query_log(path: Path, queries: QueryLogData, match: str, half: int, measured: str,
                    game: GameDef, hands: Iterable[LogState]) -> None:
    """Refuse a query log that is not the one of this match's log and measured player.

    Its rows are σ at the opponent decisions of the hands it lists: a query
    log of another match (the mirror's, another run's), of another measured
    player, or whose lines are not the log's lines, would give IO values
    computed from the answers to other questions.

    Raises:
        ValueError: what does not fit.
    """
    header = queries.header
    for key, want in (("match", match), ("half", half), ("measured", measured)):
        if key in header and header[key] != want:  # type: ignore[literal-required]
            raise ValueError(f"{path}: the query log is for {key} {header[key]!r}, "  # type: ignore[literal-required]
                             f"not {want!r}: its rows answer other questions")
    by_id = {hand.hand_id: hand for hand in hands}
    for hand_id, line in queries.lines.items():
        hand = by_id.get(hand_id)
        if hand is None:  # past the end of a log cut short: its rows are not used
            continue
        opponent = 1 - hand.names.index(measured)
        played = [(d.state.betting_text(), d.action.text()) for d in opponent_decisions(game, hand, opponent)]
        if played != line:
            raise ValueError(f"{path}: the rows of hand {hand_id} are for the line {line}, "
                             f"not the log's {played}")
    for hand_id, bettings in queries.aivat_lines.items():
        hand = by_id.get(hand_id)
        if hand is not None:
            opponent = 1 - hand.names.index(measured)
            played_bettings = [d.state.betting_text() for d, _ in aivat_requests(game, hand, opponent)]
            if played_bettings != bettings:
                raise ValueError(f"{path}: the AIVAT rows of hand {hand_id} are for the decisions {bettings}, "
                                 f"not the log's {played_bettings}")
    every_row = [row for hand_rows in queries.rows.values() for row in hand_rows or ()]
    every_row += [row for decisions in queries.aivat.values() for found in decisions or () for row in found.values()]
    for row in every_row:
        if row.shape != (game.num_hands,) or not bool(np.all((row >= 0.0) & (row <= 1.0))):
            raise ValueError(f"{path}: a row is not {game.num_hands} probabilities in [0, 1]")

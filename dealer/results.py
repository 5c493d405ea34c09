"""A match's results: imaginary observations after each hand, the query log, the estimators.

The dealer measures one player (``--measure NAME``, default the first name)
against its opponent. After every hand it turns the hand into a
:class:`~acpc_lbr.estimators.HandOutcome`:

* the raw outcome is the measured player's value in the ``STATE`` line;
* a hand that ended in a fold keeps that value as its imaginary observation
  (IO); a showdown's IO is the measured player's expected value over every
  hand the opponent could have held on the line played
  (:func:`acpc_lbr.estimators.imaginary_observation`), weighted by
  w(h) = Π σ(s, h, a) over the opponent's actions a at states s on the line.

The σ rows come from the opponent itself: the answers the dealer already
relayed to an agent during the hand (:meth:`MatchResults.record_answer`) and,
for the rest, queries the dealer sends after the hand ends and before the
next deal (:meth:`MatchResults.after_hand`). Only showdowns need them. Every
showdown's rows go to ``MATCH.queries`` (JSON lines, rows stored exactly as
base64 float64), so ``acpc-lbr results MATCH.log`` recomputes every estimator
from files alone (:func:`outcomes_from_files`) -- bit for bit, since both
paths feed the same numbers through the same functions in the same order.

An opponent action to which the opponent's own answer gives probability 0
for the hand it really held is a *range inconsistency* of its answers:
counted, and reported with the results. A showdown whose queries failed, or
whose weights are all 0, keeps its raw value as its IO (counted as an IO
fallback): a substitution that does not depend on the cards, so IO stays
unbiased.

With AIVAT on (``aivat=True``), every hand -- folds too -- also gets its
AIVAT value (:mod:`acpc_lbr.aivat`): it needs, at every opponent decision,
the rows of every action :func:`acpc_lbr.aivat.correction_actions` lists and
of the played one (the played one's alone before
:func:`acpc_lbr.aivat.first_opponent_round`). Relayed answers are reused; the
rest is one dealer query per decision. The rows go to the same query log (``"aivat"`` in the hand's
line), so ``acpc-lbr results`` recomputes AIVAT from the files too.
"""

from __future__ import annotations

import base64
import copy
import heapq
import json
import sys
import time
import zlib
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import IO, TYPE_CHECKING, NotRequired, TextIO, TypedDict, cast

import numpy as np
import numpy.typing as npt
from twisted.internet import defer

from acpc_lbr.aivat import AivatRecord, AivatSetup, NotComputed
from acpc_lbr.bounded import bounded_lines, inflate, loads_json
from acpc_lbr.estimators import HandOutcome, MatchEstimates
from acpc_lbr.lbr import EquityFunction, equity_function, has_fast_equity
from acpc_lbr.outcomes import (
    OpponentDecision,
    aivat_requests,
    hand_aivat_value,
    hand_io,
    log_values,
    opponent_decisions,
)
from acpc_lbr.results import (
    LbrOptions,
    ResultsConfig,
    ResultsDocument,
    dumps,
    estimates_from_outcomes,
    format_table,
    merge_documents,
    player_results,
    results_document,
)
from dealer.events import Cause, EventHook, EventRecord, MatchEnded, RangeInconsistency
from dealer.interfaces import Clock, ListeningPort
from dealer.match import Match, MatchResult
from dealer.relay import QueryRelay, Question
from protocol.deal import Deal
from protocol.errors import ProtocolError
from protocol.gamedef import GameDef, load_game
from protocol.rangecodec import proves_not_a_strategy
from protocol.rules import Action, State
from protocol.wire import (
    LogState,
    MatchState,
    format_chips,
    log_state_for,
    parse_log_state,
    parse_score,
)

if TYPE_CHECKING:
    # Loaded only with --metrics-port (DealerResults): prometheus_client and twisted.web
    # are not on the path of a dealer without metrics.
    from dealer.metrics import DealerMetrics, MatchMetrics

FloatArray = npt.NDArray[np.float64]
#: ``ask(seat, [(state, actions), ...])``: queries sent together (``QueryRelay.ask_all``); per
#: query in order, its rows ``(len(actions), num_hands)`` or the exception it failed with.
AskFunction = Callable[[int, Sequence[Question]], Awaitable[list[FloatArray | Exception]]]

#: Version of the ``.queries`` file format (2: the header records the AIVAT setup, ``aivat_setup``).
QUERY_LOG_VERSION = 2
#: Versions :func:`read_query_log` reads (1 has no AIVAT setup: its AIVAT is not recomputed).
READABLE_QUERY_LOG_VERSIONS = (1, 2)


# -- AIVAT: rows of every listed action at every opponent decision ----------------------


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


@dataclass
class _IoRows:
    """What IO needs of one showdown: per opponent decision its σ row (None: a query failed)."""

    decisions: list[OpponentDecision] = field(default_factory=list)
    rows: list[FloatArray] | None = None
    #: Where each row came from: ``relayed``, ``aivat`` or ``asked``.
    sources: list[str] = field(default_factory=list)
    failure: str | None = None


# -- the query log ------------------------------------------------------------------------


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
    crafted file stops there: :func:`acpc_lbr.bounded.inflate`).

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


# -- offline: from files ----------------------------------------------------------------


@dataclass
class LogData:
    """What a ``.log`` holds: its hands, the seat names and error lines."""

    hands: list[LogState]
    seat_names: tuple[str, ...]
    errors: list[str] = field(default_factory=list)


#: The longest line a ``.log`` may hold. The dealer writes STATE lines of a few KB at most and
#: comment lines that quote a bot's line (at most ``--max_line``, 1 MiB, escaped: up to 4 MiB);
#: a longer line is not of a dealer's log, and is refused once this much of it is read.
LOG_LINE_LIMIT = 8 << 20


def read_match_log(path: Path, game: GameDef) -> LogData:
    """Read the ``STATE`` lines of a ``.log`` (a resumed log's repeated hands count once).

    A torn last line (no line end: the writer was stopped mid-line) is ignored,
    as in a query log.

    Raises:
        ValueError: a malformed line, a line longer than :data:`LOG_LINE_LIMIT`,
            a hand number missing between 0 and the
            last one, a hand repeated with another record, or a ``SCORE`` that
            is not the sum of the hands before it: the file does not say what
            was played.
    """
    log = _LogReader(game)
    with open(path, encoding="ascii", errors="replace") as file:
        for number, line in enumerate(bounded_lines(file, LOG_LINE_LIMIT, path), 1):
            if not line.endswith("\n"):
                break
            try:
                log.line(line.rstrip("\r\n"))
            except (ProtocolError, ValueError) as error:
                raise ValueError(f"{path}:{number}: {error}") from None
    ordered = [log.hands[k] for k in sorted(log.hands)]
    missing = next((k for k, hand in enumerate(ordered) if hand.hand_id != k), None)
    if missing is not None:
        raise ValueError(f"{path}: hand {missing} is missing (the log has {len(ordered)} hands up to hand "
                         f"{ordered[-1].hand_id}): the file does not hold the whole match")
    seat_names = log.seat_names
    if not seat_names and ordered:
        seat_names = ordered[0].names  # hand 0: position p is seat p
    return LogData(ordered, seat_names, log.errors)


@dataclass
class _LogReader:
    """The lines of one ``.log`` so far: its hands, every player's total, and the checks between them."""

    game: GameDef
    hands: dict[int, LogState] = field(default_factory=dict)
    totals: dict[str, float] = field(default_factory=dict)
    seat_names: tuple[str, ...] = ()
    errors: list[str] = field(default_factory=list)

    def line(self, text: str) -> None:
        """Take one line (without its line end)."""
        if text.startswith("STATE:"):
            self.hand(parse_log_state(text, self.game))
        elif text.startswith("SCORE:"):
            score = parse_score(text)
            tolerance = 1e-6 * (len(self.hands) + 1)
            if any(abs(total - self.totals.get(name, 0.0)) > tolerance
                   for total, name in zip(score.totals, score.names, strict=True)):
                summed = "|".join(format_chips(self.totals.get(name, 0.0)) for name in score.names)
                raise ValueError(f"the SCORE is not the sum of the {len(self.hands)} hands before it "
                                 f"({summed})")
            self.seat_names = score.names
        elif text.startswith("# ERROR"):
            self.errors.append(text[2:])

    def hand(self, state: LogState) -> None:
        """Take one ``STATE`` record (a repeat of an earlier hand must be the same record)."""
        first = self.hands.setdefault(state.hand_id, state)
        if first is not state:
            if first.text() != state.text():
                raise ValueError(f"hand {state.hand_id} appears twice with different records")
            return
        for name, value in zip(state.names, state.values, strict=True):
            self.totals[name] = self.totals.get(name, 0.0) + value


def read_log_header(path: Path) -> tuple[str, str, int, int]:
    """(match name, game argument, hands, seed) from a ``.log``'s first header line.

    Raises:
        ValueError: no ``# name/game/hands/seed`` line.
    """
    with open(path, encoding="ascii", errors="replace") as file:
        for line in bounded_lines(file, LOG_LINE_LIMIT, path):
            fields = line.split()
            if len(fields) == 6 and fields[:2] == ["#", "name/game/hands/seed"]:
                return fields[2], fields[3], int(fields[4]), int(fields[5])
    raise ValueError(f"{path}: no '# name/game/hands/seed' header line")


@dataclass
class Tally:
    """The counts of one match's results (see :data:`acpc_lbr.results.COUNT_KEYS`)."""

    showdowns: int = 0
    io_fallbacks: int = 0
    range_inconsistencies: int = 0
    dealer_queries: int = 0
    query_errors: int = 0
    aivat_fallbacks: int = 0

    def merge(self, other: Tally) -> None:
        """Add another tally."""
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


def outcomes_of_hands(
    game: GameDef,
    hands: Iterable[LogState],
    measured: str,
    half: int,
    rows: dict[int, list[FloatArray] | None] | None,
    tally: Tally | None = None,
    aivat_rows: dict[int, list[dict[str, FloatArray]] | None] | None = None,
    aivat_setup: AivatSetup | None = None,
    seed: int = 0,
) -> list[HandOutcome]:
    """Outcomes of one match's hands from the measured player's seat.

    Args:
        rows: per showdown hand its σ rows (None: failed); None for a match
            without range answers (then there is no IO at all).
        aivat_rows: per hand its AIVAT rows (None or missing: failed); None
            for a match without AIVAT.
        aivat_setup: AIVAT's value function and settings (None: this version's for ``game``).
        seed: the match's deal seed (AIVAT's sampling stream).
    """
    outcomes = []
    equity = None
    if aivat_rows is not None:
        equity = equity_function(game)
    for hand in hands:
        if measured not in hand.names:
            raise ValueError(f"hand {hand.hand_id}: {measured!r} did not play it ({'|'.join(hand.names)})")
        position = hand.names.index(measured)
        hand_rows = None if rows is None else rows.get(hand.hand_id)
        result = hand_io(game, hand, position, hand_rows, checked_state(game, hand))
        if tally is not None:
            tally.showdowns += result.showdown
            tally.io_fallbacks += result.fallback and rows is not None
            tally.range_inconsistencies += result.inconsistencies
        io = None if rows is None else result.io_chips
        io_variance = None if rows is None else result.io_variance
        aivat = None
        if aivat_rows is not None and equity is not None:
            aivat, fallback = hand_aivat_value(game, hand, position, aivat_rows.get(hand.hand_id), equity,
                                               aivat_setup, seed)
            if tally is not None:
                tally.aivat_fallbacks += fallback
        outcomes.append(HandOutcome(hand.hand_id, half, result.chips, io, aivat, io_variance))
    return outcomes


def checked_state(game: GameDef, hand: LogState) -> State:
    """The finished hand of a ``STATE`` record, replayed by the rules.

    Raises:
        ValueError: the betting is not a finished hand of ``game``, or the
            record's values are not what its betting and cards give.
    """
    try:
        state = hand.to_state(game)
        expected = log_values(state.values(hand.hole, [card for cards in hand.board for card in cards]))
    except ProtocolError as error:
        raise ValueError(f"hand {hand.hand_id}: {error}") from None
    if any(abs(want - got) > 1e-6 for want, got in zip(expected, hand.values, strict=True)):
        raise ValueError(f"hand {hand.hand_id}: the values {'|'.join(map(format_chips, hand.values))} are not "
                         f"what its betting and cards give ({'|'.join(map(format_chips, expected))})")
    return state


# -- live: one match inside the dealer ------------------------------------------------------


class MatchResults:
    """The results side of one live match (one half of a duplicate pair).

    Args:
        game: the game.
        match_name: the match name (for the query log header).
        measured: the measured player's name.
        half: 0, or 1 for the mirrored match of a duplicate pair.
        query_log: where to write the rows (None: nowhere).
        ask: the dealer's own query primitive (``QueryRelay.ask_all``); None
            when the match has no queryable opponent machinery.
        queryable: ``queryable(seat) -> bool``: whether asking is worth it.
        notify: tells the subscribers (metrics) of an event (``EventLog.notify``).
        sink: receives every :class:`HandOutcome` (a duplicate collector).
        aivat: also compute every hand's AIVAT value (its rows asked after every hand).
        seed: the match's deal seed (AIVAT's sampling stream).
        keep_outcomes: also keep every outcome in :attr:`outcomes` (for tests and
            callers that read them; a live dealer does not, so that its memory does
            not grow with the hands played: the sink has them).
    """

    def __init__(
        self,
        game: GameDef,
        match_name: str,
        measured: str,
        half: int = 0,
        query_log: Path | None = None,
        ask: AskFunction | None = None,
        queryable: Callable[[int], bool] | None = None,
        notify: EventHook | None = None,
        sink: Callable[[HandOutcome], None] | None = None,
        append: bool = False,
        aivat: bool = False,
        seed: int = 0,
        keep_outcomes: bool = False,
    ) -> None:
        if game.num_players != 2 and (ask is not None or aivat):
            raise ValueError("IO and AIVAT are computed for heads-up matches only")
        self.game = game
        self.aivat = aivat
        #: What fixes the AIVAT values besides cards and answers (recorded in the query log).
        self.aivat_setup = AivatSetup.for_game(game) if aivat and ask is not None else None
        self.seed = seed
        self._equity: EquityFunction | None = None
        self.match_name = match_name
        self.measured = measured
        self.half = half
        self.ask = ask
        self.queryable = queryable
        self.notify = notify
        self.sink = sink
        #: Every outcome, in hand order, with ``keep_outcomes`` (else stays empty).
        self.outcomes: list[HandOutcome] = []
        self._keep = keep_outcomes
        self.tally = Tally()
        self.any_rows = False
        self._answers: dict[tuple[int, str, str], FloatArray] = {}
        self._query_log_path = query_log
        self._query_log: QueryLog | None = None
        self._append = append

    def record_answer(self, state: MatchState, actions: Sequence[Action], rows: FloatArray) -> None:
        """An answer the dealer relayed during the hand (reused after it)."""
        betting = state.betting_text()
        for action, row in zip(actions, np.asarray(rows, dtype=np.float64)):
            self._answers[(state.hand_id, betting, action.text())] = row

    def will_ask(self, opponent_seat: int) -> bool:
        """Whether this hand's IO will be computed (the opponent can be asked)."""
        return self.ask is not None and (self.queryable is None or self.queryable(opponent_seat))

    def plain_hand(self, hand_id: int, chips: float, showdown: bool = False) -> HandOutcome:
        """Account for a hand without IO (the cheap path: no replay, no LogState)."""
        self.tally.showdowns += showdown
        outcome = HandOutcome(hand_id, self.half, chips, None)
        self._done(outcome)
        return outcome

    def _done(self, outcome: HandOutcome) -> None:
        """Give a hand's outcome to the sink (and keep it, if asked to)."""
        if self._keep:
            self.outcomes.append(outcome)
        if self.sink is not None:
            self.sink(outcome)

    def _log(self) -> QueryLog | None:
        if self._query_log is None and self._query_log_path is not None:
            self._query_log = QueryLog(
                self._query_log_path,
                {"match": self.match_name, "measured": self.measured, "half": self.half,
                 "num_hands": self.game.num_hands, "aivat": self.aivat,
                 "aivat_setup": None if self.aivat_setup is None else self.aivat_setup.record()},
                append=self._append,
            )
        return self._query_log

    async def after_hand(self, hand: LogState, seat_of: Sequence[int], state: State | None = None) -> HandOutcome:
        """Account for a finished hand; asks the opponent for missing rows first.

        Args:
            hand: the hand as written to the ``.log``.
            seat_of: seat of each position in this hand.
            state: the hand's finished state, if the caller has it (else ``hand`` is replayed).
        """
        position = hand.names.index(self.measured)
        opponent = 1 - position
        opponent_seat = seat_of[opponent]
        can_ask = self.will_ask(opponent_seat)
        if can_ask:
            self._log()  # a match with IO has a query log, even before its first showdown
        aivat: AivatRows | None = None
        aivat_chips: float | None = None
        asked: set[tuple[int, str, str]] = set()
        if can_ask and self.aivat:
            # First, so that one query per decision serves both AIVAT and IO.
            aivat, aivat_chips = await self._aivat_value(hand, position, opponent_seat, asked)
        final = hand.to_state(self.game) if state is None else state
        io_line = can_ask and final.is_showdown
        io = _IoRows()
        if io_line:
            io = await self._io_rows(hand, opponent, opponent_seat, asked, final)
        if io_line or aivat is not None:
            log = self._log()
            if log is not None:
                log.hand(hand.hand_id, opponent, io.decisions, io.rows, io.sources, io.failure,
                         io=io_line, aivat=aivat)
        self._answers = {k: v for k, v in self._answers.items() if k[0] > hand.hand_id}
        return self._account(hand, position, io.rows, can_ask, aivat_chips, final)

    async def _aivat_value(self, hand: LogState, position: int, opponent_seat: int,
                           asked: set[tuple[int, str, str]]) -> tuple[AivatRows, float]:
        """The hand's AIVAT rows (asked for first) and its AIVAT value in chips."""
        aivat = await self._aivat_rows(hand, 1 - position, opponent_seat, asked)
        chips, fallback = hand_aivat_value(self.game, hand, position, aivat.rows, self._equity_function(),
                                           self.aivat_setup, self.seed)
        self.tally.aivat_fallbacks += fallback
        return aivat, chips

    def _equity_function(self) -> EquityFunction:
        """LBR's equity function of the game (one per process: the LBR agents' cache)."""
        if self._equity is None:
            self._equity = equity_function(self.game)
        return self._equity

    def _fast_equity(self) -> EquityFunction | None:
        """The equity function when it is the compute core's (IO reads its river vectors)."""
        return self._equity_function() if has_fast_equity(self.game) else None

    async def _io_rows(self, hand: LogState, opponent: int, opponent_seat: int,
                       asked: set[tuple[int, str, str]], state: State) -> _IoRows:
        """The σ rows of every opponent decision of a showdown: kept answers, else asked.

        The missing rows are asked together, in one write (one round trip per
        hand); the first failure on the line leaves the hand without rows.
        ``asked``: the keys of the rows the dealer asked for AIVAT (their source is ``aivat``).
        """
        io = _IoRows(opponent_decisions(self.game, hand, opponent, state))
        keys = [(hand.hand_id, d.state.betting_text(), d.action.text()) for d in io.decisions]
        kept = [self._answers.get(key) for key in keys]  # before asking: answers are kept too
        missing = [i for i, row in enumerate(kept) if row is None]
        replies: dict[int, FloatArray | Exception] = {}
        if missing:
            assert self.ask is not None
            questions = [(io.decisions[i].state, [io.decisions[i].action]) for i in missing]
            replies = dict(zip(missing, await self.ask(opponent_seat, questions)))
        rows: list[FloatArray] = []
        for index, (key, row) in enumerate(zip(keys, kept)):
            if row is not None:
                rows.append(row)
                io.sources.append("aivat" if key in asked else "relayed")
                continue
            reply = replies[index]
            if isinstance(reply, Exception):  # QueryFailed or a closed match: no IO for this hand
                io.failure = str(getattr(reply, "reason", reply)) or type(reply).__name__
                self.tally.query_errors += 1
                self._proof_of_lies(hand.hand_id, io.failure)
                return io  # rows None
            rows.append(np.asarray(reply, dtype=np.float64)[0])
            io.sources.append("asked")
        # Counted once the hand has its rows, as the query log counts them (a failed
        # hand's log line records no rows, so none of its answers count there either).
        self.tally.dealer_queries += len(missing)
        io.rows = rows
        self.any_rows = True
        return io

    def _account(self, hand: LogState, position: int, rows: list[FloatArray] | None, can_ask: bool,
                 aivat_chips: float | None, state: State) -> HandOutcome:
        """The hand's outcome (IO from ``rows``), counted, told to the subscribers and the sink."""
        result = hand_io(self.game, hand, position, rows, state, self._fast_equity())
        self.tally.showdowns += result.showdown
        self.tally.io_fallbacks += result.fallback and can_ask
        self.tally.range_inconsistencies += result.inconsistencies
        if result.inconsistencies and self.notify is not None:
            self.notify(RangeInconsistency(hand=hand.hand_id, count=result.inconsistencies))
        outcome = HandOutcome(hand.hand_id, self.half, result.chips, result.io_chips if can_ask else None,
                              aivat_chips, result.io_variance if can_ask else None)
        self._done(outcome)
        return outcome

    async def _aivat_rows(
        self, hand: LogState, opponent: int, opponent_seat: int, asked: set[tuple[int, str, str]]
    ) -> AivatRows:
        """Every row AIVAT needs: relayed ones reused, the rest one query per decision.

        The rows the dealer asks for are kept for the hand's IO too; their keys go to ``asked``.
        """
        requests = aivat_requests(self.game, hand, opponent)
        decisions = [decision for decision, _ in requests]
        found: list[dict[str, FloatArray]] = []
        asked_texts: list[list[str]] = []
        pending: list[tuple[int, list[Action]]] = []
        for index, (decision, actions) in enumerate(requests):
            betting = decision.state.betting_text()
            rows: dict[str, FloatArray] = {}
            missing: list[Action] = []
            for action in actions:
                row = self._answers.get((hand.hand_id, betting, action.text()))
                if row is None:
                    missing.append(action)
                else:
                    rows[action.text()] = row
            found.append(rows)
            asked_texts.append([a.text() for a in missing])
            if missing:
                pending.append((index, missing))
        replies: list[FloatArray | Exception] = []
        if pending:
            assert self.ask is not None
            # Sent together, in one write: one round trip per hand, not per decision.
            replies = await self.ask(opponent_seat, [(requests[i][0].state, missing) for i, missing in pending])
        failure: str | None = None
        answered: list[list[str]] = [[] for _ in requests]
        for (index, missing), reply in zip(pending, replies):
            if isinstance(reply, Exception):  # as for IO: no AIVAT for this hand
                self.tally.query_errors += 1
                failure = failure or str(getattr(reply, "reason", reply)) or type(reply).__name__
                continue
            self.tally.dealer_queries += 1
            answered[index] = asked_texts[index]
            betting = requests[index][0].state.betting_text()
            array = np.asarray(reply, dtype=np.float64)
            for action, row in zip(missing, array):
                found[index][action.text()] = row
                self._answers[(hand.hand_id, betting, action.text())] = row
                asked.add((hand.hand_id, betting, action.text()))
        if failure is not None:
            errors = sum(1 for reply in replies if isinstance(reply, Exception))
            self._proof_of_lies(hand.hand_id, failure)
            return AivatRows(decisions, None, answered, failure, errors=errors)
        return AivatRows(decisions, found, asked_texts)

    def _proof_of_lies(self, hand_id: int, failure: str) -> None:
        """A hand whose (first) failed query is an answer refused as not a strategy counts as a
        range inconsistency: proof that the answers are not the play (as the query log's
        reader counts it, :func:`read_query_log`)."""
        if proves_not_a_strategy(failure):
            self.tally.range_inconsistencies += 1
            if self.notify is not None:
                self.notify(RangeInconsistency(hand=hand_id, count=1))

    def close(self) -> None:
        """Close the query log."""
        if self._query_log is not None:
            self._query_log.close()


class LiveEstimates:
    """The running estimators of one results document (a match or a duplicate pair).

    Live figures for the metrics come from running accumulators. The final
    estimators are built as the hands come, in canonical order (by deal, then
    half: :func:`acpc_lbr.results.estimates_from_outcomes`'s order), so they
    equal what ``acpc-lbr results`` computes from the files, trajectory
    included, while memory stays flat in hands played: no outcome is kept
    once every outcome before it in that order has come. Each half's outcomes
    come in deal order (the hand hooks are chained); an outcome waits only
    for the other half of a duplicate pair to reach its deal.

    Args:
        name: the document's name.
        big_blind: the game's big blind.
        publish: called with the running estimators after every hand.
        halves: the halves whose outcomes come here (``(0,)``, or ``(0, 1)`` for a pair).
        document: build the final estimators (False when no document will be
            made: then :meth:`final` refuses, and nothing is kept per hand).
            A document lists the halves still without their partner (to merge
            with a mirror played elsewhere), so with one half it keeps a few
            numbers per hand.
        live: keep the running figures (False when nothing reads them: a plain
            dealer's results, there for the query log; :attr:`running` stays empty).
    """

    def __init__(self, name: str, big_blind: int, publish: Callable[[str, MatchEstimates], None] | None = None,
                 halves: Sequence[int] = (0,), document: bool = True, live: bool = True) -> None:
        self.name = name
        self.big_blind = big_blind
        self._halves = tuple(halves)
        #: Read after every hand with ``live()`` only (the document's figures are exact).
        self.running = MatchEstimates.live_only(pairs=len(self._halves) > 1)
        self._live = live
        self.publish = publish
        #: Hands accounted for.
        self.hands = 0
        self._ordered: MatchEstimates | None = MatchEstimates() if document else None
        #: Outcomes that may still have one before them in canonical order: (deal, half, outcome).
        self._waiting: list[tuple[int, int, HandOutcome]] = []
        #: The last deal each half has given.
        self._last: dict[int, int] = {}

    def add(self, outcome: HandOutcome) -> None:
        """Account for one hand and publish the running figures."""
        self.hands += 1
        if self._live:
            self.running.add(outcome)
        ordered = self._ordered
        if ordered is not None:
            self._last[outcome.half] = outcome.deal
            heapq.heappush(self._waiting, (outcome.deal, outcome.half, outcome))
            while self._waiting and self._in_order(*self._waiting[0][:2]):
                ordered.add(heapq.heappop(self._waiting)[2])
        if self.publish is not None and self._live:
            self.publish(self.name, self.running)

    def expect_halves(self, halves: Sequence[int]) -> None:
        """Outcomes of ``halves`` come here (e.g. a mirror played in another process, whose
        outcomes its caller adds): to be said before the first outcome, since the canonical
        order waits on every half that will come."""
        if self.hands:
            raise ValueError(f"{self.name}: the halves are fixed once outcomes have come")
        self._halves = tuple(halves)
        self.running.pairs = len(self._halves) > 1

    def _in_order(self, deal: int, half: int) -> bool:
        """Whether no outcome still to come goes before (deal, half): every other half's next
        outcome (a later deal than its last) does not."""
        for other in self._halves:
            if other != half:
                last = self._last.get(other)
                if last is None or (last + 1, other) < (deal, half):
                    return False
        return True

    @property
    def waiting(self) -> int:
        """Outcomes held back for the canonical order (at most the lag between the halves)."""
        return len(self._waiting)

    def final(self) -> MatchEstimates:
        """The estimators over every outcome so far, in canonical order.

        Raises:
            ValueError: built with ``document=False``.
        """
        if self._ordered is None:
            raise ValueError(f"{self.name}: no document was asked for: the final estimators were not kept")
        if not self._waiting:
            return self._ordered
        estimates = copy.deepcopy(self._ordered)
        for _, _, outcome in sorted(self._waiting, key=lambda item: item[:2]):
            estimates.add(outcome)
        return estimates


# -- offline: every estimator from the files of finished matches ---------------------------


def _match_base(path: Path) -> tuple[str, int]:
    """('dir/MATCH', half) of a ``.log`` path (``MATCH.dup.log`` is half 1)."""
    text = str(path)
    if not text.endswith(".log"):
        raise ValueError(f"{path}: a match log ends in .log")
    stem = text[: -len(".log")]
    if stem.endswith(".dup"):
        return stem[: -len(".dup")], 1
    return stem, 0


class _AivatSetups:
    """The AIVAT setup of a set of query logs: the one they all record, or why AIVAT is not recomputed.

    A log that records no setup (version 1), an unknown or altered one, or
    logs that differ: recomputing with any one function could print figures
    the run did not have, so no AIVAT figure is given, and the reason is.
    """

    def __init__(self) -> None:
        self.setup: AivatSetup | None = None
        self.first = ""
        self.refused: str | None = None
        self.seen = False

    def setup_of(self, path: Path, header: QueryLogHeader) -> AivatSetup | None:
        """The setup to recompute ``path``'s AIVAT with (None: refused)."""
        self.seen = True
        if self.refused is not None:
            return None
        try:
            record = header.get("aivat_setup")
            if record is None:
                raise ValueError(f"records no AIVAT value function (query log version {header.get('version')}, "
                                 f"written before it was recorded); this version's could give other figures")
            setup = AivatSetup.from_record(record)
        except ValueError as error:
            self.refused = f"{path.name}: {error}"
            return None
        if self.setup is None:
            self.setup, self.first = setup, path.name
        elif setup != self.setup:
            self.refused = (f"{path.name} and {self.first} used different AIVAT setups (value functions "
                            f"{setup.value.digest()} and {self.setup.value.digest()})")
            return None
        return setup

    def config(self) -> AivatRecord | NotComputed | None:
        """``config.aivat``: None without AIVAT, the setup, or ``{"not_computed": reason}``."""
        if not self.seen:
            return None
        if self.refused is not None or self.setup is None:
            return {"not_computed": self.refused or "no AIVAT setup"}
        return self.setup.record()


def results_from_files(
    paths: Sequence[Path], measured: str | None = None, lbr: LbrOptions | None = None
) -> ResultsDocument:
    """The results document of finished matches, from their files alone.

    Args:
        paths: ``.log`` files, optionally with ``.queries`` files; a log's
            query file is also found next to it (``MATCH.queries`` beside
            ``MATCH.log``). ``MATCH.log`` and ``MATCH.dup.log`` are the two
            halves of a duplicate match, paired by hand number.
        measured: the measured player (default: the query log's, else the
            first seat's name).
        lbr: LBR options to record in the configuration, if known.

    Raises:
        ValueError: unreadable or inconsistent files.
    """
    groups, explicit = _log_groups(paths)
    found = _FoundResults(measured)
    offset = 1 << 32 if len(groups) > 1 else 0
    for group_index, (_, members) in enumerate(sorted(groups.items())):
        group_hands = 0
        for half, log in sorted(members):
            query_path = explicit.get(str(log)[: -len(".log")]) or Path(str(log)[: -len(".log")] + ".queries")
            group_hands = max(group_hands, found.add_log(log, half, query_path, group_index * offset))
        found.hands += group_hands
    return found.document(lbr)


def _log_groups(paths: Sequence[Path]) -> tuple[dict[str, list[tuple[int, Path]]], dict[str, Path]]:
    """The ``.log`` files by match (``{'dir/MATCH': [(half, log)]}``) and the ``.queries`` files
    given explicitly (by ``'dir/MATCH'``).

    Raises:
        ValueError: a file that is neither, or no ``.log``.
    """
    logs = [Path(p) for p in paths if str(p).endswith(".log")]
    explicit = {str(p)[: -len(".queries")]: Path(p) for p in paths if str(p).endswith(".queries")}
    others = [p for p in paths if not str(p).endswith((".log", ".queries"))]
    if others:
        raise ValueError(f"not a .log or .queries file: {others[0]}")
    if not logs:
        raise ValueError("no .log file given")
    groups: dict[str, list[tuple[int, Path]]] = {}
    seen: dict[Path, Path] = {}
    for log in logs:
        first = seen.setdefault(log.resolve(), log)
        if first is not log:
            raise ValueError(f"{log} is given twice (as {first}): its hands would count twice")
        base, half = _match_base(log)
        groups.setdefault(base, []).append((half, log))
    return groups, explicit


@dataclass
class _FoundResults:
    """What :func:`results_from_files` gathers, log by log (in group and half order)."""

    measured: str | None
    game_arg: str | None = None
    game: GameDef | None = None
    seed: int | None = None
    hands: int = 0
    players: tuple[str, ...] = ()
    tally: Tally = field(default_factory=Tally)
    errors: int = 0
    any_io: bool = False
    duplicate: bool = False
    outcomes: list[HandOutcome] = field(default_factory=list)
    matches: list[str] = field(default_factory=list)
    setups: _AivatSetups = field(default_factory=lambda: _AivatSetups())
    #: The log of each (match name, seed) added.
    headers: dict[tuple[str, int], Path] = field(default_factory=dict)
    #: The log of each (seed, seat names) added.
    seatings: dict[tuple[int, tuple[str, ...]], Path] = field(default_factory=dict)
    #: The first log of each match (by its deal offset): seed, seat names, path.
    halves: dict[int, tuple[int, tuple[str, ...], Path]] = field(default_factory=dict)
    #: Per hand, the names and values by position (each player's raw result, more than two players).
    player_values: list[tuple[tuple[str, ...], tuple[float, ...]]] = field(default_factory=list)

    def add_log(self, log: Path, half: int, query_path: Path, deal_offset: int) -> int:
        """Add one ``.log`` (and its ``.queries`` file, if there is one); returns its header's hands.

        Raises:
            ValueError: its game differs from the first log's, or a file is unreadable.
        """
        name, this_game, hands, this_seed = read_log_header(log)
        if (name, this_seed) in self.headers:
            raise ValueError(f"{log} and {self.headers[name, this_seed]} are the same match ({name}, seed "
                             f"{this_seed}): its hands would count twice")
        self.headers[name, this_seed] = log
        if self.game_arg is None:
            self.game_arg, self.game, self.seed = this_game, load_game(this_game), this_seed
        elif load_game(this_game) != self.game:
            raise ValueError(f"{log}: game {this_game} differs from {self.game_arg}")
        game = self.game
        assert game is not None
        data = read_match_log(log, game)
        if not self.players:
            self.players = data.seat_names
        elif sorted(data.seat_names) != sorted(self.players):
            raise ValueError(f"{log}: players {'|'.join(data.seat_names)}, not {'|'.join(self.players)}: "
                             "the results of other players do not merge into one figure")
        self._check_seating(log, this_seed, data.seat_names, deal_offset)
        self.errors += len(data.errors)
        self.duplicate = self.duplicate or half == 1
        self.player_values.extend((hand.names, tuple(hand.values)) for hand in data.hands)
        rows: dict[int, list[FloatArray] | None] | None = None
        aivat_rows: dict[int, list[dict[str, FloatArray]] | None] | None = None
        setup: AivatSetup | None = None
        who = self.measured
        if query_path.exists():
            queries = read_query_log(query_path, game.num_hands, actions_per_hand(data.hands))
            check_query_log(query_path, queries, name, half, who or queries.header.get("measured") or
                            self.players[0], game, data.hands)
            rows = queries.rows
            if queries.header.get("aivat"):
                setup = self.setups.setup_of(query_path, queries.header)
                aivat_rows = None if setup is None else queries.aivat
            self.tally.dealer_queries += queries.queries
            self.tally.query_errors += queries.failures
            self.tally.range_inconsistencies += queries.not_strategies
            who = who or queries.header.get("measured")
            self.any_io = True
        who = who or self.players[0]
        if self.measured is None:
            self.measured = who
        for outcome in outcomes_of_hands(game, data.hands, who, half, rows, self.tally, aivat_rows, setup,
                                         this_seed):
            self.outcomes.append(replace(outcome, deal=outcome.deal + deal_offset))
        self.matches.append(name)
        return hands

    def _check_seating(self, log: Path, seed: int, seat_names: tuple[str, ...], deal_offset: int) -> None:
        """Refuse a second half that is not the first's mirror, or two logs of the same deals.

        Raises:
            ValueError: which logs, and why.
        """
        first = self.halves.setdefault(deal_offset, (seed, seat_names, log))
        if first[2] != log and (first[0] != seed or tuple(reversed(first[1])) != seat_names):
            raise ValueError(f"{log} is not the mirror of {first[2]} (seed {seed}, seats "
                             f"{'|'.join(seat_names)}; against seed {first[0]}, seats {'|'.join(first[1])}): "
                             "a duplicate pair is the same deal with the seats reversed")
        seating = self.seatings.setdefault((seed, seat_names), log)
        if seating != log:
            raise ValueError(f"{log} and {seating} were dealt from the same seed {seed} to the same seats: "
                             "the same deals, not independent samples (give each match its own seed)")

    def document(self, lbr: LbrOptions | None) -> ResultsDocument:
        """The results document of every log added."""
        assert self.game is not None
        if self.setups.refused is not None:  # no AIVAT figure from any of the logs
            self.outcomes = [replace(o, aivat_chips=None) for o in self.outcomes]
            self.tally.aivat_fallbacks = 0
        config: ResultsConfig = {
            "game": self.game_arg,
            "players": list(self.players),
            "measured": self.measured,
            "seed": self.seed,
            "hands": self.hands,
            "duplicate": self.duplicate,
            "lbr": lbr,
            "matches": self.matches,
            "aivat": self.setups.config(),
        }
        tally = self.tally
        counts = {
            "hands": len(self.outcomes),
            "errors": self.errors,
            "dealer_queries": tally.dealer_queries,
            "query_errors": tally.query_errors,
            "range_inconsistencies": tally.range_inconsistencies,
            "showdowns": tally.showdowns,
            "io_fallbacks": tally.io_fallbacks if self.any_io else 0,
            "aivat_fallbacks": tally.aivat_fallbacks,
        }
        players = None
        if self.game.num_players > 2:
            players = player_results(self.player_values, self.game.big_blind, self.players)
        return results_document(config, estimates_from_outcomes(self.outcomes), self.game.big_blind, counts, {},
                                players)


# -- wiring into the dealer: a match, or a match and its mirror ------------------------------


class ResultsGroup:
    """The results of one group of matches: a match, or a match and its mirror (``--duplicate``).

    Attaches a :class:`MatchResults` to each match (awaited after every hand,
    through ``Match.hand_hooks``), keeps the answers the dealer relays, feeds
    the running estimators and, when given, the Prometheus series of each
    match (an :class:`~dealer.events.EventLog` subscriber).

    Args:
        matches: the group's matches (the mirror second).
        measured: the measured player (default: the first match's first name).
        metrics: a :class:`dealer.metrics.DealerMetrics`, or None.
        lbr: LBR options for the results' configuration, if known.
        query_logs: write ``MATCH.queries`` beside each ``MATCH.log``.
        io: ask the opponent for its range after each showdown (imaginary
            observations); False keeps only the raw and duplicate estimators.
        aivat: also compute AIVAT (needs ``io``: the same query machinery).
        halves: the half of each match (default 0, 1, ...; a process playing
            only the mirror gives ``(1,)``).
        keep_outcomes: each :class:`MatchResults` keeps its outcomes (tests read them).
        document: a results document will be asked for (:meth:`document`); without
            one nothing is kept per hand for it.
        live: something reads the running figures (metrics, a progress display).
    """

    def __init__(
        self,
        matches: Sequence[Match],
        measured: str | None = None,
        metrics: DealerMetrics | None = None,
        lbr: LbrOptions | None = None,
        query_logs: bool = True,
        io: bool = True,
        aivat: bool = False,
        halves: Sequence[int] | None = None,
        keep_outcomes: bool = False,
        document: bool = True,
        live: bool = True,
    ) -> None:
        first = matches[0]
        self.matches = list(matches)
        self.game: GameDef = first.game
        self.name: str = first.config.name
        self.measured = measured if measured is not None else first.config.names[0]
        if self.measured not in first.config.names:
            raise ValueError(f"--measure {self.measured}: not a player of {self.name}")
        self.lbr = lbr
        self.match_metrics: list[MatchMetrics] = []
        self.started = 0.0
        #: Heads-up: IO and AIVAT can be computed; more players: raw results only.
        self.heads_up = self.game.num_players == 2
        io, aivat = io and self.heads_up, aivat and self.heads_up
        own_halves = list(range(len(self.matches)) if halves is None else halves)
        self.live = LiveEstimates(self.name, self.game.big_blind, self._publish, own_halves, document, live)
        self.results: list[MatchResults] = []
        for half, match in zip(own_halves, self.matches):
            config = match.config
            relay = match.relay

            def queryable(seat: int, relay: QueryRelay = relay) -> bool:
                return relay.queryable[seat]
            part = MatchResults(
                self.game, config.name, self.measured, half,
                query_log=Path(f"{config.name}.queries") if query_logs and config.write_log else None,
                ask=match.relay.ask_all if io else None, queryable=queryable,
                notify=match.events.notify, sink=self.live.add, append=config.resume,
                aivat=aivat, seed=config.seed, keep_outcomes=keep_outcomes,
            )
            self.results.append(part)
            match.hand_hooks.append(self._hand_hook(match, part))
            self._keep_answers(relay, part)
            if metrics is not None:  # labelled by the match name, not the log folder
                observer = metrics.match(Path(config.name).name, config.names)
                self.match_metrics.append(observer)
                match.events.subscribe(observer.observe)

    @staticmethod
    def _keep_answers(relay: QueryRelay, part: MatchResults) -> None:
        # Every answer the relay checks (an agent's relayed query or the
        # dealer's own) is kept for the hand's IO, so nothing is asked twice.
        relay.answer_hooks.append(part.record_answer)

    def _hand_hook(self, match: Match, part: MatchResults) -> Callable[[State, Deal, Sequence[int]], Awaitable[None]]:
        # The IO queries of hand h are answered while hand h+1 is played: the
        # hook starts hand h's accounting (after hand h-1's, so outcomes and the
        # query log stay in hand order) and waits only for hand h-1's, or for
        # everything after the match's last hand. A slow bot delays the match
        # by at most a hand; the dealer does not wait a round trip per showdown.
        tail: list[defer.Deferred[None]] = [defer.succeed(None)]

        async def account(previous: defer.Deferred[None], state: State, deal: Deal,
                          seat_of: Sequence[int]) -> None:
            await previous
            names = tuple(match.config.names[s] for s in seat_of)
            position = names.index(self.measured)
            recorded = match.result.hand_values.get(state.hand_id)
            if recorded is not None:  # by seat, as the dealer computed them for the .log
                values = log_values([recorded[s] for s in seat_of])
            else:
                values = log_values(state.values(deal.hole, deal.board_cards))
            if not self.heads_up or not part.will_ask(seat_of[1 - position]):
                part.plain_hand(state.hand_id, values[position], state.is_showdown)
                return
            # (The hand's final state, queued for the opponent's next send, goes out
            # before any query: a query is sent with the lines queued before it.)
            await part.after_hand(log_state_for(state, deal, values, names), seat_of, state)

        async def after_hand(state: State, deal: Deal, seat_of: Sequence[int]) -> None:
            previous = tail[0]
            current = defer.ensureDeferred(account(previous, state, deal, list(seat_of)))
            tail[0] = current
            last = state.hand_id >= match.config.hands - 1
            await (current if last else previous)

        return after_hand

    def _publish(self, name: str, estimates: MatchEstimates) -> None:
        if self.match_metrics:  # the group's estimate lives on its first match
            self.match_metrics[0].publish_estimates(estimates, self.game.big_blind)

    def document(self, outcomes: Sequence[MatchResult], timings: dict[str, float] | None = None) -> ResultsDocument:
        """The results document (``outcomes``: each match's :class:`~dealer.match.MatchResult`)."""
        first = self.matches[0].config
        counts: dict[str, int] = {
            "hands": self.live.hands,
            "errors": sum(1 for r in outcomes if r.exit_code != 0),
            "timeouts": sum(1 for r in outcomes if r.cause in (Cause.TIMEOUT, Cause.OUT_OF_TIME)),
            "disconnects": sum(1 for r in outcomes if r.cause == Cause.DISCONNECT),
            "invalid_actions": sum(sum(r.corrections) for r in outcomes),
            "dealer_queries": sum(p.tally.dealer_queries for p in self.results),
            "range_inconsistencies": sum(p.tally.range_inconsistencies for p in self.results),
            "showdowns": sum(p.tally.showdowns for p in self.results),
            "io_fallbacks": sum(p.tally.io_fallbacks for p in self.results),
            "aivat_fallbacks": sum(p.tally.aivat_fallbacks for p in self.results),
        }
        queries = query_errors = 0
        query_seconds = 0.0
        for match in self.matches:
            for seat_counts in match.relay.counts:
                queries += seat_counts.answered + seat_counts.errors
                query_errors += seat_counts.errors
                query_seconds += seat_counts.seconds
        counts["queries"] = queries
        counts["query_errors"] = query_errors
        setup = self.results[0].aivat_setup if self.results else None
        config: ResultsConfig = {
            "game": first.game_arg,
            "players": list(first.names),
            "measured": self.measured,
            "seed": first.seed,
            "hands": first.hands,
            "duplicate": len(self.matches) > 1,
            "lbr": self.lbr,
            "matches": [m.config.name for m in self.matches],
            "aivat": None if setup is None else setup.record(),
        }
        all_timings = {"query_seconds": query_seconds}
        all_timings.update(timings or {})
        players = None
        if not self.heads_up:  # each player's raw result, from the values the .log got
            players = player_results(
                ((m.config.names, values) for m, r in zip(self.matches, outcomes)
                 for _, values in sorted(r.hand_values.items())), self.game.big_blind, first.names)
        return results_document(config, self.live.final(), self.game.big_blind, counts, all_timings, players)

    def close(self) -> None:
        """Close the query logs."""
        for part in self.results:
            part.close()


class DealerResults:
    """Results and metrics of every match of a dealer process (``dealer/cli.py``): every estimator
    of a heads-up match, each player's raw result of a match of more players.

    Args:
        matches: groups of matches (a match, or a match and its mirror).
        reactor: for the metrics endpoint and the grace timers.
        measure: the measured player (default: each group's first name).
        results_json: write the results document here (several groups: one per group beside it,
            and their merge when they merge; :meth:`_write_documents`).
        metrics_port: serve ``/metrics`` on this port (None: no metrics).
        metrics_bind: the endpoint's interface.
        metrics_grace: seconds a finished match's series stay visible.
        lbr: LBR options for the results' configuration, if known.
        stream: where the results table goes (stderr).
        io: compute imaginary observations (the dealer's own range queries).
        table: print the results table on ``stream`` at the end.
        aivat: also compute AIVAT.
        live: something reads the running figures besides the metrics (a progress display).
    """

    def __init__(
        self,
        matches: Sequence[Sequence[Match]],
        reactor: Clock,
        measure: str | None = None,
        results_json: str | None = None,
        metrics_port: int | None = None,
        metrics_bind: str = "127.0.0.1",
        metrics_grace: float = 60.0,
        lbr: LbrOptions | None = None,
        stream: TextIO | None = None,
        io: bool = True,
        table: bool = True,
        aivat: bool = False,
        live: bool = True,
    ) -> None:
        self.reactor = reactor
        self.results_json = results_json
        self.table = table
        self.stream = stream if stream is not None else sys.stderr
        self.started = time.time()
        self.metrics: DealerMetrics | None = None
        if metrics_port is not None:
            from dealer.metrics import DealerMetrics  # lazy: prometheus_client only with metrics

            self.metrics = DealerMetrics()
        self.metrics_grace = metrics_grace
        self.groups = [
            ResultsGroup(group, measure, self.metrics, lbr, io=io or aivat, aivat=aivat,
                         document=table or results_json is not None,
                         live=live or self.metrics is not None)
            for group in matches
        ]
        self.listening: ListeningPort | None = None
        if self.metrics is not None:
            for group in self.groups:
                for match, observer in zip(group.matches, group.match_metrics):
                    match.events.subscribe(self._on_finish(observer))
            from dealer.metrics import serve_metrics  # lazy: as above

            stream = self.stream
            self.listening = serve_metrics(self.metrics, int(metrics_port or 0), metrics_bind,
                                           report=lambda line: print(line, file=stream, flush=True))
            host = self.listening.getHost()
            print(f"METRICS http://{host.host}:{host.port}/metrics", file=self.stream, flush=True)

    def linger(self) -> float:
        """Seconds the process keeps serving ``/metrics`` after its last match (announced on
        stderr), so a last scrape gets the final values: the grace, when metrics are on."""
        if self.listening is None or self.metrics_grace <= 0:
            return 0.0
        host = self.listening.getHost()
        print(f"METRICS final values stay on http://{host.host}:{host.port}/metrics for "
              f"{self.metrics_grace:g} s (--metrics-grace; Ctrl-C ends the wait)",
              file=self.stream, flush=True)
        return self.metrics_grace

    def _on_finish(self, observer: MatchMetrics) -> EventHook:
        def hook(event: EventRecord) -> None:
            if isinstance(event, MatchEnded):
                self.reactor.callLater(self.metrics_grace, observer.retire)

        return hook

    def documents(self, by_name: dict[str, MatchResult]) -> list[ResultsDocument]:
        """One results document per group (``by_name``: MatchResult by match name)."""
        wall = time.time() - self.started
        return [
            group.document([by_name[m.config.name] for m in group.matches], {"wall_seconds": wall})
            for group in self.groups
        ]

    def report(self, by_name: dict[str, MatchResult]) -> list[ResultsDocument]:
        """Print each group's table, write the JSON document, close the query logs."""
        if not self.table and self.results_json is None:
            # Nobody reads the documents (-q without --table or --results-json):
            # do not compute them.
            for group in self.groups:
                group.close()
            return []
        docs = self.documents(by_name)
        for group, doc in zip(self.groups, docs):
            group.close()
            if self.table:
                self.stream.write(f"RESULTS {group.name}\n" + format_table(doc))
        self.stream.flush()
        if self.results_json is not None and docs:
            self._write_documents(docs)
        return docs

    def _write_documents(self, docs: Sequence[ResultsDocument]) -> None:
        """``--results-json FILE``: one group's document in FILE; with several groups, one
        document per group (``FILE`` with ``.MATCH`` before its suffix) and, when they merge
        (batches of one pairing, dealt from different seeds), the merge in FILE; each path
        written is named on the stream."""
        path = Path(self.results_json or "")
        if len(docs) == 1:
            path.write_text(dumps(docs[0]), encoding="utf-8")
            return
        written = []
        for group, doc in zip(self.groups, docs):
            own = path.with_name(f"{path.stem}.{group.name.replace('/', '_')}{path.suffix}")
            own.write_text(dumps(doc), encoding="utf-8")
            written.append(str(own))
        try:
            path.write_text(dumps(merge_documents(docs)), encoding="utf-8")
            merged = f"{path} (the {len(docs)} matches merged: one estimate)"
        except ValueError as error:
            path.unlink(missing_ok=True)  # not an older run's figures under this run's name
            merged = f"no {path}: the matches do not merge ({error})"
        print(f"RESULTS JSON: one document per match: {', '.join(written)}; {merged}",
              file=self.stream, flush=True)

"""The results document of a match: its JSON form, its schema and its checks.

One document per match (or per merged set of matches), described in
``docs/results.md``::

    {
      "schema": "acpc-lbr/results",
      "version": 4,
      "software": {"name": "acpc-lbr", "version": "0.1.0"},
      "config": {"game": ..., "players": [...], "measured": ..., "seed": ...,
                 "hands": ..., "duplicate": ..., "lbr": {...} | null, "matches": [...],
                 "aivat": {"value_function": {...}, "opponent_from": ..., "samples": ...}
                          | {"not_computed": reason} | null},
      "big_blind": 100,
      "estimators": {"raw": {...}, "duplicate": {...}, "io": {...},
                     "duplicate_io": {...}, "aivat": {...}, "duplicate_aivat": {...},
                     "io_minus_raw": {..., "flagged": false},
                     "aivat_minus_raw": {..., "flagged": false},
                     "pending_halves": [...]},
      "counts": {"hands": ..., "errors": ..., "timeouts": ..., ...},
      "timings": {"wall_seconds": ..., ...},
      "trajectory": {"unit": "chips", "hands": [...], "estimators": {"raw": {...}, ...}}
    }

``estimators`` is :meth:`acpc_lbr.estimators.MatchEstimates.to_dict`: each
estimator in chips, mbb/g and bb/hand with n, mean, m2, std and the 95%
half-width; ``m2`` makes documents mergeable exactly
(:func:`acpc_lbr.results.merge.merge_documents`). The table for people is
:func:`acpc_lbr.results.table.format_table`.

>>> from acpc_lbr.estimators import HandOutcome
>>> doc = results_document({"game": "kuhn", "players": ["a", "b"]},
...     estimates_from_outcomes([HandOutcome(0, 0, 1.0), HandOutcome(1, 0, -1.0)]), 2)
>>> doc["estimators"]["raw"]["chips"]["n"], doc["counts"]["hands"]
(2, 2)
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from importlib.metadata import version
from pathlib import Path
from typing import NotRequired, TypedDict, cast

import jsonschema

from acpc_lbr.aivat import AivatRecord, NotComputed
from acpc_lbr.runtime.bounded import loads_json, read_bounded_text
from acpc_lbr.estimators import (
    EstimatorFigures,
    EstimatorsSection,
    HandOutcome,
    MatchEstimates,
    estimator_figures,
)
from acpc_lbr.stats import RunningMean
from acpc_lbr.trajectory import TrajectorySection

#: The ``schema`` field of every results document.
SCHEMA = "acpc-lbr/results"
#: Bumped whenever a field changes meaning or disappears (2: ``trajectory``;
#: 3: the AIVAT estimators and their honesty check; 4: ``config.aivat``, the
#: AIVAT value function the figures rest on).
SCHEMA_VERSION = 4
#: Versions :func:`acpc_lbr.results.merge.merge_documents` and the report read (1 has no trajectory;
#: 1 and 2 have no AIVAT, read as n = 0; 1-3 do not record AIVAT's value function).
READABLE_VERSIONS = (1, 2, 3, 4)

#: Counts every document carries (0 when unknown).
COUNT_KEYS = (
    "hands",
    "errors",
    "timeouts",
    "invalid_actions",
    "disconnects",
    "queries",
    "query_errors",
    "dealer_queries",
    "range_inconsistencies",
    "aivat_fallbacks",
)


class SoftwareInfo(TypedDict):
    """``software``: what wrote the document."""

    name: str
    version: str


class LbrOptions(TypedDict):
    """``config.lbr``: the options LBR played with."""

    bets: str
    rounds: str


class ResultsConfig(TypedDict, total=False):
    """``config``: what was played (the standard keys always; the rest where known)."""

    game: str | None
    players: list[str]
    measured: str | None
    seed: int | None
    hands: int | None
    duplicate: bool
    lbr: LbrOptions | None
    matches: list[str]
    #: Documents merged into this one (:func:`acpc_lbr.results.merge.merge_documents`).
    merged_from: int
    #: ``evaluate``: the opponent's short name (``--opponent-name``, the bot's or the program's
    #: name), its command line (``--opponent-cmd``) and the folder of its logs.
    opponent: str | None
    opponent_cmd: str
    logs: str
    #: The AIVAT setup the figures rest on (None: no AIVAT), or why there are no AIVAT figures.
    aivat: AivatRecord | NotComputed | None


class ResultsDocument(TypedDict):
    """A results document (JSON): see the module docstring for each part."""

    schema: str
    version: int
    software: SoftwareInfo
    config: ResultsConfig
    big_blind: int
    estimators: EstimatorsSection
    counts: dict[str, int]
    timings: dict[str, float]
    trajectory: TrajectorySection
    #: Games of more than two players: each player's raw result, by name (:func:`player_results`).
    players: NotRequired[dict[str, EstimatorFigures]]
    #: ``evaluate --probe``: what the probe adapters reported.
    probe: NotRequired[Mapping[str, object]]
    #: ``evaluate --workers``: the batches of a scaled-out run.
    scaleout: NotRequired[Mapping[str, object]]


def software_version() -> str:
    """The installed acpc-lbr version ('unknown' when not installed)."""
    try:
        return version("acpc-lbr")
    except Exception:  # noqa: BLE001 (a missing distribution is not an error here)
        return "unknown"


def estimates_from_outcomes(outcomes: Iterable[HandOutcome]) -> MatchEstimates:
    """The estimators over ``outcomes``, added in a canonical order.

    The sums are exact (:mod:`acpc_lbr.stats`), so the final figures do not
    depend on order; the trajectory (the running estimate at checkpoints)
    does. Adding by (deal, half) makes a live dealer (whose two duplicate
    halves interleave arbitrarily) and an offline recomputation from the logs
    give identical documents.
    """
    estimates = MatchEstimates()
    for outcome in sorted(outcomes, key=lambda o: (o.deal, o.half)):
        estimates.add(outcome)
    return estimates


def player_results(hands: Iterable[tuple[Sequence[str], Sequence[float]]], big_blind: int,
                   names: Sequence[str] = ()) -> dict[str, EstimatorFigures]:
    """Each player's raw result: the mean of its chips per hand with its 95% interval.

    Args:
        hands: per hand, the names and the values in one order (by seat or by position).
        big_blind: chips per big blind.
        names: the players, in the order to list them (those of no hand get n = 0).

    Returns:
        By name in the order first seen, the figures of :func:`acpc_lbr.estimators.estimator_figures`
        (exact sums: the live dealer and the files give the same document whatever the order).

    >>> figures = player_results([(("a", "b", "c"), (2.0, -1.0, -1.0)), (("b", "c", "a"), (1.0, 1.0, -2.0))], 2)
    >>> [(name, f["chips"]["mean"]) for name, f in figures.items()]
    [('a', 0.0), ('b', 0.0), ('c', 0.0)]
    """
    stats: dict[str, RunningMean] = {name: RunningMean() for name in names}
    for seats, values in hands:
        for name, value in zip(seats, values, strict=True):
            stats.setdefault(name, RunningMean()).add(float(value))
    return {name: estimator_figures(stat, big_blind) for name, stat in stats.items()}


#: The largest results document read (:func:`read_document`). A document keeps at most
#: :data:`acpc_lbr.trajectory.MAX_POINTS` trajectory points per estimator (under 1 MB in
#: all); a larger file is refused unread, so reading one takes at most ~20x this in memory.
MAX_DOCUMENT_BYTES = 16 << 20

_NUMBER = {"type": "number"}
_COUNT = {"type": "integer", "minimum": 0}
_NUMBER_OR_NULL = {"type": ["number", "null"]}
#: A fraction's text as :meth:`acpc_lbr.stats.RunningMean.exact_sums` writes it (a denominator
#: is never 0; the digits are bounded so that reading one stays linear).
_FRACTION = {"type": "string", "pattern": "^-?[0-9]{1,4000}(/[1-9][0-9]{0,3999})?$"}
_MEAN_PROPERTIES: dict[str, object] = {
    "n": _COUNT, "mean": _NUMBER, "m2": _NUMBER, "std": _NUMBER_OR_NULL, "half_width_95": _NUMBER_OR_NULL,
    "low_95": _NUMBER_OR_NULL, "high_95": _NUMBER_OR_NULL,
    "exact": {"type": "object", "required": ["sum", "sum_sq"],
              "properties": {"sum": _FRACTION, "sum_sq": _FRACTION, "sum_cube": _FRACTION,
                             "sum_fourth": _FRACTION}},
}
_MEAN_FIGURES = {
    "type": "object",
    "required": ["n", "mean"],
    # an estimator over hands also keeps each seat's figures (``by_seat``: two figure blocks)
    "properties": {**_MEAN_PROPERTIES, "by_seat": {"type": "array", "maxItems": 2, "items": {
        "type": "object", "required": ["n", "mean"], "properties": _MEAN_PROPERTIES}}},
}
_ESTIMATOR = {
    "type": "object",
    "required": ["chips"],
    "properties": {
        "chips": _MEAN_FIGURES, "mbb_per_game": _MEAN_FIGURES, "bb_per_hand": _MEAN_FIGURES,
        "z": _NUMBER_OR_NULL, "p_value": _NUMBER_OR_NULL, "flagged": {"type": "boolean"},
    },
}
_COLUMN_POINTS = 4 * 512  # generous: a document holds at most MAX_POINTS + 1 points
_TRAJECTORY_COLUMN = {
    "type": "object",
    "required": ["n", "exact"],
    "properties": {
        "n": {"type": "array", "maxItems": _COLUMN_POINTS, "items": _COUNT},
        "mean": {"type": "array", "maxItems": _COLUMN_POINTS, "items": _NUMBER},
        "half_width_95": {"type": "array", "maxItems": _COLUMN_POINTS, "items": _NUMBER_OR_NULL},
        "low_95": {"type": "array", "maxItems": _COLUMN_POINTS, "items": _NUMBER_OR_NULL},
        "high_95": {"type": "array", "maxItems": _COLUMN_POINTS, "items": _NUMBER_OR_NULL},
        "by_seat": {"type": "object", "required": ["n", "sum", "sum_sq"], "properties": {
            "n": {"type": "array", "maxItems": _COLUMN_POINTS,
                  "items": {"type": "array", "minItems": 2, "maxItems": 2, "items": _COUNT}},
            "sum": {"type": "array", "maxItems": _COLUMN_POINTS,
                    "items": {"type": "array", "minItems": 2, "maxItems": 2, "items": _FRACTION}},
            "sum_sq": {"type": "array", "maxItems": _COLUMN_POINTS,
                       "items": {"type": "array", "minItems": 2, "maxItems": 2, "items": _FRACTION}},
        }},
        "exact": {"type": "object", "required": ["sum", "sum_sq"], "properties": {
            "sum": {"type": "array", "maxItems": _COLUMN_POINTS, "items": _FRACTION},
            "sum_sq": {"type": "array", "maxItems": _COLUMN_POINTS, "items": _FRACTION},
        }},
    },
}
_STRING_OR_NULL = {"type": ["string", "null"]}
#: The JSON Schema (draft 2020-12) every results document read must meet: the types of every
#: field a merge, the table or the report reads (docs/results.md describes the fields).
DOCUMENT_SCHEMA: dict[str, object] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["schema", "version"],
    "properties": {
        "schema": {"const": SCHEMA},
        "version": {"enum": list(READABLE_VERSIONS)},
        "software": {"type": "object", "properties": {"name": {"type": "string"}, "version": {"type": "string"}}},
        "config": {"type": "object", "properties": {
            "game": _STRING_OR_NULL,
            "players": {"type": "array", "items": {"type": "string"}},
            "measured": _STRING_OR_NULL,
            "seed": {"type": ["integer", "null"]},
            "hands": {"type": ["integer", "null"], "minimum": 0},
            "duplicate": {"type": "boolean"},
            "lbr": {"type": ["object", "null"], "additionalProperties": {"type": "string"}},
            "matches": {"type": "array", "items": {"type": "string"}},
            "merged_from": _COUNT,
            "opponent": _STRING_OR_NULL,
            "logs": {"type": "string"},
            "aivat": {"type": ["object", "null"]},
        }},
        "big_blind": {"type": "integer", "minimum": 1},
        "estimators": {
            "type": "object",
            "properties": {"pending_halves": {"type": "array", "items": {
                "type": "object", "required": ["deal", "half", "chips"],
                "properties": {"deal": {"type": "integer"}, "half": {"enum": [0, 1]}, "chips": _NUMBER,
                               "io_chips": _NUMBER_OR_NULL, "aivat_chips": _NUMBER_OR_NULL}}}},
            "additionalProperties": _ESTIMATOR,
        },
        "counts": {"type": "object", "additionalProperties": _COUNT},
        "timings": {"type": "object", "additionalProperties": _NUMBER},
        "trajectory": {"type": ["object", "null"], "properties": {
            "unit": {"type": "string"},
            "stride": {"type": "integer", "minimum": 1},
            "hands": {"type": "array", "maxItems": _COLUMN_POINTS, "items": _COUNT},
            "estimators": {"type": "object", "additionalProperties": _TRAJECTORY_COLUMN},
        }},
        "probe": {"type": "object"},
        "scaleout": {"type": "object"},
    },
}


def read_document(path: Path | str) -> ResultsDocument:
    """A results document from its file, checked against :data:`DOCUMENT_SCHEMA`.

    Raises:
        OSError: unreadable.
        ValueError: larger than :data:`MAX_DOCUMENT_BYTES`, not JSON, JSON
            nested too deep, JSON with ``NaN`` or ``Infinity``, which no
            results document holds (they are written strictly, :func:`dumps`),
            or a field of the wrong type: an altered file, whose figures are
            not to be shown. One line, naming the field.
    """
    def refuse(constant: str) -> float:
        raise ValueError(f"{path}: holds {constant}, which no results document does (an altered file)")

    text = read_bounded_text(path, MAX_DOCUMENT_BYTES, "results document")
    try:
        doc = loads_json(text, path, parse_constant=refuse)
    except json.JSONDecodeError as error:  # e.g. a .log given for the .json
        raise ValueError(f"{path}: not a results document (JSON: {error}); write one with "
                         "'acpc-lbr evaluate --json FILE', 'acpc-lbr dealer --results-json FILE' "
                         "or 'acpc-lbr results --json'") from None
    misfit = jsonschema.exceptions.best_match(_document_validator().iter_errors(doc))
    if misfit is not None:
        where = misfit.json_path
        message = " ".join(misfit.message.split())
        if len(message) > 160:
            message = message[:160] + "..."
        raise ValueError(f"{path}: not a results document of this program: at {where}, {message}")
    document = cast(ResultsDocument, doc)
    _check_trajectory_columns(path, document)
    return document


def _check_trajectory_columns(path: Path | str, doc: ResultsDocument) -> None:
    """Every trajectory column has one entry per point (the schema cannot say so).

    Raises:
        ValueError: a column of another length than ``trajectory.hands``.
    """
    trajectory = doc.get("trajectory")
    if not trajectory:
        return
    points = len(trajectory.get("hands", []))
    for name, column in trajectory.get("estimators", {}).items():
        exact = column.get("exact", {})
        for key, values in (("n", column.get("n")), ("mean", column.get("mean")),
                            ("half_width_95", column.get("half_width_95")),
                            ("exact.sum", exact.get("sum")), ("exact.sum_sq", exact.get("sum_sq"))):
            if values is not None and len(values) != points:
                raise ValueError(f"{path}: not a results document of this program: trajectory column "
                                 f"{name}.{key} has {len(values)} entries for {points} points")


@lru_cache(maxsize=1)
def _document_validator() -> jsonschema.protocols.Validator:
    """The validator of :data:`DOCUMENT_SCHEMA` (built once)."""
    validator_class = jsonschema.validators.validator_for(DOCUMENT_SCHEMA)
    validator_class.check_schema(DOCUMENT_SCHEMA)
    return validator_class(DOCUMENT_SCHEMA)


def results_document(
    config: ResultsConfig,
    estimates: MatchEstimates,
    big_blind: int,
    counts: Mapping[str, int] | None = None,
    timings: Mapping[str, float] | None = None,
    players: dict[str, EstimatorFigures] | None = None,
) -> ResultsDocument:
    """Build one results document.

    Args:
        config: game, players, measured, seed, hands, duplicate, lbr, ...
            (copied as given; missing standard keys are filled with None).
        estimates: the match's estimators.
        big_blind: the game's big blind in chips (for mbb/g and bb/hand).
        counts: errors, timeouts, queries, ... (see :data:`COUNT_KEYS`);
            ``hands`` defaults to the raw estimator's n.
        timings: seconds (wall time, query time, ...).
        players: each player's raw result (:func:`player_results`; games of more than
            two players), or None.

    Returns:
        A JSON-serialisable dict.
    """
    full_config: ResultsConfig = {
        "game": None,
        "players": [],
        "measured": None,
        "seed": None,
        "hands": None,
        "duplicate": False,
        "lbr": None,
        "aivat": None,
    }
    full_config.update(config)
    all_counts = {key: 0 for key in COUNT_KEYS}
    all_counts["hands"] = estimates.raw.n
    if counts:
        all_counts.update({key: int(value) for key, value in counts.items()})
    doc: ResultsDocument = {
        "schema": SCHEMA,
        "version": SCHEMA_VERSION,
        "software": {"name": "acpc-lbr", "version": software_version()},
        "config": full_config,
        "big_blind": int(big_blind),
        "estimators": estimates.to_dict(big_blind),
        "counts": all_counts,
        "timings": dict(timings or {}),
        "trajectory": estimates.trajectory.to_dict(estimates.raw.n, estimates.stats()),
    }
    if players is not None:
        doc["players"] = players
    return doc


def dumps(doc: ResultsDocument) -> str:
    """The document as JSON text (one fixed formatting, so runs compare byte for byte)."""
    return json.dumps(doc, indent=2, sort_keys=False, allow_nan=False) + "\n"



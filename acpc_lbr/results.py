"""The results document of a match: JSON for machines, a table for people.

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
(:func:`merge_documents`).

>>> from acpc_lbr.estimators import HandOutcome
>>> doc = results_document({"game": "kuhn", "players": ["a", "b"]},
...     estimates_from_outcomes([HandOutcome(0, 0, 1.0), HandOutcome(1, 0, -1.0)]), 2)
>>> doc["estimators"]["raw"]["chips"]["n"], doc["counts"]["hands"]
(2, 2)
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib.metadata import version
from pathlib import Path
from typing import Literal, NotRequired, TypedDict, cast

import jsonschema
import numpy as np

from acpc_lbr.aivat import AivatRecord, AivatSetup, NotComputed
from acpc_lbr.runtime.bounded import loads_json, read_bounded_text
from acpc_lbr.estimators import (
    AIVAT_NAMES,
    CHECKS,
    ESTIMATORS,
    HONESTY_ALPHA,
    CheckFigures,
    CheckName,
    EstimatorFigures,
    EstimatorsSection,
    HandOutcome,
    MatchEstimates,
    estimator_figures,
)
from acpc_lbr.lbr import (
    ActiveRounds,
    BettingOptions,
    FloatArray,
    LbrPlayer,
    equity_function,
)
from acpc_lbr.outcomes import (
    aivat_requests,
    hand_aivat_value,
    hand_io,
    log_values,
    opponent_decisions,
)
from acpc_lbr.stats import RunningMean
from acpc_lbr.strategies import Policy, default_actions
from acpc_lbr.trajectory import Trajectory, TrajectorySection
from protocol.deal import Deal, DealSource
from protocol.gamedef import GameDef
from protocol.rules import Action, State
from protocol.wire import LogState, log_state_for

#: The ``schema`` field of every results document.
SCHEMA = "acpc-lbr/results"
#: Bumped whenever a field changes meaning or disappears (2: ``trajectory``;
#: 3: the AIVAT estimators and their honesty check; 4: ``config.aivat``, the
#: AIVAT value function the figures rest on).
SCHEMA_VERSION = 4
#: Versions :func:`merge_documents` and the report read (1 has no trajectory;
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

_LABELS = {
    "raw": "raw",
    "duplicate": "duplicate",
    "io": "imaginary obs.",
    "duplicate_io": "duplicate + IO",
    "aivat": "AIVAT",
    "duplicate_aivat": "duplicate + AIVAT",
    "io_minus_raw": "IO - raw (check)",
    "aivat_minus_raw": "AIVAT-raw (check)",
}


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
    #: Documents merged into this one (:func:`merge_documents`).
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


#: Why a game of more than two players has only raw figures (the table and docs/results.md say it).
MULTIPLAYER_NOT_COMPUTED = (
    "duplicate, IO and AIVAT: not computed for {n} players (IO and AIVAT value one heads-up "
    "opponent's range; --duplicate mirrors two seats). Each player's raw result:"
)


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


def _merged_players(docs: Sequence[ResultsDocument], big_blind: int) -> dict[str, EstimatorFigures] | None:
    """The ``players`` section of a merge (None when a document has none: heads-up)."""
    sections = [doc.get("players") for doc in docs]
    if any(section is None for section in sections):
        return None
    stats: dict[str, RunningMean] = {}
    for section in sections:
        assert section is not None
        for name, figures in section.items():
            stats.setdefault(name, RunningMean()).merge(RunningMean.from_dict(figures["chips"]))
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
_MEAN_FIGURES = {
    "type": "object",
    "required": ["n", "mean"],
    "properties": {
        "n": _COUNT, "mean": _NUMBER, "m2": _NUMBER, "std": _NUMBER_OR_NULL, "half_width_95": _NUMBER_OR_NULL,
        "exact": {"type": "object", "required": ["sum", "sum_sq"],
                  "properties": {"sum": _FRACTION, "sum_sq": _FRACTION}},
    },
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


def document_estimates(doc: ResultsDocument) -> MatchEstimates:
    """The mergeable estimators of a document, with its trajectory (version 2)."""
    estimates = MatchEstimates.from_dict(doc["estimators"])
    estimates.trajectory = Trajectory.from_dict(doc.get("trajectory"))
    return estimates


def merge_documents(docs: Sequence[ResultsDocument]) -> ResultsDocument:
    """Merge the documents of several batches into one with the same schema.

    Estimators merge exactly (count, mean and squared deviations, and the
    duplicate halves still waiting for their partner); counts and timings
    add up; ``config.hands`` adds up and ``config.matches`` concatenates.
    Trajectories join in the order given, as if the batches had been played
    one after the other (:mod:`acpc_lbr.trajectory`); a version-1 document
    (no trajectory) contributes its final figures as its only point.

    Raises:
        ValueError: no documents, an unknown schema version, or documents of
            different games or big blinds.
    """
    if not docs:
        raise ValueError("no results to merge")
    for doc in docs:
        if doc.get("schema") != SCHEMA or doc.get("version") not in READABLE_VERSIONS:
            raise ValueError(f"not a results document of version {'/'.join(map(str, READABLE_VERSIONS))}: "
                             f"{doc.get('schema')!r} v{doc.get('version')!r}")
    big_blinds = {int(doc["big_blind"]) for doc in docs}
    games = {doc["config"].get("game") for doc in docs}
    if len(big_blinds) > 1 or len(games) > 1:
        raise ValueError(f"cannot merge results of different games: {sorted(map(str, games))}")
    _check_mergeable(docs)
    aivat, refused = _merged_aivat(docs)
    estimates = MatchEstimates()
    counts: dict[str, int] = {}
    timings: dict[str, float] = {}
    for doc in docs:
        batch = document_estimates(doc)
        if refused:
            batch.drop_aivat()
        estimates.merge(batch)
        for key, value in doc.get("counts", {}).items():
            counts[key] = counts.get(key, 0) + int(value)
        for key, seconds in doc.get("timings", {}).items():
            if isinstance(seconds, (int, float)):
                timings[key] = timings.get(key, 0.0) + float(seconds)
    config = cast(ResultsConfig, dict(docs[0]["config"]))  # JSON as read: the first document's keys
    hands = [doc["config"].get("hands") for doc in docs]
    known = [h for h in hands if isinstance(h, int)]
    config["hands"] = sum(known) if len(known) == len(hands) else None
    config["matches"] = [m for doc in docs for m in doc["config"].get("matches", [])]
    config["merged_from"] = len(docs) + sum(max(int(doc["config"].get("merged_from", 1)), 1) - 1 for doc in docs)
    config["aivat"] = aivat
    if refused:
        counts["aivat_fallbacks"] = 0
    big_blind = big_blinds.pop()
    return results_document(config, estimates, big_blind, counts, timings, _merged_players(docs, big_blind))


def _check_mergeable(docs: Sequence[ResultsDocument]) -> None:
    """Refuse documents that are not batches of one evaluation, or that hold the same deals.

    A merge is one estimate over independent hands of one measured player
    against one opponent, played one way: documents of another measured
    player (whose winnings are the negation), other players or other LBR
    options would mix different quantities under the first one's labels; the
    same document twice, or two documents dealt from the same seed (the same
    deals), would count hands twice and give too narrow an interval.

    Raises:
        ValueError: the first two documents that do not merge, and why.
    """
    first: dict[str, tuple[int, object]] = {}
    for index, doc in enumerate(docs, 1):
        config = doc["config"]
        keys: dict[str, object] = {
            "measured player": config.get("measured"),
            "players": sorted(config.get("players") or []) or None,
            "LBR options": config.get("lbr"),
        }
        for what, value in keys.items():
            if value is None:
                continue
            earlier, seen = first.setdefault(what, (index, value))
            if seen != value:
                raise ValueError(f"cannot merge results of different {what}: batch {earlier} has "
                                 f"{seen!r}, batch {index} {value!r}")
    seeds: dict[object, int] = {}
    for index, doc in enumerate(docs, 1):
        seed = doc["config"].get("seed")
        raw = doc["estimators"]["raw"]["chips"]
        counted = doc.get("counts", {}).get("hands", raw["n"])
        if counted != raw["n"]:
            raise ValueError(f"batch {index} counts {counted} hands but its raw estimator has {raw['n']}: "
                             "the document was altered or cut short")
        same = (("seed", seed) if isinstance(seed, int) and not isinstance(seed, bool) else
                ("figures", json.dumps([raw.get("exact"), raw.get("n"), raw.get("mean"),
                                        doc["estimators"].get("pending_halves")], sort_keys=True)))
        earlier = seeds.setdefault(same, index)
        if earlier != index:
            why = f"were dealt from the same seed {seed}" if same[0] == "seed" else "hold the same hands"
            raise ValueError(f"batches {earlier} and {index} {why}: their hands would count as independent "
                             "samples, which they are not (give each run its own --seed)")
    _check_pending_halves(docs)


def _check_pending_halves(docs: Sequence[ResultsDocument]) -> None:
    """Refuse unpaired duplicate halves that would pair across batches dealt from different seeds.

    Pending halves pair by deal number; the same number in another seed is another
    deal, so the first half of deal d in one seed and the second half of deal d in
    another would make a duplicate pair of two unrelated hands. (Batches without
    the mirror hold only first halves, which never pair.)

    Raises:
        ValueError: the first such deal.
    """
    seen: dict[int, list[tuple[int, object, int]]] = {}
    for index, doc in enumerate(docs, 1):
        seed = doc["config"].get("seed")
        for item in doc["estimators"].get("pending_halves", []):
            deal, half = int(item["deal"]), int(item["half"])
            for other_half, other_seed, other_index in seen.get(deal, []):
                if other_half != half and other_seed != seed:
                    raise ValueError(f"batches {other_index} and {index} hold the two halves of deal {deal}, "
                                     f"dealt from seeds {other_seed} and {seed}: different deals, which must "
                                     "not pair")
            seen.setdefault(deal, []).append((half, seed, index))


def _merged_aivat(docs: Sequence[ResultsDocument]) -> tuple[AivatRecord | NotComputed | None, bool]:
    """(``config.aivat`` of the merge, whether the AIVAT figures must be dropped).

    AIVAT merges only when every batch with AIVAT figures records the same
    setup (:class:`acpc_lbr.aivat.AivatSetup`): a batch that records none (a
    version 1-3 document), an altered record, a batch whose AIVAT was not
    computed, or two different setups give ``{"not_computed": reason}``.
    """
    recorded: list[tuple[int, AivatSetup]] = []
    for index, doc in enumerate(docs, 1):
        aivat = doc["config"].get("aivat")
        estimators = doc["estimators"]
        units = any(name in estimators and estimators[name]["chips"]["n"] for name in AIVAT_NAMES) or any(
            item.get("aivat_chips") is not None for item in doc["estimators"].get("pending_halves", []))
        reason = None
        if aivat is None:
            if units:
                reason = f"a version {doc.get('version')} document: its AIVAT value function is not recorded"
        elif isinstance(aivat, Mapping) and "not_computed" in aivat:
            reason = str(aivat["not_computed"])
        else:
            try:
                recorded.append((index, AivatSetup.from_record(aivat)))
            except ValueError as error:
                reason = str(error)
        if reason is not None:
            return {"not_computed": f"batch {index}: {reason}"}, True
    if not recorded:
        return None, False
    first_index, first = recorded[0]
    for index, setup in recorded[1:]:
        if setup != first:
            return {"not_computed": f"batches {first_index} and {index} used different AIVAT setups (value functions "
                                    f"{first.value.digest()} and {setup.value.digest()})"}, True
    return first.record(), False


def dumps(doc: ResultsDocument) -> str:
    """The document as JSON text (one fixed formatting, so runs compare byte for byte)."""
    return json.dumps(doc, indent=2, sort_keys=False, allow_nan=False) + "\n"


def _table_row(label: str, stat: EstimatorFigures, ratio: str) -> str:
    """One row of :func:`format_table`: n, mbb/g ± 95%, std, bb/hand, chips and the width ratio."""
    mbb = stat["mbb_per_game"]
    return (f"{label:<18} {stat['chips']['n']:>8} {_fmt(mbb['mean']):>10} "
            f"{_fmt(mbb['half_width_95']):>9} {_fmt(mbb['std']):>10} "
            f"{_fmt(stat['bb_per_hand']['mean'], 4):>9} {_fmt(stat['chips']['mean'], 3):>10} {ratio:>9}").rstrip()


def _fmt(value: float | None, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}"


HonestyVerdict = Literal["flagged", "proven false", "untested", "passed"]


def honesty_verdict(check: CheckFigures, lies: int = 0) -> HonestyVerdict:
    """What a honesty check (an ``io_minus_raw`` or ``aivat_minus_raw`` block) says.

    ``flagged``: the difference is too large for chance. ``proven false``: the
    counts prove the answers false (``lies``, :func:`proven_lies`) whatever the
    statistic says. ``untested``: the difference is the same on every hand (no
    spread: e.g. every showdown fell back to its raw value), so p = 1 tells
    nothing. ``passed``: otherwise.

    >>> honesty_verdict({"flagged": False, "chips": {"n": 40, "std": 0.0}})
    'untested'
    >>> honesty_verdict({"flagged": False, "chips": {"n": 40, "std": 1.5}}, lies=3)
    'proven false'
    """
    if check.get("flagged"):
        return "flagged"
    if lies:
        return "proven false"
    if not check["chips"].get("std"):
        return "untested"
    return "passed"


def honesty_line(estimators: EstimatorsSection, estimator: Literal["io", "aivat"] = "io",
                 lies: int = 0) -> str | None:
    """The honesty check of ``estimator`` (``io`` or ``aivat``) as one line (None when it has no units).

    The statistic is the mean of IO − raw (or AIVAT − raw) per hand, or per duplicate pair when
    the match was played in duplicate (the check's ``unit``); z and the two-sided p-value
    test that its true mean is 0, which it is when the range answers are the
    strategy the bot plays. Flagged at p < :data:`~acpc_lbr.estimators.HONESTY_ALPHA`;
    ``lies`` (:func:`proven_lies`) and a difference without spread say more than
    the statistic (:func:`honesty_verdict`).

    >>> from acpc_lbr.estimators import HandOutcome
    >>> est = estimates_from_outcomes(HandOutcome(d, 0, 1.0, 1.0 + (-1) ** d) for d in range(40))
    >>> honesty_line(est.to_dict(2))
    'honesty check (IO - raw): +0.0 ± 156.9 mbb/g over 40 hands, z = +0.00, p = 1: ok (flagged when p < 0.001)'
    >>> honesty_line(est.to_dict(2), lies=2).split(": ", 2)[2]
    'FLAGGED: the range answers were proven false 2 times (range inconsistencies)'
    >>> same = estimates_from_outcomes(HandOutcome(d, 0, 1.0, 1.0) for d in range(40))
    >>> honesty_line(same.to_dict(2)).split("p = 1: ")[1]
    'not tested: IO - raw is the same on every hand (no showdown valued from the answers)'
    """
    check_name: CheckName = "io_minus_raw" if estimator == "io" else "aivat_minus_raw"
    check, measured = estimators.get(check_name), estimators.get(estimator)
    if check is None or measured is None:  # a version-1 document: no AIVAT
        return None
    n = check["chips"]["n"]
    if not measured["chips"]["n"] or n < 2:
        return None
    tested = check.get("pairs") if check.get("unit") == "pair" else None
    mbb = check["mbb_per_game"] if tested is None else tested["mbb_per_game"]
    over = f"{n} hands" if tested is None else f"{tested['chips']['n']} pairs"
    z, p_value = check.get("z"), check.get("p_value")
    figures = (f"{mbb['mean']:+.1f} ± {_fmt(mbb['half_width_95'])} mbb/g over {over}, "
               f"z = {_fmt(z, 2) if z is None or abs(z) < 1e6 else ('+inf' if z > 0 else '-inf')}"
               f", p = {'-' if p_value is None else f'{p_value:.3g}'}")
    if z is not None and z >= 0:
        figures = figures.replace("z = ", "z = +", 1)
    label = {"io": "IO", "aivat": "AIVAT"}.get(estimator, estimator)
    verdict = {
        "flagged": "FLAGGED: the range answers do not match the play",
        "proven false": f"FLAGGED: the range answers were proven false {lies} times (range inconsistencies)",
        "untested": f"not tested: {label} - raw is the same on every hand "
                    f"(no {'showdown' if estimator == 'io' else 'hand'} valued from the answers)",
        "passed": f"ok (flagged when p < {HONESTY_ALPHA:g})",
    }[honesty_verdict(check, lies)]
    return f"honesty check ({label} - raw): {figures}: {verdict}"


def proven_lies(counts: Mapping[str, int]) -> int:
    """How often the opponent's answers were proven false: its range inconsistencies (the dealer's, and LBR's).

    The dealer counts a showdown where an answer gave the action the bot played
    probability 0 with the cards it held; LBR counts a decision where the
    answers gave the played action probability 0 for every hand still possible.
    Either is proof that the answers are not the strategy played, so IO and
    AIVAT, which rest on them, are no bound (raw and duplicate still are).

    >>> proven_lies({"range_inconsistencies": 2, "lbr_range_inconsistencies": 5})
    7
    """
    return int(counts.get("range_inconsistencies", 0) or 0) + int(counts.get("lbr_range_inconsistencies", 0) or 0)


def aivat_not_computed(config: ResultsConfig) -> str | None:
    """Why a document has no AIVAT figures (its ``config.aivat`` is ``{"not_computed": reason}``), or None.

    >>> aivat_not_computed({"aivat": {"not_computed": "no value function recorded"}})
    'no value function recorded'
    >>> aivat_not_computed({"aivat": None}) is None
    True
    """
    aivat = config.get("aivat")
    if isinstance(aivat, Mapping) and "not_computed" in aivat:
        return str(aivat["not_computed"])
    return None


def format_table(doc: ResultsDocument) -> str:
    """The estimators side by side, for a terminal.

    One row per estimator: units, mean ± 95% half-width in mbb/g, the
    standard deviation, bb/hand and chips, and the width relative to raw.
    """
    config = doc["config"]
    est = doc["estimators"]
    lines = []
    seats = ", ".join(config.get("players") or [])
    lines.append(
        f"{config.get('game')}  players: {seats}  measured: {config.get('measured')}  "
        f"seed: {config.get('seed')}  hands: {config.get('hands')}"
        + ("  (duplicate)" if config.get("duplicate") else "")
    )
    header = f"{'estimator':<18} {'n':>8} {'mbb/g':>10} {'± 95%':>9} {'std mbb':>10} {'bb/hand':>9} {'chips':>10} {'width/raw':>9}"
    lines.append(header)
    lines.append("-" * len(header))
    raw_width = est["raw"]["mbb_per_game"]["half_width_95"]
    aivat_asked = config.get("aivat") is not None
    players = doc.get("players")
    for name in (*ESTIMATORS, *CHECKS):
        stat = est.get(name)
        if stat is None:  # a version-1 document: no AIVAT
            continue
        if name in AIVAT_NAMES and not aivat_asked and not stat["chips"]["n"]:
            continue  # AIVAT was not asked for: no empty rows of it
        if players is not None and name != "raw" and not stat["chips"]["n"]:
            continue  # more than two players: only raw (the line below says why)
        if stat["chips"]["n"] == 0:
            lines.append(f"{_LABELS[name]:<18} {0:>8} {'-':>10}")
            continue
        ratio = "-"
        width = stat["mbb_per_game"]["half_width_95"]
        if raw_width and width is not None and name not in CHECKS:
            ratio = f"{width / raw_width:.3f}"
        lines.append(_table_row(_LABELS[name], stat, ratio))
    if players is not None:
        lines.append(MULTIPLAYER_NOT_COMPUTED.format(n=len(config.get("players") or players)))
        lines.extend(_table_row(name[:18], figures, "") if figures["chips"]["n"] else f"{name[:18]:<18} {0:>8} {'-':>10}"
                     for name, figures in players.items())
    reason = aivat_not_computed(config)
    if reason is not None:
        lines.append(f"AIVAT not computed: {reason}")
    lies = proven_lies(doc.get("counts", {}))
    if lies and (est["io"]["chips"]["n"] or ("aivat" in est and est["aivat"]["chips"]["n"])):
        lines.append(f"the opponent's answers were proven false {lies} times (range inconsistencies): "
                     "IO and AIVAT rest on them and are no bound (raw and duplicate are)")
    for estimator in ("io", "aivat"):
        honesty = honesty_line(est, estimator, lies)
        if honesty is not None:
            lines.append(honesty)
    counts = doc.get("counts", {})
    shown = ", ".join(f"{key} {value}" for key, value in counts.items() if key != "hands")
    lines.append(f"counts: hands {counts.get('hands', 0)}, {shown}")
    timings = doc.get("timings", {})
    if timings:
        lines.append("timings: " + ", ".join(f"{key} {value:.3f}" for key, value in timings.items()))
    return "\n".join(lines) + "\n"


# -- an in-process match: LBR against a strategy, through the dealer's pipeline -----------


def simulate_lbr_match(
    game: GameDef,
    policy: Policy,
    options: BettingOptions,
    hands: int,
    seed: int,
    rng_seed: int,
    *,
    duplicate: bool = False,
    answers: Policy | None = None,
    active_rounds: ActiveRounds | None = None,
    sample: Callable[[State, Sequence[int], int, np.random.Generator], Action] | None = None,
    aivat: bool = False,
    timings: dict[str, float] | None = None,
    aivat_setup: AivatSetup | None = None,
) -> list[HandOutcome]:
    """LBR against a bot playing ``policy``, dealt and seated as the dealer does.

    The measured player is LBR ("lbr", seat 0); the bot ("bot", seat 1)
    samples its actions from ``policy``. Each finished hand becomes the
    ``STATE`` record the dealer would log, and its IO comes from the dealer's
    own pipeline (:func:`acpc_lbr.outcomes.hand_io`) with σ rows answered by
    ``answers`` (default ``policy``; a different one makes a lying bot).

    Args:
        game: a heads-up game (small enough for :func:`acpc_lbr.lbr.equity_function`).
        policy: the bot's strategy (:data:`acpc_lbr.strategies.Policy`).
        options: LBR's :class:`~acpc_lbr.lbr.BettingOptions`.
        hands: hands per match.
        seed: the deal seed (as the dealer's).
        rng_seed: seed of the bot's action sampling.
        duplicate: also play every deal with the seats reversed (half 1).
        answers: the bot's range answers (default: ``policy``).
        active_rounds: LBR's active rounds (default: all).
        sample: ``sample(state, board, hand, rng) -> Action``, the bot's play
            (default: drawn from ``policy`` over
            :func:`acpc_lbr.strategies.default_actions`); e.g. an SDK
            strategy's own ``sample`` for no-limit raise sizes.
        aivat: also compute each hand's AIVAT value
            (:func:`acpc_lbr.outcomes.hand_aivat_value`, rows from ``answers``).
        timings: when given, seconds are added to ``aivat_answers`` (the
            bot answering AIVAT's rows) and ``aivat_compute`` (the estimator).
        aivat_setup: AIVAT's value function and settings (None: this version's for ``game``).

    Returns:
        One :class:`HandOutcome` per hand played, with its IO value (and AIVAT value).
    """
    match = _SimulatedMatch(
        game,
        LbrPlayer(game, options, active_rounds if active_rounds is not None else ActiveRounds(), equity_function(game)),
        _SimulatedBot(policy, answers if answers is not None else policy, sample, np.random.default_rng(rng_seed)),
        aivat, aivat_setup, seed, timings,
    )
    source = DealSource(seed)
    outcomes: list[HandOutcome] = []
    for hand_id in range(hands):
        deal = source.deal(game)
        for half in (0, 1) if duplicate else (0,):
            outcomes.append(match.outcome(deal, hand_id, half))
    return outcomes


@dataclass
class _SimulatedBot:
    """The bot of :func:`simulate_lbr_match`: plays ``policy`` (or ``sample``), answers with ``answer``."""

    policy: Policy
    answer: Policy
    sample: Callable[[State, Sequence[int], int, np.random.Generator], Action] | None
    #: The bot's action sampling (the only draws of the match besides the deal).
    rng: np.random.Generator

    def fold_probs(self, lbr: LbrPlayer, state: State, shown: Sequence[int]) -> dict[Action, FloatArray]:
        """The answered fold probabilities after each raise LBR considers at ``state``."""
        folds = {}
        for raise_ in lbr.candidates(state):
            after = state.clone()
            after.apply(raise_)
            folds[raise_] = self.answer(after, shown, [Action.FOLD])[0]
        return folds

    def play(self, state: State, shown: Sequence[int], hand: int) -> Action:
        """The bot's action at ``state`` holding ``hand`` (its hand index)."""
        if self.sample is not None:
            return self.sample(state, shown, hand, self.rng)
        actions = default_actions(state)
        probs = np.asarray(self.policy(state, shown, actions), dtype=np.float64)[:, hand]
        return actions[int(self.rng.choice(len(actions), p=probs / probs.sum()))]


@dataclass
class _SimulatedMatch:
    """LBR and the bot of :func:`simulate_lbr_match`, and what each hand's outcome needs."""

    game: GameDef
    lbr: LbrPlayer
    bot: _SimulatedBot
    aivat: bool
    aivat_setup: AivatSetup | None
    #: The deal seed (AIVAT's sampling is seeded from it, as the dealer's pipeline does).
    seed: int
    timings: dict[str, float] | None

    def outcome(self, deal: Deal, hand_id: int, half: int) -> HandOutcome:
        """Play ``deal`` in seating ``half``; the hand's chips, IO value and AIVAT value."""
        game, answer = self.game, self.bot.answer
        names_by_seat = ("lbr", "bot") if half == 0 else ("bot", "lbr")
        # Seat s plays position (s - h) mod 2, as the dealer rotates them.
        position_names = tuple(names_by_seat[(p + hand_id) % 2] for p in range(2))
        me = position_names.index("lbr")
        state = self.play(deal, hand_id, me)
        values = log_values(state.values(deal.hole, deal.board_cards))
        record = log_state_for(state, deal, values, position_names)
        rows = [
            np.asarray(answer(d.state.to_state(game), d.state.board_cards, [d.action]), dtype=np.float64)[0]
            for d in opponent_decisions(game, record, 1 - me)
        ]
        result = hand_io(game, record, me, rows)
        aivat_chips = self.aivat_value(record, me) if self.aivat else None
        return HandOutcome(hand_id, half, result.chips, result.io_chips, aivat_chips, result.io_variance)

    def play(self, deal: Deal, hand_id: int, me: int) -> State:
        """One hand of LBR (at position ``me``) against the bot, played to its end."""
        game, lbr, bot = self.game, self.lbr, self.bot
        opponent_hand = game.hand_of(deal.hole[1 - me])
        lbr.start_hand(me, deal.hole[me])
        state = State(game, hand_id)
        while not state.finished:
            shown = deal.board_cards[: game.board_cards_visible(state.round)]
            if state.current_player == me:
                state.apply(lbr.decide(state, shown, bot.fold_probs(lbr, state, shown)).action)
            else:
                lbr.observe_board(shown)
                played = bot.play(state, shown, opponent_hand)
                lbr.observe_opponent(bot.answer(state, shown, [played])[0])
                state.apply(played)
        return state

    def aivat_value(self, record: LogState, me: int) -> float:
        """The hand's AIVAT value, its rows answered by the bot; the seconds go into ``timings``."""
        game = self.game
        began = time.perf_counter()
        aivat_rows = []
        for d, actions in aivat_requests(game, record, 1 - me):
            said = np.asarray(self.bot.answer(d.state.to_state(game), d.state.board_cards, actions), dtype=np.float64)
            aivat_rows.append({a.text(): said[j] for j, a in enumerate(actions)})
        answered = time.perf_counter()
        aivat_chips, _ = hand_aivat_value(game, record, me, aivat_rows, self.lbr.equity, setup=self.aivat_setup,
                                          seed=self.seed)
        if self.timings is not None:
            timings = self.timings
            timings["aivat_answers"] = timings.get("aivat_answers", 0.0) + answered - began
            timings["aivat_compute"] = timings.get("aivat_compute", 0.0) + time.perf_counter() - answered
        return aivat_chips

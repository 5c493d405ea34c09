"""Merging results documents: several batches of one evaluation into one estimate.

Estimators merge exactly (:class:`acpc_lbr.estimators.MatchEstimates`: counts,
exact sums and the duplicate halves still waiting for their partner), so a
merged document is the one a single run over all the hands would have written,
its trajectory aside (:mod:`acpc_lbr.trajectory`). What does not merge is
refused with the reason: other players or options, the same deals twice,
different AIVAT setups.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import cast

from acpc_lbr.aivat import AivatRecord, AivatSetup, NotComputed
from acpc_lbr.estimators import AIVAT_NAMES, EstimatorFigures, MatchEstimates, estimator_figures
from acpc_lbr.results.document import (
    READABLE_VERSIONS,
    SCHEMA,
    ResultsConfig,
    ResultsDocument,
    results_document,
)
from acpc_lbr.stats import RunningMean
from acpc_lbr.trajectory import Trajectory


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

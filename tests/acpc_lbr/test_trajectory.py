"""The thinned trajectory of the running estimates: exact points, thinning, merges of batches."""

from __future__ import annotations

import json
from itertools import pairwise

import numpy as np
import pytest

from acpc_lbr.estimators import HandOutcome
from acpc_lbr.results import dumps, estimates_from_outcomes, merge_documents, results_document
from acpc_lbr.stats import RunningMean, SeatedMean
from acpc_lbr.trajectory import MAX_POINTS

NAMES = ("raw", "duplicate", "io", "duplicate_io", "io_minus_raw")


def _outcomes(seed: int, deals: range, halves: tuple[int, ...] = (0, 1)) -> list[HandOutcome]:
    rng = np.random.default_rng(seed)
    return [
        HandOutcome(deal, half, float(rng.integers(-300, 300)), float(rng.normal(0, 60)))
        for deal in deals for half in halves
    ]


def _prefix_figures(outcomes: list[HandOutcome]) -> dict[int, dict[str, RunningMean]]:
    """The slow twin: every estimator over each prefix, from plain accumulators (one pass)."""
    stats = {name: SeatedMean() if name in ("raw", "io") else RunningMean() for name in NAMES}
    halves: dict[int, HandOutcome] = {}
    figures = {}
    for hands, o in enumerate(outcomes, start=1):
        seat = (o.deal + o.half) % 2  # over hands: the spread within seats
        stats["raw"].add(o.chips, seat)  # type: ignore[call-arg]
        assert o.io_chips is not None
        stats["io"].add(o.io_chips, seat)  # type: ignore[call-arg]
        stats["io_minus_raw"].add(o.io_chips - o.chips)
        partner = halves.pop(o.deal, None)
        if partner is None:
            halves[o.deal] = o
        else:
            assert partner.io_chips is not None
            stats["duplicate"].add((o.chips + partner.chips) / 2.0)
            stats["duplicate_io"].add((o.io_chips + partner.io_chips) / 2.0)
        figures[hands] = {name: stat.copy() for name, stat in stats.items()}
    return figures


def _check_points(trajectory: dict, figures: dict[int, dict[str, RunningMean]], merged: bool = False) -> None:
    """Each point against the slow twin. In a merge every point but the last is rebuilt from its document's
    Σx and Σx² (per seat): its interval has no skewness term, so only the last point's is compared."""
    for i, hands in enumerate(trajectory["hands"]):
        for name in NAMES:
            column = trajectory["estimators"][name]
            expected = figures[hands][name]
            assert column["n"][i] == expected.n, (hands, name)
            assert column["mean"][i] == expected.mean, (hands, name)
            width = None if expected.n < 2 else expected.half_width
            assert column["half_width_95"][i] == width, (hands, name)
            if not merged or i == len(trajectory["hands"]) - 1:  # the document's interval
                interval = [None, None] if expected.n < 2 else list(expected.interval())
                assert [column["low_95"][i], column["high_95"][i]] == interval, (hands, name)


def test_every_point_is_the_exact_estimate_over_its_hands() -> None:
    """3,000 hands: each kept point equals the estimators recomputed over exactly that prefix."""
    outcomes = _outcomes(1, range(1500))
    doc = results_document({"game": "nolimit"}, estimates_from_outcomes(outcomes), 100)
    trajectory = json.loads(dumps(doc))["trajectory"]
    hands = trajectory["hands"]
    assert MAX_POINTS // 2 <= len(hands) < MAX_POINTS
    assert hands == sorted(set(hands)) and hands[-1] == 3000
    gaps = {b - a for a, b in pairwise(hands[:-1])}
    assert len(gaps) == 1  # evenly spaced (the last point may close a shorter gap)
    _check_points(trajectory, _prefix_figures(outcomes))


def test_last_point_is_the_final_estimate_exactly() -> None:
    """The last point carries the document's final figures bit for bit, off the grid too."""
    outcomes = _outcomes(2, range(333))  # 666 hands: not a multiple of the stride
    doc = json.loads(dumps(results_document({"game": "nolimit"}, estimates_from_outcomes(outcomes), 100)))
    for name in NAMES:
        final = doc["estimators"][name]["chips"]
        column = doc["trajectory"]["estimators"][name]
        assert (column["n"][-1], column["mean"][-1], column["half_width_95"][-1]) == (
            final["n"], final["mean"], final["half_width_95"])
    assert doc["trajectory"]["hands"][-1] == 666


def test_estimators_without_units_are_left_out() -> None:
    """Without IO (and without duplicate pairs), only the estimators that have units appear."""
    outcomes = [HandOutcome(d, 0, float(d % 7 - 3)) for d in range(50)]
    doc = results_document({"game": "nolimit"}, estimates_from_outcomes(outcomes), 100)
    assert list(doc["trajectory"]["estimators"]) == ["raw"]
    assert doc["trajectory"]["hands"] == list(range(1, 51))


def test_merged_trajectory_is_the_batches_played_one_after_the_other() -> None:
    """Two batches merged (through JSON): each point is exact over the concatenated hands."""
    first = _outcomes(3, range(700))
    second = _outcomes(4, range(700, 1000))
    docs = [json.loads(dumps(results_document({"game": "nolimit", "hands": len(b) // 2},
                                              estimates_from_outcomes(b), 100)))
            for b in (first, second)]
    merged = json.loads(dumps(merge_documents(docs)))
    trajectory = merged["trajectory"]
    assert len(trajectory["hands"]) < MAX_POINTS and trajectory["hands"][-1] == 2000
    assert 1400 in trajectory["hands"]  # the first batch's end stays a point
    _check_points(trajectory, _prefix_figures(first + second), merged=True)
    for name in NAMES:
        assert trajectory["estimators"][name]["mean"][-1] == merged["estimators"][name]["chips"]["mean"]


def test_merge_in_the_other_order_gives_the_other_sequence() -> None:
    """The order of --merge is the order of play: B then A is exact over B + A."""
    a, b = _outcomes(5, range(40)), _outcomes(6, range(40, 100))
    docs = [results_document({"game": "nolimit"}, estimates_from_outcomes(x), 100) for x in (b, a)]
    merged = merge_documents(docs)
    _check_points(merged["trajectory"], _prefix_figures(b + a), merged=True)


def test_pair_split_across_batches_enters_at_the_last_point() -> None:
    """A duplicate pair whose halves are in different batches is counted once, at the end."""
    outcomes = _outcomes(7, range(30))
    first, second = outcomes[:31], outcomes[31:]  # deal 15's two halves are split
    docs = [results_document({"game": "nolimit"}, estimates_from_outcomes(x), 100) for x in (first, second)]
    merged = merge_documents(docs)
    column = merged["trajectory"]["estimators"]["duplicate"]
    assert column["n"][-1] == 30 == merged["estimators"]["duplicate"]["chips"]["n"]
    # At hand 59, 15 pairs of the first batch and 13 of the second: played one
    # after the other it would be 29, but the split pair only enters at the end.
    assert merged["trajectory"]["hands"][-2:] == [59, 60]
    assert column["n"][-2] == 28
    assert column["mean"][-1] == merged["estimators"]["duplicate"]["chips"]["mean"]
    assert merged["estimators"]["pending_halves"] == []


def test_version_1_document_merges_as_one_point() -> None:
    """A document without a trajectory (schema version 1) contributes its final figures as a point."""
    a, b = _outcomes(8, range(20)), _outcomes(9, range(20, 50))
    old = results_document({"game": "nolimit"}, estimates_from_outcomes(a), 100)
    old["version"] = 1
    del old["trajectory"]
    new = results_document({"game": "nolimit"}, estimates_from_outcomes(b), 100)
    merged = merge_documents([old, new])
    hands = merged["trajectory"]["hands"]
    assert hands[0] == 40 and hands[-1] == 100 and len(hands) == 61
    _check_points(merged["trajectory"], _prefix_figures(a + b), merged=True)


def test_malformed_trajectory_is_refused() -> None:
    """Columns of different lengths are an error (ValueError), not a silent truncation."""
    doc = json.loads(dumps(results_document({"game": "nolimit"}, estimates_from_outcomes(_outcomes(10, range(5))), 100)))
    doc["trajectory"]["estimators"]["raw"]["n"].pop()
    other = json.loads(dumps(results_document({"game": "nolimit"}, estimates_from_outcomes(_outcomes(11, range(5))), 100)))
    with pytest.raises(ValueError, match="different lengths"):
        merge_documents([other, doc])

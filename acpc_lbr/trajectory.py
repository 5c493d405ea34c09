"""The running estimates of a match, thinned: a few hundred exact points per estimator.

A :class:`Trajectory` follows a :class:`~acpc_lbr.estimators.MatchEstimates`
as hands are added. Each time the hand count reaches a multiple of
``stride`` it keeps a snapshot of every estimator (its
:class:`~acpc_lbr.stats.RunningMean`, exact sums included). When it holds
:data:`MAX_POINTS` points it drops every other one and doubles the stride,
so a run of any length keeps between ``MAX_POINTS / 2`` and ``MAX_POINTS``
points, evenly spaced in hands; the document always ends with the final
figures. Each point is *exact*: the estimator over precisely the first
``hands`` hands (in the canonical order the estimates are built in), not an
interpolation, so the last point equals the final estimate bit for bit.

**Merging batches.** Batches are independent runs; a merged trajectory is
defined as the running estimate of the batches played one after the other,
in the order they are merged: the first batch's points unchanged, then for
each point of the next batch (at ``k`` of its hands) the first batch's final
sums plus that point's sums, at ``hands_first + k``. Sums are exact, so each
merged point is exactly the estimate over those hands. The one thing a
trajectory cannot place is a duplicate pair whose two halves are in
different batches: it enters at the last point, which is always the merged
final estimate.

>>> from acpc_lbr.stats import RunningMean, SeatedMean
>>> t = Trajectory()
>>> stat = RunningMean()
>>> for x in range(1, 6):
...     stat.add(float(x)); t.observe(stat.n, lambda: {"raw": stat})
>>> data = t.to_dict(stat.n, {"raw": stat})
>>> data["hands"], data["estimators"]["raw"]["mean"]
([1, 2, 3, 4, 5], [1.0, 1.5, 2.0, 2.5, 3.0])
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import NotRequired, TypedDict

from acpc_lbr.stats import RunningMean, SeatedMean

#: At most this many points are kept (at least half of it once that many hands are played).
MAX_POINTS = 512

Stats = Mapping[str, RunningMean]


class ExactColumns(TypedDict):
    """Each point's exact Σx and Σx² (fractions as text), what a merge reads."""

    sum: list[str]
    sum_sq: list[str]


class SeatColumns(TypedDict):
    """Each point's count and exact Σx and Σx² in each seat, ``[first, second]`` per point: an estimator over
    hands (:class:`~acpc_lbr.stats.SeatedMean`), whose spread is taken within seats."""

    n: list[list[int]]
    sum: list[list[str]]
    sum_sq: list[list[str]]


class TrajectoryColumn(TypedDict):
    """One estimator's running figures, one entry per point (half-width and interval None below two units).

    ``low_95``, ``high_95`` (added; older documents have neither) are each point's printed 95% interval
    (:meth:`acpc_lbr.stats.RunningMean.interval`), as the document's estimator has it at the last point.
    A point rebuilt from a document has only its exact Σx and Σx²: its interval is then the one without
    the skewness term, over all hands (docs/results.md, "The trajectory").
    """

    n: list[int]
    mean: list[float]
    half_width_95: list[float | None]
    low_95: NotRequired[list[float | None]]
    high_95: NotRequired[list[float | None]]
    exact: ExactColumns
    by_seat: NotRequired[SeatColumns]


class TrajectorySection(TypedDict):
    """``trajectory`` of a results document (:meth:`Trajectory.to_dict`), in this key order."""

    unit: str
    #: A point was taken every ``stride`` hands.
    stride: int
    hands: list[int]
    estimators: dict[str, TrajectoryColumn]


def _thin(points: list[tuple[int, dict[str, RunningMean]]]) -> list[tuple[int, dict[str, RunningMean]]]:
    """Every other point, counted from the last (which stays)."""
    return points[(len(points) - 1) % 2 :: 2]


@dataclass
class Trajectory:
    """Snapshots of every estimator at evenly spaced hand counts.

    Attributes:
        stride: a point is taken each time the hand count is a multiple of it.
        points: (hands, {estimator: snapshot}) in increasing hands.
    """

    stride: int = 1
    points: list[tuple[int, dict[str, RunningMean]]] = field(default_factory=list)

    def observe(self, hands: int, stats: Callable[[], Stats]) -> None:
        """Called after each hand; takes a snapshot when ``hands`` is on the grid."""
        if hands % self.stride:
            return
        self.points.append((hands, {name: stat.copy() for name, stat in stats().items()}))
        if len(self.points) >= MAX_POINTS:
            self.points = _thin(self.points)
            self.stride *= 2

    def merge(self, hands: int, stats: Stats, other: Trajectory, other_hands: int, other_stats: Stats) -> None:
        """Append a batch played after this one (see the module docstring).

        Args:
            hands, stats: this batch's hand count and estimators before the merge.
            other: the next batch's trajectory.
            other_hands, other_stats: its hand count and final estimators
                (its only point when it has no trajectory).
        """
        if other_hands == 0:
            return
        if not self.points and hands:
            self.points.append((hands, {name: stat.copy() for name, stat in stats.items()}))
        later = other.points or [(other_hands, dict(other_stats))]
        for at, snapshot in later:
            combined = {}
            for name in dict.fromkeys([*stats, *snapshot]):
                mine, theirs = stats.get(name), snapshot.get(name)
                if mine is None or theirs is None:
                    only = mine if theirs is None else theirs
                    assert only is not None
                    combined[name] = only.copy()
                else:
                    combined[name] = mine.merged(theirs)
            self.points.append((hands + at, combined))
        self.stride = max(self.stride, other.stride)
        while len(self.points) >= MAX_POINTS:
            self.points = _thin(self.points)
            self.stride *= 2

    def to_dict(self, hands: int, stats: Stats) -> TrajectorySection:
        """The points as columns, ending with the final figures (``hands``, ``stats``).

        Returns:
            ``{"unit": "chips", "hands": [...], "estimators": {name: {"n", "mean",
            "half_width_95", "low_95", "high_95", "exact": {"sum", "sum_sq"}}}}``, each a list with one
            entry per point; estimators that never had a unit are left out.
        """
        points = [p for p in self.points if p[0] < hands]
        if hands:
            points.append((hands, dict(stats)))
        columns: dict[str, TrajectoryColumn] = {}
        for name in stats:
            if not any(snapshot[name].n for _, snapshot in points if name in snapshot):
                continue
            series = [snapshot.get(name, RunningMean()) for _, snapshot in points]
            sums = [s.exact_sums() for s in series]
            intervals = [s.interval() for s in series]
            columns[name] = {
                "n": [s.n for s in series],
                "mean": [s.mean for s in series],
                "half_width_95": [None if math.isnan(s.half_width) else s.half_width for s in series],
                "low_95": [None if math.isnan(low) else low for low, _ in intervals],
                "high_95": [None if math.isnan(high) else high for _, high in intervals],
                "exact": {"sum": [str(a) for a, _ in sums], "sum_sq": [str(b) for _, b in sums]},
            }
            seats = _seat_columns(series)
            if seats is not None:
                columns[name]["by_seat"] = seats
        return {"unit": "chips", "stride": self.stride, "hands": [h for h, _ in points], "estimators": columns}

    @classmethod
    def from_dict(cls, data: TrajectorySection | None) -> Trajectory:
        """Rebuild from :meth:`to_dict` output (None: an empty trajectory).

        Raises:
            ValueError: columns of different lengths.
        """
        if not data:
            return cls()
        hands = [int(h) for h in data["hands"]]
        points: list[tuple[int, dict[str, RunningMean]]] = [(h, {}) for h in hands]
        for name, column in data["estimators"].items():
            exact = column["exact"]
            if not len(column["n"]) == len(exact["sum"]) == len(exact["sum_sq"]) == len(hands):
                raise ValueError(f"trajectory of {name}: columns of different lengths")
            for (_, snapshot), n, total, squares in zip(points, column["n"], exact["sum"], exact["sum_sq"]):
                snapshot[name] = RunningMean.from_exact(int(n), Fraction(total), Fraction(squares))
            seats = column.get("by_seat")
            if seats is not None:
                if not len(seats["n"]) == len(seats["sum"]) == len(seats["sum_sq"]) == len(hands):
                    raise ValueError(f"trajectory of {name}: columns of different lengths")
                for (_, snapshot), counts, seat_sums, seat_squares in zip(points, seats["n"], seats["sum"],
                                                                          seats["sum_sq"]):
                    first, second = (RunningMean.from_exact(int(c), Fraction(t), Fraction(q))
                                     for c, t, q in zip(counts, seat_sums, seat_squares, strict=True))
                    if first.n + second.n != snapshot[name].n:
                        raise ValueError(f"trajectory of {name}: the seats' counts do not add up")
                    snapshot[name] = SeatedMean.of_seats(first, second)
        return cls(max(int(data.get("stride", 1)), 1), points)


class NoTrajectory(Trajectory):
    """A trajectory that takes no points: for running figures nothing plots (a live display's,
    read after every hand), whose snapshots would cost a copy of every estimator a hand."""

    def observe(self, hands: int, stats: Callable[[], Stats]) -> None:
        return


def _seat_columns(series: list[RunningMean]) -> SeatColumns | None:
    """The seats' columns of an estimator over hands whose every point knows its units' seats; else None."""
    if not any(isinstance(stat, SeatedMean) for stat in series):
        return None
    counts: list[list[int]] = []
    totals: list[list[str]] = []
    squares: list[list[str]] = []
    for stat in series:
        seats = stat.seats() if isinstance(stat, SeatedMean) else None
        if seats is None:
            if stat.n:  # units whose seat is unknown (a point read from an older document)
                return None
            seats = (RunningMean(), RunningMean())
        sums = [seat.exact_sums() for seat in seats]
        counts.append([seat.n for seat in seats])
        totals.append([str(total) for total, _ in sums])
        squares.append([str(square) for _, square in sums])
    return {"n": counts, "sum": totals, "sum_sq": squares}

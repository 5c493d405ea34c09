"""Online, exactly mergeable sample statistics with 95% intervals.

Every estimator of a match (raw, duplicate, imaginary observations, ...) is
a :class:`RunningMean` over independent units (hands, or duplicate pairs).

Two accumulators run side by side:

* **exact sums** of the units and of their squares (Shewchuk's error-free
  partial sums, squares split exactly with Veltkamp's method). The reported
  ``mean`` and ``m2`` are computed from them with rational arithmetic and
  rounded once, so they do not depend on the order in which units were
  added or batches merged: a live dealer (whose duplicate halves arrive in
  any order), ``acpc-lbr results`` recomputing from files, and a merge of
  separate runs give bit-identical figures. :meth:`RunningMean.to_dict`
  carries the exact sums (``exact``), so documents merge exactly too.
* **Welford's running mean and variance** (:meth:`RunningMean.live`), cheap
  to read after every hand, for live metrics.

>>> a, b, whole = RunningMean(), RunningMean(), RunningMean()
>>> for x in (1.0, 2.0, 4.0): a.add(x); whole.add(x)
>>> for x in (8.0, 16.0): b.add(x); whole.add(x)
>>> merged = a.merged(b)
>>> (merged.n, merged.mean, merged.m2) == (whole.n, whole.mean, whole.m2)
True
>>> whole.mean, whole.m2
(6.2, 148.8)
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from fractions import Fraction
from typing import NotRequired, TypedDict

import numpy as np

#: Two-sided 95% normal quantile.
Z95 = 1.959963984540054

#: Veltkamp's splitter for binary64: 2**27 + 1.
_SPLIT = 134217729.0


def _add_exact(partials: list[float], x: float) -> None:
    """Add ``x`` to a list of non-overlapping partials whose sum is exact (Shewchuk)."""
    i = 0
    for y in partials:
        if abs(x) < abs(y):
            x, y = y, x
        hi = x + y
        lo = y - (hi - x)
        if lo:
            partials[i] = lo
            i += 1
        x = hi
    partials[i:] = [x]


def _add_square(partials: list[float], x: float) -> None:
    """Add ``x * x`` exactly (three error-free products of Veltkamp halves)."""
    c = _SPLIT * x
    hi = c - (c - x)
    lo = x - hi
    _add_exact(partials, hi * hi)
    _add_exact(partials, 2.0 * hi * lo)
    _add_exact(partials, lo * lo)


def _exact(partials: list[float], base: Fraction) -> Fraction:
    """``base`` plus the partials, exactly (integers over one power-of-two denominator)."""
    if not partials:
        return base
    ratios = [p.as_integer_ratio() for p in partials]  # finite binary64: denominators are powers of 2
    denominator = max(d for _, d in ratios)
    total = Fraction(sum(n * (denominator // d) for n, d in ratios), denominator)
    return base + total if base else total


class ExactSums(TypedDict):
    """The exact Σx and Σx² of a sample, each as a fraction's text (``"p/q"`` or ``"p"``)."""

    sum: str
    sum_sq: str


class MeanFigures(TypedDict):
    """:meth:`RunningMean.to_dict`: one sample's figures in a results document.

    ``std`` and ``half_width_95`` are None below two units; ``exact`` is written
    for the chip figures only (what a merge reads).
    """

    n: int
    mean: float
    m2: float
    std: float | None
    half_width_95: float | None
    exact: NotRequired[ExactSums]


class RunningMean:
    """Count, mean and sum of squared deviations of a sample, exact and order-independent.

    Args:
        n, mean, m2: start from a summary (count, mean, sum of squared
            deviations), e.g. a document without exact sums.

    Attributes:
        n: number of units.
    """

    __slots__ = ("_base_sq", "_base_sum", "_cache", "_live_m2", "_live_mean", "_sq", "_sum", "n")

    def __init__(self, n: int = 0, mean: float = 0.0, m2: float = 0.0) -> None:
        self.n = int(n)
        self._sum: list[float] = []
        self._sq: list[float] = []
        fmean = Fraction(mean)
        self._base_sum = fmean * self.n
        self._base_sq = Fraction(m2) + fmean * fmean * self.n
        self._live_mean = float(mean)
        self._live_m2 = float(m2)
        self._cache: tuple[float, float] | None = None

    # -- accumulation --------------------------------------------------------------

    def add(self, x: float) -> None:
        """Add one unit."""
        x = float(x)
        self.n += 1
        _add_exact(self._sum, x)
        _add_square(self._sq, x)
        delta = x - self._live_mean
        self._live_mean += delta / self.n
        self._live_m2 += delta * (x - self._live_mean)
        self._cache = None

    def add_many(self, xs: Iterable[float]) -> None:
        """Add several units."""
        for x in np.asarray(list(xs) if not isinstance(xs, np.ndarray) else xs, dtype=np.float64).tolist():
            self.add(x)

    def merge(self, other: RunningMean) -> None:
        """Fold another sample into this one (exact sums add; Welford by Chan et al.)."""
        if other.n == 0:
            return
        for p in other._sum:
            _add_exact(self._sum, p)
        for p in other._sq:
            _add_exact(self._sq, p)
        self._base_sum += other._base_sum
        self._base_sq += other._base_sq
        n = self.n + other.n
        delta = other._live_mean - self._live_mean
        self._live_mean += delta * other.n / n
        self._live_m2 += other._live_m2 + delta * delta * self.n * other.n / n
        self.n = n
        self._cache = None

    def merged(self, other: RunningMean) -> RunningMean:
        """A new sample holding both."""
        result = self.copy()
        result.merge(other)
        return result

    def copy(self) -> RunningMean:
        """An independent copy."""
        # Not RunningMean(): its Fraction arithmetic would be thrown away (a
        # trajectory copies every estimator at each of its points).
        result = RunningMean.__new__(RunningMean)
        result.n = self.n
        result._sum = list(self._sum)
        result._sq = list(self._sq)
        result._base_sum = self._base_sum
        result._base_sq = self._base_sq
        result._live_mean = self._live_mean
        result._live_m2 = self._live_m2
        result._cache = self._cache
        return result

    # -- figures -------------------------------------------------------------------

    def exact_sums(self) -> tuple[Fraction, Fraction]:
        """(Σx, Σx²) exactly."""
        return _exact(self._sum, self._base_sum), _exact(self._sq, self._base_sq)

    def _figures(self) -> tuple[float, float]:
        if self._cache is None:
            if self.n == 0:
                self._cache = (0.0, 0.0)
            else:
                total, squares = self.exact_sums()
                mean = total / self.n
                m2 = squares - total * mean
                self._cache = (float(mean), float(max(m2, Fraction(0))))
        return self._cache

    @property
    def mean(self) -> float:
        """The mean, correctly rounded from the exact sums."""
        return self._figures()[0]

    @property
    def m2(self) -> float:
        """Sum of squared deviations from the mean, correctly rounded from the exact sums."""
        return self._figures()[1]

    @property
    def variance(self) -> float:
        """Sample variance (n - 1 in the denominator); NaN below two units."""
        return self.m2 / (self.n - 1) if self.n > 1 else math.nan

    @property
    def std(self) -> float:
        """Sample standard deviation."""
        return math.sqrt(self.variance) if self.n > 1 else math.nan

    @property
    def half_width(self) -> float:
        """Half-width of the 95% normal interval of the mean: 1.96·s/√n."""
        return Z95 * self.std / math.sqrt(self.n) if self.n > 1 else math.nan

    def live(self) -> tuple[float, float]:
        """(mean, 95% half-width) from Welford's accumulators: cheap, for live metrics."""
        if self.n < 2:
            return (self._live_mean if self.n else math.nan), math.nan
        std = math.sqrt(max(self._live_m2, 0.0) / (self.n - 1))
        return self._live_mean, Z95 * std / math.sqrt(self.n)

    def interval(self) -> tuple[float, float]:
        """The 95% interval of the mean."""
        return (self.mean - self.half_width, self.mean + self.half_width)

    def excludes(self, value: float) -> bool:
        """True when the 95% interval does not contain ``value``."""
        low, high = self.interval()
        return not (low <= value <= high)

    def z_test(self, value: float = 0.0) -> tuple[float, float]:
        """(z, two-sided p-value) of the hypothesis that the true mean is ``value``.

        ``z = (mean - value) / (s / sqrt(n))`` against the normal distribution
        (as the 95% interval), ``p = P(|Z| >= |z|) = erfc(|z| / sqrt(2))``;
        NaN below two units. A sample with no spread has p 1 at its own mean
        and 0 elsewhere.

        >>> stat = RunningMean()
        >>> stat.add_many([1.0, -1.0] * 50 + [1.0] * 4)
        >>> z, p = stat.z_test()
        >>> round(z, 4), round(p, 4)
        (0.3906, 0.6961)
        """
        if self.n < 2:
            return math.nan, math.nan
        error = self.std / math.sqrt(self.n)
        gap = self.mean - value
        if error == 0.0:
            return (0.0, 1.0) if gap == 0.0 else (math.copysign(math.inf, gap), 0.0)
        z = gap / error
        return z, math.erfc(abs(z) / math.sqrt(2.0))

    def scaled(self, factor: float) -> RunningMean:
        """The same sample with every unit multiplied by ``factor`` (unit change)."""
        return RunningMean(self.n, self.mean * factor, self.m2 * factor * factor)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RunningMean):
            return NotImplemented
        return self.n == other.n and self.exact_sums() == other.exact_sums()

    def __repr__(self) -> str:
        return f"RunningMean(n={self.n}, mean={self.mean!r}, m2={self.m2!r})"

    # -- documents -------------------------------------------------------------------

    def to_dict(self, exact: bool = True) -> MeanFigures:
        """The figures (NaN written as None), plus the exact sums when ``exact``."""

        def clean(x: float) -> float | None:
            return None if math.isnan(x) else x

        report: MeanFigures = {
            "n": self.n,
            "mean": self.mean,
            "m2": self.m2,
            "std": clean(self.std),
            "half_width_95": clean(self.half_width),
        }
        if exact:
            total, squares = self.exact_sums()
            report["exact"] = {"sum": str(total), "sum_sq": str(squares)}
        return report

    @classmethod
    def from_exact(cls, n: int, total: Fraction, squares: Fraction) -> RunningMean:
        """A sample of ``n`` units given by its exact sums (Σx, Σx²)."""
        stat = cls()
        stat.n = int(n)
        stat._base_sum, stat._base_sq = Fraction(total), Fraction(squares)
        if stat.n:
            stat._live_mean = float(stat._base_sum / stat.n)
            stat._live_m2 = float(max(stat._base_sq - stat._base_sum * stat._base_sum / stat.n, Fraction(0)))
        return stat

    @classmethod
    def from_dict(cls, data: MeanFigures) -> RunningMean:
        """Rebuild from :meth:`to_dict` output (the exact sums when present, else n, mean, m2)."""
        stat = cls(int(data["n"]), float(data["mean"]), float(data["m2"]))
        exact = data.get("exact")
        if exact is not None:
            stat._base_sum = Fraction(exact["sum"])
            stat._base_sq = Fraction(exact["sum_sq"])
            stat._cache = None
        return stat


class LiveMean(RunningMean):
    """Only Welford's running figures (:meth:`RunningMean.live`) and the count, for live displays.

    A dealer's running estimate is read after every hand through ``live()``;
    its documents are recomputed exactly from the outcomes at the end. Without
    the exact sums (a Python loop per unit) adding costs a few operations.
    Anything that needs the exact figures (``mean``, ``m2``, documents,
    merging) raises :class:`TypeError` instead of answering from nothing.
    """

    __slots__ = ()

    def add(self, x: float) -> None:
        """Add one unit (Welford only)."""
        x = float(x)
        self.n += 1
        delta = x - self._live_mean
        self._live_mean += delta / self.n
        self._live_m2 += delta * (x - self._live_mean)

    def copy(self) -> LiveMean:
        """An independent copy."""
        result = LiveMean.__new__(LiveMean)
        result.n = self.n
        result._sum, result._sq = [], []
        result._base_sum = result._base_sq = Fraction(0)
        result._live_mean = self._live_mean
        result._live_m2 = self._live_m2
        result._cache = None
        return result

    def exact_sums(self) -> tuple[Fraction, Fraction]:
        """Refused: a live mean keeps no exact sums."""
        raise TypeError(_NO_EXACT_SUMS)

    def _figures(self) -> tuple[float, float]:
        raise TypeError(_NO_EXACT_SUMS)  # mean, m2 and documents come from the exact sums

    def merge(self, other: RunningMean) -> None:
        """Refused: merging needs the exact sums."""
        raise TypeError(_NO_EXACT_SUMS)


_NO_EXACT_SUMS = "a LiveMean keeps only Welford's running figures (live()), not exact sums"


def mbb_per_game(chips: float, big_blind: int) -> float:
    """Milli big blinds per game of a per-hand amount in chips."""
    return 1000.0 * chips / big_blind

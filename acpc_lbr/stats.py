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

A sample also keeps Σx³ exactly, for its skewness: the printed 95% interval
(:meth:`RunningMean.interval`, :func:`skew_corrected_interval`) is Hall's (1992)
skewness-corrected interval, whose two tails each miss at their nominal 2.5% where
the units are skewed (the symmetric normal interval's lower bound overstated up to
3.5% of the time at 200 units; docs/results.md, "The intervals' miss rates").
An honesty check's sample (:class:`CheckMean`) also keeps Σx⁴ and its units' null
variances exactly, for its calibrated test (:meth:`CheckMean.honesty_test`).

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
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import NotRequired, TypedDict, TypeVar

import numpy as np
import numpy.typing as npt

#: A float or an array of them (:func:`skew_corrected_p_value` works on both).
FloatLike = TypeVar("FloatLike", float, npt.NDArray[np.float64])

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
    """The exact Σx and Σx² of a sample, each as a fraction's text (``"p/q"`` or ``"p"``).

    An honesty check's sample (:class:`CheckMean`) also carries Σx³ and Σx⁴,
    and the sum of its units' null variances with how many units had one.
    """

    sum: str
    sum_sq: str
    sum_cube: NotRequired[str]
    sum_fourth: NotRequired[str]
    sum_null_variance: NotRequired[str]
    null_variance_units: NotRequired[int]


class MeanFigures(TypedDict):
    """:meth:`RunningMean.to_dict`: one sample's figures in a results document.

    ``std`` and ``half_width_95`` are None below two units; ``exact`` is written
    for the chip figures only (what a merge reads). ``half_width_95`` is the
    normal interval's 1.96 × the mean's standard error (the interval's scale: s/√n,
    or within seats for an estimator over hands, :class:`SeatedMean`); ``low_95`` and
    ``high_95`` are the printed 95% interval (:meth:`RunningMean.interval`:
    skewness-corrected, so not always ``mean ± half_width_95``), None below two units.
    ``by_seat`` (an estimator over hands whose every unit's seat is known) holds each
    seat's figures, exact sums included: what the interval within seats is computed from.
    """

    n: int
    mean: float
    m2: float
    std: float | None
    half_width_95: float | None
    low_95: NotRequired[float | None]
    high_95: NotRequired[float | None]
    exact: NotRequired[ExactSums]
    by_seat: NotRequired[list[MeanFigures]]


class _PowerSum:
    """Σ xᵖ of binary64 values, exactly and fast: an integer over a power of two (no gcd per unit).

    A binary64 is m / 2ᵏ, so xᵖ = mᵖ / 2ᵖᵏ: the sum is kept as one integer
    numerator over the largest 2ᵖᵏ seen (``base``: an exact fraction read from a document).
    """

    __slots__ = ("base", "exponent", "numerator", "power")

    def __init__(self, power: int, base: Fraction = Fraction(0)) -> None:
        self.power = power
        self.numerator = 0
        self.exponent = 0
        self.base = base

    def add(self, x: float) -> None:
        """Add xᵖ."""
        numerator, denominator = x.as_integer_ratio()
        self._add_scaled(numerator**self.power, (denominator.bit_length() - 1) * self.power)

    def _add_scaled(self, numerator: int, exponent: int) -> None:
        if exponent > self.exponent:
            self.numerator <<= exponent - self.exponent
            self.exponent = exponent
        self.numerator += numerator << (self.exponent - exponent)

    def merged_with(self, other: _PowerSum) -> _PowerSum:
        """A new sum of both."""
        result = self.copy()
        result._add_scaled(other.numerator, other.exponent)
        result.base += other.base
        return result

    def copy(self) -> _PowerSum:
        """An independent copy."""
        result = _PowerSum(self.power, self.base)
        result.numerator, result.exponent = self.numerator, self.exponent
        return result

    def value(self) -> Fraction:
        """The sum, exactly."""
        return self.base + Fraction(self.numerator, 1 << self.exponent)


class RunningMean:
    """Count, mean and sum of squared deviations of a sample, exact and order-independent.

    Args:
        n, mean, m2: start from a summary (count, mean, sum of squared
            deviations), e.g. a document without exact sums.

    Attributes:
        n: number of units.
    """

    __slots__ = ("_base_sq", "_base_sum", "_cache", "_higher", "_live_m2", "_live_mean", "_sq", "_sum", "n")

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
        # Σx³ and Σx⁴ for the printed interval's skewness correction: unknown (None) for a sample
        # started from a summary
        self._higher: tuple[_PowerSum, _PowerSum] | None = (_PowerSum(3), _PowerSum(4)) if self.n == 0 else None

    # -- accumulation --------------------------------------------------------------

    def add(self, x: float) -> None:
        """Add one unit."""
        x = float(x)
        self.n += 1
        _add_exact(self._sum, x)
        _add_square(self._sq, x)
        if self._higher is not None:  # x = m / 2ᵏ: Σx³ and Σx⁴ from one integer ratio
            numerator, denominator = x.as_integer_ratio()
            shift = denominator.bit_length() - 1
            square = numerator * numerator
            self._higher[0]._add_scaled(square * numerator, 3 * shift)
            self._higher[1]._add_scaled(square * square, 4 * shift)
        delta = x - self._live_mean
        self._live_mean += delta / self.n
        self._live_m2 += delta * (x - self._live_mean)
        self._cache = None

    def add_many(self, xs: Iterable[float]) -> None:
        """Add several units."""
        for x in np.asarray(list(xs) if not isinstance(xs, np.ndarray) else xs, dtype=np.float64).tolist():
            self.add(x)

    def merge(self, other: RunningMean) -> None:
        """Fold another sample into this one (exact sums add; Welford by Chan et al.; Σx³ and Σx⁴ stay
        known only if both knew them)."""
        if other.n == 0:
            return
        if self._higher is None or other._higher is None:
            self._higher = None
        else:
            self._higher = (self._higher[0].merged_with(other._higher[0]),
                            self._higher[1].merged_with(other._higher[1]))
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
        # trajectory copies every estimator at each of its points). A subclass
        # gets its own type and adds its fields (CheckMean.copy).
        result = type(self).__new__(type(self))
        result.n = self.n
        result._sum = list(self._sum)
        result._sq = list(self._sq)
        result._base_sum = self._base_sum
        result._base_sq = self._base_sq
        result._live_mean = self._live_mean
        result._live_m2 = self._live_m2
        result._cache = self._cache
        result._higher = None if self._higher is None else (self._higher[0].copy(), self._higher[1].copy())
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
        """Half-width of the 95% normal interval of the mean: 1.96 × its standard error (s/√n here;
        within seats for a :class:`SeatedMean`)."""
        return Z95 * self.interval_shape()[0] / math.sqrt(self.n) if self.n > 1 else math.nan

    def higher_sums(self) -> tuple[Fraction | None, Fraction | None]:
        """(Σx³, Σx⁴) exactly, or None when unknown (a sample rebuilt from a summary without them)."""
        if self._higher is None:
            return None, None
        return self._higher[0].value(), self._higher[1].value()

    def _central(self) -> tuple[Fraction, Fraction, Fraction] | None:
        """(m₂, m₃, m₄), each a mean over the n units, exactly; None when unknown."""
        cube, fourth = self.higher_sums()
        if cube is None or fourth is None or self.n == 0:
            return None
        total, squares = self.exact_sums()
        n = self.n
        mu = total / n
        m2 = squares / n - mu * mu
        m3 = cube / n - 3 * mu * squares / n + 2 * mu**3
        m4 = fourth / n - 4 * mu * cube / n + 6 * mu * mu * squares / n - 3 * mu**4
        return m2, m3, m4

    def central_moments(self) -> tuple[float, float, float] | None:
        """The sample's central moments (m₂, m₃, m₄), each a mean over the n units; None when unknown."""
        moments = self._central()
        return None if moments is None else (float(moments[0]), float(moments[1]), float(moments[2]))

    def shape(self) -> tuple[float, float]:
        """(skewness g = m₃/m₂^(3/2), kurtosis b₂ = m₄/m₂²) of the sample, from the exact sums (in
        fractions: no underflow); (0, 3), a normal law's, without spread; NaNs below two units or
        when Σx³ and Σx⁴ are unknown."""
        moments = self._central()
        if moments is None or self.n < 2:
            return math.nan, math.nan
        m2, m3, m4 = moments
        if m2 <= 0:
            return 0.0, 3.0
        return math.copysign(math.sqrt(float(m3 * m3 / (m2 * m2 * m2))), m3), float(m4 / (m2 * m2))

    @property
    def skewness(self) -> float:
        """The sample skewness g (:meth:`shape`)."""
        return self.shape()[0]

    def live(self) -> tuple[float, float]:
        """(mean, 95% half-width) from Welford's accumulators: cheap, for live metrics."""
        if self.n < 2:
            return (self._live_mean if self.n else math.nan), math.nan
        std = math.sqrt(max(self._live_m2, 0.0) / (self.n - 1))
        return self._live_mean, Z95 * std / math.sqrt(self.n)

    def interval(self) -> tuple[float, float]:
        """The printed 95% interval of the mean: Hall's skewness-corrected interval (:func:`skew_corrected_interval`).

        It is about the normal interval mean ± half_width moved toward the longer tail of the units'
        law, by s·g·(1 + 2·1.96²)/(6n), and stretched to Student's t quantile. When Σx³ and Σx⁴ are
        unknown (a sample rebuilt from a document without them) the units are taken as unskewed:
        mean ± t·s/√n. (NaN, NaN) below two units.

        >>> stat = RunningMean()
        >>> stat.add_many([0.0] * 180 + [10.0] * 20)
        >>> low, high = stat.interval()
        >>> round(low, 3), round(high, 3), round(stat.mean - stat.half_width, 3), round(stat.mean + stat.half_width, 3)
        (0.639, 1.466, 0.583, 1.417)
        """
        if self.n < 2:
            return math.nan, math.nan
        std, skew, kurtosis = self.interval_shape()
        low, high = skew_corrected_interval(self.mean, std, float(self.n), skew, kurtosis)
        return float(low), float(high)

    def interval_shape(self) -> tuple[float, float, float]:
        """(s, g, b₂) the printed interval is computed from: the units' standard deviation, skewness and
        kurtosis; (0, 3) for the shape when Σx³ and Σx⁴ are unknown (the units taken as unskewed).
        A :class:`SeatedMean` gives the figures of its units within seats instead."""
        skew, kurtosis = self.shape()
        if math.isnan(skew):
            skew, kurtosis = 0.0, 3.0
        return self.std, skew, kurtosis

    def excludes(self, value: float) -> bool:
        """True when the printed 95% interval does not contain ``value``."""
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
        """The same sample with every unit multiplied by ``factor`` (unit change), Σx³ and Σx⁴ with it."""
        result = RunningMean(self.n, self.mean * factor, self.m2 * factor * factor)
        cube, fourth = self.higher_sums()
        if cube is not None and fourth is not None:
            result._higher = (_PowerSum(3, cube * Fraction(factor) ** 3), _PowerSum(4, fourth * Fraction(factor) ** 4))
        return result

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

        low, high = self.interval()
        report: MeanFigures = {
            "n": self.n,
            "mean": self.mean,
            "m2": self.m2,
            "std": clean(self.std),
            "half_width_95": clean(self.half_width),
            "low_95": clean(low),
            "high_95": clean(high),
        }
        if exact:
            total, squares = self.exact_sums()
            report["exact"] = {"sum": str(total), "sum_sq": str(squares)}
            cube, fourth = self.higher_sums()
            if cube is not None and fourth is not None:
                report["exact"]["sum_cube"] = str(cube)
                report["exact"]["sum_fourth"] = str(fourth)
        return report

    @classmethod
    def from_exact(cls, n: int, total: Fraction, squares: Fraction) -> RunningMean:
        """A sample of ``n`` units given by its exact sums (Σx, Σx²; the higher sums unknown)."""
        stat = cls()
        stat.n = int(n)
        stat._base_sum, stat._base_sq = Fraction(total), Fraction(squares)
        if stat.n:
            stat._higher = None
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
            if stat.n and "sum_cube" in exact and "sum_fourth" in exact:
                stat._higher = (_PowerSum(3, Fraction(exact["sum_cube"])), _PowerSum(4, Fraction(exact["sum_fourth"])))
        return stat


class CheckMean(RunningMean):
    """A :class:`RunningMean` that also keeps its units' null variances: the sample of an honesty check.

    The check's test (:meth:`honesty_test`) reads the sample's skewness and
    kurtosis from the exact Σx³ and Σx⁴ every :class:`RunningMean` keeps; a
    sample rebuilt from a summary without them (an older document) has unknown
    higher moments (``None``) and falls back to the plain normal test.

    A unit may come with its **null variance**: the variance the unit has
    given what the measured player saw, if the answers are honest (IO − raw:
    the outcome's variance over the answered range). When every unit has
    one, the test needs no estimate of the spread.
    """

    __slots__ = ("_null_units", "_null_variance")

    def __init__(self, n: int = 0, mean: float = 0.0, m2: float = 0.0) -> None:
        super().__init__(n, mean, m2)
        self._null_variance = _PowerSum(1)
        self._null_units = 0

    def add(self, x: float, null_variance: float | None = None) -> None:
        """Add one unit, with its null variance when known."""
        super().add(x)
        if null_variance is not None and not math.isnan(null_variance):
            self._null_variance.add(float(null_variance))
            self._null_units += 1

    def merge(self, other: RunningMean) -> None:
        """Fold another sample into this one; the higher sums stay known only if both knew them."""
        if other.n == 0:
            return
        super().merge(other)
        if isinstance(other, CheckMean):
            self._null_variance = self._null_variance.merged_with(other._null_variance)
            self._null_units += other._null_units

    def copy(self) -> CheckMean:
        """An independent copy."""
        result = super().copy()
        assert isinstance(result, CheckMean)
        result._null_variance = self._null_variance.copy()
        result._null_units = self._null_units
        return result

    def null_variance(self) -> Fraction | None:
        """Σ of the units' null variances, exactly; None unless every unit had one."""
        return self._null_variance.value() if self.n > 0 and self._null_units == self.n else None

    def honesty_test(self) -> tuple[float, float]:
        """(z, two-sided p-value) that the true mean is 0, calibrated for skewed, sparse units.

        When every unit has its null variance (IO − raw), z = Σx / √(Σ null
        variances) and p is the normal law's: under honest answers the units
        are independent given what the measured player saw, with mean 0 and
        exactly those variances, so nothing is estimated from the sparse,
        skewed units themselves (a sum of units without spread and not 0 is
        impossible for honest answers: p = 0).

        Otherwise z = mean / (s/√n), as :meth:`z_test`, and the p-value corrects
        the normal law's two failures at small n and p ~ 0.001 (docs/results.md,
        "The honesty check"):

        * heavy tails make s itself noisy, so z is referred to Student's t
          with ν = 2n / (b₂ − 1 + g₁²) degrees of freedom (b₂ the sample's
          kurtosis, g₁ its skewness; ν = n for normal units, about twice the
          number of units that vary for sparse ones), between 1 and n − 1;
        * skewness makes one tail of z heavier (the mean and s move together):
          the heavy tail's first Edgeworth term, |g₁|·(2z² + 1)·φ(z) / (6√n)
          (Hall 1992), is added, the light tail's deficit is not.

        Without the higher moments (an older document) it is :meth:`z_test`.

        >>> known = CheckMean()
        >>> for x in (0.5, -0.5, 1.0): known.add(x, 0.25)
        >>> known.honesty_test()
        (1.1547005383792517, 0.24821307898992362)

        >>> stat = CheckMean()
        >>> stat.add_many([1.0, -1.0] * 50 + [1.0] * 4)
        >>> z, p = stat.honesty_test()
        >>> round(z, 4), round(p, 4)
        (0.3906, 0.6975)
        """
        variance = self.null_variance()
        if variance is not None:
            total = self.exact_sums()[0]
            if variance == 0:
                return (0.0, 1.0) if total == 0 else (math.copysign(math.inf, total), 0.0)
            z = float(total) / math.sqrt(variance)
            return z, math.erfc(abs(z) / math.sqrt(2.0))
        z, p_plain = self.z_test(0.0)
        moments = self.central_moments()
        if moments is None or math.isnan(z) or math.isinf(z) or p_plain == 1.0:
            return z, p_plain
        m2, m3, m4 = moments
        if not m2 > 0.0:
            return z, p_plain
        return z, float(skew_corrected_p_value(z, self.n, m3 / m2**1.5, m4 / (m2 * m2)))

    def to_dict(self, exact: bool = True) -> MeanFigures:
        """:meth:`RunningMean.to_dict`, the exact sums with the units' null variances when known."""
        report = super().to_dict(exact)
        if exact and self._null_units:
            report["exact"]["sum_null_variance"] = str(self._null_variance.value())
            report["exact"]["null_variance_units"] = self._null_units
        return report

    @classmethod
    def from_dict(cls, data: MeanFigures) -> CheckMean:
        """Rebuild from :meth:`to_dict` output (without Σx³ and Σx⁴, the higher moments are unknown)."""
        plain = RunningMean.from_dict(data)
        stat = cls.__new__(cls)
        for name in RunningMean.__slots__:
            setattr(stat, name, getattr(plain, name))
        exact = data.get("exact")
        stat._null_variance, stat._null_units = _PowerSum(1), 0
        if exact is not None and "sum_null_variance" in exact:
            stat._null_variance = _PowerSum(1, Fraction(exact["sum_null_variance"]))
            stat._null_units = int(exact.get("null_variance_units", 0))
        return stat


def skew_corrected_p_value(z: FloatLike, n: FloatLike, skew: FloatLike, kurtosis: FloatLike) -> FloatLike:
    """The two-sided p-value of a studentised mean z over n units of sample skewness and kurtosis.

    Student's t with ν = 2n / (kurtosis − 1 + skew²) degrees of freedom (between
    1 and n − 1), plus the heavy tail's first Edgeworth term |skew|·(2z² + 1)·φ(z)/(6√n);
    at most 1. Works elementwise on numpy arrays (the calibration runs,
    :mod:`acpc_lbr.calibration`) as on floats (:meth:`CheckMean.honesty_test`).
    """
    from scipy.special import stdtr  # lazy: scipy is loaded only when a check is tested

    dof = np.clip(2.0 * n / np.maximum(kurtosis - 1.0 + skew * skew, 1e-12), 1.0, np.maximum(n - 1.0, 1.0))
    tails = 2.0 * stdtr(dof, -np.abs(z))
    density = np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
    heavy_tail = np.abs(skew) * (2.0 * z * z + 1.0) * density / (6.0 * np.sqrt(n))
    result: FloatLike = np.minimum(1.0, tails + heavy_tail)
    return result


def skew_corrected_interval(mean: FloatLike, std: FloatLike, n: FloatLike, skew: FloatLike,
                            kurtosis: FloatLike) -> tuple[FloatLike, FloatLike]:
    """The printed 95% interval of a mean over n units of sample standard deviation, skewness and kurtosis.

    **Hall's (1992) skewness-removing transformation** of the studentised mean
    θ = (mean − μ)/s: with G the skewness,

        W(μ) = √n · (θ + G·θ²/3 + G²·θ³/27 + G/(6n))

    is close to normal where the t statistic √n·θ is skewed (the first Edgeworth
    term of t, G·(2x² + 1)·φ(x)/(6√n), is removed), and the interval is the set of μ
    with −q ≤ W(μ) ≤ q, q Student's t quantile at n − 1 degrees of freedom. To
    first order it is mean ± q·s/√n moved by s·G·(1 + 2q²)/(6n) toward the longer
    tail of the units' law.

    **The skewness estimate's link with the mean removed.** The sample skewness g
    moves with the mean: g ≈ γ + k·(mean − μ)/σ with k = b₂ − 3 − 3g²/2 (b₂ the
    kurtosis; by the delta method). Where the units are heavy-tailed (k large) a unit
    far out moves the mean, and g with it, so Hall's interval with G = g would move
    further the same way, and miss more often on both sides (Leduc against a CFR
    policy, duplicate raw at 200 pairs: 5.8% against the normal interval's 5.1%;
    docs/results.md, "The intervals' miss rates"). So G = g − k·θ at each μ tested:
    the skewness the sample would show if the mean were μ. k is held to
    ±n/(8q²): over the interval's reach (|θ| ≤ 2q/√n) k·θ² is then at most 1/2, which bounds
    how far the link's term can bend W.

    W(μ) = ±q is solved by Newton's method from Hall's closed form (G = g:
    θ = 3y/(c² + c + 1), y = w/√n − g/(6n), c = ∛(1 + g·y)). It needs only n and
    the exact Σx, Σx², Σx³ and Σx⁴, so a streamed sample computes it at the end.
    With g = 0 and b₂ = 3 (a normal law's) it is mean ± q·s/√n. Works elementwise
    on numpy arrays (:func:`acpc_lbr.calibration.interval_misses`) as on floats
    (:meth:`RunningMean.interval`).

    >>> low, high = skew_corrected_interval(1.0, 3.0, 200.0, 0.0, 3.0)  # mean ± t(199)·s/√n
    >>> round(float(low), 4), round(float(high), 4)
    (0.5817, 1.4183)
    >>> low, high = skew_corrected_interval(1.0, 3.0, 200.0, 2.0, 9.0)  # a long right tail: both ends move up
    >>> round(float(low), 4), round(float(high), 4)
    (0.6197, 1.4709)
    """
    from scipy.special import stdtrit  # lazy: scipy is loaded only when an interval is printed

    quantile = stdtrit(np.maximum(n - 1.0, 1.0), 0.975)
    reach = n / (8.0 * quantile * quantile)
    link = np.clip(kurtosis - 3.0 - 1.5 * skew * skew, -reach, reach)
    low: FloatLike = mean - std * _hall_theta(quantile, n, skew, link)
    high: FloatLike = mean - std * _hall_theta(-quantile, n, skew, link)
    return low, high


def _hall_theta(w: FloatLike, n: FloatLike, skew: FloatLike, link: FloatLike) -> FloatLike:
    """The θ where W = w (:func:`skew_corrected_interval`): Newton's method on the polynomial in θ
    with G = skew − link·θ, from Hall's closed form for G = skew."""
    root_n = np.sqrt(n)
    y = w / root_n - skew / (6.0 * n)
    c = np.cbrt(1.0 + skew * y)
    start: FloatLike = 3.0 * y / (c * c + c + 1.0)
    t = start
    for _ in range(8):
        g = skew - link * t
        excess = t + g * t * t / 3.0 + g * g * t**3 / 27.0 + g / (6.0 * n) - w / root_n
        slope = (1.0 + 2.0 * g * t / 3.0 - link * t * t / 3.0 + g * g * t * t / 9.0
                 - 2.0 * g * link * t**3 / 27.0 - link / (6.0 * n))
        t = t - excess / slope
    # (for floats np.where gives a 0-d array, which the caller's float() reads)
    result: FloatLike = np.where(np.isfinite(t), t, start)  # type: ignore[assignment]
    return result


def stratified_shape(counts: Sequence[FloatLike], m2s: Sequence[FloatLike], m3s: Sequence[FloatLike],
                     m4s: Sequence[FloatLike]) -> tuple[FloatLike, FloatLike, FloatLike]:
    """(s, g, b₂) of a mean over strata, as if of n = Σ nₛ like units: what the printed interval reads.

    A match over hands alternates the measured player's seat hand by hand, so the
    mean over its n hands is a stratified mean, Σ (nₛ/n)·x̄ₛ with nₛ fixed by the
    seating. Its variance is Σ (nₛ/n)²·sₛ²/nₛ (sₛ² the variance within seat s): the
    difference between the seats' means is not noise, and a spread taken over all
    hands counts it as noise (an interval too wide: AIVAT over hands in Leduc missed
    3.8-4.6% of the time against 5%; docs/results.md, "The intervals' miss rates").
    The mean's third and fourth cumulants are Σ nₛ·m₃ₛ/n³ and Σ nₛ·(m₄ₛ − 3m₂ₛ²)/n⁴.
    Returned is the unit law with the same n that gives the mean these figures: s = √(n·V)
    (sₛ with nₛ − 1 in the denominator), and the skewness and kurtosis with the strata's
    central moments (means over nₛ: m₂ₛ, m₃ₛ, m₄ₛ). With one stratum these are the
    sample's own s, g and b₂; (0, 0, 3) without spread. Elementwise on numpy arrays
    (:func:`acpc_lbr.calibration.interval_misses`) as on floats (:meth:`SeatedMean.interval_shape`).

    >>> s, g, b2 = stratified_shape([4.0], [1.25], [0.0], [2.5625])  # the units 0, 1, 2, 3
    >>> round(float(s), 4), float(g), round(float(b2), 4)
    (1.291, 0.0, 1.64)
    """
    n = sum(counts)
    variance = sum(c * c * m2 / (c - 1.0) for c, m2 in zip(counts, m2s, strict=True)) / (n * n)  # Σ (nₛ/n)²·sₛ²/nₛ
    spread = sum(c * m2 for c, m2 in zip(counts, m2s, strict=True)) / (n * n)  # V with nₛ in the denominator
    third = sum(c * m3 for c, m3 in zip(counts, m3s, strict=True)) / n**3
    fourth = sum(c * (m4 - 3.0 * m2 * m2) for c, m2, m4 in zip(counts, m2s, m4s, strict=True)) / n**4
    positive = spread > 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        skew = np.where(positive, np.sqrt(n) * third / np.where(positive, spread, 1.0) ** 1.5, 0.0)
        kurtosis = np.where(positive, 3.0 + n * fourth / np.where(positive, spread, 1.0) ** 2, 3.0)
    std: FloatLike = np.sqrt(n * variance)
    return std, skew, kurtosis  # type: ignore[return-value]


class SeatedMean(RunningMean):
    """A :class:`RunningMean` over hands that also keeps each seat's units: an estimator over hands.

    The measured player's seat alternates hand by hand (and a duplicate pair's second half
    swaps it), so its mean is a stratified mean: the printed interval and ``half_width``
    take the variance within each seat (:func:`stratified_shape`), from each seat's exact
    Σx, Σx², Σx³ and Σx⁴. ``std`` stays the spread of all units. When a unit's seat is
    unknown (a document written before seats were kept) or a seat has one unit, the
    figures are :class:`RunningMean`'s.

    >>> stat = SeatedMean()
    >>> for k in range(40): stat.add(float(k % 2) * 10.0 + (k % 4 // 2), seat=k % 2)
    >>> round(stat.std, 3), round(stat.interval_shape()[0], 3)  # the seats' 10-chip gap is not noise
    (5.089, 0.513)
    """

    __slots__ = ("_seats", "_unseated")

    def __init__(self, n: int = 0, mean: float = 0.0, m2: float = 0.0) -> None:
        super().__init__(n, mean, m2)
        self._seats = (RunningMean(), RunningMean())
        self._unseated = self.n

    def add(self, x: float, seat: int | None = None) -> None:
        """Add one unit, played from ``seat`` (0 or 1; None when unknown)."""
        super().add(x)
        if seat is None:
            self._unseated += 1
        else:
            self._seats[seat].add(x)

    def merge(self, other: RunningMean) -> None:
        """Fold another sample into this one, seat by seat (a plain sample's units have no known seat)."""
        if other.n == 0:
            return
        super().merge(other)
        if isinstance(other, SeatedMean):
            self._seats = (self._seats[0].merged(other._seats[0]), self._seats[1].merged(other._seats[1]))
            self._unseated += other._unseated
        else:
            self._unseated += other.n

    def copy(self) -> SeatedMean:
        """An independent copy."""
        result = super().copy()
        assert isinstance(result, SeatedMean)
        result._seats = (self._seats[0].copy(), self._seats[1].copy())
        result._unseated = self._unseated
        return result

    def seats(self) -> tuple[RunningMean, RunningMean] | None:
        """Each seat's units, or None when some unit's seat is unknown."""
        return None if self._unseated else self._seats

    def interval_shape(self) -> tuple[float, float, float]:
        """(s, g, b₂) within seats (:func:`stratified_shape`), or :class:`RunningMean`'s when the seats are
        not all known or a seat has a single unit."""
        seats = [seat for seat in self._seats if seat.n]
        if self._unseated or any(seat.n < 2 for seat in seats):
            return super().interval_shape()
        moments: list[tuple[float, float, float]] = []
        for seat in seats:
            central = seat.central_moments()
            if central is None:  # unknown Σx³, Σx⁴ (a document without them): the seat's units taken as unskewed
                total, squares = seat.exact_sums()
                mean = total / seat.n
                spread = float(squares / seat.n - mean * mean)  # as central_moments has it, to the bit
                central = (spread, 0.0, 3.0 * spread * spread)
            moments.append(central)
        std, skew, kurtosis = stratified_shape([float(seat.n) for seat in seats], [m[0] for m in moments],
                                               [m[1] for m in moments], [m[2] for m in moments])
        return float(std), float(skew), float(kurtosis)

    def scaled(self, factor: float) -> SeatedMean:
        """The same sample with every unit multiplied by ``factor``, seat by seat."""
        result = _seated(super().scaled(factor))
        result._seats = (self._seats[0].scaled(factor), self._seats[1].scaled(factor))
        result._unseated = self._unseated
        return result

    def to_dict(self, exact: bool = True) -> MeanFigures:
        """:meth:`RunningMean.to_dict`, with each seat's figures (``by_seat``) when every unit's seat is known."""
        report = super().to_dict(exact)
        if self.n and not self._unseated:
            report["by_seat"] = [seat.to_dict(exact) for seat in self._seats]
        return report

    @classmethod
    def of_seats(cls, first: RunningMean, second: RunningMean) -> SeatedMean:
        """The sample of both seats' units (each seat's sample kept as it is)."""
        stat = _seated(first.merged(second))
        stat._seats, stat._unseated = (first, second), 0
        return stat

    @classmethod
    def from_dict(cls, data: MeanFigures) -> SeatedMean:
        """Rebuild from :meth:`to_dict` output; without ``by_seat`` (or its exact sums) the seats are unknown."""
        stat = _seated(RunningMean.from_dict(data))
        by_seat = data.get("by_seat")
        if by_seat is not None and len(by_seat) == 2 and all("exact" in seat for seat in by_seat):
            stat._seats = (RunningMean.from_dict(by_seat[0]), RunningMean.from_dict(by_seat[1]))
            stat._unseated = stat.n - stat._seats[0].n - stat._seats[1].n
        return stat


def _seated(plain: RunningMean) -> SeatedMean:
    """A :class:`SeatedMean` of ``plain``'s units, their seats unknown."""
    stat = SeatedMean.__new__(SeatedMean)
    for name in RunningMean.__slots__:
        setattr(stat, name, getattr(plain, name))
    stat._seats = (RunningMean(), RunningMean())
    stat._unseated = stat.n
    return stat


class _OnlineMoments:
    """Count, mean and the sums of squared, cubed and fourth-power deviations, updated one unit at a time in
    floating point (Welford's update carried to the fourth moment: Pébay 2008)."""

    __slots__ = ("m2", "m3", "m4", "mean", "n")

    def __init__(self) -> None:
        self.n, self.mean, self.m2, self.m3, self.m4 = 0, 0.0, 0.0, 0.0, 0.0

    def add(self, x: float) -> None:
        before = self.n
        self.n = n = before + 1
        delta = x - self.mean
        step = delta / n
        step2 = step * step
        term = delta * step * before
        self.mean += step
        self.m4 += term * step2 * (n * n - 3 * n + 3) + 6.0 * step2 * self.m2 - 4.0 * step * self.m3
        self.m3 += term * step * (n - 2) - 3.0 * step * self.m2
        self.m2 += delta * (x - self.mean)  # = term, rounded as RunningMean's Welford update (live() to the bit)

    def copy(self) -> _OnlineMoments:
        result = _OnlineMoments()
        result.n, result.mean, result.m2, result.m3, result.m4 = self.n, self.mean, self.m2, self.m3, self.m4
        return result


class LiveMean(RunningMean):
    """Only running figures in floating point and the count, for live displays.

    A dealer's running estimate is read after every hand through ``live()`` and
    ``interval()``; its documents are recomputed exactly from the outcomes at the end.
    Without the exact sums (a Python loop per unit) adding costs a few operations:
    the running mean and the sums of squared, cubed and fourth-power deviations
    (Welford, Pébay), over all units and, for an estimator over hands, per seat, so
    that the live interval is the document's (:meth:`RunningMean.interval`, within
    seats as :class:`SeatedMean`) up to rounding. Anything that needs the exact figures
    (``mean``, ``m2``, documents, merging) raises :class:`TypeError` instead of answering
    from nothing.

    >>> live, exact = LiveMean(), SeatedMean()
    >>> for k in range(40): live.add(float(k % 2) * 10.0 + (k % 5) ** 2, seat=k % 2); exact.add(float(k % 2) * 10.0 + (k % 5) ** 2, seat=k % 2)
    >>> [round(x, 9) for x in live.interval()] == [round(x, 9) for x in exact.interval()]
    True
    """

    __slots__ = ("_moments", "_seat_moments", "_unseated")

    def __init__(self) -> None:
        super().__init__()
        self._moments = _OnlineMoments()
        self._seat_moments = (_OnlineMoments(), _OnlineMoments())
        self._unseated = 0

    def add(self, x: float, seat: int | None = None) -> None:
        """Add one unit, played from ``seat`` when it is an estimator over hands."""
        x = float(x)
        moments = self._moments
        moments.add(x)
        self.n = moments.n
        self._live_mean, self._live_m2 = moments.mean, moments.m2
        if seat is None:
            self._unseated += 1
        else:
            self._seat_moments[seat].add(x)

    def copy(self) -> LiveMean:
        """An independent copy."""
        result = LiveMean.__new__(LiveMean)
        result.n = self.n
        result._sum, result._sq = [], []
        result._base_sum = result._base_sq = Fraction(0)
        result._live_mean = self._live_mean
        result._live_m2 = self._live_m2
        result._cache = None
        result._higher = None
        result._moments = self._moments.copy()
        result._seat_moments = (self._seat_moments[0].copy(), self._seat_moments[1].copy())
        result._unseated = self._unseated
        return result

    def interval_shape(self) -> tuple[float, float, float]:
        """(s, g, b₂) as :meth:`SeatedMean.interval_shape` has them (within seats when every unit has one and no
        seat has a single unit; else over all units), from the running sums."""
        seats = [m for m in self._seat_moments if m.n]
        if not self._unseated and seats and all(m.n > 1 for m in seats):
            std, skew, kurtosis = stratified_shape([float(m.n) for m in seats], [m.m2 / m.n for m in seats],
                                                   [m.m3 / m.n for m in seats], [m.m4 / m.n for m in seats])
            return float(std), float(skew), float(kurtosis)
        moments = self._moments
        spread = max(moments.m2, 0.0) / moments.n
        std = math.sqrt(max(moments.m2, 0.0) / (moments.n - 1))
        scale, square = spread**1.5, spread * spread
        if not (scale > 0.0 and square > 0.0):  # no spread, or one so small its powers underflow: as none
            return std, 0.0, 3.0
        return std, moments.m3 / moments.n / scale, moments.m4 / moments.n / square

    def live(self) -> tuple[float, float]:
        """(mean, 1.96 × the mean's standard error): cheap, for live metrics (no interval: :meth:`interval`)."""
        if self.n < 2:
            return (self._live_mean if self.n else math.nan), math.nan
        return self._live_mean, Z95 * self.interval_shape()[0] / math.sqrt(self.n)

    def interval(self) -> tuple[float, float]:
        """The printed 95% interval (:meth:`RunningMean.interval`) from the running figures; (NaN, NaN) below two
        units."""
        if self.n < 2:
            return math.nan, math.nan
        std, skew, kurtosis = self.interval_shape()
        low, high = skew_corrected_interval(self._live_mean, std, float(self.n), skew, kurtosis)
        return float(low), float(high)

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

"""Online, exactly mergeable sample statistics with 95% intervals.

Every estimator of a match (raw, duplicate, imaginary observations, ...) is
a :class:`RunningMean` over independent units (hands, or duplicate pairs).
It is accumulated online with Welford's update, so a live match can publish
its running estimate, and merged with Chan et al.'s pairwise formula, so
that results of separate batches combine into exactly the result of one run
over the same units (up to floating-point rounding).

>>> a, b, whole = RunningMean(), RunningMean(), RunningMean()
>>> for x in (1.0, 2.0, 4.0): a.add(x); whole.add(x)
>>> for x in (8.0, 16.0): b.add(x); whole.add(x)
>>> merged = a.merged(b)
>>> merged.n, round(merged.mean, 12) == round(whole.mean, 12), abs(merged.m2 - whole.m2) < 1e-9
(5, True, True)
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Two-sided 95% normal quantile.
Z95 = 1.959963984540054


@dataclass
class RunningMean:
    """Count, mean and sum of squared deviations of a sample (Welford).

    Attributes:
        n: number of units.
        mean: their mean.
        m2: sum of squared deviations from the mean.
    """

    n: int = 0
    mean: float = 0.0
    m2: float = 0.0

    def add(self, x: float) -> None:
        """Add one unit."""
        self.n += 1
        delta = x - self.mean
        self.mean += delta / self.n
        self.m2 += delta * (x - self.mean)

    def add_many(self, xs: Iterable[float]) -> None:
        """Add several units at once (merged as one batch)."""
        values = np.asarray(list(xs) if not isinstance(xs, np.ndarray) else xs, dtype=np.float64)
        if values.size:
            batch_mean = float(values.mean())
            batch = RunningMean(int(values.size), batch_mean, float(((values - batch_mean) ** 2).sum()))
            self.merge(batch)

    def merge(self, other: RunningMean) -> None:
        """Fold another sample into this one (Chan, Golub and LeVeque)."""
        if other.n == 0:
            return
        if self.n == 0:
            self.n, self.mean, self.m2 = other.n, other.mean, other.m2
            return
        n = self.n + other.n
        delta = other.mean - self.mean
        self.mean += delta * other.n / n
        self.m2 += other.m2 + delta * delta * self.n * other.n / n
        self.n = n

    def merged(self, other: RunningMean) -> RunningMean:
        """A new sample holding both."""
        result = RunningMean(self.n, self.mean, self.m2)
        result.merge(other)
        return result

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

    def interval(self) -> tuple[float, float]:
        """The 95% interval of the mean."""
        return (self.mean - self.half_width, self.mean + self.half_width)

    def excludes(self, value: float) -> bool:
        """True when the 95% interval does not contain ``value``."""
        low, high = self.interval()
        return not (low <= value <= high)

    def scaled(self, factor: float) -> RunningMean:
        """The same sample with every unit multiplied by ``factor`` (unit change)."""
        return RunningMean(self.n, self.mean * factor, self.m2 * factor * factor)

    def to_dict(self) -> dict[str, Any]:
        """The mergeable state plus derived figures (NaN written as None)."""

        def clean(x: float) -> float | None:
            return None if math.isnan(x) else x

        return {
            "n": self.n,
            "mean": self.mean,
            "m2": self.m2,
            "std": clean(self.std),
            "half_width_95": clean(self.half_width),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunningMean:
        """Rebuild from :meth:`to_dict` output (only n, mean and m2 are read)."""
        return cls(int(data["n"]), float(data["mean"]), float(data["m2"]))


def mbb_per_game(chips: float, big_blind: int) -> float:
    """Milli big blinds per game of a per-hand amount in chips."""
    return 1000.0 * chips / big_blind

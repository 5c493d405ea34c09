"""Tests of acpc_lbr.stats: online means, exact merges, intervals."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from scipy.stats import kurtosis as scipy_kurtosis
from scipy.stats import skew as scipy_skew
from scipy.stats import t as student_t

from acpc_lbr.stats import Z95, LiveMean, RunningMean

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)


@given(st.lists(finite, min_size=2, max_size=200))
def test_online_equals_numpy(xs: list[float]) -> None:
    """Welford's running mean and variance equal numpy's two-pass figures."""
    stat = RunningMean()
    for x in xs:
        stat.add(x)
    assert stat.n == len(xs)
    assert math.isclose(stat.mean, float(np.mean(xs)), rel_tol=1e-9, abs_tol=1e-6)
    assert math.isclose(stat.variance, float(np.var(xs, ddof=1)), rel_tol=1e-7, abs_tol=1e-4)


@given(st.lists(finite, max_size=100), st.lists(finite, max_size=100), st.lists(finite, max_size=100))
def test_merge_equals_one_run(a: list[float], b: list[float], c: list[float]) -> None:
    """Merging batches in any grouping gives the result of one run over all units."""
    parts = []
    for xs in (a, b, c):
        s = RunningMean()
        s.add_many(xs)
        parts.append(s)
    whole = RunningMean()
    whole.add_many(a + b + c)
    left = parts[0].merged(parts[1]).merged(parts[2])
    right = parts[0].merged(parts[1].merged(parts[2]))
    for merged in (left, right):
        assert merged.n == whole.n
        assert math.isclose(merged.mean, whole.mean, rel_tol=1e-9, abs_tol=1e-6)
        assert math.isclose(merged.m2, whole.m2, rel_tol=1e-7, abs_tol=1e-3)


def test_half_width_and_dict_round_trip() -> None:
    """The half-width is 1.96·s/√n; the printed interval of units without skew is symmetric, within
    mean ± t(n − 1)·s/√n (Student's quantile, scipy's) for light tails (b₂ < 3); to_dict/from_dict
    keeps the sample."""
    stat = RunningMean()
    stat.add_many([1.0, 3.0, 5.0, 7.0])
    s = float(np.std([1, 3, 5, 7], ddof=1))
    assert math.isclose(stat.half_width, Z95 * s / 2.0)
    t3 = float(student_t.ppf(0.975, 3))
    assert stat.skewness == 0.0 and stat.shape()[1] == pytest.approx(1.64)
    low, high = stat.interval()
    assert low + high == pytest.approx(8.0, rel=1e-12) and 4.0 - t3 * s / 2.0 < low < 4.0 - Z95 * s / 2.0
    again = RunningMean.from_dict(stat.to_dict())
    assert again == stat and again.interval() == stat.interval()
    assert stat.to_dict()["low_95"] == stat.interval()[0]
    assert stat.excludes(low - 0.01) and not stat.excludes(low + 0.01) and not stat.excludes(4.0)


def test_small_samples_have_no_interval() -> None:
    """With fewer than two units the spread is undefined (NaN, None in JSON)."""
    stat = RunningMean()
    stat.add(5.0)
    assert math.isnan(stat.half_width)
    assert stat.to_dict()["std"] is None


@given(st.lists(finite, min_size=2, max_size=60), st.randoms(use_true_random=False))
def test_figures_do_not_depend_on_order(xs: list[float], rng: object) -> None:
    """Any order of adds, and any split into merged batches, gives bit-identical mean and m2."""
    one = RunningMean()
    one.add_many(xs)
    shuffled = list(xs)
    rng.shuffle(shuffled)  # type: ignore[attr-defined]
    cut = len(xs) // 3
    left, right = RunningMean(), RunningMean()
    left.add_many(shuffled[:cut])
    right.add_many(shuffled[cut:])
    merged = RunningMean.from_dict(right.to_dict()).merged(RunningMean.from_dict(left.to_dict()))
    assert (merged.n, merged.mean, merged.m2) == (one.n, one.mean, one.m2)
    assert merged == one


def test_exact_figures_match_fractions() -> None:
    """mean and m2 are the correctly rounded exact values (checked with Fractions)."""
    from fractions import Fraction

    xs = [1e6 + 0.1, 1e6 + 0.2, 1e6 + 0.3, -2.5e-7, 3.0]
    stat = RunningMean()
    stat.add_many(xs)
    exact = [Fraction(x) for x in xs]
    mean = sum(exact) / len(exact)
    assert stat.mean == float(mean)
    assert stat.m2 == float(sum((x - mean) ** 2 for x in exact))
    live_mean, live_half = stat.live()
    assert math.isclose(live_mean, stat.mean, rel_tol=1e-12)
    assert math.isclose(live_half, stat.half_width, rel_tol=1e-6)


def test_exact_sums_equal_the_rational_sum_of_the_units() -> None:
    """Σx (and Σx² where no square underflows) are the exact rational sums, huge and negative units included."""
    import random
    from fractions import Fraction

    rng = random.Random(5)
    for tiny in (False, True):  # tiny units: their squares underflow, so only Σx is exact
        for _ in range(300):
            units = [rng.choice([rng.uniform(-1e6, 1e6), rng.random() * (1e-300 if tiny else 1e-90),
                                 -rng.random() * 1e150, 0.5, float(rng.randint(-5, 5)),
                                 5e-324 if tiny else 1e-100])
                     for _ in range(rng.randint(0, 30))]
            stat = RunningMean()
            for x in units:
                stat.add(x)
            total, squares = stat.exact_sums()
            assert total == sum((Fraction(x) for x in units), Fraction(0))
            if not tiny:
                assert squares == sum((Fraction(x) ** 2 for x in units), Fraction(0))


@given(st.lists(st.floats(-1e6, 1e6), min_size=0, max_size=40))
@example(xs=[0.0, 1.0684735392753343e-141])  # a spread whose 3/2 power underflows to 0 (found in a run)
def test_live_mean_has_the_running_figures_and_refuses_exact_ones(xs: list[float]) -> None:
    """A LiveMean gives the same live() figures and count as a RunningMean fed the same units,
    copies stay live-only, and the exact figures are refused rather than made up."""
    full, live = RunningMean(), LiveMean()
    for x in xs:
        full.add(x)
        live.add(x)
    assert live.n == full.n
    assert np.array_equal(np.array(live.live()), np.array(full.live()), equal_nan=True)
    copy = live.copy()
    assert isinstance(copy, LiveMean) and copy.n == live.n
    assert np.array_equal(np.array(copy.live()), np.array(live.live()), equal_nan=True)
    with pytest.raises(TypeError):
        _ = live.mean
    with pytest.raises(TypeError):
        live.to_dict()
    with pytest.raises(TypeError):
        live.merge(full)


def test_skew_corrected_interval_inverts_halls_transformation() -> None:
    """The printed interval's ends are where Hall's (1992) transformed statistic
    W(μ) = √n·(θ + Gθ²/3 + G²θ³/27 + G/(6n)), θ = (mean − μ)/s, equals ∓ Student's t(n − 1) quantile,
    with G = g − (b₂ − 3 − 3g²/2)·θ; the sample skewness g and kurtosis b₂ are scipy's (biased) ones."""
    rng = np.random.default_rng(7)
    xs = rng.exponential(size=200).tolist()
    stat = RunningMean()
    stat.add_many(xs)
    g, b2 = float(scipy_skew(xs, bias=True)), float(scipy_kurtosis(xs, fisher=False, bias=True))
    assert stat.shape() == pytest.approx((g, b2), rel=1e-12)
    n, s = 200, float(np.std(xs, ddof=1))
    q = float(student_t.ppf(0.975, n - 1))
    assert b2 - 3 - 1.5 * g * g < n / (8 * q * q)  # the link is not clipped here

    def w(mu: float) -> float:
        theta = (stat.mean - mu) / s
        big_g = g - (b2 - 3 - 1.5 * g * g) * theta
        return math.sqrt(n) * (theta + big_g * theta**2 / 3 + big_g**2 * theta**3 / 27 + big_g / (6 * n))

    low, high = stat.interval()
    assert w(low) == pytest.approx(q, rel=1e-9) and w(high) == pytest.approx(-q, rel=1e-9)
    # a long right tail moves both ends up from the symmetric interval
    assert low > stat.mean - q * s / math.sqrt(n) and high > stat.mean + q * s / math.sqrt(n)


def test_higher_sums_travel_with_merges_documents_and_unit_changes() -> None:
    """Σx³ and Σx⁴ merge exactly and are written to documents; a unit change scales the interval; a
    document without them (older) gets the interval of unskewed units, mean ± t·s/√n."""
    xs = [0.0] * 90 + [5.0] * 10 + [-1.0] * 20
    whole, left, right = RunningMean(), RunningMean(), RunningMean()
    whole.add_many(xs)
    left.add_many(xs[::2])
    right.add_many(xs[1::2])
    merged = RunningMean.from_dict(left.to_dict()).merged(RunningMean.from_dict(right.to_dict()))
    exact = (sum(Fraction(x) ** 3 for x in xs), sum(Fraction(x) ** 4 for x in xs))
    assert merged.higher_sums() == exact == whole.higher_sums()
    assert merged.interval() == whole.interval() and whole.skewness > 1.0
    scaled = whole.scaled(10.0)
    assert scaled.shape() == pytest.approx(whole.shape(), rel=1e-12)
    assert scaled.interval() == pytest.approx(tuple(10.0 * x for x in whole.interval()), rel=1e-12)
    old = whole.to_dict()
    assert "exact" in old
    del old["exact"]["sum_cube"], old["exact"]["sum_fourth"]
    plain = RunningMean.from_dict(old)
    assert math.isnan(plain.skewness)
    low, high = plain.interval()
    assert low + high == pytest.approx(2 * plain.mean, rel=1e-12)
    assert math.isnan(RunningMean().interval()[0]) and RunningMean().to_dict()["low_95"] is None

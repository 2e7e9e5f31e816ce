"""Poisson draws by inverse CDF of counter-based uniforms (docs/design.md §4): exact and monotone in
λ for every λ, including far above the paper market's (before the fix a normal approximation took
over at λ ≥ 100 and 153 of 2,000 uniforms lost orders as λ crossed 100)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from merchantbench.random_streams import poisson_from_uniform

GRID = (np.arange(2000) + 0.5) / 2000  # evenly spread uniforms


def exact_pmf(lam: float, k_max: int) -> np.ndarray:
    """P(X = k), k = 0 … k_max, for X ~ Poisson(λ), in log space with the standard library."""
    return np.array([math.exp(k * math.log(lam) - lam - math.lgamma(k + 1)) for k in range(k_max)])


def test_counts_never_fall_as_lambda_rises_across_100():
    lams = np.round(np.arange(50.0, 400.0 + 1e-9, 0.25), 2)
    counts = np.stack([poisson_from_uniform(np.full(GRID.size, lam), GRID) for lam in lams])
    assert (np.diff(counts, axis=0) >= 0).all()
    just_above = poisson_from_uniform(np.full(GRID.size, np.nextafter(100.0, 200.0)), GRID)
    assert (just_above >= poisson_from_uniform(np.full(GRID.size, 100.0), GRID)).all()


@pytest.mark.parametrize("lam", [0.03, 0.7, 6.5, 10.0, 10.5, 31.0, 99.5, 100.5, 250.0, 3000.0])
def test_counts_follow_the_exact_pmf(lam: float):
    """With N evenly spread uniforms, an exact inverse CDF gives each count k to within one
    uniform of N · P(X = k): the count of grid points in (F(k − 1), F(k)]."""
    n = 200_000
    counts = poisson_from_uniform(np.full(n, lam), (np.arange(n) + 0.5) / n)
    k_max = int(lam + 12 * math.sqrt(lam) + 30)
    seen = np.bincount(counts, minlength=k_max)
    assert seen.size == k_max
    assert np.abs(seen - n * exact_pmf(lam, k_max)).max() < 1.0 + 1e-6


def test_shape_zero_rates_and_extreme_uniforms():
    lam = np.array([[0.0, 0.5, 2000.0], [1e6, 3.0, 0.0]])
    assert (poisson_from_uniform(lam, np.zeros_like(lam)) == 0).all()  # P(X ≤ 0) ≥ 0
    top = poisson_from_uniform(lam, np.full(lam.shape, 1 - 2**-53))
    assert top.shape == (2, 3) and top[0, 0] == 0 and top[1, 2] == 0
    assert 2000 < top[0, 2] < 2000 + 10 * math.sqrt(2000) and 1e6 < top[1, 0] < 1e6 + 10_000
    assert poisson_from_uniform(np.array([5.0]), np.array([0.5])).dtype == np.int64


@settings(max_examples=200, deadline=None)
@given(
    st.floats(0.0, 1.0, exclude_max=True),
    st.floats(1e-6, 5e4),
    st.floats(1.0, 3.0),
)
def test_monotone_for_any_uniform_and_rates(u: float, lam: float, factor: float):
    low, high = poisson_from_uniform(np.array([lam, lam * factor]), np.array([u, u]))
    assert low <= high


def vectorised_counts(lam: np.ndarray, u: np.ndarray) -> np.ndarray:
    """The general path alone: padded past the few-rates size, then cut back."""
    pad = 17
    padded = poisson_from_uniform(np.concatenate([lam, np.zeros(pad)]), np.append(u, [0.5] * pad))
    return padded[: lam.size]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0.0, 10.0), st.floats(0.0, 1.0, exclude_max=True)),
        min_size=1,
        max_size=16,
    )
)
def test_few_small_rates_count_as_the_vectorised_search(cells: list[tuple[float, float]]):
    """Up to 16 rates ≤ 10 take the Python path: it must give the vectorised path's counts."""
    lam, u = (np.array(column) for column in zip(*cells, strict=True))
    assert (poisson_from_uniform(lam, u) == vectorised_counts(lam, u)).all()


def test_few_rates_at_the_edges():
    lam = np.array([0.0, 1e-12, 10.0, 10.0, 3.0, 1e-3])
    u = np.array([0.9, 1 - 2**-53, 1 - 2**-53, 0.0, 0.95, 1 - 1e-4])
    assert (poisson_from_uniform(lam, u) == vectorised_counts(lam, u)).all()
    far, half = np.array([0.5, 12.0]), np.array([0.7, 0.7])  # above 10: the general path
    assert (poisson_from_uniform(far, half) == vectorised_counts(far, half)).all()
    assert poisson_from_uniform(np.array([[0.5], [3.0]]), np.array([[0.99], [0.99]])).shape == (
        2,
        1,
    )


def test_uniforms_of_several_seeds_are_each_seeds_uniforms():
    """`uniform_of_seeds` (one seed per cell, for the arrivals of many stores at once) gives
    `uniform1` of each cell's seed, public seeds and one of the sealed range alike."""
    from merchantbench.random_streams import Stream, uniform1, uniform_of_seeds

    seeds = [3, 2**64 + 12345, 7]
    which = np.array([0, 1, 2, 1, 0])[:, None]
    products = np.array([5, 9, 5, 1000, 2])[:, None]
    hours = np.arange(24, 36)[None, :] + np.array([0, 12, 24, 0, 100])[:, None]
    u = uniform_of_seeds(seeds, which, Stream.ARRIVALS, products, hours)
    assert u.shape == (5, 12)
    for row in range(5):
        for col in range(12):
            seed = seeds[int(which[row, 0])]
            expect = uniform1(seed, Stream.ARRIVALS, int(products[row, 0]), int(hours[row, col]))
            assert u[row, col] == expect
    public = uniform_of_seeds([3, 7], np.array([[0], [1]]), Stream.ARRIVALS, products[:2], 5)
    assert public[1, 0] == uniform1(7, Stream.ARRIVALS, 9, 5)

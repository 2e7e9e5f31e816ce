"""The arrival intensity of docs/design.md §4, term by term, and its Poisson draws."""

from __future__ import annotations

import numpy as np
import pytest
from sim_support import make_market

from merchantbench.random_streams import Stream, poisson_from_uniform, uniform, uniform1
from merchantbench.scenario import DemandConfig
from merchantbench.sim.demand import (
    WindowDemand,
    arrival_cells,
    exposure,
    price_term,
    window_intensity,
)

CFG = DemandConfig()


@pytest.mark.parametrize(
    ("age", "expected"),
    [(0.0, 0.2), (7.0, 0.6), (14.0, 1.0), (14.0 + 100, 0.10 + 0.90 * np.exp(-0.92))],
)
def test_exposure_ramp_and_decay(age, expected):
    assert float(exposure(age, CFG)) == pytest.approx(expected)


def test_exposure_decays_towards_floor():
    assert float(exposure(10_000.0, CFG)) == pytest.approx(0.10)
    ages = np.linspace(14, 400, 50)
    assert np.all(np.diff(exposure(ages, CFG)) < 0)


def test_price_term_is_elastic_and_capped():
    assert price_term(np.array([1500]), np.array([1500]), np.array([3.0]), 6.0)[0] == 1.0
    assert price_term(np.array([3000]), np.array([1500]), np.array([3.0]), 6.0)[0] == 0.125
    assert price_term(np.array([1]), np.array([1500]), np.array([3.0]), 6.0)[0] == 6.0


def test_window_intensity_multiplies_every_term():
    market = make_market(n=2, demand=48.0, p_ref_fen=1500, elasticity=2.0)
    products = np.array([0, 1])
    lam = window_intensity(
        market, products, np.array([1500, 3000]), np.array([0, -24 * 14]), 12, 12, 0.8, CFG
    )
    assert lam.shape == (2, 12)
    hour_weight = 1 / 24
    # product 0: age 0.5 day at t=12 → ℓ = 0.2 + 0.8·0.5/14
    expected0 = 48.0 * hour_weight * 0.8 * (0.2 + 0.8 * (12 / 24) / 14) * 1.0
    assert lam[0, 0] == pytest.approx(expected0)
    # product 1: listed 14 days before 0, so at t=12 ℓ just past 1; price term (2)^-2
    expected1 = 48.0 * hour_weight * 0.8 * float(exposure(14.5, CFG)) * 0.25
    assert lam[1, 0] == pytest.approx(expected1)


def test_poisson_inverse_cdf_is_monotone_in_lambda():
    u = uniform(7, 1, np.arange(5000), 0)
    low = poisson_from_uniform(np.full(5000, 0.5), u)
    high = poisson_from_uniform(np.full(5000, 2.0), u)
    assert np.all(high >= low)
    assert low.mean() == pytest.approx(0.5, abs=0.05)
    assert high.mean() == pytest.approx(2.0, abs=0.1)


def test_vector_and_scalar_uniforms_agree():
    v = uniform(11, 3, np.array([0, 5, 98_842]), np.array([0, 17, 8759]), np.array([0, 1, 2]))
    s = [uniform1(11, 3, 0, 0, 0), uniform1(11, 3, 5, 17, 1), uniform1(11, 3, 98_842, 8759, 2)]
    assert list(v) == s


def window_arrivals(seed: int, products: np.ndarray, t0: int, lam: np.ndarray) -> np.ndarray:
    """Order counts[listing, hour]: `arrival_cells` as a dense array."""
    counts = np.zeros(lam.shape, dtype=np.int64)
    for cell, n in arrival_cells(seed, products, t0, lam):
        counts.reshape(-1)[cell] = n
    return counts


def test_arrivals_depend_only_on_product_and_hour():
    lam = np.full((2, 12), 0.7)
    a = window_arrivals(5, np.array([3, 9]), 24, lam)
    b = window_arrivals(5, np.array([9, 3]), 24, lam)
    assert np.array_equal(a, b[::-1])


def test_arrival_cells_are_the_nonzero_counts_in_cell_order():
    lam = np.array([[0.0, 0.2, 3.0, 0.9], [12.0, 0.01, 0.5, 2.0]])
    products, t0 = np.array([4, 1]), 36
    u = uniform(5, Stream.ARRIVALS, products[:, None], (t0 + np.arange(4))[None, :])
    counts = poisson_from_uniform(lam, u)
    expected = [(cell, int(n)) for cell, n in enumerate(counts.reshape(-1)) if n]
    assert arrival_cells(5, products, t0, lam) == expected
    assert expected and all(n > 0 for _, n in expected)


def test_window_demand_gives_the_formula_bit_for_bit():
    """The cached terms and the exposure table change how λ is gathered, not its floats."""
    market = make_market(n=5, days=3, demand=30.0, p_ref_fen=1700, elasticity=2.5)
    products = np.array([0, 2, 4])
    prices, listed = np.array([1500, 1700, 2600]), np.array([0, 5, 11])
    for t0 in (12, 24, 36):
        hours = np.arange(t0 % 24, t0 % 24 + 12)
        base = np.asarray(market.demand)[t0 // 24 + market.history_days, products]
        ratio = prices.astype(np.float64) / market.p_ref_fen[products].astype(np.float64)
        price = np.minimum(ratio ** -market.elasticity[products].astype(np.float64), 6.0)
        ages = (t0 + np.arange(12)[None, :] - listed[:, None]) / 24.0
        weights = market.hourly_weights[market.category[products]][:, hours]
        per_listing = base.astype(np.float64) * price * 0.9
        expected = per_listing[:, None] * weights * exposure(ages, CFG)
        demand = WindowDemand(market, CFG, 12, 3 * 24)
        assert np.array_equal(demand.intensity(products, prices, listed, t0, 0.9), expected)


def test_window_demand_refuses_a_listing_from_the_future():
    """A listing after the window's start would index the exposure table from its end."""
    demand = WindowDemand(make_market(n=2, days=3), CFG, 12, 3 * 24)
    with pytest.raises(ValueError, match="after hour 24"):
        demand.intensity(np.array([0, 1]), np.array([1500, 1500]), np.array([0, 30]), 24, 1.0)

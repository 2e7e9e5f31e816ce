"""Customer arrivals (SPEC §4): the paper's intensity formula, vectorised over the listings of a
store and the hours of one window, with counter-based Poisson draws (common random numbers).

    λ = D[i, d(t)] · w[c(i), h(t)] · r(t) · ℓ(age) · min((p / p_ref)^(−ε), cap)
"""

from __future__ import annotations

import numpy as np

from merchantbench.catalog.market import Market
from merchantbench.random_streams import (
    SUM_FROM_ZERO_UP_TO,
    Stream,
    poisson_from_uniform,
    uniform,
)
from merchantbench.scenario import DemandConfig


def exposure(age_days: np.ndarray | float, config: DemandConfig) -> np.ndarray:
    """ℓ(age): 0.2 at listing, linear to 1.0 at day 14, then decays towards 0.10."""
    age = np.asarray(age_days, dtype=np.float64)
    ramp_days = config.exposure_ramp_days
    start = config.exposure_start
    ramp = start + (1.0 - start) * age / ramp_days
    floor = config.exposure_floor
    decay = floor + (1.0 - floor) * np.exp(-config.exposure_decay_per_day * (age - ramp_days))
    return np.where(age < ramp_days, ramp, decay)


def price_term(
    price_fen: np.ndarray, p_ref_fen: np.ndarray, elasticity: np.ndarray, cap: float
) -> np.ndarray:
    """min((p / p_ref)^(−ε), cap): the demand response to the listing's sale price."""
    ratio = np.asarray(price_fen, dtype=np.float64) / np.asarray(p_ref_fen, dtype=np.float64)
    return np.minimum(ratio ** (-np.asarray(elasticity, dtype=np.float64)), cap)


def window_intensity(
    market: Market,
    products: np.ndarray,
    prices_fen: np.ndarray,
    listed_t: np.ndarray,
    t0: int,
    hours: int,
    rating_multiplier: float,
    config: DemandConfig,
) -> np.ndarray:
    """λ[listing, hour] for hours t0 … t0+hours−1, all within one day."""
    day = t0 // 24
    hour_of_day = np.arange(t0 % 24, t0 % 24 + hours)
    # The matrix is a memory map: index a plain array view of it (the subclass costs per call).
    base = np.asarray(market.demand)[day + market.history_days, products].astype(np.float64)
    weights = market.hourly_weights[market.category[products]][:, hour_of_day]
    price = price_term(
        prices_fen, market.p_ref_fen[products], market.elasticity[products], config.price_term_cap
    )
    ages = (t0 + np.arange(hours)[None, :] - listed_t[:, None]) / 24.0
    per_listing = base * price * rating_multiplier
    return per_listing[:, None] * weights * exposure(ages, config)


def window_arrivals(seed: int, products: np.ndarray, t0: int, lam: np.ndarray) -> np.ndarray:
    """Order counts[listing, hour] from λ, with uniforms keyed by (seed, product, hour)."""
    hours = t0 + np.arange(lam.shape[1])
    u = uniform(seed, Stream.ARRIVALS, products[:, None], hours[None, :])
    # Below SUM_FROM_ZERO_UP_TO the inverse CDF gives 0 where u ≤ P(X = 0) = e^(−λ). A
    # listing-hour rarely sees an order, so only the cells that may are drawn; the margin
    # keeps every cell within rounding of the boundary among them, where the draw decides.
    maybe = np.exp(-lam) * (1.0 - 1e-9) < u
    drawn = np.flatnonzero((lam > SUM_FROM_ZERO_UP_TO) | maybe)
    counts = np.zeros(lam.shape, dtype=np.int64)
    if drawn.size:
        counts.reshape(-1)[drawn] = poisson_from_uniform(
            lam.reshape(-1)[drawn], u.reshape(-1)[drawn]
        )
    return counts

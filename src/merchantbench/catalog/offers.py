"""What each offer looks like (docs/design.md §3), the second stage of the synthetic generator:
prices (a log-normal reference price with category and type levels, a margin from a per-category
sub-range, elasticity 1/m so that the reference price is the profit-maximising one), the hidden
outcome risks and the public signals of products and suppliers, all following quality through
the trust-signal model. Traps have a low cost against their reference price and high return and
bad-review risk."""

from __future__ import annotations

import numpy as np

from merchantbench.catalog.parts import per_category
from merchantbench.catalog.population import Products, Suppliers
from merchantbench.catalog.trust_signals import (
    PRODUCT_RATING,
    RETURN_BUYER_RATE,
    RISK_SHARES,
    SHOP_RATING,
    logistic,
    reading,
    risk_logit,
)
from merchantbench.scenario import MarketConfig, Scenario

# Log price level of each category relative to the market median, before re-centring.
CATEGORY_PRICE_LEVEL: dict[str, float] = {
    "office": -0.35, "womenswear": 0.2, "pet_garden": 0.05, "appliances": 0.55,
    "home_decor": 0.1, "home_goods": -0.1, "cleaning": -0.35, "toys": -0.05, "bags": 0.25,
    "sports": 0.15,
}  # fmt: skip
# Where each category's margin sub-range sits inside margin_range (0 = low end, 1 = high end).
CATEGORY_MARGIN_POSITION: dict[str, float] = {
    "office": 0.7, "womenswear": 0.8, "pet_garden": 0.55, "appliances": 0.2, "home_decor": 0.75,
    "home_goods": 0.45, "cleaning": 0.5, "toys": 0.6, "bags": 0.7, "sports": 0.4,
}  # fmt: skip
MARGIN_SUBRANGE_WIDTH = 0.5  # share of margin_range spanned by one category's sub-range

TYPE_PRICE_SIGMA = 0.35  # log-sd of type price levels
TRAP_RISK = (0.35, 0.55)
TRAP_RISK_SHARES = (0.08, 0.37, 0.20, 0.35)
TRAP_MARGIN = (0.55, 0.70)
TRAP_RATING_BOOST = 0.1  # fake reviews lift a trap's shown rating

SHIP_LEVELS = (1, 4, 8, 12, 24, 36, 48)  # promised ship hours as 1688 sellers state them
SHIP_LEVEL_WEIGHTS = (0.03, 0.05, 0.07, 0.10, 0.30, 0.12, 0.33)
LOGISTICS_MEDIAN_HOURS = 36.0


def supplier_signals(rng: np.random.Generator, sup: Suppliers) -> dict[str, np.ndarray]:
    """Shop rating, return-buyer rate and years on the site: noisy readings of quality."""
    shop = SHOP_RATING.show(reading(rng, sup.quality))
    returning = RETURN_BUYER_RATE.show(reading(rng, sup.quality))
    age = np.exp(1.35 + 0.3 * reading(rng, sup.quality) + 0.45 * rng.standard_normal(len(sup.size)))
    return {
        "shop_rating": np.round(np.clip(shop, 1.0, 5.0), 1).astype(np.float32),
        "return_buyer_rate": np.round(returning, 3).astype(np.float32),
        "supplier_age_years": np.round(np.clip(age, 0.3, 25.0), 1).astype(np.float32),
    }


def prices(
    rng: np.random.Generator, m: MarketConfig, prod: Products, is_trap: np.ndarray
) -> dict[str, np.ndarray]:
    """Reference price, procurement price and elasticity of every product."""
    n, cats = m.n_products, m.categories
    level = per_category(CATEGORY_PRICE_LEVEL, cats, 0.0)
    level -= np.bincount(prod.category, minlength=len(cats)) @ level / n  # keep the median
    type_level = rng.normal(0.0, TYPE_PRICE_SIGMA, size=len(cats) * m.types_per_category)
    spread = m.p_ref_sigma**2 - level.var() - TYPE_PRICE_SIGMA**2
    sigma = np.sqrt(max(spread, 0.05**2))
    log_p = np.log(m.p_ref_median) + level[prod.category] + type_level[prod.type_id]
    p_ref = np.clip(np.exp(log_p + sigma * rng.standard_normal(n)), *m.p_ref_clip)
    lo, hi = m.margin_range
    centre = lo + (hi - lo) * per_category(CATEGORY_MARGIN_POSITION, cats, 0.5)
    half = 0.5 * MARGIN_SUBRANGE_WIDTH * (hi - lo)
    sub_lo, sub_hi = np.maximum(centre - half, lo), np.minimum(centre + half, hi)
    u = rng.random(n)
    margin = sub_lo[prod.category] + (sub_hi - sub_lo)[prod.category] * u
    margin = np.where(is_trap, TRAP_MARGIN[0] + (TRAP_MARGIN[1] - TRAP_MARGIN[0]) * u, margin)
    p_ref_fen = np.round(p_ref * 100).astype(np.int64)
    return {
        "p_ref_fen": p_ref_fen,
        "base_price_fen": np.maximum(np.round(p_ref_fen * (1 - margin)), 1).astype(np.int64),
        "elasticity": np.clip(1.0 / margin, *m.elasticity_clip).astype(np.float32),
    }


def risks(
    rng: np.random.Generator, quality: np.ndarray, is_trap: np.ndarray
) -> dict[str, np.ndarray]:
    """Hidden outcome risks: the risk curve at the product's quality with its own noise,
    split in shares drawn around the mean shares (traps: high, return-heavy risk)."""
    n = len(quality)
    logit = risk_logit(quality)
    total = logistic(logit + 0.3 * rng.standard_normal(n))
    total = np.where(is_trap, rng.uniform(*TRAP_RISK, size=n), total)
    shares = np.where(
        is_trap[:, None],
        rng.dirichlet(20 * np.array(TRAP_RISK_SHARES), size=n),
        rng.dirichlet(20 * np.array(RISK_SHARES), size=n),
    )
    names = ("risk_cancel", "risk_return", "risk_refund_only", "risk_bad_review")
    return {name: (total * shares[:, k]).astype(np.float32) for k, name in enumerate(names)}


def product_signals(
    rng: np.random.Generator, scenario: Scenario, prod: Products, is_trap: np.ndarray
) -> dict[str, np.ndarray]:
    """Shown rating, promised ship hours, logistics hours and stock of every product."""
    n, sc = len(prod.quality), scenario.suppliers
    rating = PRODUCT_RATING.show(reading(rng, prod.quality)) + TRAP_RATING_BOOST * is_trap
    # Ship hours: a Gaussian copula maps a speed score (quality plus a shop-wide habit) onto the
    # promised levels, so good shops ship faster and one shop's products ship alike.
    shop_habit = rng.standard_normal(int(prod.supplier.max()) + 1)
    speed = 0.6 * prod.quality + 0.6 * shop_habit[prod.supplier] + 0.5 * rng.standard_normal(n)
    cum = np.cumsum(SHIP_LEVEL_WEIGHTS) / sum(SHIP_LEVEL_WEIGHTS)
    slowness = (np.argsort(np.argsort(-speed)) + 0.5) / n  # empirical CDF of −speed
    level = np.minimum(np.searchsorted(cum, slowness), len(SHIP_LEVELS) - 1)
    logistics = LOGISTICS_MEDIAN_HOURS * np.exp(0.35 * rng.standard_normal(n))
    cap_lo, cap_hi = sc.stock_capacity
    capacity = np.exp(rng.uniform(np.log(cap_lo), np.log(cap_hi + 1), size=n))
    refill_lo, refill_hi = sc.stock_refill_per_hour
    return {
        "historical_avg_rating": np.round(np.clip(rating, 1.0, 5.0), 1).astype(np.float32),
        "ship_hours": np.clip(np.array(SHIP_LEVELS)[level], *sc.ship_hours).astype(np.int16),
        "logistics_hours": np.clip(np.round(logistics), *scenario.orders.logistics_hours).astype(
            np.int16
        ),
        "stock_capacity": np.clip(np.floor(capacity), cap_lo, cap_hi).astype(np.int32),
        "stock_refill": rng.integers(refill_lo, refill_hi + 1, size=n).astype(np.int32),
    }

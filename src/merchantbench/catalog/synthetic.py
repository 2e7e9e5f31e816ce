"""The synthetic market generator (SPEC §3): `generate_market(scenario, seed) -> Market`.

A pure function of (scenario, seed), vectorised in numpy. Bulk randomness comes from Philox
generators keyed by (seed, part), one part per concern, so a change in one part (say titles) never
shifts another (say demand). Supplier events use the counter-based streams of `catalog.events`.

The generative story, in order:

1. Suppliers own heavy-tailed numbers of products and have a main category, a main product type
   and a hidden quality. Their public trust signals are noisy readings of that quality.
2. Products inherit most of their supplier's quality; hidden order-outcome risks, the public
   rating and the ship hours all follow product quality, with noise.
3. Prices: a log-normal reference price with category and type levels; a margin from a
   per-category sub-range; elasticity 1/m, so the reference price is the profit-maximising price.
4. Traps (chosen mostly among low-quality products) have a low cost against their reference
   price, strong sales and high return and bad-review risk.
5. Demand = base × type trajectory × calendar × weekday × product life × daily noise (an AR(1)
   log-normal); realised market sales are Poisson draws of it (`market_sales_cum`).

Every constant below is a modelling choice recorded in docs/catalog.md.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from merchantbench.catalog import calendar, vocab
from merchantbench.catalog.events import supplier_events
from merchantbench.catalog.market import Market
from merchantbench.scenario import MarketConfig, Scenario

Progress = Callable[[str, float], None]

# Share of products per category (a general wholesale site: household goods and clothing lead).
CATEGORY_SHARES: dict[str, float] = {
    "office": 0.08, "womenswear": 0.14, "pet_garden": 0.08, "appliances": 0.09,
    "home_decor": 0.10, "home_goods": 0.15, "cleaning": 0.08, "toys": 0.10, "bags": 0.09,
    "sports": 0.09,
}  # fmt: skip
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

SUPPLIER_SIZE_TAIL = 1.4  # Pareto index of supplier size weights: most own 1–3 products
SUPPLIER_SIZE_CAP = 0.006  # no supplier holds more than this share of the extra products
MAIN_CATEGORY_SHARE = 0.85  # products in the supplier's main category
MAIN_TYPE_SHARE = 0.5  # of those, products of the supplier's main type
QUALITY_FROM_SUPPLIER = 0.7  # correlation of product quality with its supplier's quality
SIGNAL_NOISE = 0.8  # weight of noise in each public trust signal (quality weight 0.6)

TYPE_PRICE_SIGMA = 0.35  # log-sd of type price levels
RISK_MEDIAN = 0.075  # total outcome risk of a product of median quality
RISK_QUALITY_SLOPE = 0.7  # logit(total risk) per unit of quality
RISK_SHARES = (0.20, 0.35, 0.15, 0.30)  # cancel, return, refund-only, bad review
TRAP_RISK = (0.35, 0.55)
TRAP_RISK_SHARES = (0.08, 0.37, 0.20, 0.35)
TRAP_MARGIN = (0.55, 0.70)
TRAP_DEMAND_BOOST = (3.0, 6.0)
TRAP_RATING_BOOST = 0.1  # fake reviews lift a trap's shown rating
TRAP_QUALITY_PULL = 3.0  # traps are drawn with weight e^(-pull · quality): mostly poor shops

SHIP_LEVELS = (1, 4, 8, 12, 24, 36, 48)  # promised ship hours as 1688 sellers state them
SHIP_LEVEL_WEIGHTS = (0.03, 0.05, 0.07, 0.10, 0.30, 0.12, 0.33)
LOGISTICS_MEDIAN_HOURS = 36.0

# One Philox stream per concern; the position in this tuple is part of the key, so append only.
_PARTS = (
    "suppliers", "supplier_signals", "products", "traps", "prices", "risks", "product_signals",
    "titles", "ids", "trajectories", "base_demand", "launch", "noise", "sales", "title_words",
)  # fmt: skip


def _rng(seed: int, part: str) -> np.random.Generator:
    key = np.random.SeedSequence([seed % (1 << 64), 0x4D42, _PARTS.index(part)])
    return np.random.Generator(np.random.Philox(key))


def _shares(table: dict[str, float], categories: tuple[str, ...], default: float) -> np.ndarray:
    return np.array([table.get(c, default) for c in categories], dtype=np.float64)


@dataclass(frozen=True)
class _Suppliers:
    size: np.ndarray
    main_category: np.ndarray
    main_type: np.ndarray  # local type index within the main category
    quality: np.ndarray


def _draw_suppliers(rng: np.random.Generator, m: MarketConfig) -> _Suppliers:
    if m.n_suppliers > m.n_products:
        raise ValueError("a market needs at least one product per supplier")
    weight = rng.pareto(SUPPLIER_SIZE_TAIL, m.n_suppliers) + 1.0
    weight = np.minimum(weight, SUPPLIER_SIZE_CAP * weight.sum())
    size = 1 + rng.multinomial(m.n_products - m.n_suppliers, weight / weight.sum())
    shares = _shares(CATEGORY_SHARES, m.categories, 0.1)
    main_category = rng.choice(len(m.categories), size=m.n_suppliers, p=shares / shares.sum())
    main_type = rng.integers(0, m.types_per_category, size=m.n_suppliers)
    # Larger shops are slightly better run: quality drifts up with log size.
    quality = rng.standard_normal(m.n_suppliers) + 0.1 * (np.log(size) - np.log(size).mean())
    return _Suppliers(size, main_category, main_type, quality)


def _noisy(rng: np.random.Generator, quality: np.ndarray) -> np.ndarray:
    """A standard-normal reading of quality: correlation 0.6 with it."""
    return 0.6 * quality + SIGNAL_NOISE * rng.standard_normal(len(quality))


def _supplier_signals(rng: np.random.Generator, sup: _Suppliers) -> dict[str, np.ndarray]:
    shop = 5.0 - 0.5 * np.exp(-0.4 * _noisy(rng, sup.quality))
    returning = 1.0 / (1.0 + np.exp(0.9 - 0.5 * _noisy(rng, sup.quality)))
    age = np.exp(1.35 + 0.3 * _noisy(rng, sup.quality) + 0.45 * rng.standard_normal(len(sup.size)))
    return {
        "shop_rating": np.round(np.clip(shop, 1.0, 5.0), 1).astype(np.float32),
        "return_buyer_rate": np.round(returning, 3).astype(np.float32),
        "supplier_age_years": np.round(np.clip(age, 0.3, 25.0), 1).astype(np.float32),
    }


def _type_popularity(rng: np.random.Generator, m: MarketConfig) -> np.ndarray:
    """[n_categories, types_per_category] probabilities of a product being of each type."""
    weight = rng.lognormal(0.0, 0.8, size=(len(m.categories), m.types_per_category))
    return weight / weight.sum(axis=1, keepdims=True)


@dataclass(frozen=True)
class _Products:
    supplier: np.ndarray
    category: np.ndarray
    type_id: np.ndarray
    quality: np.ndarray


def _draw_products(rng: np.random.Generator, m: MarketConfig, sup: _Suppliers) -> _Products:
    owner = rng.permutation(np.repeat(np.arange(m.n_suppliers), sup.size))
    n, n_cat, n_types = m.n_products, len(m.categories), m.types_per_category
    shares = _shares(CATEGORY_SHARES, m.categories, 0.1)
    other = rng.choice(n_cat, size=n, p=shares / shares.sum())
    in_main = rng.random(n) < MAIN_CATEGORY_SHARE
    category = np.where(in_main, sup.main_category[owner], other)
    popularity = _type_popularity(rng, m)
    local = np.zeros(n, dtype=np.int64)
    for c in range(n_cat):
        idx = np.flatnonzero(category == c)
        local[idx] = rng.choice(n_types, size=len(idx), p=popularity[c])
    use_main = (category == sup.main_category[owner]) & (rng.random(n) < MAIN_TYPE_SHARE)
    local = np.where(use_main, sup.main_type[owner], local)
    rho = QUALITY_FROM_SUPPLIER
    quality = rho * sup.quality[owner] + np.sqrt(1 - rho**2) * rng.standard_normal(n)
    return _Products(owner, category, category * n_types + local, quality)


def _choose_traps(rng: np.random.Generator, m: MarketConfig, quality: np.ndarray) -> np.ndarray:
    """Traps come mostly from low-quality products and shops (weight e^(-pull · quality)),
    without replacement."""
    n_traps = round(m.trap_fraction * m.n_products)
    weight = np.exp(-TRAP_QUALITY_PULL * quality)
    chosen = rng.choice(m.n_products, size=n_traps, replace=False, p=weight / weight.sum())
    is_trap = np.zeros(m.n_products, dtype=bool)
    is_trap[chosen] = True
    return is_trap


def _prices(
    rng: np.random.Generator, m: MarketConfig, prod: _Products, is_trap: np.ndarray
) -> dict[str, np.ndarray]:
    n, cats = m.n_products, m.categories
    level = _shares(CATEGORY_PRICE_LEVEL, cats, 0.0)
    level -= np.bincount(prod.category, minlength=len(cats)) @ level / n  # keep the median
    type_level = rng.normal(0.0, TYPE_PRICE_SIGMA, size=len(cats) * m.types_per_category)
    spread = m.p_ref_sigma**2 - level.var() - TYPE_PRICE_SIGMA**2
    sigma = np.sqrt(max(spread, 0.05**2))
    log_p = np.log(m.p_ref_median) + level[prod.category] + type_level[prod.type_id]
    p_ref = np.clip(np.exp(log_p + sigma * rng.standard_normal(n)), *m.p_ref_clip)
    lo, hi = m.margin_range
    centre = lo + (hi - lo) * _shares(CATEGORY_MARGIN_POSITION, cats, 0.5)
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


def _risks(
    rng: np.random.Generator, quality: np.ndarray, is_trap: np.ndarray
) -> dict[str, np.ndarray]:
    n = len(quality)
    logit = np.log(RISK_MEDIAN / (1 - RISK_MEDIAN)) - RISK_QUALITY_SLOPE * quality
    total = 1.0 / (1.0 + np.exp(-(logit + 0.3 * rng.standard_normal(n))))
    total = np.where(is_trap, rng.uniform(*TRAP_RISK, size=n), total)
    shares = np.where(
        is_trap[:, None],
        rng.dirichlet(20 * np.array(TRAP_RISK_SHARES), size=n),
        rng.dirichlet(20 * np.array(RISK_SHARES), size=n),
    )
    names = ("risk_cancel", "risk_return", "risk_refund_only", "risk_bad_review")
    return {name: (total * shares[:, k]).astype(np.float32) for k, name in enumerate(names)}


def _product_signals(
    rng: np.random.Generator, scenario: Scenario, prod: _Products, is_trap: np.ndarray
) -> dict[str, np.ndarray]:
    n, sc = len(prod.quality), scenario.suppliers
    rating = 5.0 - 0.45 * np.exp(-0.45 * _noisy(rng, prod.quality)) + TRAP_RATING_BOOST * is_trap
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


# --- demand ---------------------------------------------------------------------------------
YEAR_DAYS = 365
NON_SEASONAL_MIX = {"steady": 0.45, "rising": 0.2, "fading": 0.2, "fad": 0.15}
TYPE_DEMAND_SIGMA = 0.5  # log-sd of type demand levels (part of base_demand_sigma)
QUALITY_DEMAND_SLOPE = 0.2  # better products sell a little more (log demand per unit quality)
LIFE_RAMP = (0.7, 10.0)  # a new product starts at 30 % of its demand, gap e-folding in 10 days
NOISE_AUTOCORRELATION = 0.6  # day-to-day persistence of the log demand noise
SEASONAL_LAUNCH_SHARE = 0.6  # launches of seasonal types timed ahead of their season …
SEASONAL_LAUNCH_LEAD = (20, 75)  # … by this many days
OLD_PRODUCT_AGE = (10.0, 2000.0)  # days on the market before day 0 (log-uniform)
FADE_START = (0.35, 1.0)  # fade-out starts in this share of the run
FADE_DAYS = (20.0, 60.0)  # e-folding time of a fade-out


def _season_peak_doy(season: str) -> float:
    month, day = vocab.SEASON_PEAKS[season]
    return float((dt.date(2025, month, day) - dt.date(2025, 1, 1)).days)


def _trajectory(
    rng: np.random.Generator, kind: str, t: np.ndarray, doy: np.ndarray, season: str | None
) -> np.ndarray:
    """One type's demand shape over days `t` (run day numbers; `doy` their day of year)."""
    if kind == "seasonal":
        peak = _season_peak_doy(season or "summer") + rng.normal(0.0, 7.0)
        kappa, floor = rng.uniform(1.5, 4.0), rng.uniform(0.15, 0.4)
        return floor + (1 - floor) * np.exp(kappa * (np.cos(2 * np.pi * (doy - peak) / 365.25) - 1))
    if kind == "steady":
        return 1.0 + 0.1 * np.sin(2 * np.pi * t / YEAR_DAYS + rng.uniform(0, 2 * np.pi))
    if kind in ("rising", "fading"):
        low, mid, width = rng.uniform(0.15, 0.45), rng.uniform(0.15, 0.85), rng.uniform(15, 60)
        sign = 1.0 if kind == "rising" else -1.0
        return low + (1 - low) / (1 + np.exp(-sign * (t - mid * YEAR_DAYS) / width))
    onset, rise = rng.uniform(-30, YEAR_DAYS), rng.uniform(5, 12)  # a fad: quick rise, slow fall
    decay, height = rng.uniform(15, 45), rng.uniform(3, 8)
    x = t - onset
    spike = np.where(x < rise, np.clip(x / rise, 0, 1) ** 2, np.exp(-(x - rise) / decay))
    return 0.4 + height * spike


def _type_trajectories(
    rng: np.random.Generator, types: list[vocab.ProductType], start_date: str, rows: int
) -> tuple[np.ndarray, np.ndarray]:
    """Trajectories [rows, n_types] (mean 1 over the first year) and which types are seasonal."""
    t = np.arange(-calendar.HISTORY_DAYS, max(rows - calendar.HISTORY_DAYS, YEAR_DAYS))
    dates = calendar.run_dates(start_date, len(t) - calendar.HISTORY_DAYS)
    doy = (dates - dates.astype("datetime64[Y]")).astype(np.float64)
    kinds, weights = list(NON_SEASONAL_MIX), np.array(list(NON_SEASONAL_MIX.values()))
    shapes, seasonal = [], []
    for product_type in types:
        kind = "seasonal" if product_type.season else kinds[rng.choice(len(kinds), p=weights)]
        shape = _trajectory(rng, kind, t.astype(np.float64), doy, product_type.season)
        level = np.exp(TYPE_DEMAND_SIGMA * rng.standard_normal())
        shapes.append(level * shape / shape[(t >= 0) & (t < YEAR_DAYS)].mean())
        seasonal.append(kind == "seasonal")
    return np.array(shapes).T[:rows], np.array(seasonal)


def _launch_plan(
    rng: np.random.Generator, m: MarketConfig, days: int, type_id: np.ndarray, peak_day: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Launch day (negative: on sale before day 0), fade-out start day and fade e-folding days."""
    n = m.n_products
    launching = (rng.random(n) < m.launch_fraction) & (days > 1)
    anytime = rng.integers(1, max(days, 2), size=n)
    ahead = peak_day[type_id] - rng.integers(SEASONAL_LAUNCH_LEAD[0], SEASONAL_LAUNCH_LEAD[1], n)
    timed = (peak_day[type_id] >= 0) & (rng.random(n) < SEASONAL_LAUNCH_SHARE) & (ahead >= 1)
    old_lo, old_hi = (math.log(age) for age in OLD_PRODUCT_AGE)
    old = -np.floor(np.exp(rng.uniform(old_lo, old_hi, size=n)))
    launch = np.where(launching, np.where(timed, ahead, anytime), old).astype(np.int32)
    fading = rng.random(n) < m.fade_out_fraction
    fade_start = np.maximum(rng.uniform(*FADE_START, size=n) * days, launch + 30.0)
    fade_start = np.where(fading, fade_start, np.inf)
    return launch, fade_start.astype(np.float32), rng.uniform(*FADE_DAYS, size=n).astype(np.float32)


def _base_demand(
    rng: np.random.Generator,
    m: MarketConfig,
    quality: np.ndarray,
    is_trap: np.ndarray,
    p_ref_fen: np.ndarray,
) -> np.ndarray:
    """Per-product market demand level M (per store-equivalent): cheap products sell more
    (demand_price_slope); with the type level and the price term its log-sd is
    base_demand_sigma."""
    log_price = np.log(p_ref_fen / (100 * m.p_ref_median))
    price_part = m.demand_price_slope**2 * log_price.var()
    spread = m.base_demand_sigma**2 - TYPE_DEMAND_SIGMA**2 - QUALITY_DEMAND_SLOPE**2 - price_part
    noise = np.sqrt(max(spread, 0.01)) * rng.standard_normal(len(quality))
    level = noise + QUALITY_DEMAND_SLOPE * quality - m.demand_price_slope * log_price
    base = m.base_demand_median * np.exp(level)
    base = np.where(is_trap, base * rng.uniform(*TRAP_DEMAND_BOOST, size=len(base)), base)
    return np.minimum(base, m.base_demand_cap).astype(np.float32)


@dataclass(frozen=True)
class _DemandPlan:
    base: np.ndarray  # float32 [n]: the store's demand level (`store_share` of the market's)
    type_factor: np.ndarray  # float32 [rows, n_types]: trajectory × calendar × weekday
    type_id: np.ndarray
    launch: np.ndarray  # int32 [n]
    fade_start: np.ndarray  # float32 [n], inf when the product never fades
    fade_days: np.ndarray  # float32 [n]
    competition: np.ndarray  # float32 [n]: market demand per unit of the store's, ≥ 1


def store_saturation(m: MarketConfig, p_ref_fen: np.ndarray) -> np.ndarray:
    """K = store_demand_saturation · (p_ref / p_ref_median)^saturation_price_power: cheap best
    sellers draw the most competing stores, so a store's share of them saturates lowest."""
    relative = p_ref_fen / (100 * m.p_ref_median)
    return (m.store_demand_saturation * relative**m.saturation_price_power).astype(np.float32)


def store_share(market_demand: np.ndarray, saturation: np.ndarray) -> np.ndarray:
    """A store's demand level D = M / (1 + M / K) from the market's level M (per
    store-equivalent). Best sellers draw many competing stores, so one store's share of them
    saturates at K while the market's realised sales (what `sales_30d` shows) keep growing with
    M. It applies to a product's level: festivals, seasons and trends then scale both alike.
    """
    return market_demand / (1 + market_demand / saturation)


def _demand_and_sales(
    plan: _DemandPlan, m: MarketConfig, seed: int, progress: Progress
) -> tuple[np.ndarray, np.ndarray]:
    """D[r, i] row by row (AR(1) log noise needs yesterday's) and cumulative Poisson sales of
    the market's demand, `competition` times the store's."""
    rows, n = plan.type_factor.shape[0], len(plan.base)
    noise_rng, sales_rng = _rng(seed, "noise"), _rng(seed, "sales")
    demand = np.empty((rows, n), dtype=np.float32)
    sales_cum = np.zeros((rows + 1, n), dtype=np.int32)
    phi, sigma = NOISE_AUTOCORRELATION, m.daily_noise_sigma
    innovation = math.sqrt(1 - phi**2)  # a Python float keeps the arithmetic in float32
    launch = plan.launch.astype(np.float32)
    eps = noise_rng.standard_normal(n, dtype=np.float32)
    for r in range(rows):
        day = np.float32(r - calendar.HISTORY_DAYS)
        if r:
            eps = phi * eps + innovation * noise_rng.standard_normal(n, dtype=np.float32)
        age = day - launch
        life = np.where(age >= 0, 1 - LIFE_RAMP[0] * np.exp(-np.maximum(age, 0) / LIFE_RAMP[1]), 0)
        life *= np.exp(-np.maximum(day - plan.fade_start, 0) / plan.fade_days)
        row = plan.base * plan.type_factor[r, plan.type_id] * life
        row *= np.exp(sigma * eps - 0.5 * sigma**2)
        demand[r] = np.minimum(row, m.base_demand_cap)
        market_row = row * plan.competition * np.float32(m.market_sales_scale)
        sales_cum[r + 1] = sales_cum[r] + sales_rng.poisson(market_row)
        if r % 32 == 0:
            progress("demand", 0.2 + 0.7 * r / rows)
    return demand, sales_cum


def _type_table(
    rng: np.random.Generator, m: MarketConfig
) -> tuple[list[vocab.ProductType], np.ndarray]:
    """The product types of the market (types_per_category per category) and their categories."""
    types: list[vocab.ProductType] = []
    for category in m.categories:
        pool = vocab.type_pool(category, m.types_per_category)
        chosen = np.sort(rng.choice(len(pool), size=m.types_per_category, replace=False))
        types.extend(pool[k] for k in chosen)
    return types, np.repeat(np.arange(len(m.categories)), m.types_per_category)


def _public_ids(rng: np.random.Generator, n: int, n_suppliers: int) -> tuple[np.ndarray, ...]:
    """12-digit offer ids and "b2b-…" member ids, unique and unrelated to index order."""
    offer = 600_000_000_000 + rng.choice(300_000_000_000, size=n, replace=False)
    member = 2_200_000_000_000 + rng.choice(100_000_000_000, size=n_suppliers, replace=False)
    return offer.astype("<U12"), np.char.add("b2b-", member.astype("<U13"))


def _seasonal_peak_days(trajectory: np.ndarray, seasonal: np.ndarray, days: int) -> np.ndarray:
    """Run day of each seasonal type's peak after the launch lead (−1 for other types)."""
    lead = SEASONAL_LAUNCH_LEAD[0]
    if days <= lead:
        return np.full(len(seasonal), -1)
    window = trajectory[calendar.HISTORY_DAYS + lead : calendar.HISTORY_DAYS + days]
    return np.where(seasonal, lead + window.argmax(axis=0), -1)


def _demand_plan(
    scenario: Scenario,
    seed: int,
    prod: _Products,
    is_trap: np.ndarray,
    types: list[vocab.ProductType],
    type_cat: np.ndarray,
    p_ref_fen: np.ndarray,
) -> _DemandPlan:
    m, days = scenario.market, scenario.market.days
    rows = calendar.HISTORY_DAYS + days
    trajectory, seasonal = _type_trajectories(
        _rng(seed, "trajectories"), types, scenario.clock.start_date, rows
    )
    dates = calendar.run_dates(scenario.clock.start_date, days)
    seasons = calendar.festival_factor(dates, m.categories)
    seasons *= calendar.weekday_factor(dates, m.categories)
    type_factor = (trajectory * seasons[type_cat].T).astype(np.float32)
    peak_day = _seasonal_peak_days(trajectory, seasonal, days)
    launch, fade_start, fade_days = _launch_plan(
        _rng(seed, "launch"), m, days, prod.type_id, peak_day
    )
    market_base = _base_demand(_rng(seed, "base_demand"), m, prod.quality, is_trap, p_ref_fen)
    base = store_share(market_base, store_saturation(m, p_ref_fen))
    return _DemandPlan(
        base, type_factor, prod.type_id, launch, fade_start, fade_days, market_base / base
    )


def _texts(
    seed: int,
    m: MarketConfig,
    prod: _Products,
    sup: _Suppliers,
    types: list[vocab.ProductType],
    type_cat: np.ndarray,
) -> dict[str, np.ndarray]:
    """Titles, type names, public ids and supplier names."""
    type_names = [t.name for t in types]
    vocabs = [vocab.category_vocab(c) for c in m.categories]
    title_rng = _rng(seed, "title_words")
    titles = vocab.compose_titles(title_rng, vocabs, prod.type_id, type_cat, type_names)
    id_rng = _rng(seed, "ids")
    product_ids, supplier_ids = _public_ids(id_rng, m.n_products, m.n_suppliers)
    return {
        "titles": titles,
        "type_names": np.array(type_names, dtype=str),
        "product_ids": product_ids,
        "supplier_ids": supplier_ids,
        "supplier_names": vocab.compose_supplier_names(id_rng, sup.main_category, m.categories),
    }


def generate_market(scenario: Scenario, seed: int, progress: Progress | None = None) -> Market:
    """Generate the synthetic market of a scenario: a pure function of (scenario, seed).

    Args:
        scenario: the scenario (its `market`, `suppliers`, `orders` and `clock` parts are used).
        seed: the market seed.
        progress: called as progress(stage, fraction done) while building.

    Returns:
        The market, with `calendar.HISTORY_DAYS` rows of history before day 0.
    """
    report = progress or (lambda stage, done: None)
    m = scenario.market
    report("suppliers", 0.0)
    sup = _draw_suppliers(_rng(seed, "suppliers"), m)
    supplier_signals = _supplier_signals(_rng(seed, "supplier_signals"), sup)
    report("products", 0.05)
    prod = _draw_products(_rng(seed, "products"), m, sup)
    is_trap = _choose_traps(_rng(seed, "traps"), m, prod.quality)
    prices = _prices(_rng(seed, "prices"), m, prod, is_trap)
    risks = _risks(_rng(seed, "risks"), prod.quality, is_trap)
    signals = _product_signals(_rng(seed, "product_signals"), scenario, prod, is_trap)
    report("titles", 0.1)
    types, type_cat = _type_table(_rng(seed, "titles"), m)
    texts = _texts(seed, m, prod, sup, types, type_cat)
    plan = _demand_plan(scenario, seed, prod, is_trap, types, type_cat, prices["p_ref_fen"])
    demand, sales_cum = _demand_and_sales(plan, m, seed, report)
    report("events", 0.9)
    events = supplier_events(seed, scenario.suppliers, m.n_products, scenario.market.days * 24)
    columns: dict[str, Any] = {**prices, **risks, **signals, **supplier_signals, **texts}
    market = Market(
        n_products=m.n_products,
        n_suppliers=m.n_suppliers,
        days=scenario.market.days,
        history_days=calendar.HISTORY_DAYS,
        categories=tuple(m.categories),
        category=prod.category.astype(np.int16),
        supplier=prod.supplier.astype(np.int32),
        launch_day=plan.launch,
        market_sales_cum=sales_cum,
        demand=demand,
        type_id=prod.type_id.astype(np.int32),
        is_trap=is_trap,
        events=events,
        supplier_product_count=sup.size.astype(np.int32),
        hourly_weights=calendar.hourly_weights(m.categories),
        ship_extra_hours=calendar.ship_extra_hours(
            scenario.clock.start_date,
            scenario.market.days,
            scenario.suppliers.spring_festival_extra_ship_hours,
        ),
        **columns,
    )
    report("done", 1.0)
    return market

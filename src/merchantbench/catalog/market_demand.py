"""How much demand comes (docs/design.md §3), the last stage of the synthetic generator: each
product's market demand level, the store's share of it, and the daily demand of the store and
realised sales of the market: base × type trajectory × calendar × weekday × product life × daily
noise (an AR(1) log-normal), with market sales Poisson draws of the market's demand."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from merchantbench.catalog import calendar, vocab
from merchantbench.catalog.population import Products
from merchantbench.catalog.trajectories import (
    TYPE_DEMAND_SIGMA,
    launch_plan,
    seasonal_peak_days,
    type_trajectories,
)
from merchantbench.random_streams import Part, part_rng
from merchantbench.scenario import MarketConfig, Scenario

Progress = Callable[[str, float], None]

QUALITY_DEMAND_SLOPE = 0.2  # better products sell a little more (log demand per unit quality)
LIFE_RAMP = (0.7, 10.0)  # a new product starts at 30 % of its demand, gap e-folding in 10 days
NOISE_AUTOCORRELATION = 0.6  # day-to-day persistence of the log demand noise
TRAP_DEMAND_BOOST = (3.0, 6.0)  # a trap's market demand is this many times a normal product's


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
class DemandPlan:
    """Everything the daily demand of a product follows, drawn before the days are walked."""

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


def demand_and_sales(
    plan: DemandPlan, m: MarketConfig, seed: int, delisted_hours: np.ndarray, progress: Progress
) -> tuple[np.ndarray, np.ndarray]:
    """D[r, i] row by row (AR(1) log noise needs yesterday's) and cumulative Poisson sales of
    the market's demand, `competition` times the store's, in the hours of each day the supplier
    lists the product (`delisted_hours` [r, i] are the others: no market sales then)."""
    rows, n = plan.type_factor.shape[0], len(plan.base)
    noise_rng, sales_rng = part_rng(seed, Part.NOISE), part_rng(seed, Part.SALES)
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
        listed = (24 - delisted_hours[r]).astype(np.float32) / np.float32(24)
        market_row = row * plan.competition * np.float32(m.market_sales_scale) * listed
        sales_cum[r + 1] = sales_cum[r] + sales_rng.poisson(market_row)
        if r % 32 == 0:
            progress("demand", 0.2 + 0.7 * r / rows)
    return demand, sales_cum


def demand_plan(
    scenario: Scenario,
    seed: int,
    prod: Products,
    is_trap: np.ndarray,
    types: list[vocab.ProductType],
    type_cat: np.ndarray,
    p_ref_fen: np.ndarray,
) -> DemandPlan:
    """The demand plan of every product: type trajectories with the calendar, launches and
    fade-outs, and the store's share of the market's demand level."""
    m, days = scenario.market, scenario.market.days
    rows = calendar.HISTORY_DAYS + days
    trajectory, seasonal = type_trajectories(
        part_rng(seed, Part.TRAJECTORIES), types, scenario.clock.start_date, rows
    )
    dates = calendar.run_dates(scenario.clock.start_date, days)
    seasons = calendar.festival_factor(dates, m.categories)
    seasons *= calendar.weekday_factor(dates, m.categories)
    type_factor = (trajectory * seasons[type_cat].T).astype(np.float32)
    peak_day = seasonal_peak_days(trajectory, seasonal, days)
    launch, fade_start, fade_days = launch_plan(
        part_rng(seed, Part.LAUNCH), m, days, prod.type_id, peak_day
    )
    market_base = _base_demand(
        part_rng(seed, Part.BASE_DEMAND), m, prod.quality, is_trap, p_ref_fen
    )
    base = store_share(market_base, store_saturation(m, p_ref_fen))
    return DemandPlan(
        base, type_factor, prod.type_id, launch, fade_start, fade_days, market_base / base
    )

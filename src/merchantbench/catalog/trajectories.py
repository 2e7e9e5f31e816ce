"""When demand comes (docs/design.md §3), the third stage of the synthetic generator: the shape of
each product type's demand over the year (seasonal, steady, rising, fading or a fad) and the plan of
each product's life (launch day, fade-out start and speed)."""

from __future__ import annotations

import datetime as dt
import math

import numpy as np

from merchantbench.catalog import calendar, vocab
from merchantbench.scenario import MarketConfig

YEAR_DAYS = 365
NON_SEASONAL_MIX = {"steady": 0.45, "rising": 0.2, "fading": 0.2, "fad": 0.15}
TYPE_DEMAND_SIGMA = 0.5  # log-sd of type demand levels (part of base_demand_sigma)
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


def type_trajectories(
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


def launch_plan(
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


def seasonal_peak_days(trajectory: np.ndarray, seasonal: np.ndarray, days: int) -> np.ndarray:
    """Run day of each seasonal type's peak after the launch lead (−1 for other types)."""
    lead = SEASONAL_LAUNCH_LEAD[0]
    if days <= lead:
        return np.full(len(seasonal), -1)
    window = trajectory[calendar.HISTORY_DAYS + lead : calendar.HISTORY_DAYS + days]
    return np.where(seasonal, lead + window.argmax(axis=0), -1)

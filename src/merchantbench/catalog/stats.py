"""Market statistics: size, demand tail, calendar peaks, launches, traps, suppliers.

Used by `merchantbench catalog build` and by the calibration test, which checks the targets
recorded in docs/catalog.md. All figures are over run days (history rows excluded) unless a name
says otherwise. Demand is D at reference price and full exposure (orders per listing-day).
"""

from __future__ import annotations

import numpy as np

from merchantbench.catalog import calendar
from merchantbench.catalog.market import Market

# A diligent operator re-picks its portfolio every few weeks from the top of current demand.
PICK_TOP_SHARE = 0.03
PICK_EVERY_DAYS = 30
EXPOSURE_MEAN = 0.5  # average listing exposure over a listing's life (docs/design.md §4 ramp and
# decay)


def _run_demand(market: Market) -> np.ndarray:
    return market.demand[market.history_days :]


def _category_daily_totals(market: Market) -> np.ndarray:
    """Total demand per category and run day, float64 [n_categories, days]."""
    onehot = np.zeros((market.n_products, len(market.categories)), dtype=np.float32)
    onehot[np.arange(market.n_products), market.category] = 1.0
    return (_run_demand(market) @ onehot).T.astype(np.float64)


def _product_means(market: Market) -> np.ndarray:
    return _run_demand(market).mean(axis=0, dtype=np.float64)


def demand_tail(market: Market) -> dict[str, float]:
    """Concentration of yearly demand across products."""
    means = np.sort(_product_means(market))[::-1]
    total = means.sum()
    n = len(means)
    positive = means[means > 0]
    return {
        "top1pct_share": float(means[: max(n // 100, 1)].sum() / total),
        "top10pct_share": float(means[: max(n // 10, 1)].sum() / total),
        "median_product_demand": float(np.median(means)),
        "p90_product_demand": float(np.quantile(means, 0.9)),
        "p99_product_demand": float(np.quantile(means, 0.99)),
        "max_product_demand": float(means[0]),
        "log_sd_product_demand": float(np.log(positive).std()),
    }


def diligent_pick_demand(market: Market) -> dict[str, float]:
    """Mean D over the coming period of portfolios re-picked every PICK_EVERY_DAYS days among
    launched non-trap products: the top PICK_TOP_SHARE by that period's demand (the calibration
    target), the same share by public sales_30d, and the 50 best sellers by sales_30d (headroom).
    """
    demand = _run_demand(market)
    picks: dict[str, list[float]] = {"oracle": [], "sales": [], "top50": []}
    for first in range(0, market.days, PICK_EVERY_DAYS):
        period = demand[first : first + PICK_EVERY_DAYS].mean(axis=0, dtype=np.float64)
        eligible = np.flatnonzero((market.launch_day <= first) & ~market.is_trap)
        k = max(int(PICK_TOP_SHARE * len(eligible)), 1)
        by_sales = eligible[np.argsort(market.sales_30d(first)[eligible], kind="stable")]
        picks["oracle"].append(np.sort(period[eligible])[-k:].mean())
        picks["sales"].append(period[by_sales[-k:]].mean())
        picks["top50"].append(period[by_sales[-50:]].mean())
    oracle = float(np.mean(picks["oracle"]))
    return {
        "diligent_pick_demand": oracle,
        "diligent_orders_per_listing_day": oracle * EXPOSURE_MEAN,
        "sales_pick_demand": float(np.mean(picks["sales"])),
        "top50_by_sales_demand": float(np.mean(picks["top50"])),
    }


def _peak_ratio(totals: np.ndarray, day: int, days: int) -> float | None:
    """Total demand on `day` over the median of the ±45-day surroundings (shoulders excluded)."""
    if not 0 <= day < days:
        return None
    around = np.r_[max(day - 45, 0) : max(day - 25, 0), min(day + 11, days) : min(day + 46, days)]
    if len(around) < 10:
        return None
    return float(totals[day] / np.median(totals[around]))


def calendar_ratios(market: Market, start_date: str) -> dict[str, object]:
    """Demand at 618, Double 11 and the Spring Festival relative to the weeks around them."""
    per_category = _category_daily_totals(market)
    overall = per_category.sum(axis=0)
    out: dict[str, object] = {}
    for key in ("618", "double11", "double12", "spring_festival"):
        day = calendar.festival_day(start_date, key)
        out[f"{key}_ratio"] = _peak_ratio(overall, day, market.days)
        out[f"{key}_ratio_by_category"] = {
            name: _peak_ratio(per_category[c], day, market.days)
            for c, name in enumerate(market.categories)
        }
    return out


def launches_by_month(market: Market, start_date: str) -> dict[str, int]:
    """Products launched during the run (launch day ≥ 1), by calendar month (YYYY-MM)."""
    start = np.datetime64(start_date, "D")
    launched = market.launch_day[market.launch_day >= 1]
    months = (start + launched.astype(np.int64)).astype("datetime64[M]").astype(str)
    names, counts = np.unique(months, return_counts=True)
    return {str(k): int(v) for k, v in zip(names, counts, strict=True)}


def supplier_sizes(market: Market) -> dict[str, float]:
    """Distribution of products per supplier."""
    size = np.asarray(market.supplier_product_count)
    return {
        "share_1": float((size == 1).mean()),
        "share_1_to_3": float((size <= 3).mean()),
        "share_over_100": float((size > 100).mean()),
        "n_over_100": int((size > 100).sum()),
        "max": int(size.max()),
    }


def risk_summary(market: Market) -> dict[str, float]:
    """Mean total outcome risk overall, for traps, and for the best-rated fifth of products."""
    total = (
        market.risk_cancel.astype(np.float64)
        + market.risk_return
        + market.risk_refund_only
        + market.risk_bad_review
    )
    rating = np.asarray(market.historical_avg_rating)
    top = rating >= np.quantile(rating, 0.8)
    trap = np.asarray(market.is_trap)
    return {
        "mean_total_risk": float(total.mean()),
        "top_rated_total_risk": float(total[top].mean()),
        "trap_total_risk": float(total[trap].mean()) if trap.any() else 0.0,
    }


def market_stats(market: Market, start_date: str = "2025-06-01") -> dict[str, object]:
    """Summary statistics of a market (see the module docstring).

    Args:
        market: the market.
        start_date: ISO date of run day 0 (the scenario's clock.start_date).

    Returns:
        A JSON-serialisable dict; `n_products`, `n_suppliers`, `categories` (name → products),
        `mean_daily_demand` and `top10pct_demand_share` are always present.
    """
    means = _product_means(market)
    counts = np.bincount(market.category, minlength=len(market.categories))
    tail = demand_tail(market)
    trap = np.asarray(market.is_trap)
    stats: dict[str, object] = {
        "n_products": market.n_products,
        "n_suppliers": market.n_suppliers,
        "days": market.days,
        "categories": {c: int(k) for c, k in zip(market.categories, counts, strict=True)},
        "mean_daily_demand": float(means.mean()),
        "top10pct_demand_share": tail["top10pct_share"],
        "demand_tail": tail,
        **diligent_pick_demand(market),
        "calendar": calendar_ratios(market, start_date),
        "launched_during_run": int((market.launch_day >= 1).sum()),
        "launches_by_month": launches_by_month(market, start_date),
        "trap_share": float(trap.mean()),
        "trap_demand_ratio": float(means[trap].mean() / means[~trap].mean()) if trap.any() else 0.0,
        "risk": risk_summary(market),
        "supplier_sizes": supplier_sizes(market),
    }
    return stats

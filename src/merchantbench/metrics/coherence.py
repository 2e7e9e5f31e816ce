"""Coherence analyses of one run (docs/design.md §9): does the agent keep running the store all
year?

Returned by `coherence_metrics` under the `coherence` key of the metrics (docs/metrics.md):
idle streaks and abandonment, the mix of sourcing and supplier-handling calls by month,
procurement prices of newly listed products by quarter, reactions to adverse outcomes, and
repricing after rating drops.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from merchantbench.metrics.calendar import RunCalendar
from merchantbench.metrics.reaction import agent_actions, listing_reactions, reaction_summary
from merchantbench.metrics.record import RunRecord, Table, is_one_of
from merchantbench.metrics.run_info import RunInfo
from merchantbench.metrics.windows import (
    WindowActivity,
    abandonment_day,
    action_mask,
    idle_streaks,
)
from merchantbench.money import rmb

SOURCING_TOOLS = (
    "get_daily_report",
    "search_products",
    "get_product_detail",
    "get_supplier_profile",
    "list_supplier_products",
)
SUPPLIER_HANDLING_TOOLS = (
    "query_supply_chain_anomalies",
    "query_my_orders",
    "query_open_orders",
    "query_order_updates",
    "query_order_detail",
    "delist_product",
    "adjust_price",
)
MONTHS_PER_QUARTER = 3
RATING_DROP = 0.05
RATING_LOOKBACK_DAYS = 7  # the drop is measured from the maximum of the last 7 days
REPRICE_WINDOW_DAYS = 3  # adjust_price calls counted on the drop day and the two after
RATING_TOLERANCE = 1e-9  # ratings are floats; a drop of exactly 0.05 counts


def idle_summary(activity: WindowActivity) -> dict[str, Any]:
    """Longest idle streak (windows, with its first window and day) and the abandonment day."""
    longest, start = idle_streaks(activity.effective)
    last_effective = np.flatnonzero(activity.effective)
    return {
        "longest_idle_streak": longest,
        "longest_idle_streak_start_window": start,
        "longest_idle_streak_start_day": None if start is None else int(activity.day[start]),
        "last_effective_window": int(last_effective[-1]) if len(last_effective) else None,
        "abandonment_day": abandonment_day(activity),
    }


def call_mix_by_month(trace: Table, calendar: RunCalendar, months: int) -> list[dict[str, Any]]:
    """Per month: env calls other than `end_of_step`, and the shares of the two tool groups."""
    acting = action_mask(trace)
    month = calendar.month_of_day(calendar.day_of_hour(trace["t"][acting]))
    tools = trace["tool"][acting]
    is_sourcing = is_one_of(tools, SOURCING_TOOLS)
    is_handling = is_one_of(tools, SUPPLIER_HANDLING_TOOLS)
    rows = []
    for index, label in enumerate(calendar.month_labels(months)):
        in_month = month == index
        calls = int(in_month.sum())
        sourcing = int((in_month & is_sourcing).sum())
        handling = int((in_month & is_handling).sum())
        rows.append({
            "month": label, "calls": calls, "sourcing_calls": sourcing,
            "supplier_handling_calls": handling,
            "sourcing_share": sourcing / calls if calls else None,
            "supplier_handling_share": handling / calls if calls else None,
        })  # fmt: skip
    return rows


def procurement_by_quarter(
    listings: Table, calendar: RunCalendar, months: int
) -> list[dict[str, Any]]:
    """Mean and median `cost_at_listing` of products listed for the first time, by quarter."""
    order = np.lexsort((listings["listed_t"], listings["product_id"]))
    ids = listings["product_id"][order]
    first = order[np.concatenate(([True], ids[1:] != ids[:-1]))] if len(ids) else order
    quarter = calendar.month_of_day(calendar.day_of_hour(listings["listed_t"][first]))
    quarter //= MONTHS_PER_QUARTER
    cost = rmb(listings["cost_at_listing"][first])
    labels = calendar.month_labels(months)
    rows = []
    for index in range(-(-months // MONTHS_PER_QUARTER)):
        prices = cost[quarter == index]
        span = labels[index * MONTHS_PER_QUARTER : (index + 1) * MONTHS_PER_QUARTER]
        rows.append({
            "quarter": f"Q{index + 1}", "months": f"{span[0]} to {span[-1]}",
            "new_products": len(prices),
            "mean_cost": round(float(prices.mean()), 2) if len(prices) else None,
            "median_cost": round(float(np.median(prices)), 2) if len(prices) else None,
        })  # fmt: skip
    return rows


def rating_drop_days(rating: np.ndarray) -> np.ndarray:
    """Indices of days whose rating is at least 0.05 below the maximum of its last 7 days."""
    drops = []
    for day in range(len(rating)):
        recent_max = rating[max(0, day - RATING_LOOKBACK_DAYS + 1) : day + 1].max()
        if rating[day] <= recent_max - RATING_DROP + RATING_TOLERANCE:
            drops.append(day)
    return np.asarray(drops, dtype=np.int64)


def _per_day(calls: int, days: int) -> float | None:
    return calls / days if days else None


def repricing_after_rating_drops(
    record: RunRecord, info: RunInfo, until_day: int | None = None
) -> dict[str, Any]:
    """`adjust_price` calls per day in the 3 days from each rating drop, against other days
    (only the days before `until_day` when given: a store abandoned then is not judged on the
    days nobody ran it)."""
    last = info.last_day if until_day is None else min(info.last_day, until_day - 1)
    within = record.daily["day"] <= last
    days, rating = record.daily["day"][within], record.daily["rating"][within]
    order = np.argsort(days, kind="stable")
    days, rating = days[order], rating[order]
    drops = days[rating_drop_days(rating)]
    after = np.isin(days, (drops[:, None] + np.arange(REPRICE_WINDOW_DAYS)).ravel())
    repricing = agent_actions(record.trace, ("adjust_price",))
    call_days = info.calendar.day_of_hour(np.asarray([a.t for a in repricing], dtype=np.int64))
    calls_after = int(np.isin(call_days, days[after]).sum())
    per_day_after = _per_day(calls_after, int(after.sum()))
    baseline = _per_day(int(np.isin(call_days, days[~after]).sum()), int((~after).sum()))
    ratio = per_day_after / baseline if per_day_after is not None and baseline else None
    return {
        "drop_days": len(drops),
        "days_after_drop": int(after.sum()),
        "adjust_price_calls_after_drop": calls_after,
        "calls_per_day_after_drop": per_day_after,
        "baseline_calls_per_day": baseline,
        "ratio_to_baseline": ratio,
    }


def coherence_metrics(record: RunRecord, info: RunInfo, activity: WindowActivity) -> dict[str, Any]:
    """Every coherence analysis of a run."""
    calendar = info.calendar
    months = info.months
    reactions = listing_reactions(record, info.scenario.orders.late_after_hours)
    return {
        "idle": idle_summary(activity),
        "call_mix_by_month": call_mix_by_month(record.trace, calendar, months),
        "procurement_by_quarter": procurement_by_quarter(record.listings, calendar, months),
        "adverse_reaction": reaction_summary(reactions),
        "adverse_reaction_listings": reactions,
        "rating_drop_repricing": repricing_after_rating_drops(record, info),
    }

"""SVG figures of a report: of each merchant, accounts, rating, listings, weekly orders, monthly
window rates; of a market of several, each merchant's net assets, the rating race, markups.

Every time axis is the run's day index with a tick on the first day of each calendar month.
Drawn by `report.svg` (plain SVG text, no plotting library).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from merchantbench.metrics.calendar import HOURS_PER_DAY, RunCalendar
from merchantbench.metrics.record import RunRecord
from merchantbench.metrics.run_info import RunInfo, run_info
from merchantbench.metrics.table1 import OUTCOMES
from merchantbench.money import rmb
from merchantbench.report.svg import Bars, Figure, HLine, Line, Panel

FIGURE_NAMES = (
    "net_assets", "rating", "active_listings", "weekly_orders", "monthly_effective_windows",
)  # fmt: skip
FIGURE_SUFFIX = ".svg"
DAYS_PER_WEEK = 7
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2")
ACCOUNT_STYLES = {
    "net_assets": ("net assets", "black", 2.2),
    "balance": ("balance B", "#1f77b4", 1.2),
    "deposit": ("deposit D", "#2ca02c", 1.2),
    "in_transit": ("in transit I", "#ff7f0e", 1.2),
    "receivable": ("receivable Q", "#9467bd", 1.2),
}
OUTCOME_COLOURS = {
    "normal": "#4c9a2a",
    "bad_review": "#e6a100",
    "return_refund": "#d9480f",
    "returnless_refund": "#a61e4d",
    "cancelled": "#868e96",
    "stockout": "#1864ab",
    "insufficient_balance": "#5f3dc4",
    "open": "#ced4da",
}


def _tick_label(month: str, first: bool) -> str:
    """`Jun`, with the year below on the first tick and on January."""
    date = datetime.date.fromisoformat(f"{month}-01")
    return date.strftime("%b") + (f"\n{date.year}" if first or date.month == 1 else "")


def _day_axis(calendar: RunCalendar, last_day: int) -> dict:
    """Figure options of a day axis from 0 to the end of `last_day`, with a labelled tick at
    each month start."""
    count = calendar.month_count(last_day)
    starts, labels = calendar.month_start_days(count), calendar.month_labels(count)
    ticks = [(s, label) for s, label in zip(starts, labels, strict=True) if s <= last_day + 1]
    return {
        "xlim": (0.0, float(last_day + 1)),
        "xticks": [(float(s), _tick_label(label, i == 0)) for i, (s, label) in enumerate(ticks)],
        "xlabel": "day of the run (ticks: first day of each month)",
    }


def plot_accounts(record: RunRecord, info: RunInfo, path: Path) -> Path:
    """Net assets and the four cash accounts, hourly."""
    series = record.timeseries
    days = np.asarray(series["t"]) / HOURS_PER_DAY
    lines: list = [
        Line(days, np.asarray(rmb(series[column])), colour, width, label)
        for column, (label, colour, width) in ACCOUNT_STYLES.items()
    ]
    panel = Panel("RMB", lines)
    axis = _day_axis(info.calendar, info.last_day)
    return Figure("Net assets and cash accounts", [panel], **axis).save(path)


def plot_rating(record: RunRecord, info: RunInfo, path: Path) -> Path:
    """Published store rating (with the star thresholds) above the stars, daily."""
    daily = record.daily.where(record.daily["day"] <= info.last_day)
    day = np.asarray(daily["day"], dtype=float)
    rating: list = [HLine(t, "grey", "dotted", 0.8) for t in info.scenario.rating.star_thresholds]
    rating.append(Line(day + 0.5, np.asarray(daily["rating"], dtype=float), "#d62728"))
    stars = Line(day, np.asarray(daily["stars"], dtype=float), "#1f77b4", step=True)
    panels = [
        Panel("published rating (1–5)", rating, share=3.0),
        Panel("stars", [stars], ylim=(0.5, 5.5), yticks=[1, 2, 3, 4, 5], share=1.0),
    ]
    title = "Store rating (dotted: star thresholds) and stars"
    return Figure(title, panels, height=440, **_day_axis(info.calendar, info.last_day)).save(path)


def plot_active_listings(record: RunRecord, info: RunInfo, path: Path) -> Path:
    """Active listings, hourly, against the listing cap."""
    series = record.timeseries
    cap = info.scenario.tools.max_active_listings
    marks: list = [
        Line(np.asarray(series["t"]) / HOURS_PER_DAY, np.asarray(series["active_listings"]),
             "#1f77b4", label="active listings"),
        HLine(cap, "grey", "dashed", 0.8, label=f"cap ({cap})"),
    ]  # fmt: skip
    panel = Panel("active listings (count)", marks, ylim=(0.0, cap * 1.08))
    return Figure("Active listings", [panel], **_day_axis(info.calendar, info.last_day)).save(path)


def weekly_outcome_counts(record: RunRecord) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Week index of each bar and order counts per outcome and week of arrival."""
    week = record.orders["placed_t"] // (HOURS_PER_DAY * DAYS_PER_WEEK)
    weeks = int(week.max()) + 1 if len(week) else 0
    outcome = record.orders["outcome"]
    counts = {name: np.bincount(week[outcome == name], minlength=weeks) for name in OUTCOMES}
    return np.arange(weeks), counts


def plot_weekly_orders(record: RunRecord, info: RunInfo, path: Path) -> Path:
    """Orders per week of arrival, stacked by outcome, with late orders as a line."""
    weeks, counts = weekly_outcome_counts(record)
    left, bottom = weeks * DAYS_PER_WEEK, np.zeros(len(weeks))
    marks: list = []
    for name, count in counts.items():
        if count.sum():
            marks.append(Bars(left, count, DAYS_PER_WEEK * 0.9, OUTCOME_COLOURS[name],
                              bottom=bottom, label=name.replace("_", " ")))  # fmt: skip
            bottom = bottom + count
    late = record.orders["placed_t"][record.orders["late"]] // (HOURS_PER_DAY * DAYS_PER_WEEK)
    if len(late):
        late_counts = np.bincount(late, minlength=len(weeks))
        marks.append(Line(left + DAYS_PER_WEEK / 2, late_counts, "black", label="late",
                          markers=True))  # fmt: skip
    panel = Panel("orders per week", marks)
    title = "Orders per week of arrival, by outcome"
    return Figure(title, [panel], **_day_axis(info.calendar, info.last_day)).save(path)


def plot_monthly_windows(metrics: Mapping[str, object], path: Path) -> Path:
    """Monthly effective-window rate as labelled bars, with the SWR as a line."""
    rates = list(metrics["monthly_effective_window_rate"])  # type: ignore[call-overload]
    labels = list(metrics["months"])  # type: ignore[call-overload]
    heights = np.array([0.0 if r is None else 100 * r for r in rates])
    texts = ["n/a" if r is None else f"{100 * r:.0f} %" for r in rates]
    swr = float(metrics["swr"])  # type: ignore[arg-type]
    marks: list = [
        Bars(np.arange(len(rates)) - 0.4, heights, 0.8, "#17becf", label="effective windows",
             texts=texts),
        HLine(100 * swr, "#d62728", "dashed", 1.2, label="SWR (worst 30 days)"),
    ]  # fmt: skip
    panel = Panel("effective windows (% of the month)", marks, ylim=(0.0, 110.0))
    return Figure(
        "Effective-window rate by month", [panel], xlim=(-0.6, len(rates) - 0.4),
        xticks=[(float(k), str(label)) for k, label in enumerate(labels)], xgrid=False,
        xlabel="calendar month (n/a: no window opened in the month)",
    ).save(path)  # fmt: skip


def write_plots(record: RunRecord, metrics: Mapping[str, object], out_dir: Path) -> list[Path]:
    """Write every figure of a run into `out_dir` and return the files, in report order."""
    info = run_info(record)
    out_dir.mkdir(parents=True, exist_ok=True)
    net_assets, rating, listings, weekly, monthly = (
        out_dir / f"{name}{FIGURE_SUFFIX}" for name in FIGURE_NAMES
    )
    return [
        plot_accounts(record, info, net_assets),
        plot_rating(record, info, rating),
        plot_active_listings(record, info, listings),
        plot_weekly_orders(record, info, weekly),
        plot_monthly_windows(metrics, monthly),
    ]


def takeover_figure(
    lines: Mapping[str, tuple[list[int], list[float]]],
    continuing: float | None,
    initial: float,
    title: str,
) -> Figure:
    """Takeover curves (docs/counterfactual.md): final net assets by fork day, one line per
    label; the run's own end (`continuing`) and the initial net assets as horizontal lines."""
    marks: list = [
        Line(np.asarray(days, dtype=float), np.asarray(values, dtype=float),
             PALETTE[k % len(PALETTE)], 1.6, label, markers=True)
        for k, (label, (days, values)) in enumerate(lines.items())
    ]  # fmt: skip
    if continuing is not None:
        marks.append(HLine(continuing, "black", "dashed", 1.2, label="continuing"))
    marks.append(HLine(initial, "grey", "dotted", 0.8, label="initial"))
    last = max((max(days) for days, _ in lines.values() if days), default=1)
    return Figure(
        title, [Panel("final net assets (RMB)", marks)], xlim=(0.0, float(last) * 1.02 or 1.0),
        xticks=[(float(d), str(d)) for d in sorted({d for ds, _ in lines.values() for d in ds})],
        xlabel="fork day (the policy runs the store from this day on)",
    )  # fmt: skip


def market_figures(
    out_dir: Path, merchants: Sequence[tuple[str, RunRecord]], analysis: Mapping[str, Any]
) -> list[Path]:
    """The market's figures in `out_dir` (a colour per merchant): each merchant's net assets,
    the rating race, and the markups on contested (solid) and uncontested (dotted) products by
    30-day period (`analysis` from `report.arena.arena_analysis`)."""
    info = run_info(merchants[0][1])
    axis = _day_axis(info.calendar, info.last_day)
    assets: list = [
        Line(np.asarray(r.timeseries["t"]) / HOURS_PER_DAY,
             np.asarray(rmb(r.timeseries["net_assets"])), PALETTE[n % len(PALETTE)], label=m)
        for n, (m, r) in enumerate(merchants)
    ]  # fmt: skip
    ratings: list = [
        Line(np.asarray(r.daily["day"], dtype=float) + 0.5,
             np.asarray(r.daily["rating"], dtype=float), PALETTE[n % len(PALETTE)], label=m)
        for n, (m, r) in enumerate(merchants)
    ]  # fmt: skip
    markups: list = []
    for n, (merchant, shown) in enumerate(analysis["merchants"].items()):
        for kind, style in (("contested", "solid"), ("uncontested", "dotted")):
            values = [np.nan if x is None else 100 * x for x in shown["markups"][kind]]
            markups.append(Line(np.arange(1.0, len(values) + 1), np.asarray(values),
                                PALETTE[n % len(PALETTE)], label=f"{merchant} {kind}",
                                style=style, markers=True))  # fmt: skip
    periods = len(next(iter(analysis["merchants"].values()))["markups"]["contested"])
    return [
        Figure("Net assets of each merchant", [Panel("RMB", assets)], **axis).save(
            out_dir / "arena_net_assets.svg"
        ),
        Figure("Rating race: each merchant's published rating",
               [Panel("rating (1–5)", ratings)], **axis).save(out_dir / "arena_rating_race.svg"),
        Figure("Markups: contested (solid) and uncontested (dotted) products",
               [Panel("mean markup (%)", markups)], xlim=(0.5, periods + 0.5),
               xticks=[(float(k), str(k)) for k in range(1, periods + 1)],
               xlabel="30-day period").save(out_dir / "arena_markups.svg"),
    ]  # fmt: skip

"""PNG figures of one run: accounts, rating, listings, weekly orders, monthly window rates.

Every time axis is the run's day index with a tick on the first day of each calendar month.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from merchantbench.metrics.calendar import HOURS_PER_DAY, RunCalendar
from merchantbench.metrics.record import RunRecord
from merchantbench.metrics.run_info import RunInfo, run_info
from merchantbench.metrics.table1 import OUTCOMES
from merchantbench.money import rmb

FIGSIZE = (11, 4.5)
DPI = 110
DAYS_PER_WEEK = 7
ACCOUNT_STYLES = {
    "net_assets": ("net assets", "black", 2.2),
    "balance": ("balance B", "tab:blue", 1.2),
    "deposit": ("deposit D", "tab:green", 1.2),
    "in_transit": ("in transit I", "tab:orange", 1.2),
    "receivable": ("receivable Q", "tab:purple", 1.2),
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


def _month_axis(ax: Axes, calendar: RunCalendar, last_day: int) -> None:
    """Day axis from 0 to the end of `last_day`, with a labelled tick at each month start."""
    count = calendar.month_count(last_day)
    starts, labels = calendar.month_start_days(count), calendar.month_labels(count)
    ticks = [(s, label) for s, label in zip(starts, labels, strict=True) if s <= last_day + 1]
    names = [_tick_label(label, i == 0) for i, (_, label) in enumerate(ticks)]
    ax.set_xticks([s for s, _ in ticks], names)
    ax.set_xlim(0, last_day + 1)
    ax.set_xlabel("day of the run (ticks: first day of each month)")
    ax.grid(True, alpha=0.3)


def _legend(ax: Axes) -> None:
    """A legend right of the plot, if anything is labelled (a run without orders has no bars)."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")


def _subplots(*grid: int, figsize: tuple[float, float], **options: Any) -> tuple[Figure, Any]:
    """A figure and its axes, drawn with Agg on saving: no pyplot (its import costs more than
    the figures it would draw, and it keeps every figure until closed)."""
    fig = Figure(figsize=figsize)
    return fig, fig.subplots(*grid, **options)


def _save(fig: Figure, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    return path


def plot_accounts(record: RunRecord, info: RunInfo, path: Path) -> Path:
    """Net assets and the four cash accounts, hourly."""
    series = record.timeseries
    fig, ax = _subplots(figsize=FIGSIZE)
    days = series["t"] / HOURS_PER_DAY
    for column, (label, colour, width) in ACCOUNT_STYLES.items():
        ax.plot(days, rmb(series[column]), label=label, color=colour, linewidth=width)
    ax.set_title("Net assets and cash accounts")
    ax.set_ylabel("RMB")
    _legend(ax)
    _month_axis(ax, info.calendar, info.last_day)
    return _save(fig, path)


def plot_rating(record: RunRecord, info: RunInfo, path: Path) -> Path:
    """Published store rating (with the star thresholds) above the stars, daily."""
    daily = record.daily.where(record.daily["day"] <= info.last_day)
    fig, (ax, stars) = _subplots(
        2, 1, figsize=(FIGSIZE[0], FIGSIZE[1] * 1.3), sharex=True, height_ratios=(3, 1)
    )
    ax.plot(daily["day"] + 0.5, daily["rating"], color="tab:red")
    for threshold in info.scenario.rating.star_thresholds:
        ax.axhline(threshold, color="grey", linestyle=":", linewidth=0.8)
    ax.set_ylabel("published rating (1–5)")
    ax.set_title("Store rating (dotted: star thresholds) and stars")
    ax.grid(True, alpha=0.3)
    stars.step(daily["day"], daily["stars"], where="post", color="tab:blue")
    stars.set_ylim(0.5, 5.5)
    stars.set_yticks([1, 2, 3, 4, 5])
    stars.set_ylabel("stars")
    _month_axis(stars, info.calendar, info.last_day)
    return _save(fig, path)


def plot_active_listings(record: RunRecord, info: RunInfo, path: Path) -> Path:
    """Active listings, hourly, against the listing cap."""
    series = record.timeseries
    fig, ax = _subplots(figsize=FIGSIZE)
    ax.plot(series["t"] / HOURS_PER_DAY, series["active_listings"], color="tab:blue")
    cap = info.scenario.tools.max_active_listings
    ax.axhline(cap, color="grey", linestyle="--", linewidth=0.8, label=f"cap ({cap})")
    ax.set_ylim(0, cap * 1.08)
    ax.set_ylabel("active listings (count)")
    ax.set_title("Active listings")
    _legend(ax)
    _month_axis(ax, info.calendar, info.last_day)
    return _save(fig, path)


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
    fig, ax = _subplots(figsize=FIGSIZE)
    left, bottom = weeks * DAYS_PER_WEEK, np.zeros(len(weeks))
    for name, count in counts.items():
        if count.sum():
            ax.bar(left, count, width=DAYS_PER_WEEK * 0.9, bottom=bottom, align="edge",
                   color=OUTCOME_COLOURS[name], label=name.replace("_", " "))  # fmt: skip
            bottom = bottom + count
    late = record.orders["placed_t"][record.orders["late"]] // (HOURS_PER_DAY * DAYS_PER_WEEK)
    if len(late):
        late_counts = np.bincount(late, minlength=len(weeks))
        ax.plot(left + DAYS_PER_WEEK / 2, late_counts, color="black", marker=".", label="late")
    ax.set_title("Orders per week of arrival, by outcome")
    ax.set_ylabel("orders per week")
    _legend(ax)
    _month_axis(ax, info.calendar, info.last_day)
    return _save(fig, path)


def plot_monthly_windows(metrics: Mapping[str, Any], path: Path) -> Path:
    """Monthly effective-window rate as labelled bars, with the SWR as a line."""
    rates = metrics["monthly_effective_window_rate"]
    labels = metrics["months"]
    fig, ax = _subplots(figsize=FIGSIZE)
    heights = [0.0 if r is None else 100 * r for r in rates]
    bars = ax.bar(range(len(rates)), heights, color="tab:cyan", label="effective windows")
    texts = ["n/a" if r is None else f"{100 * r:.0f} %" for r in rates]
    ax.bar_label(bars, texts, fontsize="small", padding=2)
    ax.axhline(100 * metrics["swr"], color="tab:red", linestyle="--", label="SWR (worst 30 days)")
    ax.set_xticks(range(len(labels)), labels, rotation=45, ha="right")
    ax.set_ylim(0, 110)
    ax.set_ylabel("effective windows (% of the month's windows)")
    ax.set_xlabel("calendar month (n/a: no window opened in the month)")
    ax.set_title("Effective-window rate by month")
    _legend(ax)
    ax.grid(True, axis="y", alpha=0.3)
    return _save(fig, path)


def write_plots(record: RunRecord, metrics: Mapping[str, Any], out_dir: Path) -> list[Path]:
    """Write every figure of a run into `out_dir` and return the files, in report order."""
    info = run_info(record)
    out_dir.mkdir(parents=True, exist_ok=True)
    return [
        plot_accounts(record, info, out_dir / "net_assets.png"),
        plot_rating(record, info, out_dir / "rating.png"),
        plot_active_listings(record, info, out_dir / "active_listings.png"),
        plot_weekly_orders(record, info, out_dir / "weekly_orders.png"),
        plot_monthly_windows(metrics, out_dir / "monthly_effective_windows.png"),
    ]


def curve_figure(
    lines: Mapping[str, tuple[list[int], list[float]]],
    continuing: float | None,
    initial: float,
    title: str,
    path: Path,
) -> Path:
    """Takeover curves (docs/counterfactual.md): final net assets by fork day, one line per
    label; the run's own end (`continuing`) and the initial net assets as horizontal lines."""
    fig, ax = _subplots(figsize=FIGSIZE)
    for label, (days, values) in lines.items():
        ax.plot(days, values, marker="o", linewidth=1.6, label=label)
    if continuing is not None:
        ax.axhline(continuing, color="black", linewidth=1.2, linestyle="--", label="continuing")
    ax.axhline(initial, color="grey", linewidth=0.8, linestyle=":", label="initial")
    ax.set_xlabel("fork day (the policy runs the store from this day on)")
    ax.set_ylabel("final net assets (RMB)")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    _legend(ax)
    return _save(fig, path)

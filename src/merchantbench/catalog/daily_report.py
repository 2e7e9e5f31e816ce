"""The daily market report (docs/design.md §3, `get_daily_report`): what a wholesale site's trend
page says each morning, built only from realised market sales of completed days.

For run day `d` the report reads `market_sales_cum` rows up to day d−1 and nothing later, so it
never reveals the future: per-category sales index and week-over-week change, the hottest and
fastest-rising keywords (product type names, the words products of one type share in their
titles), a handful of hot products, and the upcoming dates of the e-commerce calendar.

A report is a pure function of (market, day, start date) and the catalog view at the start of
that day; it is memoised per market and day. A cached market keeps every day's report beside it
(`keep_reports_in`): built in one pass the first time a report of that market is asked for, then
read back by every later process in a few milliseconds (a year of reports costs about a second
to build).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import weakref
from pathlib import Path
from typing import Any

import numpy as np

from merchantbench.catalog import verified
from merchantbench.catalog.calendar import upcoming_events
from merchantbench.catalog.market import CatalogView, Market
from merchantbench.scenario import ClockConfig

REPORTS_FORMAT = 1  # bump when a report's content or shape changes
_REPORTS_FILE = "daily_reports.json"

WEEK = 7
BASE_DAYS = 28  # the index compares a week with the average week of the market's history
TOP_KEYWORDS = 10
HOT_PRODUCTS = 8
RISING_MIN_ORDERS = 20  # a keyword needs this many orders in a week to count as rising
RISING_PRIOR = 10  # orders added to both weeks so that tiny counts do not look like surges
CALENDAR_AHEAD_DAYS = 45
DEFAULT_START_DATE: str = ClockConfig.model_fields["start_date"].default

_REPORTS: weakref.WeakKeyDictionary[Market, dict[tuple[int, str], dict[str, Any]]] = (
    weakref.WeakKeyDictionary()
)


def _window_sales(market: Market, end_row: int, days: int) -> np.ndarray:
    """Orders per product over the `days` completed rows before cumulative row `end_row`."""
    cum = market.market_sales_cum
    return (cum[end_row].astype(np.int64) - cum[max(end_row - days, 0)]).clip(min=0)


_TOTALS: weakref.WeakKeyDictionary[Market, tuple[np.ndarray, np.ndarray]] = (
    weakref.WeakKeyDictionary()
)


def _cumulative_totals(market: Market) -> tuple[np.ndarray, np.ndarray]:
    """Cumulative market orders per (row, category) and per (row, product type), built once per
    market so that a day's report reads a few rows instead of summing the whole catalog."""
    cached = _TOTALS.get(market)
    if cached is None:
        cum = market.market_sales_cum
        n_cat, n_types = len(market.categories), max(len(market.type_names), 1)
        by_category = np.zeros((cum.shape[0], n_cat), dtype=np.int64)
        by_type = np.zeros((cum.shape[0], n_types), dtype=np.int64)
        for r in range(cum.shape[0]):
            row = np.asarray(cum[r], dtype=np.float64)
            by_category[r] = np.bincount(market.category, weights=row, minlength=n_cat)
            by_type[r] = np.bincount(market.type_id, weights=row, minlength=n_types)[:n_types]
        cached = (by_category, by_type)
        _TOTALS[market] = cached
    return cached


def _weekly(cum: np.ndarray, end_row: int) -> tuple[np.ndarray, np.ndarray]:
    """Totals of the completed week before cumulative row `end_row`, and of the week before."""
    last = cum[end_row] - cum[max(end_row - WEEK, 0)]
    if end_row < WEEK:
        return last, np.zeros_like(last)
    return last, cum[end_row - WEEK] - cum[max(end_row - 2 * WEEK, 0)]


def _end_row(market: Market, day: int) -> int:
    return min(day, market.days) + market.history_days  # rows before it are completed days


def _change_pct(now: int | float, before: int | float) -> float | None:
    return round(100.0 * (float(now) / float(before) - 1.0), 1) if before > 0 else None


def _categories(market: Market, day: int) -> list[dict[str, Any]]:
    by_category, _ = _cumulative_totals(market)
    now, before = _weekly(by_category, _end_row(market, day))
    base_days = min(BASE_DAYS, market.history_days)
    base = None
    if base_days:
        base = (by_category[base_days] - by_category[0]) * WEEK / base_days
    rows = []
    for c, name in enumerate(market.categories):
        index = None
        if base is not None and base[c] > 0:
            index = round(100.0 * float(now[c]) / float(base[c]), 1)
        rows.append(
            {
                "category": name,
                "orders_7d": int(now[c]),
                "sales_index": index,
                "week_over_week_pct": _change_pct(now[c], before[c]),
            }
        )
    return rows


_TYPE_CATEGORIES: weakref.WeakKeyDictionary[Market, np.ndarray] = weakref.WeakKeyDictionary()


def _type_categories(market: Market) -> np.ndarray:
    """Category index of each product type (the category of its products); memoised."""
    cached = _TYPE_CATEGORIES.get(market)
    if cached is None:
        cached = np.zeros(len(market.type_names), dtype=np.int64)
        types, first = np.unique(market.type_id, return_index=True)
        cached[types] = market.category[first]
        _TYPE_CATEGORIES[market] = cached
    return cached


def _top(values: np.ndarray, candidates: np.ndarray, k: int) -> np.ndarray:
    """The `k` candidates with the largest values, largest first, ties by index."""
    if len(candidates) > k:
        cut = np.partition(values[candidates], len(candidates) - k)[len(candidates) - k]
        candidates = candidates[values[candidates] >= cut]
    return candidates[np.argsort(-values[candidates], kind="stable")][:k]


def keyword_trends(
    market: Market, day: int, category: str | None = None, limit: int = TOP_KEYWORDS
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The hottest and the fastest-rising keywords (product type names) on run day `day`, from
    the 7 completed days before it and the 7 before those; optionally within one category.

    A keyword shows only once its products have sold, so an unlaunched type never appears.
    """
    n_types = len(market.type_names)
    if n_types == 0:
        return [], []
    _, by_type = _cumulative_totals(market)
    now, before = _weekly(by_type, _end_row(market, day))
    type_category = _type_categories(market)
    eligible = np.ones(n_types, dtype=bool)
    if category is not None:
        eligible &= type_category == market.categories.index(category)

    def row(k: int) -> dict[str, Any]:
        return {
            "keyword": str(market.type_names[k]),
            "category": market.categories[int(type_category[k])],
            "orders_7d": int(now[k]),
            "week_over_week_pct": _change_pct(now[k], before[k]),
        }

    selling = np.flatnonzero(eligible & (now > 0))
    hottest = selling[np.argsort(-now[selling], kind="stable")][:limit]
    growing = np.flatnonzero(eligible & (now >= RISING_MIN_ORDERS) & (now > before))
    growth = (now[growing] + RISING_PRIOR) / (before[growing] + RISING_PRIOR)
    rising = growing[np.argsort(-growth, kind="stable")][:limit]
    return [row(int(k)) for k in hottest], [row(int(k)) for k in rising]


def _hot_products(market: Market, view: CatalogView, last: np.ndarray) -> list[list[Any]]:
    top = _top(last, np.flatnonzero(view.visible & (last > 0)), HOT_PRODUCTS)
    return [
        [
            str(market.product_ids[i]),
            str(market.titles[i]),
            market.categories[int(market.category[i])],
            round(int(view.price_fen[i]) / 100, 2),
            int(last[i]),
            int(view.sales_30d[i]),
        ]
        for i in top
    ]


def _build(market: Market, day: int, view: CatalogView, start_date: str) -> dict[str, Any]:
    last = _window_sales(market, _end_row(market, day), WEEK)
    hottest, rising = keyword_trends(market, day)
    events = upcoming_events(start_date, day, CALENDAR_AHEAD_DAYS)
    return {
        "day": day + 1,
        "based_on": "market orders of the 7 completed days before today",
        "categories": _categories(market, day),
        "hot_keywords": hottest,
        "rising_keywords": rising,
        "hot_products": {
            "columns": ["product_id", "title", "category", "price", "orders_7d", "sales_30d"],
            "rows": _hot_products(market, view, last),
        },
        "upcoming_events": [
            {"event": e.name, "date": e.date.isoformat(), "days_away": e.days_away} for e in events
        ],
    }


def daily_report(
    market: Market, day: int, view: CatalogView, *, start_date: str = DEFAULT_START_DATE
) -> dict[str, Any]:
    """The market report of run day `day` (0-based).

    Args:
        market: The market.
        day: The run day the report is for; it uses sales of days before it only.
        view: The catalog at the start of `day` (visibility and prices of the hot products).
            Reports are memoised per day, so the view of a day's first request is the one used.
        start_date: ISO date of run day 0, for the calendar.

    Returns:
        A fresh JSON-shaped dict: `categories` (orders_7d, sales_index — 100 is the average week
        of the market history before the run — and week_over_week_pct), `hot_keywords`,
        `rising_keywords`, `hot_products` (a table) and `upcoming_events`.
    """
    reports = _REPORTS.get(market)
    if reports is None:
        reports = _REPORTS[market] = {}
    key = (day, start_date)
    if key not in reports:
        directory = _KEPT_IN.get(market)
        if directory is not None and 0 <= day < market.days:
            reports.update(_load_or_build(directory, market, start_date))
        if key not in reports:  # not kept, or a day past the market's year
            reports[key] = _build(market, day, view, start_date)
    return _fresh(reports[key])


# Where a cached market keeps its reports (`keep_reports_in`).
_KEPT_IN: weakref.WeakKeyDictionary[Market, Path] = weakref.WeakKeyDictionary()


def keep_reports_in(market: Market, directory: Path) -> None:
    """Keep `market`'s daily reports in `directory` (beside its cache)."""
    _KEPT_IN[market] = directory


def every_report(market: Market, start_date: str) -> list[dict[str, Any]]:
    """The reports of every day of the market's year, in order (one pass of the catalog view)."""
    from merchantbench.catalog.view import catalog_view_at  # the view imports the event log

    return [
        _build(market, day, catalog_view_at(market, day * 24), start_date)
        for day in range(market.days)
    ]


def _identity(market: Market, start_date: str) -> dict[str, Any]:
    return {
        "format": REPORTS_FORMAT,
        "start_date": start_date,
        "days": market.days,
        "n_products": market.n_products,
    }


def _load(directory: Path, market: Market, start_date: str) -> list[dict[str, Any]]:
    saved = json.loads((directory / _REPORTS_FILE).read_text(encoding="utf-8"))
    if saved.get("identity") != _identity(market, start_date):
        raise ValueError(f"daily reports in {directory} belong to another market or start date")
    verified.check(directory)
    reports = saved["reports"]
    if not isinstance(reports, list) or len(reports) != market.days:
        raise ValueError(f"daily reports in {directory} are incomplete")
    return reports


def _load_or_build(
    directory: Path, market: Market, start_date: str
) -> dict[tuple[int, str], dict[str, Any]]:
    """Every day's report, read from `directory` or built and saved there (written into a
    temporary sibling and renamed into place; a reader never sees half of it)."""
    try:
        reports = _load(directory, market, start_date)
    except verified.DamagedCache as exc:
        verified.notice(f"daily reports {exc}")
        reports = []
    except (ValueError, OSError, KeyError, TypeError, AttributeError):
        reports = []  # none yet, another start date's, or being replaced: build ours
    if not reports:
        reports = every_report(market, start_date)
        _save(directory, market, start_date, reports)
    return {(day, start_date): report for day, report in enumerate(reports)}


def _save(directory: Path, market: Market, start_date: str, reports: list) -> None:
    try:
        directory.parent.mkdir(parents=True, exist_ok=True)
        temp = Path(tempfile.mkdtemp(prefix=f".tmp-{directory.name}-", dir=directory.parent))
    except OSError:
        return  # a read-only cache: the reports serve this process only
    try:
        text = json.dumps({"identity": _identity(market, start_date), "reports": reports})
        (temp / _REPORTS_FILE).write_text(text, encoding="utf-8")
        verified.seal(temp)
        if directory.exists():
            shutil.rmtree(directory, ignore_errors=True)  # another start date's, or damaged
        os.rename(temp, directory)
    except OSError:
        pass  # out of space or a lost race: the reports in memory are sound either way
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def _fresh(report: dict[str, Any]) -> dict[str, Any]:
    """A copy of a memoised report that shares no list or dict with it, so a caller may change
    its answer freely. It follows `_build`'s shape (lists of flat dicts, a table of flat rows):
    a quarter of the cost of a JSON round trip, and a test checks no container is shared."""
    table = report["hot_products"]
    return {
        **report,
        "categories": [dict(row) for row in report["categories"]],
        "hot_keywords": [dict(row) for row in report["hot_keywords"]],
        "rising_keywords": [dict(row) for row in report["rising_keywords"]],
        "hot_products": {
            "columns": list(table["columns"]),
            "rows": [list(r) for r in table["rows"]],
        },
        "upcoming_events": [dict(event) for event in report["upcoming_events"]],
    }

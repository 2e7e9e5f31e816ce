"""The daily market report reads only completed days, adds up what it says, and is memoised."""

from __future__ import annotations

import dataclasses

import numpy as np
from store_market import HISTORY, store_market

from merchantbench.catalog.daily_report import daily_report, keyword_trends
from merchantbench.catalog.market import Market
from merchantbench.catalog.view import catalog_view_at

DAY = 6


def report_of(market: Market, day: int = DAY) -> dict:
    return daily_report(market, day, catalog_view_at(market, day * 24))


def with_sales(market: Market, rows: slice, extra: int) -> Market:
    """A copy of the market whose cumulative sales grow by `extra` from row `rows.start` on."""
    cum = market.market_sales_cum.copy()
    cum[rows] += extra
    return dataclasses.replace(market, market_sales_cum=cum, index_of={})


def test_the_report_ignores_today_and_later() -> None:
    market = store_market()
    end = DAY + HISTORY  # cumulative row of the days before DAY
    assert report_of(with_sales(market, slice(end + 1, None), 1000)) == report_of(market)
    assert report_of(with_sales(market, slice(end, None), 1000)) != report_of(market)


def test_categories_add_up_the_last_two_weeks() -> None:
    market = store_market()
    cum = market.market_sales_cum.astype(np.int64)
    end = DAY + HISTORY
    last, before = cum[end] - cum[end - 7], cum[end - 7] - cum[end - 14]
    base = (cum[28] - cum[0]) * 7 / 28
    office = next(c for c in report_of(market)["categories"] if c["category"] == "office")
    in_office = market.category == 1
    assert office["orders_7d"] == last[in_office].sum()
    assert office["week_over_week_pct"] == round(
        100 * (last[in_office].sum() / before[in_office].sum() - 1), 1
    )
    assert office["sales_index"] == round(100 * last[in_office].sum() / base[in_office].sum(), 1)


def test_keywords_and_hot_products() -> None:
    market = store_market()
    report = report_of(market)
    assert [k["keyword"] for k in report["hot_keywords"]] == ["gel pen", "storage box", "plush toy"]
    assert all(k["orders_7d"] >= 20 for k in report["rising_keywords"])
    hot = report["hot_products"]
    assert hot["columns"][0] == "product_id"
    assert [row[0] for row in hot["rows"]] == ["P1000", "P1001", "P1004", "P1003", "P1005"]
    before_delisting = report_of(market, 1)["hot_products"]["rows"]  # P1002 is off from hour 40
    assert [row[0] for row in before_delisting][:2] == ["P1002", "P1000"]
    flat = market.market_sales_cum.copy()
    flat[HISTORY - 6 :] = flat[HISTORY - 7]  # nothing sold in the week before DAY
    hot_now, rising = keyword_trends(
        dataclasses.replace(market, market_sales_cum=flat, index_of={}), DAY
    )
    assert hot_now == [] and rising == []
    toys, _ = keyword_trends(market, DAY, "toys", limit=5)
    assert [k["keyword"] for k in toys] == ["plush toy"]


def test_calendar_events_ahead() -> None:
    market = store_market()
    first = report_of(market, 0)["upcoming_events"]
    assert first[0] == {"event": "618 Shopping Festival", "date": "2025-06-18", "days_away": 17}


def test_reports_are_memoised_and_returned_as_copies() -> None:
    market = store_market()
    first = report_of(market)
    first["categories"].clear()
    again = report_of(market)
    assert again["categories"] and again == report_of(market)
    assert report_of(market, DAY + 1)["day"] == DAY + 2


def containers(node: object) -> list[object]:
    """Every list and dict in a JSON-shaped tree."""
    if isinstance(node, dict):
        return [node, *(c for value in node.values() for c in containers(value))]
    if isinstance(node, list):
        return [node, *(c for value in node for c in containers(value))]
    return []


def test_answers_share_no_container_and_changes_do_not_leak() -> None:
    market = store_market()
    first, second = report_of(market), report_of(market)
    assert first == second
    assert not {id(c) for c in containers(first)} & {id(c) for c in containers(second)}
    pristine = report_of(market)
    for node in containers(first):  # vandalise every container of one answer
        if isinstance(node, dict):
            node["vandal"] = 1
        else:
            node.append("vandal")
    assert report_of(market) == pristine

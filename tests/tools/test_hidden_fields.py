"""Nothing hidden leaks: every tool, called with varied arguments over a run with orders in
every state and supplier events past, present and future, is scanned for hidden names and for
hidden values (reference prices, hours still to come)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from store_market import ITEMS, OPENING_LISTINGS, new_session, ok

from merchantbench.catalog.hidden import hidden_names_in
from merchantbench.catalog.market import CHANNELS
from merchantbench.session import Session
from merchantbench.tools.context import clock_text

P_REFS = [it.p_ref_fen / 100 for it in ITEMS]
CHECKPOINTS = (0, 1, 3, 6, 9, 10, 12)


def numbers(value: Any) -> Iterator[float]:
    if isinstance(value, bool):
        return
    if isinstance(value, int | float):
        yield float(value)
    elif isinstance(value, dict):
        for item in value.values():
            yield from numbers(item)
    elif isinstance(value, list):
        for item in value:
            yield from numbers(item)


def future_hours(session: Session) -> set[str]:
    """Hours after now of every planned order step and every supplier event start and end."""
    t = session.engine.t
    hours = set()
    for order in session.engine.state.orders:
        hours |= {order.ship_t, order.cancel_t, order.late_t, order.delivered_t, order.resolved_t}
    for product in range(len(ITEMS)):
        for channel in CHANNELS:
            for start, end, _ in session.engine.suppliers.events(product)[channel]:
                hours |= {start, end}
    return {clock_text(h) for h in hours if h > t}


def scan(output: Any, future: set[str]) -> None:
    """Fail if `output` shows a hidden name or value."""
    assert not hidden_names_in(output)
    text = json.dumps(output, ensure_ascii=False, default=str)
    assert not [x for x in numbers(output) for p in P_REFS if abs(x - p) < 1e-9]
    assert not [p for p in P_REFS if re.search(rf"(?<![\d.]){re.escape(f'{p:.2f}')}(?!\d)", text)]
    assert not [hour for hour in future if hour in text]


def calls(session: Session) -> list[tuple[str, dict[str, Any]]]:
    """Every tool, with varied arguments."""
    pids = [f"P{1000 + i}" for i in range(len(ITEMS))]
    orders = len(session.engine.state.orders)
    return [
        ("get_daily_report", {}), ("search_products", {}),
        ("search_products", {"query": "storage box", "sort": "rating", "min_stock": "low"}),
        ("search_products", {"query": "pen", "sort": "ship_speed", "max_price": 50.5}),
        *[("get_product_detail", {"product_id": pid}) for pid in pids],
        *[("get_supplier_profile", {"supplier_id": s}) for s in ("S100", "S200", "S300")],
        ("list_supplier_products", {"supplier_id": "S200", "sort": "price_desc"}),
        ("review_my_listings", {}), ("query_my_listings", {"sort": "unit_margin"}),
        ("query_balance", {}), ("get_store_snapshot", {}), ("query_platform_rules", {}),
        ("query_cash_pipeline", {}), ("query_store_performance", {"days": 1}),
        ("query_store_performance", {"days": 30}), ("query_product_sales_stats", {"days": 30}),
        ("query_product_sales_stats", {"product_id": "P1002"}),
        ("query_supply_chain_anomalies", {"scope": "new"}),
        ("query_supply_chain_anomalies", {"scope": "now"}),
        *[("query_my_orders", {"page": p, "page_size": 50}) for p in (1, 2, 3, 4)],
        ("query_my_orders", {"status": "open"}), ("query_my_orders", {"status": "late"}),
        ("query_open_orders", {"page_size": 50}),
        ("query_open_orders", {"page": 2, "page_size": 50}),
        ("query_order_updates", {"page_size": 50}), ("query_order_updates", {"event": "shipped"}),
        *[("query_order_detail", {"order_id": k}) for k in range(1, orders + 2)],
        ("read_memory_doc", {}), ("write_memory_doc", {"content": "notes\n", "mode": "append"}),
        ("get_observation", {}), ("list_tools", {}), ("market_brief", {}),
        ("hot_search_terms", {"limit": 30}),
    ]  # fmt: skip


ACTIONS = {  # window → store actions taken there, so listings, prices and events vary
    0: [("list_product", {"items": OPENING_LISTINGS})],
    3: [("adjust_price", {"product_id": "P1001", "sale_price": 14.3})],
    6: [("list_product", {"items": [{"product_id": "P1007", "sale_price": 0.3}]}),
        ("delist_product", {"product_ids": ["P1000"]})],
    10: [("list_product", {"items": [{"product_id": "P1005", "sale_price": 19.9}]})],
}  # fmt: skip


@pytest.fixture(scope="module")
def outputs() -> list[tuple[int, str, Any, set[str]]]:
    """(window, what, output, hours still to come) of every call over the run."""
    session = new_session("tools.market_brief=true", "tools.hot_search_terms=true")
    seen = [(0, "brief", session.brief(), future_hours(session))]
    while session.window <= max(CHECKPOINTS):
        window, future = session.window, future_hours(session)
        for tool, args in ACTIONS.get(window, []):
            seen.append((window, tool, ok(session.call(tool, args)), future))
        if window in CHECKPOINTS:
            seen.append((window, "observation", session.observation(), future))
            for tool, args in calls(session):
                seen.append((window, tool, session.registry.call(session, tool, args), future))
        seen.append((window, "end_of_step", ok(session.call("end_of_step")), future))
    return seen


def test_the_run_has_what_could_leak(outputs: list[tuple[int, str, Any, set[str]]]) -> None:
    last = [o for o in outputs if o[0] == max(CHECKPOINTS)]
    assert len(last[0][3]) > 50  # many hours still to come at the last checkpoint
    tools = {what for _, what, _, _ in outputs}
    assert {"market_brief", "hot_search_terms", "end_of_step", "adjust_price"} <= tools
    details = [out for w, what, out, _ in last if what == "query_order_detail" and out["ok"]]
    assert {d["status"] for d in details} >= {
        "awaiting_shipment",
        "shipped",
        "delivered",
        "settled",
    }


def test_no_output_shows_a_hidden_name_or_value(
    outputs: list[tuple[int, str, Any, set[str]]],
) -> None:
    for window, what, output, future in outputs:
        try:
            scan(output, future)
        except AssertionError as exc:
            raise AssertionError(f"window {window}, {what}: {exc}") from None


@pytest.mark.parametrize(
    "leak",
    [{"p_ref_fen": 1}, {"columns": ["demand"], "rows": []}, {"x": 15.57}, "at 13.39 RMB",
     "ships Day 9 05:00", "fate: normal", "seed 7", {"n": np.int64(3)}],
)  # fmt: skip
def test_the_scan_catches_planted_leaks(leak: Any) -> None:
    with pytest.raises(AssertionError):
        scan(leak, {"Day 9 05:00"})


@pytest.mark.parametrize(
    ("output", "flagged"),
    [
        ({"title": "Seed Starter Tray, 72 cells"}, False),  # a catalog noun, not the run's seed
        ("New order: Seed Starter Tray x2", False),
        ("the market seed: 42", True),
        ({"note": "seed=7"}, True),
        ({"note": "rng_seed 7"}, True),
        ({"market_seed": 7}, True),  # as a key, the word is enough
    ],
)
def test_the_word_seed_counts_where_it_names_a_value(output, flagged: bool):
    assert bool(hidden_names_in(output)) is flagged

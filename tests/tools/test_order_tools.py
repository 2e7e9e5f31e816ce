"""Order, cash and monitoring tools on a busy hand-built store: every figure is checked against
the engine's own state, and every order status against the public log of order events."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from store_market import busy_session, new_session, ok

from merchantbench.session import Session
from merchantbench.sim.ledger import Reason
from merchantbench.sim.orders import Outcome

LOG_STATUS = {"placed": "awaiting_shipment", "normal": "settled"}


@pytest.fixture(scope="module")
def busy() -> Session:
    """Ten windows in (hour 120); read-only tests share it."""
    return busy_session()


def rows_as_dicts(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [dict(zip(result["columns"], row, strict=True)) for row in result["rows"]]


def all_rows(session: Session, tool: str, args: dict[str, Any]) -> list[dict[str, Any]]:
    first = ok(session.call(tool, {**args, "page": 1}))
    rows = rows_as_dicts(first)
    for page in range(2, first["pages"] + 1):
        rows += rows_as_dicts(ok(session.call(tool, {**args, "page": page})))
    return rows


def status_from_log(session: Session) -> dict[int, str]:
    """Each order's status as the public event log tells it (the last event other than late)."""
    last: dict[int, str] = {}
    for _, order_id, event in session.engine.state.updates:
        if order_id and event != "late":
            last[order_id] = LOG_STATUS.get(event, event)
    return last


def test_every_order_status_agrees_with_the_event_log(busy: Session) -> None:
    rows = all_rows(busy, "query_my_orders", {"page_size": 50})
    assert [r["order_id"] for r in rows] == list(range(len(busy.engine.state.orders), 0, -1))
    assert {r["order_id"]: r["status"] for r in rows} == status_from_log(busy)
    late = {oid for _, oid, event in busy.engine.state.updates if event == "late"}
    assert {r["order_id"] for r in rows if r["late"]} == late
    statuses = Counter(r["status"] for r in rows)
    assert {"awaiting_shipment", "shipped", "delivered", "settled", "cancelled", "stockout"} <= set(
        statuses
    )


def test_an_order_due_this_hour_has_not_happened_yet() -> None:
    session = busy_session()
    t = session.engine.t
    due = [
        o for o in session.engine.state.orders if t in (o.ship_t, o.delivered_t) and o.outcome == 0
    ]
    assert due, "the fixture should have an order with a step due at the window's hour"
    for order in due:
        shown = ok(session.call("query_order_detail", {"order_id": order.order_id}))
        expected = "awaiting_shipment" if order.ship_t == t else "shipped"
        assert shown["status"] == expected
        assert all(
            at != f"Day {t // 24 + 1} {t % 24:02d}:00" for at, _ in shown["history"]["rows"][1:]
        )


def test_my_orders_filters(busy: Session) -> None:
    everything = all_rows(busy, "query_my_orders", {"page_size": 50})
    for status in ("settled", "cancelled", "stockout", "delivered"):
        chosen = all_rows(busy, "query_my_orders", {"status": status, "page_size": 50})
        assert chosen == [r for r in everything if r["status"] == status]
    running = all_rows(busy, "query_my_orders", {"status": "open", "page_size": 50})
    assert {r["status"] for r in running} == {"awaiting_shipment", "shipped", "delivered"}
    late = all_rows(busy, "query_my_orders", {"status": "late", "page_size": 50})
    assert late and all(r["late"] for r in late)
    pens = all_rows(busy, "query_my_orders", {"product_id": "P1003", "page_size": 50})
    assert pens == [r for r in everything if r["product_id"] == "P1003"]


def test_open_orders_are_the_running_ones_oldest_first(busy: Session) -> None:
    result = ok(busy.call("query_open_orders", {"page_size": 50}))
    rows = all_rows(busy, "query_open_orders", {"page_size": 50})
    running = [o.order_id for o in busy.engine.state.orders if o.outcome == Outcome.OPEN]
    assert [r["order_id"] for r in rows] == running
    assert all(
        r["hours_open"] == busy.engine.t - int(busy.engine.state.orders[r["order_id"] - 1].placed_t)
        for r in rows
    )
    counts = Counter(r["status"] for r in rows)
    assert result["counts"] == {**counts, "late": sum(r["late"] for r in rows)}
    assert ok(busy.call("get_store_snapshot"))["open_orders"] == len(running)


def test_order_updates_since_the_previous_window(busy: Session) -> None:
    since = busy.previous_window_t
    expected = [u for u in busy.engine.state.updates if u[0] >= since]
    rows = all_rows(busy, "query_order_updates", {})
    assert [(r["order_id"], r["event"]) for r in rows] == [
        (oid, LOG_STATUS.get(e, e) if e != "placed" else e) for _, oid, e in expected
    ]
    result = ok(busy.call("query_order_updates", {"event": "stockout"}))
    assert result["since"] == "Day 5 12:00" and result["total"] == result["counts"]["stockout"]
    assert all(row[3:] == ["stockout", 5.0] for row in result["rows"])
    only = all_rows(busy, "query_order_updates", {"product_id": "P1000"})
    assert only == [r for r in rows if r["product_id"] == "P1000"]


def test_order_detail_tells_the_history_so_far(busy: Session) -> None:
    orders = busy.engine.state.orders
    cancelled = next(o for o in orders if o.outcome == Outcome.CANCELLED and o.late_t >= 0)
    detail = ok(busy.call("query_order_detail", {"order_id": cancelled.order_id}))
    assert [event for _, event in detail["history"]["rows"]] == ["placed", "late", "cancelled"]
    assert (detail["status"], detail["late"], detail["fines"]) == ("cancelled", True, 3.0)
    settled = next(o for o in orders if o.outcome == Outcome.NORMAL)
    events = [
        e
        for _, e in ok(busy.call("query_order_detail", {"order_id": settled.order_id}))["history"][
            "rows"
        ]
    ]
    assert events in (
        ["placed", "shipped", "delivered", "settled"],
        ["placed", "late", "shipped", "delivered", "settled"],
    )
    error = busy.call("query_order_detail", {"order_id": len(orders) + 1})["error"]
    assert (error["code"], error["path"]) == ("unknown_order", "$.order_id")


def test_anomalies_new_since_the_previous_window_and_now(busy: Session) -> None:
    new = rows_as_dicts(ok(busy.call("query_supply_chain_anomalies", {"scope": "new"})))
    assert [(r["product_id"], r["anomaly"], r["since"]) for r in new] == [
        ("P1000", "delay_over", "Day 5 14:00"),
        ("P1004", "price_changed", "Day 5 19:00"),
    ]
    assert (new[1]["procurement_price"], new[1]["previous_price"]) == (15.51, 14.1)
    now = rows_as_dicts(ok(busy.call("query_supply_chain_anomalies", {"scope": "now"})))
    assert [(r["product_id"], r["anomaly"]) for r in now] == [
        ("P1001", "price_changed"), ("P1002", "supplier_delisted"),
        ("P1003", "shipment_delayed"), ("P1004", "price_changed"),
    ]  # fmt: skip
    assert now[2]["ship_hours"] == 90


def test_anomalies_only_concern_own_listings_and_new_means_new() -> None:
    session = new_session()
    ok(session.call("list_product", {"items": [{"product_id": "P1003", "sale_price": 6.6}]}))
    ok(session.call("end_of_step"))  # window 1 (hour 12): the delay starts at hour 20
    assert ok(session.call("query_supply_chain_anomalies"))["rows"] == []
    ok(session.call("end_of_step"))
    rows = ok(session.call("query_supply_chain_anomalies"))["rows"]
    assert [row[:3] for row in rows] == [["P1003", "shipment_delayed", "Day 1 20:00"]]
    ok(session.call("end_of_step"))
    assert ok(session.call("query_supply_chain_anomalies"))["rows"] == []
    assert len(ok(session.call("query_supply_chain_anomalies", {"scope": "now"}))["rows"]) == 1


def test_balance_snapshot_and_pipeline_agree_with_the_ledger(busy: Session) -> None:
    a = busy.engine.state.ledger.accounts
    balance = ok(busy.call("query_balance"))
    assert balance == {
        "ok": True, "at": "Day 6 00:00", "balance": a.balance / 100, "deposit": a.deposit / 100,
        "in_transit": a.in_transit / 100, "receivable": a.receivable / 100,
        "net_assets": a.net_assets / 100,
    }  # fmt: skip
    snapshot = ok(busy.call("get_store_snapshot"))
    assert (snapshot["stars"], snapshot["active_listings"], snapshot["store"]) == (
        busy.engine.state.rating.stars,
        5,
        "open",
    )
    pipeline = ok(busy.call("query_cash_pipeline"))
    stages = {row[0]: row[1:] for row in pipeline["rows"]}
    assert round(stages["awaiting_shipment"][1] + stages["shipped"][1], 2) == a.in_transit / 100
    assert stages["delivered_awaiting_settlement"][1] == a.receivable / 100
    assert sum(count for count, _ in stages.values()) == snapshot["open_orders"]


def test_calls_left_counts_down() -> None:
    session = new_session()
    assert ok(session.call("get_store_snapshot"))["calls_left_in_window"] == 99
    assert ok(session.call("get_store_snapshot"))["calls_left_in_window"] == 98


def test_store_performance_over_the_whole_run_and_a_day(busy: Session) -> None:
    state = busy.engine.state
    whole = ok(busy.call("query_store_performance", {"days": 30}))
    procured = [o for o in state.orders if o.procured]
    fines = -sum(e.d_balance + e.d_deposit for e in state.ledger.entries if e.reason == Reason.FINE)
    assert (whole["from"], whole["orders"], whole["procured"]) == (
        "Day 1 00:00",
        len(state.orders),
        len(procured),
    )
    assert whole["gmv"] == sum(o.price for o in procured) / 100 and whole["fines"] == fines / 100
    assert whole["net_assets_change"] == round(state.ledger.accounts.net_assets / 100 - 3000, 2)
    assert whole["events"]["placed"] == len(procured)
    assert whole["ratings"]["rows"][0] == [1, 4.0, 4] and len(whole["ratings"]["rows"]) == 6
    day = ok(busy.call("query_store_performance", {"days": 1}))
    assert day["from"] == "Day 5 00:00" and day["orders"] == sum(
        o.placed_t >= 96 for o in state.orders
    )
    assert [row[0] for row in day["ratings"]["rows"]] == [6]


def test_product_sales_stats(busy: Session) -> None:
    stats = rows_as_dicts(ok(busy.call("query_product_sales_stats", {"days": 30})))
    assert [r["orders"] for r in stats] == sorted((r["orders"] for r in stats), reverse=True)
    assert sum(r["orders"] for r in stats) == len(busy.engine.state.orders)
    pens = next(r for r in stats if r["product_id"] == "P1002")
    orders = [o for o in busy.engine.state.orders if o.product == 2]
    assert pens["stockout"] == sum(o.outcome == Outcome.STOCKOUT for o in orders) > 0
    assert pens["fines"] == sum(o.fines for o in orders) / 100
    outcome_columns = ("settled", "bad_review", "return_refund", "returnless_refund", "cancelled",
                       "stockout", "insufficient_balance", "open")  # fmt: skip
    assert all(sum(r[c] for c in outcome_columns) == r["orders"] for r in stats)
    one = ok(busy.call("query_product_sales_stats", {"days": 30, "product_id": "P1002"}))
    assert rows_as_dicts(one) == [pens]
    assert (
        busy.call("query_product_sales_stats", {"product_id": "NOPE"})["error"]["code"]
        == "unknown_product"
    )


def test_rules_are_the_brief(busy: Session) -> None:
    assert ok(busy.call("query_platform_rules"))["rules"] == busy.brief()

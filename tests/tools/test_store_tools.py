"""The store tools on a hand-built market: sourcing, listing, memory and control, optional tools,
idempotency keys and the closed store. Order and cash tools: test_order_tools.py."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from store_market import OPENING_LISTINGS, busy_session, new_session, ok, store_market

from merchantbench.session import Session
from merchantbench.tools.toolset import DECLARED


def refused(result: dict[str, Any], code: str, path: str | None = None) -> dict[str, Any]:
    assert not result["ok"], result
    assert result["error"]["code"] == code, result
    if path is not None:
        assert result["error"].get("path") == path, result
    return result["error"]


def unchanged(session: Session, call: Any) -> dict[str, Any]:
    """Run a call that must be refused and check it changed nothing."""
    before = (session.state_hash(), session.memory_doc, dict(session.idempotency_store))
    result = call()
    assert not result["ok"], result
    assert (session.state_hash(), session.memory_doc, dict(session.idempotency_store)) == before
    return result


def advance_to(session: Session, window: int) -> None:
    while session.window < window:
        ok(session.call("end_of_step"))


def ids(result: dict[str, Any]) -> list[str]:
    return [row[0] for row in result["rows"]]


# --- sourcing ------------------------------------------------------------------------------


def test_search_finds_launched_visible_products_matching_every_word() -> None:
    session = new_session()
    assert ids(ok(session.call("search_products", {"query": "storage boxes"}))) == [
        "P1000",
        "P1001",
    ]  # P1006 launches on day 9
    advance_to(session, 4)  # hour 48: P1002 delisted by its supplier since hour 40
    pens = ok(session.call("search_products", {"query": "gel pen", "sort": "price_asc"}))
    assert ids(pens) == ["P1007", "P1003"]
    assert pens["columns"][3] == "price" and pens["rows"][1][3] == 4.3


def test_search_filters_sort_and_pages() -> None:
    session = new_session()
    cheap = ok(session.call("search_products", {"max_price": 5, "sort": "price_desc"}))
    assert ids(cheap) == ["P1003", "P1002", "P1007"]
    rated = ok(session.call("search_products", {"min_product_rating": 4.5, "category": "toys"}))
    assert ids(rated) == ["P1004"]
    first = ok(session.call("search_products", {"page_size": 2}))
    third = ok(session.call("search_products", {"page": 3, "page_size": 2}))
    assert (first["total"], first["pages"], len(third["rows"])) == (6, 3, 2)
    assert set(ids(first)).isdisjoint(ids(third))
    assert ok(session.call("search_products", {"page": 9}))["rows"] == []
    assert ok(session.call("search_products", {"query": "sofa"}))["total"] == 0
    assert ok(session.call("search_products", {"category": "bags"}))["total"] == 0


def test_search_refuses_an_empty_price_range_and_keeps_the_scenario_page_limit() -> None:
    session = new_session("tools.page_size_max=4")
    refused(
        session.call("search_products", {"min_price": 9, "max_price": 3}),
        "invalid_argument",
        "$.max_price",
    )
    # The schema states the scenario's limit, and validation keeps to it; the default follows.
    schema = session.registry.get("search_products").parameters_schema["properties"]
    assert (schema["page_size"]["maximum"], schema["page_size"]["default"]) == (4, 4)
    refused(session.call("search_products", {"page_size": 5}), "invalid_argument", "$.page_size")
    for page in (ok(session.call("search_products", {"page_size": 4})),
                 ok(session.call("search_products"))):  # fmt: skip
        assert (len(page["rows"]), page["page_size"], page["pages"]) == (4, 4, 2)


@pytest.mark.parametrize(
    ("capacity", "shown"), [(400, "in_stock"), (50, "low"), (1, "out_of_stock")]
)
def test_stock_shown_is_the_band_of_what_our_purchases_left(capacity: int, shown: str) -> None:
    market = store_market()
    no_refill = dataclasses.replace(
        market,
        stock_refill=np.zeros(market.n_products, np.int32),
        stock_capacity=np.where(np.arange(market.n_products) == 0, capacity, 400).astype(np.int32),
    )
    session = new_session(market=no_refill)
    ok(session.call("list_product", {"items": OPENING_LISTINGS[:1]}))
    advance_to(session, 4)
    bought = sum(o.procured for o in session.engine.state.orders if o.product == 0)
    assert 0 < bought < 50
    rows = ok(session.call("search_products", {"query": "foldable"}))["rows"]
    assert rows[0][4] == shown
    assert ok(session.call("get_product_detail", {"product_id": "P1000"}))["stock"] == shown


def test_product_detail_shows_public_facts_and_my_listing() -> None:
    session = new_session()
    ok(session.call("list_product", {"items": [{"product_id": "P1001", "sale_price": 12.9}]}))
    advance_to(session, 3)  # hour 36: price change ×1.25 since hour 30
    detail = ok(session.call("get_product_detail", {"product_id": "P1001"}))
    assert (detail["price"], detail["max_sale_price"], detail["status"]) == (
        10.5,
        1050.0,
        "available",
    )
    assert detail["supplier"]["supplier_id"] == "S100" and detail["listed_since"] == "2025-02-21"
    assert (
        detail["my_listing"]["sale_price"] == 12.9
        and detail["my_listing"]["listed_at"] == "Day 1 00:00"
    )
    advance_to(session, 4)
    gone = ok(session.call("get_product_detail", {"product_id": "P1002"}))
    assert gone["status"] == "delisted_by_supplier" and gone["my_listing"] is None


def test_an_unlaunched_product_is_exactly_as_unknown_as_a_missing_one() -> None:
    session = new_session()
    for tool, args in [
        ("get_product_detail", {"product_id": "{}"}),
        ("adjust_price", {"product_id": "{}", "sale_price": 20}),
        ("list_product", {"items": [{"product_id": "{}", "sale_price": 20}]}),
        ("query_my_orders", {"product_id": "{}"}),
    ]:
        answers = []
        for pid in ("P1005", "NOPE1"):  # P1005 launches on day 5
            filled = {k: (v.format(pid) if isinstance(v, str) else v) for k, v in args.items()}
            if tool == "list_product":
                filled = {"items": [{"product_id": pid, "sale_price": 20}]}
            error = refused(session.call(tool, filled), "unknown_product")
            answers.append({**error, "message": error["message"].replace(pid, "ID")})
        assert answers[0] == answers[1]
    advance_to(session, 10)
    assert ok(session.call("get_product_detail", {"product_id": "P1005"}))["price"] == 12.9


def test_supplier_profile_counts_launched_products_and_hides_future_suppliers() -> None:
    session = new_session()
    profile = ok(session.call("get_supplier_profile", {"supplier_id": "S100"}))
    assert profile["product_count"] == 3  # P1005 launches on day 5
    assert profile["products_by_category"] == {"home_goods": 2, "office": 1}
    assert profile["return_buyer_rate_pct"] == 31.0 and profile["shop_rating"] == 4.8
    refused(
        session.call("get_supplier_profile", {"supplier_id": "S300"}),
        "unknown_supplier",
        "$.supplier_id",
    )
    refused(session.call("list_supplier_products", {"supplier_id": "S999"}), "unknown_supplier")
    advance_to(session, 18)  # day 9: S300's only product launches
    assert ok(session.call("get_supplier_profile", {"supplier_id": "S300"}))["product_count"] == 1


def test_supplier_products_are_those_on_sale_now() -> None:
    session = new_session()
    shop = ok(session.call("list_supplier_products", {"supplier_id": "S200", "sort": "price_asc"}))
    assert ids(shop) == ["P1002", "P1003", "P1004"]
    advance_to(session, 4)
    assert ids(ok(session.call("list_supplier_products", {"supplier_id": "S200"}))) == [
        "P1004",
        "P1003",
    ]


def test_daily_report_through_the_tool() -> None:
    session = new_session()
    report = ok(session.call("get_daily_report"))
    assert report["day"] == 1 and [c["category"] for c in report["categories"]] == list(
        store_market().categories
    )
    assert report["hot_keywords"][0]["keyword"] == "gel pen"
    assert "P1005" not in ids(report["hot_products"])  # not launched yet
    assert report["upcoming_events"][0]["event"] == "618 Shopping Festival"


# --- listing ---------------------------------------------------------------------------------


def test_list_product_lists_a_batch_and_reports_margins() -> None:
    session = new_session()
    result = ok(session.call("list_product", {"items": OPENING_LISTINGS[:2]}))
    assert result["listed"]["rows"] == [["P1000", 16.8, 10.0, 6.8], ["P1001", 12.9, 8.4, 4.5]]
    assert (result["active_listings"], result["listing_cap"]) == (2, 50)
    assert sorted(session.engine.state.listings) == [0, 1]
    assert session.engine.state.listings[0].price == 1680


def item(product_id: str, sale_price: float) -> dict[str, Any]:
    return {"product_id": product_id, "sale_price": sale_price}


@pytest.mark.parametrize(
    ("items", "code", "path"),
    [
        ([item("P1000", 16.8), item("NOPE", 3)], "unknown_product", "$.items[1].product_id"),
        ([item("P1000", 1000.01)], "price_out_of_range", "$.items[0].sale_price"),
        ([item("P1000", 16.8), item("P1000", 17)], "already_listed", "$.items[1].product_id"),
        ([item("P1001", 9), item("P1003", 9), item("P1004", 20)], "listing_limit", "$.items"),
    ],
)
def test_list_product_refusals_name_the_item_and_change_nothing(
    items: list[dict[str, Any]], code: str, path: str
) -> None:
    session = new_session("tools.max_active_listings=3")
    ok(session.call("list_product", {"items": [{"product_id": "P1007", "sale_price": 0.5}]}))
    result = unchanged(session, lambda: session.call("list_product", {"items": items}))
    refused(result, code, path)


def test_list_product_refuses_delisted_products_and_oversized_batches() -> None:
    session = new_session("tools.list_batch_max=2")
    refused(
        session.call("list_product", {"items": OPENING_LISTINGS[:3]}), "invalid_argument", "$.items"
    )
    advance_to(session, 4)
    items = [OPENING_LISTINGS[0], {"product_id": "P1002", "sale_price": 5}]
    refused(
        unchanged(session, lambda: session.call("list_product", {"items": items})),
        "product_unavailable",
        "$.items[1].product_id",
    )


def test_delist_product() -> None:
    session = busy_session(windows=2)
    result = ok(session.call("delist_product", {"product_ids": ["P1002", "P1004"]}))
    assert result == {
        "ok": True,
        "delisted": ["P1002", "P1004"],
        "active_listings": 3,
        "listing_cap": 50,
    }
    assert sorted(session.engine.state.listings) == [0, 1, 3]
    for product_ids, code, path in [
        (["P1000", "P1002"], "not_listed", "$.product_ids[1]"),
        (["P1000", "NOPE"], "unknown_product", "$.product_ids[1]"),
        (["P1000", "P1000"], "duplicate", "$.product_ids"),
    ]:
        call = lambda ids=product_ids: session.call("delist_product", {"product_ids": ids})  # noqa: E731
        refused(unchanged(session, call), code, path)


def test_adjust_price() -> None:
    session = busy_session(windows=3)  # P1001's price change (×1.25) started at hour 30
    result = ok(session.call("adjust_price", {"product_id": "P1001", "sale_price": 14.2}))
    assert result == {
        "ok": True, "product_id": "P1001", "previous_price": 12.9, "sale_price": 14.2,
        "procurement_price": 10.5, "unit_margin": 3.7,
    }  # fmt: skip
    assert session.engine.state.listings[1].price == 1420
    refused(
        unchanged(
            session, lambda: session.call("adjust_price", {"product_id": "P1007", "sale_price": 1})
        ),
        "not_listed",
        "$.product_id",
    )
    refused(
        unchanged(
            session,
            lambda: session.call("adjust_price", {"product_id": "P1001", "sale_price": 1050.01}),
        ),
        "price_out_of_range",
        "$.sale_price",
    )
    ok(session.call("adjust_price", {"product_id": "P1001", "sale_price": 1050}))


def test_review_my_listings_shows_economics_and_alerts() -> None:
    review = ok(busy_session().call("review_my_listings"))
    rows = {row[0]: dict(zip(review["columns"], row, strict=True)) for row in review["rows"]}
    assert list(rows) == ["P1000", "P1001", "P1002", "P1003", "P1004"]
    assert rows["P1001"]["alerts"] == ["price_changed"]
    assert rows["P1002"]["alerts"] == ["supplier_delisted"]
    assert rows["P1003"]["alerts"] == ["shipment_delayed"]
    assert rows["P1000"]["alerts"] == []  # its delay ended at hour 110
    assert (rows["P1001"]["procurement_price"], rows["P1001"]["unit_margin"]) == (10.5, 2.4)
    assert rows["P1004"]["days_listed"] == 5 and rows["P1004"]["orders"] > 0
    assert rows["P1004"]["last_order"].startswith("Day ")


def test_review_flags_listings_without_sales_and_below_cost() -> None:
    session = new_session(market=store_market(demand=0.0))
    ok(
        session.call(
            "list_product",
            {"items": [OPENING_LISTINGS[0], {"product_id": "P1007", "sale_price": 0.1}]},
        )
    )
    advance_to(session, 13)
    alerts = [row[-1] for row in ok(session.call("review_my_listings"))["rows"]]
    assert alerts == [[], ["selling_below_cost"]]
    advance_to(session, 14)  # seven days listed, no order
    alerts = [row[-1] for row in ok(session.call("review_my_listings"))["rows"]]
    assert alerts == [["no_sales_7d"], ["selling_below_cost", "no_sales_7d"]]


def test_query_my_listings_sorts_and_pages() -> None:
    session = busy_session(windows=4)
    by_orders = ok(session.call("query_my_listings", {"sort": "orders"}))
    counts = [row[4] for row in by_orders["rows"]]
    assert counts == sorted(counts, reverse=True) and by_orders["total"] == 5
    by_margin = ok(
        session.call("query_my_listings", {"sort": "unit_margin", "page_size": 2, "page": 1})
    )
    assert ids(by_margin) == ["P1000", "P1004"] and by_margin["pages"] == 3


# --- memory and control ----------------------------------------------------------------------


def test_memory_doc_replace_append_and_read() -> None:
    session = new_session()
    assert ok(session.call("read_memory_doc")) == {
        "ok": True,
        "content": "",
        "bytes": 0,
        "limit_bytes": 262144,
    }
    ok(session.call("write_memory_doc", {"content": "plan: pens\n"}))
    result = ok(session.call("write_memory_doc", {"content": "价格 9.9\n", "mode": "append"}))
    assert result["bytes"] == len("plan: pens\n价格 9.9\n".encode())
    assert ok(session.call("read_memory_doc"))["content"] == "plan: pens\n价格 9.9\n"
    ok(session.call("write_memory_doc", {"content": "fresh", "mode": "replace"}))
    assert session.memory_doc == "fresh"


def test_memory_doc_limit_counts_utf8_bytes() -> None:
    session = new_session("tools.memory_doc_bytes=10")
    ok(session.call("write_memory_doc", {"content": "abcdefghij"}))
    refused(
        unchanged(
            session, lambda: session.call("write_memory_doc", {"content": "k", "mode": "append"})
        ),
        "too_large",
        "$.content",
    )
    refused(
        unchanged(session, lambda: session.call("write_memory_doc", {"content": "价格价格"})),
        "too_large",
    )
    assert session.memory_doc == "abcdefghij"


def test_observation_list_tools_and_end_of_step() -> None:
    session = new_session()
    assert ok(session.call("get_observation"))["observation"] == session.observation()
    listed = ok(session.call("list_tools"))
    assert [row[0] for row in listed["rows"]] == [t.name for t in DECLARED.tools()]
    assert listed["rows"][-1][0] == "end_of_step"
    assert ok(session.call("end_of_step"))["closed_window"] == "Day 1 00:00"
    assert (session.window, session.engine.t, session.window_calls) == (1, 12, 0)


def test_optional_tools_are_off_unless_the_scenario_enables_them() -> None:
    refused(new_session().call("market_brief"), "unknown_tool")
    session = new_session("tools.market_brief=true", "tools.hot_search_terms=true")
    assert len(ok(session.call("list_tools"))["rows"]) == 28
    brief = ok(session.call("market_brief", {"category": "office"}))
    assert brief["rows"] == [["office", 3, 1.1, 3.2, 4.3, 4.4, 30, 20, brief["rows"][0][-1]]]
    assert len(ok(session.call("market_brief"))["rows"]) == 3
    terms = ok(session.call("hot_search_terms", {"category": "toys", "limit": 1}))
    assert [t["keyword"] for t in terms["hot"]] == ["plush toy"]
    assert ok(session.call("hot_search_terms", {"category": "bags"}))["hot"] == []


# --- idempotency and closure -------------------------------------------------------------------

WRITE_CALLS = [
    ("list_product", {"items": [item("P1007", 1)]}, {"items": [item("P1007", 1.1)]}),
    ("delist_product", {"product_ids": ["P1000"]}, {"product_ids": ["P1001"]}),
    ("adjust_price", item("P1000", 15.5), item("P1000", 15.6)),
    ("write_memory_doc", {"content": "x", "mode": "append"}, {"content": "y", "mode": "append"}),
]  # end_of_step's key is scoped to its window: tests/test_hostile_input.py


@pytest.mark.parametrize(("tool", "args", "other"), WRITE_CALLS, ids=[c[0] for c in WRITE_CALLS])
def test_a_repeated_key_replays_without_acting_twice(
    tool: str, args: dict, other: dict | None
) -> None:
    session = busy_session(windows=1)
    first = ok(session.call(tool, {**args, "idempotency_key": "k-1"}))
    after_first = (session.state_hash(), session.memory_doc, session.window)
    assert session.call(tool, {**args, "idempotency_key": "k-1"}) == first
    assert (session.state_hash(), session.memory_doc, session.window) == after_first
    if other is not None:
        refused(session.call(tool, {**other, "idempotency_key": "k-1"}), "idempotency_conflict")
    refused(session.call("query_balance", {"idempotency_key": "k-1"}), "invalid_argument")


def test_keys_survive_a_window_and_are_not_spent_by_refusals() -> None:
    session = new_session()
    key = {"idempotency_key": "list-pens"}
    refused(
        session.call("list_product", {"items": [{"product_id": "NOPE", "sale_price": 1}], **key}),
        "unknown_product",
    )
    first = ok(session.call("list_product", {"items": OPENING_LISTINGS[2:3], **key}))
    ok(session.call("end_of_step"))
    assert session.call("list_product", {"items": OPENING_LISTINGS[2:3], **key}) == first


def closed_session() -> Session:
    """A store closed by its first fine: no balance, a deposit of one fen. Driven by the engine
    alone, so the session's window is still open when the store closes."""
    session = new_session("money.initial_balance_fen=0", "money.initial_deposit_fen=1")
    ok(session.call("list_product", {"items": OPENING_LISTINGS}))
    while not session.engine.state.closed:
        session.engine.advance()
    return session


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("list_product", {"items": [{"product_id": "P1007", "sale_price": 1}]}),
        ("list_product", {"items": [{"product_id": "NOPE", "sale_price": 1}]}),
        ("delist_product", {"product_ids": ["P1000"]}),
        ("adjust_price", {"product_id": "P1000", "sale_price": 20}),
    ],
)
def test_store_actions_answer_store_closed_after_closure(tool: str, args: dict) -> None:
    session = closed_session()
    refused(unchanged(session, lambda: session.call(tool, args)), "store_closed")


def test_reads_memory_and_observation_still_work_after_closure() -> None:
    session = closed_session()
    assert ok(session.call("get_store_snapshot"))["store"] == "closed"
    assert ok(session.call("query_balance"))["deposit"] == 0.0
    ok(session.call("write_memory_doc", {"content": "closed"}))
    assert "The store was closed at Day 1 " in session.observation()
    updates = ok(session.call("query_order_updates", {"event": "store_closed"}))
    assert updates["rows"][0][1:] == [None, None, "store_closed", 0.0]

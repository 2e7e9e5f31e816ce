"""The session with its real tools, on the generated smoke market: windows, the call cap, the
trace, forced closes, the end of the run, closure, and snapshot/restore."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from merchantbench.catalog.market import Market
from merchantbench.catalog.search import SearchIndex
from merchantbench.catalog.synthetic import generate_market
from merchantbench.scenario import load_scenario
from merchantbench.session import Session
from merchantbench.tools.toolset import DECLARED

TRACE_KEYS = {"seq", "window", "t", "tool", "args", "ok", "error", "origin", "forced"}


@cache
def smoke_market() -> tuple[Market, SearchIndex]:
    market = generate_market(load_scenario("smoke"), 1)
    return market, SearchIndex.build(market)


def session_for(*overrides: str, seed: int = 3) -> Session:
    market, index = smoke_market()
    return Session(load_scenario("smoke", overrides=list(overrides)), market, seed, index)


def ok(result: dict[str, Any]) -> dict[str, Any]:
    assert result["ok"], result
    return result


def best_sellers(session: Session, count: int) -> list[dict[str, Any]]:
    """List items for the top-selling products, at 1.6 × their procurement price."""
    found = ok(session.call("search_products", {"sort": "sales_30d", "page_size": count}))
    return [{"product_id": row[0], "sale_price": round(row[3] * 1.6, 2)} for row in found["rows"]]


def not_listed(session: Session, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    listed = {row[0] for row in ok(session.call("query_my_listings"))["rows"]}
    return [item for item in items if item["product_id"] not in listed]


def play_window(session: Session, window: int) -> None:
    """A window of a simple, deterministic agent."""
    if window % 4 == 1:
        items = not_listed(session, best_sellers(session, 5 + window))[-3:]
        ok(session.call("list_product", {"items": items}))
    listed = ok(session.call("query_my_listings"))["rows"]
    if window % 4 == 3 and listed:
        ok(
            session.call(
                "adjust_price", {"product_id": listed[0][0], "sale_price": listed[0][1] + 0.5}
            )
        )
    ok(session.call("write_memory_doc", {"content": f"window {window}\n", "mode": "append"}))
    ok(session.call("end_of_step"))


def test_a_session_opens_at_window_zero_with_brief_and_observation() -> None:
    session = session_for()
    assert (session.window, session.engine.t, session.over) == (0, 0, False)
    assert session.brief().startswith("You run a drop-shipping store")
    assert session.observation().startswith("Day 1 00:00, Sunday 2025-06-01: window 1 of 28.")
    assert session.brief() == session_for().brief() and len(session.tool_schemas()) == len(
        DECLARED.tools()
    )


def test_call_cap_then_only_end_of_step() -> None:
    session = session_for("clock.calls_per_window=3")
    for _ in range(3):
        ok(session.call("query_balance"))
    for tool in ("query_balance", "list_product", "nonexistent_tool"):
        error = session.call(tool, {})["error"]
        assert error["code"] == "limit" and "end_of_step" in error["message"]
    assert session.window_calls == 3
    ok(session.call("end_of_step"))
    assert (session.window, session.window_calls) == (1, 0)
    ok(session.call("query_balance"))


def test_the_trace_records_every_call() -> None:
    session = session_for()
    session.call("search_products", {"query": "pen"})
    session.call("adjust_price", '{"product_id": "NOPE", "sale_price": 2}')
    session.call("query_balance", "{not json")
    session.record_framework_call("memory_tool", {"note": "x"}, ok=True, error=None)
    session.call("end_of_step")
    session.call("query_balance")
    trace = session.trace
    assert all(set(entry) == TRACE_KEYS for entry in trace)
    assert [e["seq"] for e in trace] == [1, 2, 3, 4, 5, 6]
    assert [(e["window"], e["t"], e["tool"]) for e in trace] == [
        (0, 0, "search_products"), (0, 0, "adjust_price"), (0, 0, "query_balance"),
        (0, 0, "memory_tool"), (0, 0, "end_of_step"), (1, 12, "query_balance"),
    ]  # fmt: skip
    assert [(e["ok"], e["error"]) for e in trace] == [
        (True, None), (False, "unknown_product"), (False, "invalid_json"),
        (True, None), (True, None), (True, None),
    ]  # fmt: skip
    assert trace[1]["args"] == {"product_id": "NOPE", "sale_price": 2}
    assert trace[2]["args"] == {"_raw": "{not json"}
    assert [e["origin"] for e in trace] == ["env"] * 3 + ["framework"] + ["env"] * 2
    assert not any(e["forced"] for e in trace)


def test_force_end_of_step_is_recorded_as_forced() -> None:
    session = session_for()
    ok(session.call("query_balance"))
    ok(session.force_end_of_step())
    last = session.trace[-1]
    assert (last["tool"], last["forced"], last["window"], session.window) == (
        "end_of_step",
        True,
        0,
        1,
    )


def test_run_over_after_the_end() -> None:
    session = session_for()
    while not session.over:
        ok(session.call("end_of_step"))
    assert session.engine.state.drained and session.memory.windows_closed == 28
    for tool in ("query_balance", "end_of_step"):
        assert session.call(tool)["error"]["code"] == "run_over"
    assert session.trace[-1]["error"] == "run_over"


def test_a_closed_store_ends_the_run() -> None:
    session = session_for("money.initial_balance_fen=0", "money.initial_deposit_fen=1")
    items = best_sellers(session, 10)
    ok(session.call("list_product", {"items": items}))
    while not session.over:
        ok(session.call("end_of_step"))
    closed_t = session.engine.state.closed_t
    assert closed_t >= 0 and session.memory.windows_closed == closed_t // 12 + 1  # no more windows
    assert session.call("list_product", {"items": items})["error"]["code"] == "run_over"


@pytest.mark.parametrize("restore_into", ["same", "fresh"])
def test_snapshot_restore_mid_run_reproduces_state_and_memory(restore_into: str) -> None:
    session = session_for()
    for window in range(6):
        play_window(session, window)
    keyed = {"items": not_listed(session, best_sellers(session, 20))[-1:], "idempotency_key": "k"}
    ok(session.call("list_product", keyed))
    blob, at_snapshot = session.snapshot(), session.state_hash()
    for window in range(6, 14):
        play_window(session, window)
    final_hash, final_memory = session.state_hash(), session.memory_doc
    assert final_hash != at_snapshot and final_memory.count("window") == 14

    target = session if restore_into == "same" else session_for()
    target.restore(blob)
    assert target.state_hash() == at_snapshot and target.window == 6
    assert target.memory_doc == "".join(f"window {w}\n" for w in range(6))
    replay = target.call("list_product", keyed)
    assert replay["ok"] and target.state_hash() == at_snapshot  # replayed, not listed twice
    for window in range(6, 14):
        play_window(target, window)
    assert (target.state_hash(), target.memory_doc) == (final_hash, final_memory)


def test_two_sessions_with_the_same_calls_agree() -> None:
    first, second = session_for(), session_for()
    for window in range(8):
        play_window(first, window)
        play_window(second, window)
    assert first.state_hash() == second.state_hash()
    assert first.observation() == second.observation()
    assert [e for e in first.trace] == [e for e in second.trace]


def test_every_tool_answers_on_the_generated_market() -> None:
    session = session_for("tools.market_brief=true", "tools.hot_search_terms=true")
    for window in range(10):
        play_window(session, window)
    listed = ok(session.call("query_my_listings"))["rows"]
    product_id, other_id = listed[0][0], listed[1][0]
    supplier_id = ok(session.call("get_product_detail", {"product_id": product_id}))["supplier"]
    args = {
        "get_product_detail": {"product_id": product_id},
        "get_supplier_profile": {"supplier_id": supplier_id["supplier_id"]},
        "list_supplier_products": {"supplier_id": supplier_id["supplier_id"]},
        "list_product": {"items": best_sellers(session, 30)[-1:]},
        "delist_product": {"product_ids": [other_id]},
        "adjust_price": {"product_id": product_id, "sale_price": 99.9},
        "query_order_detail": {"order_id": 1},
        "write_memory_doc": {"content": "done"},
        "search_products": {
            "query": ok(session.call("get_daily_report"))["hot_keywords"][0]["keyword"]
        },
    }
    for declared in session.registry.tools():
        ok(session.call(declared.name, args.get(declared.name, {})))
    assert session.window == 11  # end_of_step came last


def test_the_stock_mirror_follows_purchases_and_restores() -> None:
    """The session's catalog stock, mirrored from new orders, is what the whole stock dict
    says after every window, across a snapshot restored to an earlier window."""
    from merchantbench.sim.suppliers import StockMirror, stock_overrides

    session = session_for()
    ok(session.call("list_product", {"items": best_sellers(session, 10)}))
    mirror, saved = StockMirror(session.market), None
    while not session.over:
        state, t = session.engine.state, session.engine.t
        expected = stock_overrides(session.market, state.stock, t)
        mirrored = mirror.overrides(state.stock, state.orders, t)
        assert mirrored.products.tolist() == expected.products.tolist()
        assert mirrored.units.tolist() == expected.units.tolist()
        shown = session.catalog_view().column("stock")
        assert shown.tolist() == expected.column(session.market).tolist()
        if session.window == 20:
            saved = session.snapshot()
        if session.window == 40 and saved is not None:
            session.restore(saved)
            saved = None
            continue
        session.force_end_of_step()
    state = session.engine.state  # some products were bought from again: updates, not inserts
    assert len(state.stock) >= 2 and len(state.orders) > len(state.stock)

"""The action script: one deterministic store run that exercises every tool.

The script is a generator of `Call`s: it is sent each call's result and chooses the next call
from what it has seen, exactly as an agent would (product ids from search results, prices from
listed procurement prices, limits from the store snapshot), never from the hidden market. Every
call is a plain (tool, JSON-object arguments, idempotency key) triple, so any front end can replay
it. `Call.expect` is the script's own expectation, not sent: `"refused"` marks a probe that must
be refused, `"replay"` a repeat with an idempotency key that must answer as the first call did.

Over the smoke scenario's 28 windows it reads with every read tool, lists several products,
reprices, delists and relists, writes the memory document, uses idempotency keys (a replay and a
conflict), fills a window's call cap, and sends refusals of each kind: unknown tool, unknown
argument, wrong types, bad enum values, unknown ids in reads and writes, a listing already
active, a price out of range, a batch over the listing cap, a memory document over its limit, an
`end_of_step` with arguments, and calls over the cap. In window 9 it calls once every advertised
read tool it has not called so far (none, for today's tools): a read tool added to the
declarations is covered without an edit here, its required ids taken from what the script saw.
"""

from __future__ import annotations

from collections.abc import Collection, Generator
from dataclasses import dataclass, field
from typing import Any

from merchantbench.tools.toolset import DECLARED, END_OF_STEP

__all__ = ["Call", "Script", "action_script"]
NO_SUCH_PRODUCT = "no-such-product"
MARKUP = 1.6  # sale price over procurement price for new listings
SWEEP_WINDOW = 9  # after every scripted first use (window 8 reads the orders)


@dataclass(frozen=True, slots=True)
class Call:
    """One tool call of the script (what an adapter sends) and what the script expects."""

    tool: str
    args: dict[str, Any] = field(default_factory=dict)
    idempotency_key: str | None = None
    expect: str | None = None  # None, "refused" or "replay"; never sent


Result = dict[str, Any]
Script = Generator[Call, Result, None]


def rows_of(result: Result) -> list[dict[str, Any]]:
    """A table result's rows as dicts by column name; [] for a refusal or another shape."""
    columns, rows = result.get("columns"), result.get("rows")
    if not result.get("ok") or not isinstance(columns, list) or not isinstance(rows, list):
        return []
    return [dict(zip(columns, row, strict=False)) for row in rows if isinstance(row, list)]


@dataclass
class Seen:
    """What the script has learnt from public results so far."""

    candidates: list[dict[str, Any]] = field(default_factory=list)  # search rows, best sellers
    delisted: list[str] = field(default_factory=list)
    called: set[str] = field(default_factory=set)  # every tool the script has called

    def item(self, row: dict[str, Any], markup: float = MARKUP) -> dict[str, Any]:
        return {"product_id": row["product_id"], "sale_price": round(row["price"] * markup, 2)}


def action_script(tools: Collection[str]) -> Script:
    """The script; `tools` are the names the run advertises (optional tools are used if on).

    It never ends by itself: the driver stops it when the run is over.
    """
    seen = Seen()
    window = 0
    while True:
        yield from _tracked(_window(window, list(tools), seen), seen.called)
        key = f"end-{window}" if window % 2 else None
        yield Call(END_OF_STEP, {}, key)
        window += 1


def _tracked(script: Script, called: set[str]) -> Script:
    """`script` passed through, noting the name of each tool it calls."""
    try:
        call = next(script)
        while True:
            called.add(call.tool)
            call = script.send((yield call))
    except StopIteration:
        return


def _window(w: int, tools: list[str], seen: Seen) -> Script:
    yield from _routine(w)
    if w == 0:
        yield from _opening(seen)
        yield from _refusals(seen)
    if w == 1:
        yield from _tour(tools)
    if w % 3 == 2:
        yield from _reprice(w)
    if w == 4:
        yield from _delist(seen)
    if w == 6:
        yield from _relist(seen)
    if w in (8, 20):
        yield from _orders()
    if w == 5:
        yield from _fill_the_cap()
    if w == SWEEP_WINDOW:
        yield from _unscripted_reads(tools, seen)


def _routine(w: int) -> Script:
    """Every window: the observation, the accounts, what changed, a note."""
    yield Call("get_observation")
    yield Call("query_balance")
    yield Call("get_store_snapshot")
    yield Call("query_order_updates", {"page_size": 20})
    yield Call("query_supply_chain_anomalies", {"scope": "new"})
    note = {"content": f"window {w}: checked\n", "mode": "append"}
    yield Call("write_memory_doc", note, f"memo-{w}")


def _opening(seen: Seen) -> Script:
    """Window 0: research the market, then list six best sellers."""
    report = yield Call("get_daily_report")
    for page in (1, 2):
        found = yield Call("search_products", {"sort": "sales_30d", "page": page, "page_size": 50})
        seen.candidates += [row for row in rows_of(found) if row.get("stock") != "out_of_stock"]
    keywords = (report.get("hot_keywords") or []) if report.get("ok") else []
    query = str(keywords[0]) if keywords and isinstance(keywords[0], str) else "box"
    yield Call("search_products", {"query": query, "sort": "price_asc", "max_ship_hours": 48})
    if not seen.candidates:
        return
    first = seen.candidates[0]
    yield Call("get_product_detail", {"product_id": first["product_id"]})
    yield Call("get_supplier_profile", {"supplier_id": first["supplier_id"]})
    yield Call(
        "list_supplier_products", {"supplier_id": first["supplier_id"], "sort": "price_desc"}
    )
    items = [seen.item(row) for row in seen.candidates[:6]]
    yield Call("list_product", {"items": items}, "open-6")
    yield Call("list_product", {"items": items}, "open-6", expect="replay")
    yield Call("list_product", {"items": items[:1]}, "open-6", expect="refused")  # conflict


def _refusals(seen: Seen) -> Script:
    """Window 0, six listings active: one probe of each kind of refusal."""
    refused = "refused"
    yield Call("no_such_tool", {}, expect=refused)
    yield Call("search_products", {"colour": "red"}, expect=refused)
    yield Call("search_products", {"page": "two"}, expect=refused)
    yield Call("search_products", {"min_price": 10, "max_price": 5}, expect=refused)
    yield Call("query_my_orders", {"status": "lost"}, expect=refused)
    yield Call("get_product_detail", {"product_id": NO_SUCH_PRODUCT}, expect=refused)
    yield Call("get_supplier_profile", {"supplier_id": NO_SUCH_PRODUCT}, expect=refused)
    yield Call("query_order_detail", {"order_id": 10**9}, expect=refused)
    yield Call(END_OF_STEP, {"now": True}, expect=refused)
    bad = {"product_id": NO_SUCH_PRODUCT, "sale_price": 9.9}
    yield Call("list_product", {"items": [bad]}, "bad-id", expect=refused)
    yield Call("adjust_price", bad, expect=refused)
    yield Call("delist_product", {"product_ids": [NO_SUCH_PRODUCT]}, expect=refused)
    if len(seen.candidates) < 8:
        return
    listed, unlisted = seen.candidates[0], seen.candidates[6]
    typo = {"product_id": unlisted["product_id"], "sale_price": "cheap"}
    yield Call("list_product", {"items": [typo]}, expect=refused)
    yield Call("list_product", {"items": [seen.item(listed)]}, expect=refused)  # already listed
    yield Call("list_product", {"items": [seen.item(unlisted, 200.0)]}, expect=refused)
    twice = [seen.item(unlisted), seen.item(unlisted)]
    yield Call("list_product", {"items": twice}, expect=refused)
    yield Call("delist_product", {"product_ids": [unlisted["product_id"]]}, expect=refused)
    yield Call("adjust_price", seen.item(unlisted), expect=refused)  # not listed
    yield from _over_the_listing_cap(seen)
    memory = yield Call("read_memory_doc")
    limit = memory.get("limit_bytes")
    if isinstance(limit, int) and 0 < limit <= 1 << 24:
        yield Call("write_memory_doc", {"content": "x" * (limit + 1)}, expect="refused")


def _over_the_listing_cap(seen: Seen) -> Script:
    """A batch one listing over the cap (all or nothing: none of it may be listed)."""
    store = yield Call("get_store_snapshot")
    cap, active = store.get("listing_cap"), store.get("active_listings")
    if not isinstance(cap, int) or not isinstance(active, int):
        return
    spare = seen.candidates[6 : 6 + cap - active + 1]
    if len(spare) == cap - active + 1:
        yield Call("list_product", {"items": [seen.item(r) for r in spare]}, expect="refused")


def _tour(tools: list[str]) -> Script:
    """Window 1: the tools an agent reads once, and the optional ones the scenario turns on."""
    yield Call("list_tools")
    yield Call("query_platform_rules")
    yield Call("read_memory_doc")
    yield Call("review_my_listings")
    yield Call("query_my_listings", {"sort": "orders"})
    if "market_brief" in tools:
        yield Call("market_brief")
    if "hot_search_terms" in tools:
        yield Call("hot_search_terms", {"limit": 10})


def _unscripted_reads(tools: list[str], seen: Seen) -> Script:
    """Every advertised read tool not called yet, once, in the order advertised; an id it
    requires is taken from the first product the script found."""
    found = seen.candidates[0] if seen.candidates else {}
    for name in tools:
        if name in seen.called or name not in DECLARED or DECLARED.get(name).kind != "read":
            continue
        schema = DECLARED.get(name).parameters_schema
        required = [p for p in schema.get("required", ()) if p in found]
        yield Call(name, {p: found[p] for p in required})


def _reprice(w: int) -> Script:
    """Raise the price of the best-selling listing by 5 %."""
    listings = rows_of((yield Call("query_my_listings", {"sort": "orders"})))
    if listings:
        top = listings[0]
        price = round(float(top["sale_price"]) * 1.05, 2)
        yield Call("adjust_price", {"product_id": top["product_id"], "sale_price": price}, f"p{w}")


def _delist(seen: Seen) -> Script:
    """Window 4: take the two oldest listings down."""
    listings = rows_of((yield Call("query_my_listings", {"sort": "listed_at"})))
    seen.delisted = [row["product_id"] for row in listings[:2]]
    if seen.delisted:
        yield Call("delist_product", {"product_ids": seen.delisted}, "delist-4")


def _relist(seen: Seen) -> Script:
    """Window 6: list one delisted product again and two well-rated ones."""
    found = yield Call("search_products", {"sort": "rating", "min_stock": "low", "page_size": 20})
    active = {row["product_id"] for row in rows_of((yield Call("query_my_listings")))}
    fresh = [row for row in rows_of(found) if row["product_id"] not in active][:2]
    back = [row for row in seen.candidates if row["product_id"] in seen.delisted[:1]]
    items = [seen.item(row) for row in back + fresh if row["product_id"] not in active]
    if items:
        yield Call("list_product", {"items": items}, "relist-6")


def _orders() -> Script:
    """Look at the orders from every side."""
    orders = rows_of((yield Call("query_my_orders", {"page_size": 20})))
    yield Call("query_my_orders", {"status": "open", "page_size": 5})
    yield Call("query_open_orders", {"page_size": 10})
    yield Call("query_cash_pipeline")
    yield Call("query_store_performance", {"days": 7})
    yield Call("query_product_sales_stats", {"days": 7})
    if orders:
        yield Call("query_order_detail", {"order_id": orders[0]["order_id"]})
        yield Call("query_product_sales_stats", {"product_id": orders[0]["product_id"]})
        yield Call("query_order_updates", {"product_id": orders[0]["product_id"]})


def _fill_the_cap() -> Script:
    """Window 5: spend the calls left, then two calls over the cap (a read and a write)."""
    store = yield Call("get_store_snapshot")
    left = store.get("calls_left_in_window")
    if not isinstance(left, int) or not 0 <= left <= 10_000:
        return
    for _ in range(left):
        yield Call("query_balance")
    yield Call("query_balance", expect="refused")
    note = {"content": "over the cap\n", "mode": "append"}
    yield Call("write_memory_doc", note, "memo-over-cap", expect="refused")

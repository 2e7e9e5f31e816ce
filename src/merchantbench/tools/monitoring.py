"""Supplier and order monitoring tools (docs/design.md §8): supply-chain anomalies on the store's
listings, order lists, order updates since the previous window and one order's history.

Orders are shown as `context.order_status` derives them: from what has happened only.
"""

from __future__ import annotations

import weakref
from collections import Counter
from typing import TYPE_CHECKING, Annotated, Any, Literal

import numpy as np
from pydantic import Field

from merchantbench.catalog.event_log import changes_between
from merchantbench.refusals import Refusal
from merchantbench.tools.context import (
    OPEN_STATUSES,
    Page,
    PageSize,
    ProductId,
    clock_text,
    event_fine,
    event_name,
    is_late,
    open_orders,
    order_history,
    order_status,
    page_of,
    paged,
    product_of,
    rmb,
    table,
    updates_since,
)
from merchantbench.tools.declare import tool
from merchantbench.tools.errors import ToolError

if TYPE_CHECKING:
    from merchantbench.catalog.market import Market
    from merchantbench.sim.orders import Order
    from merchantbench.tools.context import StoreContext

OrderStatus = Literal[
    "open", "awaiting_shipment", "shipped", "delivered", "late", "settled", "bad_review",
    "return_refund", "returnless_refund", "cancelled", "stockout", "insufficient_balance",
]  # fmt: skip
OrderEvent = Literal[
    "placed", "late", "shipped", "delivered", "settled", "bad_review", "return_refund",
    "returnless_refund", "cancelled", "stockout", "insufficient_balance", "store_closed",
]  # fmt: skip
ORDER_COLUMNS = (
    "order_id", "product_id", "placed_at", "sale_price", "cost", "status", "late", "fines",
)  # fmt: skip
ANOMALY_NAMES = {
    "price_change": ("price_changed", "price_restored"),
    "delisting": ("supplier_delisted", "supplier_relisted"),
    "delay": ("shipment_delayed", "delay_over"),
}


def order_row(ctx: StoreContext, order: Order) -> list[Any]:
    t = ctx.engine.t
    return [
        order.order_id, str(ctx.market.product_ids[order.product]), clock_text(order.placed_t),
        rmb(order.price), rmb(order.cost), order_status(order, t), is_late(order, t),
        rmb(order.fines),
    ]  # fmt: skip


def anomaly_rows(ctx: StoreContext, scope: str) -> list[list[Any]]:
    """Supplier events on the store's active listings: started since the last window (with
    recoveries) for `new`, or in force now for `now`. Never an end hour still to come.

    Rows go by product, then hour; at one hour starts before recoveries, each by channel name
    (`new`), or channels in their usual order (`now`).
    """
    t, listed = ctx.engine.t, sorted(ctx.engine.state.listings)
    if scope == "new":
        listings, since = ctx.engine.state.listings, ctx.previous_window_t
        key = (t, since, tuple([(p, listings[p].price) for p in listed]))
        last = _LAST_NEW.get(ctx.market)
        if last is None or last[0] != key:
            found = changes_between(ctx.market, np.array(listed, dtype=np.int64), since, t)
            rows = [_anomaly_row(ctx, p, ch, hour, int(ended)) for p, ch, hour, ended in found]
            _LAST_NEW[ctx.market] = last = (key, rows)
        return [list(row) for row in last[1]]  # copies: an answer's rows are the agent's
    rows = []
    for product in listed:
        active = sorted(ctx.engine.suppliers.active_events(product, t), key=lambda e: e[1])
        rows += [_anomaly_row(ctx, product, channel, start, 0) for channel, start, _ in active]
    return rows


# Per market, the last `new` rows and what they were made of: a window asks for them twice (its
# observation, then the agent's query_supply_chain_anomalies at the same hour). They depend only
# on the market, the two hours and the listed products with their sale prices (a supplier's
# state is a function of the market and the hour).
_LAST_NEW: weakref.WeakKeyDictionary[
    Market, tuple[tuple[int, int, tuple[tuple[int, int], ...]], list[list[Any]]]
] = weakref.WeakKeyDictionary()


def _anomaly_row(ctx: StoreContext, product: int, channel: str, hour: int, ended: int) -> list[Any]:
    supplier = ctx.engine.suppliers.state(product, ctx.engine.t)
    starts_price = channel == "price_change" and not ended
    previous = rmb(int(ctx.market.base_price_fen[product])) if starts_price else None
    listing = ctx.engine.state.listings[product]
    return [
        str(ctx.market.product_ids[product]), ANOMALY_NAMES[channel][ended], clock_text(hour),
        rmb(supplier.price_fen), previous, supplier.ship_hours, rmb(listing.price),
    ]  # fmt: skip


ANOMALY_COLUMNS = (
    "product_id", "anomaly", "since", "procurement_price", "previous_price", "ship_hours",
    "sale_price",
)  # fmt: skip


@tool(kind="read", group="monitoring")
def query_supply_chain_anomalies(
    ctx: StoreContext, scope: Literal["new", "now"] = "new"
) -> dict[str, Any]:
    """Supplier problems on the products you have listed.

    `new`: events that began since the previous window, and recoveries. `now`: every event
    in force. Anomalies: price_changed (procurement_price is the new price, previous_price the
    usual one; placed orders keep their price), supplier_delisted (new orders become stockouts
    with a fine until you delist), shipment_delayed (ship_hours is the supplier's current ship
    time; orders not shipped within {orders.late_after_hours} h are late and fined);
    recoveries: price_restored, supplier_relisted, delay_over. How long an event lasts is not
    known in advance.

    Args:
        scope: new (since the previous window) or now (in force at this hour).
    """
    rows = anomaly_rows(ctx, scope)
    return {"scope": scope, "at": clock_text(ctx.engine.t), **table(ANOMALY_COLUMNS, rows)}


def _status_matches(wanted: str, status: str, late: bool) -> bool:
    if wanted == status:
        return True
    return (wanted == "late" and late) or (wanted == "open" and status in OPEN_STATUSES)


@tool(kind="read", group="monitoring")
def query_my_orders(
    ctx: StoreContext,
    status: OrderStatus | None = None,
    product_id: ProductId | None = None,
    page: Page = 1,
    page_size: PageSize = 20,
) -> dict[str, Any]:
    """Your orders, newest first, optionally filtered by status and product.

    Statuses: awaiting_shipment, shipped, delivered (awaiting settlement), then one outcome:
    settled, bad_review, return_refund, returnless_refund, cancelled, stockout (no supply),
    insufficient_balance (you could not pay the supplier). `open` matches any of the first
    three; `late` any order flagged late. Columns: order_id, product_id, placed_at, sale_price,
    cost (paid to the supplier; 0 when not procured), status, late, fines (RMB).

    Args:
        status: Only orders with this status.
        product_id: Only orders for this product.
        page: Page number, from 1.
        page_size: Rows per page (at most {tools.page_size_max}).
    """
    product = None if product_id is None else product_of(ctx, product_id, "$.product_id")
    t = ctx.engine.t
    chosen = [
        order
        for order in reversed(ctx.engine.state.orders)
        if (product is None or order.product == product)
        and (status is None or _status_matches(status, order_status(order, t), is_late(order, t)))
    ]
    shown, fields = page_of(chosen, page, page_size)
    rows = [order_row(ctx, order) for order in shown]
    return {"at": clock_text(t), **table(ORDER_COLUMNS, rows), **fields}


@tool(kind="read", group="monitoring")
def query_open_orders(
    ctx: StoreContext, page: Page = 1, page_size: PageSize = 50
) -> dict[str, Any]:
    """Orders still running, oldest first, with counts by status.

    Running means awaiting shipment, shipped, or delivered and awaiting settlement.
    `hours_open` is the time since the order was placed; an order not shipped
    {orders.late_after_hours} h after it was placed is late (fined once).

    Args:
        page: Page number, from 1.
        page_size: Rows per page (at most {tools.page_size_max}).
    """
    t = ctx.engine.t
    rows = [[*order_row(ctx, o), t - o.placed_t] for o in open_orders(ctx.engine.state)]
    counts = Counter(row[5] for row in rows)
    counts["late"] = sum(1 for row in rows if row[6])
    columns = (*ORDER_COLUMNS, "hours_open")
    return {
        "at": clock_text(t),
        "counts": dict(sorted(counts.items())),
        **paged(columns, rows, page, page_size),
    }


@tool(kind="read", group="monitoring")
def query_order_updates(
    ctx: StoreContext,
    event: OrderEvent | None = None,
    product_id: ProductId | None = None,
    page: Page = 1,
    page_size: PageSize = 50,
) -> dict[str, Any]:
    """What happened to your orders since the previous window: each transition with its hour.

    Events: placed (paid to the supplier), late, shipped, delivered, settled (sale price
    credited), bad_review, return_refund, returnless_refund, cancelled, stockout,
    insufficient_balance, store_closed. `fine` is the fine the rules attach to the event (RMB).
    `counts` covers all events of the period, whatever the filters.

    Args:
        event: Only this kind of event.
        product_id: Only events of orders for this product.
        page: Page number, from 1.
        page_size: Rows per page (at most {tools.page_size_max}).
    """
    product = None if product_id is None else product_of(ctx, product_id, "$.product_id")
    since = max(ctx.previous_window_t, 0)
    state, rows = ctx.engine.state, []
    counts: Counter[str] = Counter()
    for hour, order_id, raw in updates_since(state, ctx.previous_window_t):
        name = event_name(raw)
        counts[name] += 1
        order = state.orders[order_id - 1] if order_id else None  # 0: the store itself
        if event not in (None, name) or (
            product is not None and (order is None or order.product != product)
        ):
            continue
        pid = None if order is None else str(ctx.market.product_ids[order.product])
        rows.append(
            [clock_text(hour), order_id or None, pid, name, rmb(event_fine(ctx.scenario, name))]
        )
    columns = ("at", "order_id", "product_id", "event", "fine")
    counted = dict(sorted(counts.items()))
    return {"since": clock_text(since), "counts": counted, **paged(columns, rows, page, page_size)}


@tool(kind="read", group="monitoring")
def query_order_detail(ctx: StoreContext, order_id: Annotated[int, Field(ge=1)]) -> dict[str, Any]:
    """One order and its history so far (each event with its hour).

    Args:
        order_id: The order's number, as order lists show it.
    """
    orders = ctx.engine.state.orders
    if order_id > len(orders):
        raise ToolError(Refusal.UNKNOWN_ORDER, f"no order with id {order_id}", "$.order_id")
    order, t = orders[order_id - 1], ctx.engine.t
    row = dict(zip(ORDER_COLUMNS, order_row(ctx, order), strict=True))
    history = [[clock_text(hour), name] for hour, name in order_history(order, t)]
    title = str(ctx.market.titles[order.product])
    return {**row, "title": title, "history": table(("at", "event"), history)}

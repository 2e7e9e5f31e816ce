"""Cash-flow tools (docs/design.md §8): accounts, a store snapshot, the platform rules, the cash
pipeline, store performance and per-product sales statistics. All read; all from what has happened.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter, defaultdict
from typing import TYPE_CHECKING, Any

from merchantbench.sim.ledger import Reason
from merchantbench.tools.context import (
    OPEN_STATUSES,
    Days,
    Page,
    PageSize,
    ProductId,
    clock_text,
    event_name,
    is_late,
    open_orders,
    order_status,
    paged,
    product_of,
    rmb,
    table,
    updates_since,
)
from merchantbench.tools.declare import tool
from merchantbench.tools.observation import system_brief
from merchantbench.tools.status import ACCOUNTS, accounts, net_assets_at, store_status

if TYPE_CHECKING:
    from merchantbench.sim.orders import Order
    from merchantbench.tools.context import StoreContext


@tool(kind="read", group="cash")
def query_balance(ctx: StoreContext) -> dict[str, Any]:
    """Your four cash accounts and net assets, RMB.

    balance: spendable cash (supplier payments come from it); deposit: security deposit
    (fines beyond the balance come from it; at 0 the store closes); in_transit: paid to
    suppliers for orders not yet delivered; receivable: sale prices of delivered orders not
    yet settled. net_assets = balance + deposit + in_transit + receivable: your score.
    """
    return {"at": clock_text(ctx.engine.t), **accounts(ctx)}


@tool(kind="read", group="cash")
def get_store_snapshot(ctx: StoreContext) -> dict[str, Any]:
    """The store at a glance: time, cash, rating, listings, open orders and calls left."""
    status = store_status(ctx)
    return {
        "at": status.at,
        "date": status.date,
        "store": status.store,
        **{name: getattr(status, name) for name in ACCOUNTS},
        "rating": round(status.rating, 3),
        "stars": status.stars,
        "rating_multiplier": status.rating_multiplier,
        "active_listings": status.active_listings,
        "listing_cap": status.listing_cap,
        "open_orders": status.open_orders,
        "calls_left_in_window": status.calls_left_in_window,
    }


@tool(kind="read", group="cash")
def query_platform_rules(ctx: StoreContext) -> dict[str, Any]:
    """The platform rules: the same text as your system brief.

    Horizon and windows, starting cash, fines, store closure, listing cap and price bounds,
    rating rules, order lifecycle, supplier events, categories, time format and limits.
    """
    return {"rules": system_brief(ctx)}


@tool(kind="read", group="cash")
def query_cash_pipeline(ctx: StoreContext) -> dict[str, Any]:
    """Where your money is in the order pipeline now: amounts and order counts by stage.

    awaiting_shipment and shipped hold procurement costs (together: in_transit);
    delivered_awaiting_settlement holds sale prices (receivable), credited to you when each
    order settles, {orders.resolution_hours.0:days}-{orders.resolution_hours.1:days} days after
    delivery (less any refund). `late` counts orders among them flagged late.
    """
    t = ctx.engine.t
    stages: dict[str, list[int]] = {
        "awaiting_shipment": [0, 0],
        "shipped": [0, 0],
        "delivered_awaiting_settlement": [0, 0],
    }
    late = 0
    for order in open_orders(ctx.engine.state):
        status = order_status(order, t)
        stage = "delivered_awaiting_settlement" if status == "delivered" else status
        stages[stage][0] += 1
        stages[stage][1] += order.price if status == "delivered" else order.cost
        late += is_late(order, t)
    rows = [[stage, count, rmb(amount)] for stage, (count, amount) in stages.items()]
    return {"at": clock_text(t), **table(("stage", "orders", "amount"), rows), "late": late}


def _orders_since(ctx: StoreContext, start: int) -> list[Order]:
    orders = ctx.engine.state.orders  # appended in hour order
    return orders[bisect_left(orders, start, key=lambda o: o.placed_t) :]


def _fines_since(ctx: StoreContext, start: int) -> int:
    entries = ctx.engine.state.ledger.entries  # appended in hour order
    first = bisect_left(entries, start, key=lambda e: e.t)
    return sum(-(e.d_balance + e.d_deposit) for e in entries[first:] if e.reason == Reason.FINE)


@tool(kind="read", group="cash")
def query_store_performance(ctx: StoreContext, days: Days = 7) -> dict[str, Any]:
    """How the store did over the last `days` days up to now.

    orders: customer orders received, of which procured; gmv: sale prices of procured orders;
    fines: fines charged; events: order transitions in the period (settled, late, cancelled,
    return_refund, …); net_assets_change; ratings: the published rating and stars of each
    day (a day's rating is published at the end of the day before, from outcomes settled up to
    then). Money in RMB.

    Args:
        days: Length of the period in days, ending now (1-365).
    """
    t = ctx.engine.t
    start = max(t - 24 * days, 0)
    placed = _orders_since(ctx, start)
    procured = [o for o in placed if o.procured]
    events = Counter(event_name(u[2]) for u in updates_since(ctx.engine.state, start))
    samples = ctx.engine.state.samples
    first_day, today = max(t // 24 - days + 1, 0), t // 24
    ratings = [
        [d + 1, round(float(samples.daily_rating[d]), 3), int(samples.daily_stars[d])]
        for d in range(first_day, min(today, len(samples.daily_rating) - 1) + 1)
    ]
    return {
        "from": clock_text(start),
        "to": clock_text(t),
        "orders": len(placed),
        "procured": len(procured),
        "gmv": rmb(sum(o.price for o in procured)),
        "fines": rmb(_fines_since(ctx, start)),
        "events": dict(sorted(events.items())),
        "net_assets_change": rmb(ctx.engine.state.ledger.accounts.net_assets
                                 - net_assets_at(ctx, start)),
        "ratings": table(("day", "rating", "stars"), ratings),
    }  # fmt: skip


SALES_COLUMNS = (
    "product_id", "listed_now", "orders", "procured", "gmv", "gross_margin", "fines",
    "late", "settled", "bad_review", "return_refund", "returnless_refund", "cancelled",
    "stockout", "insufficient_balance", "open",
)  # fmt: skip


def _product_stats(ctx: StoreContext, product: int, orders: list[Order]) -> list[Any]:
    t = ctx.engine.t
    statuses = Counter(order_status(o, t) for o in orders)
    procured = [o for o in orders if o.procured]
    kept = [o for o in procured if order_status(o, t) != "cancelled"]
    outcome_counts = [statuses[name] for name in SALES_COLUMNS[8:15]]
    open_count = sum(statuses[s] for s in OPEN_STATUSES)
    return [
        str(ctx.market.product_ids[product]), product in ctx.engine.state.listings,
        len(orders), len(procured), rmb(sum(o.price for o in procured)),
        rmb(sum(o.price - o.cost for o in kept)), rmb(sum(o.fines for o in orders)),
        sum(is_late(o, t) for o in orders), *outcome_counts, open_count,
    ]  # fmt: skip


@tool(kind="read", group="cash")
def query_product_sales_stats(
    ctx: StoreContext,
    days: Days = 7,
    product_id: ProductId | None = None,
    page: Page = 1,
    page_size: PageSize = 50,
) -> dict[str, Any]:
    """Per product: orders placed in the last `days` days and what has become of them so far.

    Columns: product_id, listed_now, orders (customer orders), procured, gmv (sale prices of
    procured orders), gross_margin (sale − procurement of procured, not cancelled orders, before
    refunds), fines (charged so far on these orders), late, then counts by current status:
    settled, bad_review, return_refund, returnless_refund, cancelled, stockout,
    insufficient_balance, open (still running). Most orders first. Money in RMB.

    Args:
        days: Orders placed in this many days up to now (1-365).
        product_id: Only this product.
        page: Page number, from 1.
        page_size: Rows per page (at most {tools.page_size_max}).
    """
    only = None if product_id is None else product_of(ctx, product_id, "$.product_id")
    start = max(ctx.engine.t - 24 * days, 0)
    by_product: defaultdict[int, list[Order]] = defaultdict(list)
    for order in _orders_since(ctx, start):
        if only is None or order.product == only:
            by_product[order.product].append(order)
    rows = [_product_stats(ctx, p, orders) for p, orders in by_product.items()]
    rows.sort(key=lambda row: (-row[2], row[0]))
    return {"from": clock_text(start), **paged(SALES_COLUMNS, rows, page, page_size)}

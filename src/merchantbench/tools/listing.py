"""Listing and pricing tools (docs/design.md §8): put products on sale, take them down, reprice,
review.

Actions go through the engine, which validates a whole request before changing anything; its
refusals come back with the JSON path of the argument at fault (`$.items[3].sale_price`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

import numpy as np
from pydantic import Field

from merchantbench.money import fen as to_fen
from merchantbench.money import rmb, rmb_list
from merchantbench.sim.actions import ActionRejected
from merchantbench.tools.context import (
    Page,
    PageSize,
    Price,
    ProductId,
    clock_text,
    ensure_open,
    paged,
    product_of,
    public_ids,
    refusal,
    table,
)
from merchantbench.tools.declare import ToolArgs, tool
from merchantbench.tools.render import Limit

if TYPE_CHECKING:
    from merchantbench.sim.state import Listing
    from merchantbench.sim.suppliers import SupplierState
    from merchantbench.tools.context import StoreContext

NO_SALES_HOURS = 7 * 24


class ListingItem(ToolArgs):
    """One product to put on sale and its sale price."""

    product_id: ProductId = Field(description="Id of a product on sale in the catalog.")
    sale_price: Price = Field(description="Your sale price to customers, RMB (2 decimals).")


def _item_path(exc: ActionRejected) -> str:
    if exc.index is None:
        return "$.items"
    field = "sale_price" if exc.code == "price_out_of_range" else "product_id"
    return f"$.items[{exc.index}].{field}"


def _margin_rows(
    ctx: StoreContext, products: list[int], suppliers: list[SupplierState] | None = None
) -> list[list[Any]]:
    """[product_id, sale price, procurement price now, unit margin] of listed products, RMB
    (each rmb_list() of its fen, a column at a time); `suppliers` their supplier states if
    known."""
    t, book, listings = ctx.engine.t, ctx.engine.suppliers, ctx.engine.state.listings
    if suppliers is None:
        suppliers = [book.state(p, t) for p in products]
    prices = [listings[p].price for p in products]
    costs = [supplier.price_fen for supplier in suppliers]
    columns = (
        public_ids(ctx.market, products),
        rmb_list(prices),
        rmb_list(costs),
        rmb_list([price - cost for price, cost in zip(prices, costs, strict=True)]),
    )
    return list(map(list, zip(*columns, strict=True)))


def _slots(ctx: StoreContext) -> dict[str, int]:
    cap = ctx.scenario.tools.max_active_listings
    return {"active_listings": len(ctx.engine.state.listings), "listing_cap": cap}


@tool(kind="write", group="listing")
def list_product(
    ctx: StoreContext,
    items: Annotated[
        list[ListingItem], Field(min_length=1), Limit(max_length="tools.list_items_max")
    ],
) -> dict[str, Any]:
    """Put products on sale in your store at your chosen prices (all or nothing).

    Customers start ordering from this hour. For each order you pay the supplier its current
    procurement price at once, so keep cash on hand. At most {tools.max_active_listings}
    active listings; a sale price must be 0.01 to {demand.max_price_multiple_of_cost} × the
    procurement price. A new listing's exposure starts low and builds up over about
    {demand.exposure_ramp_days} days; delisting and listing again restarts it. If any item is
    refused (unknown product, already listed, delisted by its supplier, price out of range, no
    free slot) nothing is listed and the error path names the item.

    Args:
        items: 1 to {tools.list_items_max} products with their sale prices.

    Returns:
        `listed`: product_id, sale_price, procurement_price, unit_margin (RMB); the slots used.
    """
    ensure_open(ctx)
    pairs = [
        (product_of(ctx, item.product_id, f"$.items[{k}].product_id"), to_fen(item.sale_price))
        for k, item in enumerate(items)
    ]
    try:
        ctx.engine.list_products(pairs)
    except ActionRejected as exc:
        raise refusal(exc, _item_path(exc)) from None
    columns = ("product_id", "sale_price", "procurement_price", "unit_margin")
    listed = table(columns, _margin_rows(ctx, [product for product, _ in pairs]))
    return {"listed": listed, **_slots(ctx)}


@tool(kind="write", group="listing")
def delist_product(
    ctx: StoreContext,
    product_ids: Annotated[
        list[ProductId], Field(min_length=1), Limit(max_length="tools.max_active_listings")
    ],
) -> dict[str, Any]:
    """Take listings down (all or nothing); no new orders arrive for them from this hour.

    Orders already placed run to their end as usual. Delist a product whose supplier has
    delisted it at once: every order for it is a stockout with a fine.

    Args:
        product_ids: Ids of products listed in your store, each once.
    """
    ensure_open(ctx)
    products = [product_of(ctx, pid, f"$.product_ids[{k}]") for k, pid in enumerate(product_ids)]
    try:
        ctx.engine.delist_products(products)
    except ActionRejected as exc:
        path = "$.product_ids" if exc.index is None else f"$.product_ids[{exc.index}]"
        raise refusal(exc, path) from None
    return {"delisted": list(product_ids), **_slots(ctx)}


@tool(kind="write", group="listing")
def adjust_price(ctx: StoreContext, product_id: ProductId, sale_price: Price) -> dict[str, Any]:
    """Change the sale price of one of your listings; it applies to orders from this hour.

    Exposure is kept (unlike delisting and listing again). Orders already placed keep their
    price. Higher prices earn more per order but bring fewer orders.

    Args:
        product_id: Id of a product listed in your store.
        sale_price: New sale price, RMB, 0.01 to {demand.max_price_multiple_of_cost} × the
            procurement price.
    """
    ensure_open(ctx)
    product = product_of(ctx, product_id, "$.product_id")
    listing = ctx.engine.state.listings.get(product)
    old = None if listing is None else rmb(listing.price)
    try:
        ctx.engine.set_price(product, to_fen(sale_price))
    except ActionRejected as exc:
        path = "$.sale_price" if exc.code == "price_out_of_range" else "$.product_id"
        raise refusal(exc, path) from None
    [(_, price, cost, margin)] = _margin_rows(ctx, [product])
    return {
        "product_id": product_id,
        "previous_price": old,
        "sale_price": price,
        "procurement_price": cost,
        "unit_margin": margin,
    }


def _alerts(t: int, supplier: SupplierState, listing: Listing) -> list[str]:
    # One test after another rather than a table of (name, flag) pairs: asked per listing on
    # every review, and the table cost more than the tests.
    alerts = []
    if not supplier.available:
        alerts.append("supplier_delisted")
    if supplier.delayed:
        alerts.append("shipment_delayed")
    if supplier.price_changed:
        alerts.append("price_changed")
    if listing.price <= supplier.price_fen:
        alerts.append("selling_below_cost")
    if t - listing.listed_t >= NO_SALES_HOURS and listing.last_order_t < t - NO_SALES_HOURS:
        alerts.append("no_sales_7d")
    return alerts


def _by_listing_time(ctx: StoreContext) -> list[tuple[int, Listing]]:
    listings = ctx.engine.state.listings
    return sorted(listings.items(), key=lambda kv: (kv[1].listed_t, kv[1].spell))


@tool(kind="read", group="listing")
def review_my_listings(ctx: StoreContext) -> dict[str, Any]:
    """Review every active listing with its economics and alerts, oldest listing first.

    Columns: product_id, title, sale_price, procurement_price (supplier's price now),
    unit_margin (sale − procurement, RMB, before fines), orders (customer orders since
    listed), days_listed, last_order ("Day N HH:00" or null), alerts: supplier_delisted (every
    order is a stockout: delist it), shipment_delayed (orders risk being late), price_changed
    (the supplier changed its price; check the margin), selling_below_cost, no_sales_7d.
    """
    t = ctx.engine.t
    rows = []
    listed = _by_listing_time(ctx)
    products = [product for product, _ in listed]
    suppliers = [ctx.engine.suppliers.state(product, t) for product in products]
    margins = _margin_rows(ctx, products, suppliers)
    titles = ctx.market.titles[np.asarray(products, dtype=np.int64)].tolist()
    for (_, listing), supplier, title, (pid, price, cost, margin) in zip(
        listed, suppliers, titles, margins, strict=True
    ):
        last = clock_text(listing.last_order_t) if listing.last_order_t >= 0 else None
        rows.append([
            pid, str(title), price, cost, margin, listing.orders,
            (t - listing.listed_t) // 24, last, _alerts(t, supplier, listing),
        ])  # fmt: skip
    columns: tuple[str, ...] = (
        "product_id", "title", "sale_price", "procurement_price", "unit_margin", "orders",
        "days_listed", "last_order", "alerts",
    )  # fmt: skip
    rivals = ctx.engine.rivals
    if rivals is not None:  # a market of several merchants (docs/design.md §11): what a buyer sees
        columns = (*columns, "other_sellers", "lowest_other_price")
        for row, offers in zip(rows, rivals.contested(products), strict=True):
            row.extend([len(offers), rmb(offers[0].price_fen) if offers else None])
    return {"at": clock_text(t), **table(columns, rows), **_slots(ctx)}


@tool(kind="read", group="listing")
def query_my_listings(
    ctx: StoreContext,
    sort: Literal["listed_at", "orders", "unit_margin"] = "listed_at",
    page: Page = 1,
    page_size: PageSize = 50,
) -> dict[str, Any]:
    """A compact, paged table of your active listings.

    Columns: product_id, sale_price, procurement_price, unit_margin (RMB), orders, listed_at.

    Args:
        sort: listed_at (oldest first), orders (most first) or unit_margin (highest first).
        page: Page number, from 1.
        page_size: Rows per page (at most {tools.page_size_max}).
    """
    listed = _by_listing_time(ctx)
    margins = _margin_rows(ctx, [product for product, _ in listed])
    rows = [
        [*margin, listing.orders, clock_text(listing.listed_t)]
        for (_, listing), margin in zip(listed, margins, strict=True)
    ]
    if sort == "orders":
        rows.sort(key=lambda row: -row[4])
    elif sort == "unit_margin":
        rows.sort(key=lambda row: -row[3])
    columns = (
        "product_id",
        "sale_price",
        "procurement_price",
        "unit_margin",
        "orders",
        "listed_at",
    )
    return {**paged(columns, rows, page, page_size), **_slots(ctx)}

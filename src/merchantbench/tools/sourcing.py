"""Product sourcing tools (docs/design.md §8): the daily market report, catalog search, product and
supplier pages. Everything shown is public: what a wholesale site shows any shopper now.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

import numpy as np
from pydantic import Field

from merchantbench.catalog.daily_report import daily_report
from merchantbench.catalog.search import SearchFilters, SearchPage, SortKey
from merchantbench.catalog.stock_band import AvailableBand, band_floor, stock_band, stock_bands
from merchantbench.catalog.view import catalog_view_at
from merchantbench.money import rmb_list
from merchantbench.refusals import Refusal
from merchantbench.sim.suppliers import stock_now
from merchantbench.tools.context import (
    Page,
    PageSize,
    ProductId,
    clock_text,
    date_of,
    paged,
    plain_texts,
    product_of,
    rmb,
    table,
)
from merchantbench.tools.declare import tool
from merchantbench.tools.errors import ToolError

if TYPE_CHECKING:
    from merchantbench.catalog.market import CatalogView, Market
    from merchantbench.tools.context import StoreContext

Category = Literal[
    "office", "womenswear", "pet_garden", "appliances", "home_decor",
    "home_goods", "cleaning", "toys", "bags", "sports",
]  # fmt: skip
SupplierId = Annotated[str, Field(min_length=1, max_length=64)]
Rating = Annotated[float, Field(ge=0, le=5)]
Hours = Annotated[int, Field(ge=0, le=10_000)]

PRODUCT_COLUMNS = (
    "product_id", "title", "category", "price", "stock", "ship_hours", "logistics_hours",
    "rating", "supplier_id", "supplier_rating", "sales_30d",
)  # fmt: skip


@dataclass(frozen=True)
class _SupplierIndex:
    index_of: dict[str, int]
    products: np.ndarray  # product indices grouped by supplier, ascending within a supplier
    offsets: np.ndarray  # supplier s owns products[offsets[s]:offsets[s + 1]]


_SUPPLIERS: weakref.WeakKeyDictionary[Market, _SupplierIndex] = weakref.WeakKeyDictionary()


def _supplier_index(market: Market) -> _SupplierIndex:
    found = _SUPPLIERS.get(market)
    if found is None:
        order = np.argsort(market.supplier, kind="stable")
        offsets = np.searchsorted(market.supplier[order], np.arange(market.n_suppliers + 1))
        ids = {str(s): k for k, s in enumerate(market.supplier_ids)}
        found = _SUPPLIERS[market] = _SupplierIndex(ids, order, offsets)
    return found


def _supplier_products(ctx: StoreContext, supplier_id: str) -> tuple[int, np.ndarray]:
    """A supplier's launched products; a supplier with none is unknown (not there yet)."""
    index = _supplier_index(ctx.market)
    s = index.index_of.get(supplier_id)
    if s is not None:
        owned = index.products[index.offsets[s] : index.offsets[s + 1]]
        launched = owned[ctx.market.launch_day[owned] <= ctx.engine.t // 24]
        if len(launched):
            return s, launched
    raise ToolError(
        Refusal.UNKNOWN_SUPPLIER, f"no supplier with id {supplier_id!r}", "$.supplier_id"
    )


def shown_rating(ratings: np.ndarray) -> list[float]:
    """Ratings as tools show them, `round(r, 2)` of each, in one pass.

    For a float32 rating r, r × 100 is exact in float64 (24 + 7 significant bits), so rint of
    it is the correctly rounded half-to-even count of hundredths that `round` finds, and the
    division by 100 gives the same nearest double."""
    if ratings.dtype != np.float32:
        return [round(r, 2) for r in ratings.astype(np.float64).tolist()]
    return (np.rint(ratings.astype(np.float64) * 100.0) / 100.0).tolist()


# Per market, the cells of a product's row that never change (id, title, category, logistics
# hours, rating, supplier, supplier rating), made on a product's first showing: agents page
# through the same products day after day.
_FIXED_CELLS: weakref.WeakKeyDictionary[Market, dict[int, tuple[Any, ...]]] = (
    weakref.WeakKeyDictionary()
)
_FIXED_LOCK = threading.Lock()


def _fixed_cells(market: Market, products: list[int]) -> list[tuple[Any, ...]]:
    known = _FIXED_CELLS.get(market)
    if known is None:
        with _FIXED_LOCK:
            known = _FIXED_CELLS.setdefault(market, {})
    try:
        return [known[p] for p in products]  # the usual case: every product shown before
    except KeyError:
        pass
    missing = [p for p in dict.fromkeys(products) if p not in known]
    i = np.asarray(missing, dtype=np.int64)
    s = market.supplier[i]
    columns = (
        plain_texts(market.product_ids[i]),
        plain_texts(market.titles[i]),
        [market.categories[c] for c in market.category[i].tolist()],
        market.logistics_hours[i].tolist(),
        shown_rating(market.historical_avg_rating[i]),
        plain_texts(market.supplier_ids[s]),
        shown_rating(market.shop_rating[s]),
    )
    known.update(zip(missing, zip(*columns, strict=True), strict=True))
    return [known[p] for p in products]


def product_rows(market: Market, view: CatalogView, products: Any) -> list[list[Any]]:
    """Public table rows (PRODUCT_COLUMNS) of products as the view shows them now."""
    # Column by column: one gather per column, then plain Python values (tolist), instead of
    # a numpy scalar look-up per cell. Prices are rmb_list() of each: fen / 100 is already
    # the two-decimal RMB value.
    i = np.asarray(products, dtype=np.int64)
    return [
        [pid, title, category, price, stock, ship, logistics, rating, supplier, shop, sales]
        for (
            pid,
            title,
            category,
            logistics,
            rating,
            supplier,
            shop,
        ), price, stock, ship, sales in zip(
            _fixed_cells(market, i.tolist()),
            rmb_list(view.take("price_fen", i).tolist()),
            stock_bands(view.take("stock", i)),
            view.take("ship_hours", i).tolist(),
            view.take("sales_30d", i).tolist(),
            strict=True,
        )
    ]


@tool(kind="read", group="sourcing")
def get_daily_report(ctx: StoreContext) -> dict[str, Any]:
    """Today's market report: category trends, hot and rising keywords, hot products, calendar.

    Built from market-wide orders of the 7 completed days before today (never today or later),
    once per day. `categories`: orders_7d, sales_index (100 = the category's average week before
    the run) and week_over_week_pct. `hot_keywords` / `rising_keywords`: product-type keywords
    (the words products of one type share in their titles; search them with search_products).
    `hot_products`: a table of visible products with the most orders in the last 7 days.
    `upcoming_events`: shopping festivals and logistics pauses in the next 45 days.
    """
    day = ctx.engine.t // 24
    view = ctx.catalog_view() if ctx.engine.t % 24 == 0 else catalog_view_at(ctx.market, day * 24)
    return daily_report(ctx.market, day, view, start_date=ctx.scenario.clock.start_date)


@tool(kind="read", group="sourcing")
def search_products(
    ctx: StoreContext,
    query: Annotated[str, Field(max_length=200)] = "",
    category: Category | None = None,
    min_price: Annotated[float, Field(ge=0)] | None = None,
    max_price: Annotated[float, Field(ge=0)] | None = None,
    min_supplier_rating: Rating | None = None,
    min_product_rating: Rating | None = None,
    max_ship_hours: Hours | None = None,
    max_logistics_hours: Hours | None = None,
    min_stock: AvailableBand | None = None,
    sort: SortKey = "relevance",
    page: Page = 1,
    page_size: PageSize = 20,
) -> dict[str, Any]:
    """Search the wholesale catalog by keywords, with filters, a sort order and paging.

    A product matches when every query word is in its title or category (plurals and case do
    not matter); an empty query browses everything. Only products on sale now are found.
    Columns: product_id, title, category, price (current procurement price, RMB), stock
    (supplier availability: in_stock, low = under 50 units, out_of_stock), ship_hours
    (supplier's current hours to ship), logistics_hours (courier hours to the buyer), rating
    (product's historical average, 1-5), supplier_id, supplier_rating (shop rating, 1-5),
    sales_30d (market-wide orders, last 30 days).
    Tip: search a hot keyword, then compare price, ratings and hours of its substitutes.

    Args:
        query: Keywords, e.g. "storage box"; empty to browse.
        category: Only this category.
        min_price: Lowest procurement price, RMB.
        max_price: Highest procurement price, RMB.
        min_supplier_rating: Lowest supplier shop rating (1-5).
        min_product_rating: Lowest product historical rating (1-5).
        max_ship_hours: Most supplier ship hours.
        max_logistics_hours: Most logistics hours.
        min_stock: Least availability: low (anything in stock) or in_stock (50+ units).
        sort: relevance (best match; sales_30d when browsing), price_asc, price_desc, rating,
            sales_30d (most first) or ship_speed (ship + logistics hours, fastest first).
        page: Page number, from 1.
        page_size: Rows per page (at most {tools.page_size_max}).
    """
    if min_price is not None and max_price is not None and max_price < min_price:
        raise ToolError(Refusal.INVALID_ARGUMENT, "max_price is below min_price", "$.max_price")
    if category is not None and category not in ctx.market.categories:
        return {"query": query, **paged(PRODUCT_COLUMNS, [], page, page_size)}  # none here
    view = ctx.catalog_view()
    filters = SearchFilters(
        min_price, max_price, min_supplier_rating, min_product_rating,
        max_ship_hours, max_logistics_hours,
        None if min_stock is None else band_floor(min_stock), category,
    )  # fmt: skip
    found = ctx.search_index.search(query, view, filters, sort, page, page_size)
    rows = product_rows(ctx.market, view, found.products)
    return {"query": query, **table(PRODUCT_COLUMNS, rows), **_page_fields(found)}


def _page_fields(found: SearchPage) -> dict[str, int]:
    return {
        "page": found.page,
        "page_size": found.page_size,
        "pages": found.pages,
        "total": found.total,
    }


@tool(kind="read", group="sourcing")
def get_product_detail(ctx: StoreContext, product_id: ProductId) -> dict[str, Any]:
    """Everything public about one product, its supplier, and your listing of it if any.

    Money in RMB; `price` is the current procurement price (what you pay the supplier per
    order), `max_sale_price` the highest sale price the platform allows
    ({demand.max_price_multiple_of_cost} × price).
    `status` is `available` or `delisted_by_supplier` (orders for a delisted product end as
    stockouts with a fine). `stock` is the supplier's availability: in_stock, low (under 50
    units) or out_of_stock. `listed_since` is the date the product appeared on the market.

    Args:
        product_id: The product's id, as search results show it.
    """
    i = product_of(ctx, product_id, "$.product_id")
    m, t = ctx.market, ctx.engine.t
    supplier = ctx.engine.suppliers.state(i, t)
    s = int(m.supplier[i])
    end = min(t // 24, m.days) + m.history_days  # Market.sales_30d for this product alone
    sales = int(m.market_sales_cum[end, i]) - int(m.market_sales_cum[max(end - 30, 0), i])
    detail: dict[str, Any] = {
        "product_id": product_id,
        "title": str(m.titles[i]),
        "category": m.categories[int(m.category[i])],
        "status": "available" if supplier.available else "delisted_by_supplier",
        "price": rmb(supplier.price_fen),
        "max_sale_price": rmb(ctx.engine.max_price_fen(i)),
        "stock": stock_band(stock_now(m, i, ctx.engine.state.stock, t)),
        "ship_hours": supplier.ship_hours,
        "logistics_hours": int(m.logistics_hours[i]),
        "rating": round(float(m.historical_avg_rating[i]), 2),
        "sales_30d": sales,
        "listed_since": date_of(ctx.scenario.clock.start_date, int(m.launch_day[i])).isoformat(),
        "supplier": _supplier_summary(m, s),
        "my_listing": None,
    }
    listing = ctx.engine.state.listings.get(i)
    if listing is not None:
        detail["my_listing"] = {
            "sale_price": rmb(listing.price),
            "listed_at": clock_text(listing.listed_t),
            "orders": listing.orders,
        }
    rivals = ctx.engine.rivals
    if rivals is not None:  # a market of several merchants (docs/design.md §11): what a buyer sees
        offers = rivals.of(i)
        detail["other_sellers"] = {
            "count": len(offers),
            "offers": [{"sale_price": rmb(o.price_fen), "stars": o.stars} for o in offers],
        }
    return detail


def _supplier_summary(market: Market, s: int) -> dict[str, Any]:
    return {
        "supplier_id": str(market.supplier_ids[s]),
        "name": str(market.supplier_names[s]),
        "shop_rating": round(float(market.shop_rating[s]), 2),
        "return_buyer_rate_pct": round(100 * float(market.return_buyer_rate[s]), 1),
        "age_years": round(float(market.supplier_age_years[s]), 1),
    }


@tool(kind="read", group="sourcing")
def get_supplier_profile(ctx: StoreContext, supplier_id: SupplierId) -> dict[str, Any]:
    """A supplier's shop: trust signals and what it sells.

    shop_rating (1-5), return_buyer_rate_pct (share of buyers who order again: higher means
    satisfied customers), age_years (years on the platform), product_count (products on the
    market now, including any its supplier has paused) and their count per category.

    Args:
        supplier_id: The supplier's id, as product pages and search results show it.
    """
    s, products = _supplier_products(ctx, supplier_id)
    m = ctx.market
    counts = np.bincount(m.category[products], minlength=len(m.categories))
    by_category = {m.categories[c]: int(counts[c]) for c in np.flatnonzero(counts)}
    return {
        **_supplier_summary(m, s),
        "product_count": len(products),
        "products_by_category": by_category,
    }


@tool(kind="read", group="sourcing")
def list_supplier_products(
    ctx: StoreContext,
    supplier_id: SupplierId,
    sort: SortKey = "sales_30d",
    page: Page = 1,
    page_size: PageSize = 20,
) -> dict[str, Any]:
    """The products a supplier has on sale now, as a table like search_products.

    Args:
        supplier_id: The supplier's id.
        sort: Same orders as search_products; relevance means sales_30d here.
        page: Page number, from 1.
        page_size: Rows per page (at most {tools.page_size_max}).
    """
    _, products = _supplier_products(ctx, supplier_id)
    view = ctx.catalog_view()
    # Browsing a view that shows only this supplier's products reuses the search's sort orders.
    owned = np.zeros(ctx.market.n_products, dtype=bool)
    owned[products] = True
    shop_view = view.restricted(owned)
    found = ctx.search_index.search("", shop_view, SearchFilters(), sort, page, page_size)
    rows = product_rows(ctx.market, view, found.products)
    return {"supplier_id": supplier_id, **table(PRODUCT_COLUMNS, rows), **_page_fields(found)}

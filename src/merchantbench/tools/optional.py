"""Optional sourcing tools, off in `paper`: a market overview by category and the hot search
terms. A scenario switches them on (`tools.market_brief`, `tools.hot_search_terms`); both are
built from the same public data as the daily report and search.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import numpy as np
from pydantic import Field

from merchantbench.catalog.daily_report import keyword_trends
from merchantbench.tools.context import clock_text, rmb, table
from merchantbench.tools.declare import tool
from merchantbench.tools.sourcing import Category

if TYPE_CHECKING:
    from merchantbench.catalog.market import CatalogView, Market
    from merchantbench.tools.context import StoreContext

MARKET_COLUMNS = (
    "category", "products", "price_p25", "price_median", "price_p75", "median_rating",
    "median_ship_hours", "median_logistics_hours", "orders_30d",
)  # fmt: skip


def _category_row(market: Market, view: CatalogView, c: int) -> list[Any]:
    on_sale = np.flatnonzero(view.visible & (market.category == c))
    name = market.categories[c]
    if len(on_sale) == 0:
        return [name, 0, None, None, None, None, None, None, 0]
    p25, p50, p75 = np.percentile(view.price_fen[on_sale], (25, 50, 75), method="nearest")
    return [
        name, len(on_sale), rmb(int(p25)), rmb(int(p50)), rmb(int(p75)),
        round(float(np.median(market.historical_avg_rating[on_sale])), 2),
        int(np.median(view.ship_hours[on_sale])),
        int(np.median(market.logistics_hours[on_sale])),
        int(view.sales_30d[on_sale].sum()),
    ]  # fmt: skip


@tool(kind="read", group="sourcing", optional=True)
def market_brief(ctx: StoreContext, category: Category | None = None) -> dict[str, Any]:
    """An overview of the products on sale now, by category.

    Per category: how many products, procurement price quartiles (RMB), median product rating,
    median ship and logistics hours, and market-wide orders of the last 30 days.

    Args:
        category: Only this category; all categories when omitted.
    """
    market, view = ctx.market, ctx.catalog_view()
    wanted = range(len(market.categories))
    if category is not None:
        wanted = range(0)
        if category in market.categories:
            k = market.categories.index(category)
            wanted = range(k, k + 1)
    rows = [_category_row(market, view, c) for c in wanted]
    return {"at": clock_text(ctx.engine.t), **table(MARKET_COLUMNS, rows)}


@tool(kind="read", group="sourcing", optional=True)
def hot_search_terms(
    ctx: StoreContext,
    category: Category | None = None,
    limit: Annotated[int, Field(ge=1, le=30)] = 10,
) -> dict[str, Any]:
    """The keywords shoppers buy most this week, and those rising fastest.

    Keywords are product types (words shared by the titles of similar products); orders_7d
    counts market-wide orders in the 7 completed days before today; week_over_week_pct
    compares them with the week before.

    Args:
        category: Only keywords of this category.
        limit: How many keywords in each list.
    """
    day = ctx.engine.t // 24
    in_market = category is None or category in ctx.market.categories
    hot, rising = keyword_trends(ctx.market, day, category, limit) if in_market else ([], [])
    return {"day": day + 1, "hot": hot, "rising": rising}

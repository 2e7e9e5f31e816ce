"""A toy shop and a handful of tools declared on it, to exercise the tool framework.

The tools mimic the shapes of the real ones (a batch of structured items, bounded prices,
Literal sort orders, paging, an optional tool, a model as result) without any simulation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from merchantbench.tools import IdempotencyRecord, ToolArgs, ToolError, ToolRegistry, tool

CATALOG = {"p1": 12.5, "p2": 30.0, "p3": 7.25, "p4": 99.0}


@dataclass
class FakeShop:
    """Listings, a balance and the idempotency store; `writes` counts tool bodies that acted."""

    listings: dict[str, float] = field(default_factory=dict)
    balance: float = 2000.0
    idempotency_store: dict[str, IdempotencyRecord] = field(default_factory=dict)
    writes: int = 0

    def state(self) -> tuple[dict[str, float], float, dict[str, IdempotencyRecord], int]:
        """Everything a call could change, for nothing-changed assertions."""
        return dict(self.listings), self.balance, dict(self.idempotency_store), self.writes


class Listing(ToolArgs):
    """One product to put on sale."""

    product_id: str = Field(min_length=1, max_length=16, description="Catalog product id.")
    sale_price: float = Field(ge=0.01, le=1e6, description="Sale price in RMB.")


class Balance(BaseModel):
    balance: float
    listings: int


@tool(kind="write", group="listing")
def list_items(
    ctx: FakeShop, items: Annotated[list[Listing], Field(min_length=1, max_length=5)]
) -> dict[str, Any]:
    """Put products on sale.

    Every product must exist in the catalog; the batch is all or nothing.

    Args:
        items: Products and their sale prices,
            at most five per call.

    Returns:
        The ids now listed.

    Raises:
        ToolError: not_found when a product id is not in the catalog.
    """
    for index, item in enumerate(items):
        if item.product_id not in CATALOG:
            path = f"$.items[{index}].product_id"
            raise ToolError("not_found", f"no product {item.product_id}", path)
    for item in items:
        ctx.listings[item.product_id] = item.sale_price
    ctx.writes += 1
    return {"listed": [item.product_id for item in items]}


@tool(kind="write", group="listing")
def set_price(
    ctx: FakeShop, product_id: str, price: Annotated[float, Field(ge=0.01, le=1e6)]
) -> dict[str, Any]:
    """Change the sale price of a listed product.

    Args:
        product_id: Id of a product you have listed.
        price: New sale price in RMB.
    """
    if product_id not in ctx.listings:
        raise ToolError("not_listed", f"{product_id} is not listed", "$.product_id")
    ctx.listings[product_id] = price
    ctx.writes += 1
    return {"product_id": product_id, "price": price}


@tool(kind="read", group="sourcing")
def search(
    ctx: FakeShop,
    query: Annotated[str, Field(min_length=1, max_length=100)],
    sort: Literal["relevance", "price_asc", "price_desc"] = "relevance",
    page: Annotated[int, Field(ge=1, le=50)] = 1,
    max_price: Annotated[float, Field(gt=0)] | None = None,
) -> dict[str, Any]:
    """Search the catalog.

    Args:
        query: Words to look for.
        sort: Order of the results.
        page: 1-based page number.
        max_price: Only products at most this expensive.
    """
    ceiling = float("inf") if max_price is None else max_price
    hits = [(pid, price) for pid, price in CATALOG.items() if price <= ceiling]
    if sort != "relevance":
        hits.sort(key=lambda hit: hit[1], reverse=sort == "price_desc")
    return {"columns": ["product_id", "price"], "rows": [list(hit) for hit in hits], "page": page}


@tool(kind="read", group="cash")
def query_balance(ctx: FakeShop) -> Balance:
    """Show the balance and the number of listings."""
    return Balance(balance=ctx.balance, listings=len(ctx.listings))


@tool(kind="read", group="monitoring", optional=True)
def forecast_demand(ctx: FakeShop, days: Annotated[int, Field(ge=1, le=30)] = 7) -> dict[str, Any]:
    """Forecast orders for the coming days.

    Args:
        days: How many days ahead.
    """
    return {"days": days, "orders": [0] * days}


def shop_registry() -> ToolRegistry:
    """All example tools, core first, the optional forecast last."""
    return ToolRegistry([list_items, set_price, search, query_balance, forecast_demand])

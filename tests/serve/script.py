"""One action script, played through any adapter: `call(tool, arguments) -> result`. It reads
only tool answers, so every adapter that passes the same answers plays the same run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Call = Callable[[str, dict[str, Any]], dict[str, Any]]


def _column(result: dict[str, Any], name: str) -> list[Any]:
    index = result["columns"].index(name)
    return [row[index] for row in result["rows"]]


def play_window(call: Call, window: int) -> None:
    """This window's calls, end_of_step excluded."""
    call("query_balance", {})
    if window == 0:
        found = call("search_products", {"sort": "sales_30d", "page_size": 8})
        ids, prices = _column(found, "product_id"), _column(found, "price")
        items = [
            {"product_id": p, "sale_price": round(c * 1.6 + 1, 2)}
            for p, c in zip(ids, prices, strict=True)
        ]
        assert call("list_product", {"items": items})["ok"]
    elif window % 6 == 3:
        listings = call("query_my_listings", {})
        if listings.get("rows"):
            first = listings["rows"][0][listings["columns"].index("product_id")]
            call("adjust_price", {"product_id": first, "sale_price": 39.9})
        call("query_my_orders", {"status": "open"})
    elif window % 4 == 1:
        call("get_daily_report", {})
        call("write_memory_doc", {"content": f"window {window}\n", "mode": "append"})

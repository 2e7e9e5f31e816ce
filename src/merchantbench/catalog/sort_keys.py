"""The orders a catalog search can sort by (`search_products`' `sort`), apart from the search
index so that the CLI's help can list them without importing it."""

from __future__ import annotations

from typing import Literal, get_args

SortKey = Literal["relevance", "price_asc", "price_desc", "rating", "sales_30d", "ship_speed"]
SORT_KEYS: tuple[str, ...] = get_args(SortKey)

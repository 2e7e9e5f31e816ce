"""The market: every product and supplier of one (scenario, seed), as immutable numpy arrays.

A `Market` is what the simulation core reads. It is made by the synthetic generator
(`catalog.synthetic`) or the real-catalog loader (`catalog.loader`), and saved to / loaded from a
directory of `.npy` files (`catalog.cache`). Index `i` (0 … n_products−1) is a product's position
in every per-product array; `product_ids[i]` is its public id.

Day indices: day `d` of the run is 0 … days−1. Per-day matrices carry `history_days` rows of
market history before day 0 (so `sales_30d` is meaningful on day 1): row `d + history_days`
holds day `d`.

Public fields may be shown to an agent. Hidden fields (marked below) never may.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Protocol

import numpy as np

CHANNELS: tuple[str, ...] = ("price_change", "delisting", "delay")

# Names of every hidden per-product field; a test scans all tool outputs for them.
HIDDEN_FIELDS: tuple[str, ...] = (
    "p_ref_fen",
    "elasticity",
    "demand",
    "type_id",
    "risk_cancel",
    "risk_return",
    "risk_refund_only",
    "risk_bad_review",
    "is_trap",
    "hazard",
    "stock_capacity",
    "stock_refill",
    "event_product",
    "event_start",
    "event_end",
    "event_value",
)


@dataclass(frozen=True, eq=False)
class SupplierEvents:
    """All supplier events of one channel, sorted by (product, start).

    `value` is the price factor (price_change), unused (delisting) or extra ship hours (delay).
    `offsets[i]:offsets[i+1]` are product i's events (CSR layout). Hidden.
    """

    product: np.ndarray  # int32
    start: np.ndarray  # int32, hour (may exceed the horizon)
    end: np.ndarray  # int32, exclusive
    value: np.ndarray  # float32
    offsets: np.ndarray  # int64, length n_products + 1


@dataclass(frozen=True, eq=False)
class Market:
    # --- shape --------------------------------------------------------------------------------
    n_products: int
    n_suppliers: int
    days: int
    history_days: int
    categories: tuple[str, ...]
    # --- products, public ---------------------------------------------------------------------
    product_ids: np.ndarray  # str (object/unicode), unique
    titles: np.ndarray  # str
    category: np.ndarray  # int16 index into categories
    supplier: np.ndarray  # int32 index into supplier arrays
    base_price_fen: np.ndarray  # int64, procurement cost without events
    ship_hours: np.ndarray  # int16, supplier ship hours without events
    logistics_hours: np.ndarray  # int16
    historical_avg_rating: np.ndarray  # float32, 1..5
    launch_day: np.ndarray  # int32, day index; negative = on the market before day 0
    market_sales_cum: np.ndarray  # int32 [history_days + days + 1, n]: cumulative realised sales
    # --- products, hidden ---------------------------------------------------------------------
    p_ref_fen: np.ndarray  # int64, reference retail price (profit-maximising price)
    elasticity: np.ndarray  # float32
    demand: np.ndarray  # float32 [history_days + days, n]: D[i, d] at reference price
    type_id: np.ndarray  # int32, product type (titles share keywords within a type)
    risk_cancel: np.ndarray  # float32 probabilities per order
    risk_return: np.ndarray
    risk_refund_only: np.ndarray
    risk_bad_review: np.ndarray
    is_trap: np.ndarray  # bool
    stock_capacity: np.ndarray  # int32
    stock_refill: np.ndarray  # int32 units per hour
    events: dict[str, SupplierEvents]  # keyed by CHANNELS
    # --- suppliers, public --------------------------------------------------------------------
    supplier_ids: np.ndarray  # str
    supplier_names: np.ndarray  # str
    shop_rating: np.ndarray  # float32
    return_buyer_rate: np.ndarray  # float32, 0..1
    supplier_age_years: np.ndarray  # float32
    supplier_product_count: np.ndarray  # int32
    # --- market-wide calendars ----------------------------------------------------------------
    hourly_weights: np.ndarray  # float64 [n_categories, 24], rows sum to 1
    ship_extra_hours: np.ndarray  # int16 [days]: extra supplier ship hours (Spring Festival)
    type_names: np.ndarray = field(default_factory=lambda: np.array([], dtype=object))  # str
    index_of: dict[str, int] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if not self.index_of:
            ids = self.product_ids
            keys = ids.tolist() if ids.dtype.kind == "U" else [str(pid) for pid in ids]
            object.__setattr__(self, "index_of", dict(zip(keys, range(len(keys)), strict=True)))
        self.validate_shapes()

    def validate_shapes(self) -> None:
        n, rows = self.n_products, self.history_days + self.days
        expect = {
            "demand": (rows, n),
            "market_sales_cum": (rows + 1, n),
            "hourly_weights": (len(self.categories), 24),
            "ship_extra_hours": (self.days,),
        }
        for name, shape in expect.items():
            got = getattr(self, name).shape
            if got != shape:
                raise ValueError(f"market field {name} has shape {got}, expected {shape}")
        for f in fields(self):
            value = getattr(self, f.name)
            per_product = isinstance(value, np.ndarray) and value.ndim == 1
            if per_product and f.name not in _NOT_PER_PRODUCT and len(value) != n:
                raise ValueError(f"market field {f.name} has length {len(value)}, expected {n}")

    def demand_row(self, day: int) -> np.ndarray:
        """D[·, day] for all products (hidden)."""
        return self.demand[day + self.history_days]

    def sales_30d(self, day: int) -> np.ndarray:
        """Realised market orders over the 30 completed days before `day`, all products."""
        end = day + self.history_days
        return self.market_sales_cum[end] - self.market_sales_cum[max(end - 30, 0)]


_NOT_PER_PRODUCT = {
    "supplier_ids",
    "supplier_names",
    "shop_rating",
    "return_buyer_rate",
    "supplier_age_years",
    "supplier_product_count",
    "ship_extra_hours",
    "type_names",
}


# The per-product columns of a catalog view, with their dtypes.
VIEW_COLUMNS: dict[str, np.dtype] = {
    "visible": np.dtype(bool),  # launched by this day and not delisted by its supplier now
    "price_fen": np.dtype(np.int64),  # current procurement price
    "ship_hours": np.dtype(np.int32),  # current supplier ship hours (delay events included)
    "stock": np.dtype(np.int64),  # the supplier's current stock (our own purchases drain it)
    "sales_30d": np.dtype(np.int64),  # market orders over the 30 completed days before today
}


class ViewColumns(Protocol):
    """Where a view's columns come from: a whole column, or a few products of it."""

    def column(self, name: str) -> np.ndarray:
        """The column `name` over every product, as a new array the caller owns."""
        ...

    def take(self, name: str, products: np.ndarray) -> np.ndarray:
        """`column(name)[products]`, without building the whole column."""
        ...


class CatalogView:
    """The catalog as any shopper sees it at one hour: public, time-varying vectors over all
    products (`VIEW_COLUMNS`). Made by `catalog.view.catalog_view_at`, read by search and the
    tools.

    Each column is a read-only array, built on first use; `take(name, products)` reads some
    products of a column without building it, since search and the tools mostly read a few
    hundred products of the ≈ 100,000 (both give the same values).
    """

    __slots__ = ("__weakref__", "_built", "_source", "day", "hour")

    def __init__(self, hour: int, day: int, source: ViewColumns) -> None:
        self.hour = hour
        self.day = day
        self._source = source
        self._built: dict[str, np.ndarray] = {}

    def column(self, name: str) -> np.ndarray:
        """The column `name` (a key of `VIEW_COLUMNS`) over every product, read-only."""
        found = self._built.get(name)
        if found is None:
            found = self._built[name] = self._source.column(name)
            found.setflags(write=False)
        return found

    def take(self, name: str, products: np.ndarray) -> np.ndarray:
        """The column `name` at `products` (indices), as `column(name)[products]`."""
        found = self._built.get(name)
        if found is not None:
            return found[products]
        return self._source.take(name, np.asarray(products, dtype=np.int64))

    def restricted(self, shown: np.ndarray) -> CatalogView:
        """The same view with only the products where `shown` is True visible."""
        return CatalogView(self.hour, self.day, _Restricted(self, shown))

    @property
    def visible(self) -> np.ndarray:
        """bool [n]: False for products not yet launched or currently delisted."""
        return self.column("visible")

    @property
    def price_fen(self) -> np.ndarray:
        """int64 [n]: the current procurement price."""
        return self.column("price_fen")

    @property
    def ship_hours(self) -> np.ndarray:
        """int32 [n]: the current supplier ship hours (delay events included)."""
        return self.column("ship_hours")

    @property
    def stock(self) -> np.ndarray:
        """int64 [n]: the supplier's current stock (our own purchases drain it)."""
        return self.column("stock")

    @property
    def sales_30d(self) -> np.ndarray:
        """int64 [n]: market orders over the 30 completed days before this day."""
        return self.column("sales_30d")


@dataclass(frozen=True, eq=False)
class _Restricted:
    """The columns of `view`, with visibility narrowed to `shown`."""

    view: CatalogView
    shown: np.ndarray

    def column(self, name: str) -> np.ndarray:
        if name == "visible":
            return self.view.visible & self.shown
        return self.view.column(name).copy()

    def take(self, name: str, products: np.ndarray) -> np.ndarray:
        found = self.view.take(name, products)
        return found & self.shown[products] if name == "visible" else found

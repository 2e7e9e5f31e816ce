"""Real catalogs: a `Market` from documented Parquet tables, and back (docs/catalog.md,
"Real catalogs").

Anyone holding real wholesale data writes `products`, `suppliers`, `demand` (and optionally
`sales`) tables and runs the identical benchmark on them. Every problem in the tables raises a
`CatalogError` naming the table, column and row (rows count from 0). Columns a real source rarely
has (reference price, elasticity, stock, outcome risks, product type) are optional, and a null in
them means "not known" for that row; each missing value is filled by a documented rule that
depends only on the product's own row and (seed, product index), so adding a product never
changes another's fills. Supplier events and the calendar come from the same functions as in the
synthetic market.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from merchantbench.catalog import calendar
from merchantbench.catalog.events import delisted_hours_by_day, from_hour_zero, supplier_history
from merchantbench.catalog.market import Market
from merchantbench.catalog.offers import CATEGORY_MARGIN_POSITION
from merchantbench.catalog.real_format import (
    RISK_COLUMNS,
    CatalogError,
    Table,
    daily_matrix,
    read_table,
)
from merchantbench.catalog.trust_signals import expected_risks
from merchantbench.random_streams import Stream, poisson_from_uniform, uniform
from merchantbench.scenario import Scenario

__all__ = ["RISK_COLUMNS", "CatalogError", "load_catalog", "realised_sales", "write_catalog"]


def realised_sales(
    demand: np.ndarray,
    seed: int,
    scale: float,
    history: int,
    delisted_hours: np.ndarray | None = None,
) -> np.ndarray:
    """Market orders per day when no sales table is given: Poisson(scale × demand × the share
    of the day the supplier lists the product), drawn from the counter-based uniform
    (seed, Stream.MARKET_SALES, product, day). `delisted_hours[r, i]` (None: none) are the
    hours of row r the supplier had product i delisted."""
    rows, n = demand.shape
    sales = np.zeros((rows, n), dtype=np.int64)
    products = np.arange(n)
    for r in range(rows):
        listed = 1.0 if delisted_hours is None else (24 - delisted_hours[r]) / 24
        u = uniform(seed, Stream.MARKET_SALES, products, r - history)
        sales[r] = poisson_from_uniform(scale * demand[r] * listed, u)
    return sales


def _fill_prices(
    products: Table, scenario: Scenario, price_fen: np.ndarray, category: np.ndarray
) -> dict[str, np.ndarray]:
    """p_ref and elasticity: given, else from the margin m = 1/ε (ε given) or the category's
    mid margin; ε = clip(1/m) with m = 1 − price/p_ref."""
    m = scenario.market
    lo, hi = m.margin_range
    position = np.array([CATEGORY_MARGIN_POSITION.get(c, 0.5) for c in m.categories])
    margin = (lo + (hi - lo) * position)[category]
    elasticity = products.numbers("elasticity", 1.0) if products.has("elasticity") else None
    has_e = products.given("elasticity")
    if elasticity is not None:
        margin = np.where(has_e, 1.0 / elasticity, margin)
    derived_p_ref = np.maximum(np.rint(price_fen / (1.0 - margin)), price_fen + 1)
    p_ref = _given_or(products, "p_ref", derived_p_ref / 100)
    p_ref = np.rint(p_ref * 100).astype(np.int64)
    below = products.given("p_ref") & (p_ref <= price_fen)
    products.reject_rows(below, "p_ref", "p_ref must exceed price")
    derived = np.clip(1.0 / (1.0 - price_fen / p_ref), *m.elasticity_clip)
    filled = derived if elasticity is None else np.where(has_e, elasticity, derived)
    return {"p_ref_fen": p_ref, "elasticity": filled.astype(np.float32)}


def _fill_stock(products: Table, scenario: Scenario, seed: int) -> dict[str, np.ndarray]:
    """Capacity log-uniform and refill uniform on the scenario ranges, as the generator draws
    them, from the counter-based uniforms (seed, STOCK, product, 0, index 0 / 1)."""
    n, config = products.rows, scenario.suppliers
    index = np.arange(n)
    cap_lo, cap_hi = config.stock_capacity
    log_cap = np.log(cap_lo) + (np.log(cap_hi + 1) - np.log(cap_lo)) * uniform(
        seed, Stream.STOCK, index, 0, 0
    )
    capacity = np.clip(np.floor(np.exp(log_cap)), cap_lo, cap_hi)
    refill_lo, refill_hi = config.stock_refill_per_hour
    refill = refill_lo + np.floor(
        (refill_hi - refill_lo + 1) * uniform(seed, Stream.STOCK, index, 0, 1)
    )
    return {
        "stock_capacity": _given_or(products, "quantity", capacity).astype(np.int32),
        "stock_refill": _given_or(products, "stock_refill", refill).astype(np.int32),
    }


def _given_or(products: Table, name: str, filled: np.ndarray) -> np.ndarray:
    if not products.has(name):
        return filled
    return np.where(products.given(name), products.numbers(name), filled)


def _fill_risks(
    products: Table, shop_rating: np.ndarray, return_buyer_rate: np.ndarray
) -> dict[str, np.ndarray]:
    """Outcome risks: given, else the generator's expected risks at the quality its
    trust-signal model reads from the product rating, shop rating and return-buyer rate
    (`trust_signals.expected_risks`)."""
    rating = products.numbers("historical_avg_rating")
    expected = expected_risks(rating, shop_rating, return_buyer_rate)
    risks = {
        name: _given_or(products, name, filled)
        for name, filled in zip(RISK_COLUMNS, expected, strict=True)
    }
    over = np.sum(list(risks.values()), axis=0) > 1.0 + 1e-6
    products.reject_rows(over, "risk_bad_review", "risks sum to more than 1")
    return {name: values.astype(np.float32) for name, values in risks.items()}


def _fill_types(
    products: Table, categories: tuple[str, ...], category: np.ndarray, types: Table | None
) -> dict[str, np.ndarray]:
    """Product type names: given, else the category name. Ids number the names `types.parquet`
    lists, in its order (a type without products included), then any other name, sorted."""
    names = np.array(categories, dtype=str)[category]
    if products.has("type"):
        names = np.where(products.given("type"), products.texts("type"), names)
    listed = [] if types is None else types.ids("type").to_pylist()
    others = sorted(set(names.tolist()) - set(listed))
    type_names = np.array(listed + others, dtype=str)
    number = {name: i for i, name in enumerate(type_names.tolist())}
    type_id = np.array([number[name] for name in names.tolist()], dtype=np.int32)
    return {"type_names": type_names, "type_id": type_id}


def _cumulative(daily: np.ndarray) -> np.ndarray:
    cum = np.zeros((daily.shape[0] + 1, daily.shape[1]), dtype=np.int64)
    np.cumsum(daily, axis=0, out=cum[1:])
    return cum.astype(np.int32)


def load_catalog(path: Path, scenario: Scenario, seed: int) -> Market:
    """Load a real catalog directory into a market for `scenario` and `seed`.

    Args:
        path: directory holding products.parquet, suppliers.parquet, demand.parquet and
            optionally sales.parquet.
        scenario: gives the clock (days, start date), the categories, the supplier parameters
            (events, stock ranges) and the market-sales scale.
        seed: the market seed (supplier events and filled values).

    Returns:
        The market, with `calendar.HISTORY_DAYS` rows of history before day 0.

    Raises:
        CatalogError: a file, column or value is missing or invalid; the message names the
            table, column and row.
    """
    path = Path(path)
    suppliers, products = read_table(path, "suppliers"), read_table(path, "products")
    supplier_ids, product_ids = suppliers.ids("supplier_id"), products.ids("product_id")
    categories = tuple(scenario.market.categories)
    category = products.index_in(
        "category", pa.array(categories), f"the scenario's categories ({', '.join(categories)})"
    )
    supplier = products.index_in("supplier_id", supplier_ids, "suppliers.parquet")
    days, history = scenario.market.days, calendar.HISTORY_DAYS
    demand = daily_matrix(
        read_table(path, "demand"), "demand", product_ids, history, days, np.float32
    )
    events = supplier_history(seed, scenario.suppliers, len(product_ids), days * 24)
    if (path / "sales.parquet").is_file():
        sales = read_table(path, "sales")
        daily_sales = daily_matrix(sales, "orders", product_ids, history, days, np.int64)
    else:
        delisted = delisted_hours_by_day(events["delisting"], len(product_ids), days)
        scale = scenario.market.market_sales_scale
        daily_sales = realised_sales(demand, seed, scale, history, delisted)
    types = read_table(path, "types") if (path / "types.parquet").is_file() else None
    price_fen = np.rint(products.numbers("price") * 100).astype(np.int64)
    shop_rating = suppliers.numbers("shop_rating").astype(np.float32)
    return_buyer_rate = suppliers.numbers("return_buyer_rate").astype(np.float32)
    filled: dict[str, Any] = {
        **_fill_prices(products, scenario, price_fen, category),
        **_fill_stock(products, scenario, seed),
        **_fill_risks(products, shop_rating[supplier], return_buyer_rate[supplier]),
        **_fill_types(products, categories, category, types),
    }
    return Market(
        n_products=len(product_ids),
        n_suppliers=len(supplier_ids),
        days=days,
        history_days=history,
        categories=categories,
        product_ids=np.array(product_ids.to_pylist(), dtype=str),
        titles=products.texts("title"),
        category=category.astype(np.int16),
        supplier=supplier.astype(np.int32),
        base_price_fen=price_fen,
        ship_hours=products.numbers("ship_hours").astype(np.int16),
        logistics_hours=products.numbers("logistics_hours").astype(np.int16),
        historical_avg_rating=products.numbers("historical_avg_rating").astype(np.float32),
        launch_day=products.numbers("launch_day").astype(np.int32),
        market_sales_cum=_cumulative(daily_sales),
        demand=demand,
        is_trap=_given_or(products, "is_trap", np.zeros(products.rows)).astype(bool),
        events={channel: from_hour_zero(found) for channel, found in events.items()},
        supplier_ids=np.array(supplier_ids.to_pylist(), dtype=str),
        supplier_names=suppliers.texts("supplier_name"),
        shop_rating=shop_rating,
        return_buyer_rate=return_buyer_rate,
        supplier_age_years=suppliers.numbers("supplier_age_years").astype(np.float32),
        supplier_product_count=np.bincount(supplier, minlength=len(supplier_ids)).astype(np.int32),
        hourly_weights=calendar.hourly_weights(categories),
        ship_extra_hours=calendar.ship_extra_hours(
            scenario.clock.start_date, days, scenario.suppliers.spring_festival_extra_ship_hours
        ),
        **filled,
    )


def _long_table(market: Market, matrix: np.ndarray, column: str) -> pa.Table:
    """Non-zero cells of a per-day matrix as (product_id, day, value) rows, by product then day;
    product ids dictionary-encoded, so a year of demand stays small."""
    product, row = np.nonzero(matrix.T)
    ids = pa.DictionaryArray.from_arrays(
        pa.array(product.astype(np.int32)), pa.array(market.product_ids.tolist(), pa.string())
    )
    day = pa.array((row - market.history_days).astype(np.int32))
    return pa.table({"product_id": ids, "day": day, column: pa.array(matrix.T[product, row])})


def write_catalog(market: Market, path: Path) -> None:
    """Write a market as a real-catalog directory that `load_catalog` reads back.

    Every product and supplier column is written, optional ones included, and the product types
    in id order (`types.parquet`), so writing a market and loading it with the same scenario and
    seed reproduces every array of it. Supplier events and the calendars are not written:
    loading regenerates them from (scenario, seed).
    """
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    products = {
        "product_id": market.product_ids.tolist(),
        "title": market.titles.tolist(),
        "category": np.array(market.categories)[market.category].tolist(),
        "supplier_id": market.supplier_ids[market.supplier].tolist(),
        "price": market.base_price_fen / 100,
        "ship_hours": market.ship_hours.astype(np.int32),
        "logistics_hours": market.logistics_hours.astype(np.int32),
        "historical_avg_rating": market.historical_avg_rating,
        "launch_day": market.launch_day,
        "p_ref": market.p_ref_fen / 100,
        "elasticity": market.elasticity,
        "quantity": market.stock_capacity,
        "stock_refill": market.stock_refill,
        **{name: getattr(market, name) for name in RISK_COLUMNS},
        "type": market.type_names[market.type_id].tolist(),
        "is_trap": market.is_trap,
    }
    pq.write_table(pa.table(products), path / "products.parquet")
    pq.write_table(pa.table({"type": market.type_names.tolist()}), path / "types.parquet")
    suppliers = {
        "supplier_id": market.supplier_ids.tolist(),
        "supplier_name": market.supplier_names.tolist(),
        "shop_rating": market.shop_rating,
        "return_buyer_rate": market.return_buyer_rate,
        "supplier_age_years": market.supplier_age_years,
    }
    pq.write_table(pa.table(suppliers), path / "suppliers.parquet")
    pq.write_table(_long_table(market, market.demand, "demand"), path / "demand.parquet")
    daily_sales = np.diff(market.market_sales_cum.astype(np.int64), axis=0)
    pq.write_table(_long_table(market, daily_sales, "orders"), path / "sales.parquet")

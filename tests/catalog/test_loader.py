"""Real-catalog loader: validation errors name table, column and row; fill rules; round trip."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from handmade_market import HISTORY_DAYS, ITEMS, handmade_market

from merchantbench.catalog.events import delisted_hours_by_day, supplier_events, supplier_history
from merchantbench.catalog.loader import (
    RISK_COLUMNS,
    CatalogError,
    load_catalog,
    realised_sales,
    write_catalog,
)
from merchantbench.catalog.market import CHANNELS
from merchantbench.catalog.synthetic import generate_market
from merchantbench.runs.runner import RunSpec, run_agent
from merchantbench.scenario import Scenario, load_scenario

SCENARIO = load_scenario("smoke", ["market.days=14"])  # 14 days, like the hand-made market
OPTIONAL = ("p_ref", "elasticity", "quantity", "stock_refill", *RISK_COLUMNS, "type", "is_trap")


@pytest.fixture(scope="module")
def market():
    return handmade_market(days=SCENARIO.clock.days)


@pytest.fixture
def catalog(market, tmp_path) -> Path:
    write_catalog(market, tmp_path / "cat")
    return tmp_path / "cat"


def edit(catalog: Path, table: str, change) -> None:
    """Rewrite one table through `change(dict of columns) -> dict of columns`."""
    file = catalog / f"{table}.parquet"
    columns = pq.read_table(file).to_pydict()
    pq.write_table(pa.table(change(columns)), file)


def set_cell(column: str, row: int, value):
    def change(columns):
        columns[column][row] = value
        return columns

    return change


def assert_error(catalog: Path, table: str, column: str | None, row: int | None, words: str):
    with pytest.raises(CatalogError) as info:
        load_catalog(catalog, SCENARIO, 1)
    err = info.value
    assert (err.table, err.column, err.row) == (table, column, row), str(err)
    assert words in str(err) and f"{table}.parquet" in str(err)
    if row is not None:
        assert f"row {row}" in str(err)


def differences(mine: object, theirs: object, where: str = "market") -> list[str]:
    """Every place two markets differ, found by walking them (dataclass fields, dict entries,
    arrays with their dtype and shape, other values): no hand-kept list of arrays."""
    if dataclasses.is_dataclass(mine) and not isinstance(mine, type):
        return [found for f in dataclasses.fields(mine)
                for found in differences(getattr(mine, f.name), getattr(theirs, f.name),
                                         f"{where}.{f.name}")]  # fmt: skip
    if isinstance(mine, dict):
        if not isinstance(theirs, dict) or mine.keys() != theirs.keys():
            return [f"{where}: keys"]
        return [found for key in mine for found in differences(mine[key], theirs[key],
                                                               f"{where}[{key!r}]")]  # fmt: skip
    if isinstance(mine, np.ndarray):
        if not isinstance(theirs, np.ndarray) or mine.shape != theirs.shape:
            return [where]
        if {mine.dtype.kind, theirs.dtype.kind} <= {"O", "U"}:  # text, as objects or unicode
            return [] if mine.tolist() == theirs.tolist() else [where]
        same = mine.dtype == theirs.dtype and np.array_equal(mine, theirs)
        return [] if same else [where]
    return [] if mine == theirs else [where]


def test_the_comparison_finds_every_array() -> None:
    market = handmade_market(days=SCENARIO.clock.days)
    arrays = [f.name for f in dataclasses.fields(market)
              if isinstance(getattr(market, f.name), np.ndarray)]  # fmt: skip
    assert {"type_id", "type_names", "demand", "hourly_weights"} <= set(arrays)
    for name in arrays:
        changed = getattr(market, name).copy()
        changed.flat[-1] = changed.flat[0] if changed.flat[-1] != changed.flat[0] else 1
        assert differences(market, dataclasses.replace(market, **{name: changed})), name
    first = market.events[CHANNELS[0]]
    events = {**market.events, CHANNELS[0]: dataclasses.replace(first, offsets=first.offsets + 1)}
    assert differences(market, dataclasses.replace(market, events=events))


def test_write_then_load_reproduces_every_array(market, catalog):
    loaded = load_catalog(catalog, SCENARIO, 1)
    # the hand-made market's events and calendar are its own; loading draws the scenario's
    found = differences(market, loaded)
    regenerated = {f"market.events[{c!r}].{f}" for c in CHANNELS
                   for f in ("product", "start", "end", "value", "offsets")}  # fmt: skip
    assert set(found) <= regenerated | {"market.hourly_weights"}, found


def test_events_and_calendar_come_from_scenario_and_seed(catalog):
    loaded = load_catalog(catalog, SCENARIO, 3)
    expected = supplier_events(3, SCENARIO.suppliers, len(ITEMS), SCENARIO.market.days * 24)
    for channel in CHANNELS:
        assert np.array_equal(loaded.events[channel].start, expected[channel].start)
        assert np.array_equal(loaded.events[channel].value, expected[channel].value)
    assert np.allclose(loaded.hourly_weights.sum(axis=1), 1.0)
    assert loaded.ship_extra_hours.shape == (SCENARIO.clock.days,)


@pytest.fixture(scope="module")
def small_export(tmp_path_factory) -> tuple[Scenario, Path]:
    """The synthetic `small` market of seed 1, exported as a real catalog."""
    scenario = load_scenario("small")
    where = tmp_path_factory.mktemp("small-export")
    write_catalog(generate_market(scenario, 1), where)
    return scenario, where


def test_generated_market_round_trips_exactly(small_export) -> None:
    scenario, where = small_export
    market = generate_market(scenario, 1)
    assert differences(market, load_catalog(where, scenario, 1)) == []


def test_a_run_on_the_loaded_export_ends_as_on_the_synthetic_market(
    small_export, tmp_path, monkeypatch
) -> None:
    scenario, where = small_export
    monkeypatch.setenv("MERCHANTBENCH_CACHE", str(tmp_path / "cache"))
    synthetic = run_agent(RunSpec("rule-based", scenario, 1), tmp_path / "synthetic")
    loaded = run_agent(RunSpec("rule-based", scenario, 1, catalog=where), tmp_path / "loaded")
    assert loaded["state_hash"] == synthetic["state_hash"]
    assert loaded["final_net_assets"] == synthetic["final_net_assets"]


def test_the_types_table_orders_the_types(catalog):
    listed = pq.read_table(catalog / "types.parquet").column("type").to_pylist()
    edit(catalog, "types", lambda columns: {"type": ["Unsold Type", *columns["type"][1:]]})
    loaded = load_catalog(catalog, SCENARIO, 1)
    assert loaded.type_names.tolist() == ["Unsold Type", *listed[1:], listed[0]]
    assert loaded.type_names[loaded.type_id].tolist() == [item.type_name for item in ITEMS]
    edit(catalog, "types", lambda columns: {"type": columns["type"] + columns["type"][:1]})
    with pytest.raises(CatalogError, match="duplicate id") as info:
        load_catalog(catalog, SCENARIO, 1)
    assert (info.value.table, info.value.column) == ("types", "type")


# --- validation ----------------------------------------------------------------------------


def test_missing_file_and_missing_required_column(catalog):
    (catalog / "demand.parquet").unlink()
    assert_error(catalog, "demand", None, None, "file not found")


@pytest.mark.parametrize(
    ("table", "column"),
    [("products", "price"), ("products", "title"), ("suppliers", "shop_rating"),
     ("demand", "day")],
)  # fmt: skip
def test_missing_required_column(catalog, table, column):
    edit(catalog, table, lambda columns: {k: v for k, v in columns.items() if k != column})
    assert_error(catalog, table, column, None, "required column is missing")


def test_null_in_required_column(catalog):
    edit(catalog, "products", set_cell("title", 7, None))
    assert_error(catalog, "products", "title", 7, "null")


def test_wrong_type(catalog):
    edit(catalog, "products", lambda c: {**c, "ship_hours": [str(v) for v in c["ship_hours"]]})
    assert_error(catalog, "products", "ship_hours", None, "where int is expected")


def test_fractional_value_in_an_integer_column(catalog):
    def halves(columns):
        columns["launch_day"] = [float(v) for v in columns["launch_day"]]
        columns["launch_day"][4] = 2.5
        return columns

    edit(catalog, "products", halves)
    assert_error(catalog, "products", "launch_day", 4, "not a whole number")


def test_whole_floats_are_accepted_in_integer_columns(catalog):
    edit(catalog, "products", lambda c: {**c, "ship_hours": [float(v) for v in c["ship_hours"]]})
    assert load_catalog(catalog, SCENARIO, 1).ship_hours.tolist() == [i.ship for i in ITEMS]


def test_duplicate_ids(catalog):
    edit(catalog, "products", set_cell("product_id", 9, "P10002"))
    assert_error(catalog, "products", "product_id", 9, "duplicate id 'P10002' (first in row 2)")


def test_duplicate_supplier_id(catalog):
    edit(catalog, "suppliers", set_cell("supplier_id", 3, "S500"))
    assert_error(catalog, "suppliers", "supplier_id", 3, "duplicate")


def test_unknown_supplier(catalog):
    edit(catalog, "products", set_cell("supplier_id", 5, "S999"))
    assert_error(catalog, "products", "supplier_id", 5, "'S999' not in suppliers.parquet")


def test_unknown_category(catalog):
    edit(catalog, "products", set_cell("category", 11, "shoes"))
    assert_error(catalog, "products", "category", 11, "'shoes' not in the scenario's categories")


@pytest.mark.parametrize(
    ("table", "column", "row", "value"),
    [("products", "price", 3, -2.5), ("products", "price", 6, 0.0),
     ("products", "historical_avg_rating", 8, 5.4), ("products", "ship_hours", 2, -1),
     ("products", "risk_return", 1, 1.5), ("products", "elasticity", 0, 0.9),
     ("suppliers", "shop_rating", 2, 7.0), ("suppliers", "return_buyer_rate", 1, -0.1),
     ("demand", "demand", 12, -1.0), ("products", "price", 5, float("nan"))],
)  # fmt: skip
def test_values_out_of_range(catalog, table, column, row, value):
    edit(catalog, table, set_cell(column, row, value))
    assert_error(catalog, table, column, row, "out of range")


def test_demand_for_unknown_product(catalog):
    edit(catalog, "demand", set_cell("product_id", 20, "P99999"))
    assert_error(catalog, "demand", "product_id", 20, "'P99999' not in products.parquet")


def test_demand_day_outside_the_run(catalog):
    edit(catalog, "demand", set_cell("day", 15, SCENARIO.clock.days))
    assert_error(catalog, "demand", "day", 15, "outside -30 … 13")


def test_duplicate_demand_row(catalog):
    def repeat_row_4(columns):
        return {k: v[:10] + [v[4]] + v[10:] for k, v in columns.items()}

    edit(catalog, "demand", repeat_row_4)
    assert_error(catalog, "demand", "day", 10, "same product and day as row 4")


def test_sales_table_is_checked_too(catalog):
    edit(catalog, "sales", set_cell("orders", 6, -3))
    assert_error(catalog, "sales", "orders", 6, "out of range")


def test_given_p_ref_must_exceed_price_and_risks_must_sum_below_one(catalog, tmp_path):
    edit(catalog, "products", set_cell("p_ref", 13, 1.0))
    assert_error(catalog, "products", "p_ref", 13, "must exceed price")
    edit(catalog, "products", set_cell("p_ref", 13, 40.0))
    edit(catalog, "products", lambda c: {**c, "risk_cancel": [0.5] * len(c["risk_cancel"])})
    edit(catalog, "products", set_cell("risk_return", 2, 0.6))
    assert_error(catalog, "products", "risk_bad_review", 2, "sum to more than 1")


# --- fill rules ----------------------------------------------------------------------------


def drop_optional(columns):
    return {k: v for k, v in columns.items() if k not in OPTIONAL}


def drop_optional_everywhere(catalog: Path) -> None:
    """Every optional column of products.parquet, and the optional types.parquet (types then
    number by sorted name)."""
    edit(catalog, "products", drop_optional)
    (catalog / "types.parquet").unlink()


def test_missing_optional_columns_are_filled_by_the_documented_rules(market, catalog):
    drop_optional_everywhere(catalog)
    loaded = load_catalog(catalog, SCENARIO, 1)
    lo, hi = SCENARIO.market.margin_range
    margin = 1 - loaded.base_price_fen / loaded.p_ref_fen
    assert np.all((margin > lo - 0.01) & (margin < hi + 0.01))
    assert np.allclose(loaded.elasticity, np.clip(1 / margin, 1.1, 6.0), rtol=1e-6)
    cap_lo, cap_hi = SCENARIO.suppliers.stock_capacity
    assert loaded.stock_capacity.min() >= cap_lo and loaded.stock_capacity.max() <= cap_hi
    assert len(set(loaded.stock_capacity.tolist())) > len(ITEMS) // 2  # drawn, not constant
    assert not loaded.is_trap.any()
    assert loaded.type_names[loaded.type_id].tolist() == [item.category for item in ITEMS]


def test_filled_risks_fall_with_better_ratings(catalog):
    drop_optional_everywhere(catalog)
    loaded = load_catalog(catalog, SCENARIO, 1)
    total = sum(getattr(loaded, name) for name in RISK_COLUMNS)
    shop = loaded.shop_rating[loaded.supplier]
    worse = (loaded.historical_avg_rating < 4.2) & (shop < 4.5)
    better = (loaded.historical_avg_rating >= 4.7) & (shop >= 4.8)
    assert total[worse].min() > total[better].max()
    assert np.all((total > 0.01) & (total < 0.6))
    shares = loaded.risk_return / total
    assert np.allclose(shares, shares[0])


def test_fills_depend_on_seed_and_product_only(catalog, tmp_path):
    drop_optional_everywhere(catalog)
    first = load_catalog(catalog, SCENARIO, 1)
    again = load_catalog(catalog, SCENARIO, 1)
    other_seed = load_catalog(catalog, SCENARIO, 2)
    assert np.array_equal(first.stock_capacity, again.stock_capacity)
    assert not np.array_equal(first.stock_capacity, other_seed.stock_capacity)
    # Dropping the last product leaves every other product's fills unchanged.
    edit(catalog, "products", lambda c: {k: v[:-1] for k, v in c.items()})
    edit(catalog, "demand", lambda c: _without_product(c, f"P{10_000 + len(ITEMS) - 1}"))
    edit(catalog, "sales", lambda c: _without_product(c, f"P{10_000 + len(ITEMS) - 1}"))
    fewer = load_catalog(catalog, SCENARIO, 1)
    assert np.array_equal(fewer.stock_capacity, first.stock_capacity[:-1])
    assert np.array_equal(fewer.stock_refill, first.stock_refill[:-1])


def _without_product(columns, product_id):
    keep = [k for k, pid in enumerate(columns["product_id"]) if pid != product_id]
    return {name: [values[k] for k in keep] for name, values in columns.items()}


def test_partial_optional_columns_fill_only_their_nulls(market, catalog):
    edit(catalog, "products", set_cell("quantity", 4, None))
    edit(catalog, "products", set_cell("type", 6, None))
    loaded = load_catalog(catalog, SCENARIO, 1)
    assert loaded.stock_capacity[5] == market.stock_capacity[5] == 200
    assert loaded.stock_capacity[4] != 200
    assert loaded.type_names[loaded.type_id[6]] == ITEMS[6].category


def test_stock_capacity_is_accepted_for_quantity(market, catalog):
    def rename(columns):
        columns["stock_capacity"] = [7] * len(columns["quantity"])
        return {k: v for k, v in columns.items() if k != "quantity"}

    edit(catalog, "products", rename)
    assert set(load_catalog(catalog, SCENARIO, 1).stock_capacity.tolist()) == {7}


def test_elasticity_given_sets_the_margin_of_a_missing_p_ref(catalog):
    edit(catalog, "products", lambda c: {k: v for k, v in c.items() if k != "p_ref"})
    edit(catalog, "products", lambda c: {**c, "elasticity": [4.0] * len(c["elasticity"])})
    loaded = load_catalog(catalog, SCENARIO, 1)
    expected = np.rint(loaded.base_price_fen / 0.75)
    assert np.array_equal(loaded.p_ref_fen, expected) and set(loaded.elasticity) == {4.0}


def test_missing_sales_are_poisson_draws_of_demand(market, catalog):
    (catalog / "sales.parquet").unlink()
    loaded = load_catalog(catalog, SCENARIO, 1)
    daily = np.diff(loaded.market_sales_cum, axis=0)
    scale = SCENARIO.market.market_sales_scale
    # No market sales in the hours the supplier has the product delisted (docs/design.md §3).
    history = supplier_history(1, SCENARIO.suppliers, market.n_products, SCENARIO.market.days * 24)
    hours = delisted_hours_by_day(history["delisting"], market.n_products, SCENARIO.market.days)
    expected = (market.demand * (24 - hours) / 24).sum() * scale
    assert abs(daily.sum() - expected) < 4 * np.sqrt(expected)
    assert np.all(daily[(market.demand == 0) | (hours == 24)] == 0)
    # Small, medium and large λ (the last past 100), 4,000 products each.
    rates = np.repeat([0.5, 20.0, 400.0], 4000)
    draws = realised_sales((rates / scale)[None, :], 5, scale, HISTORY_DAYS).reshape(3, -1)
    lam = np.array([0.5, 20.0, 400.0])
    assert np.all(np.abs(draws.mean(axis=1) - lam) < 4 * np.sqrt(lam / 4000))  # 4 std errors
    assert np.allclose(draws.var(axis=1), lam, rtol=0.15)

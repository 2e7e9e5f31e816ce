"""Writing a run record's data files from a finished engine (format: docs/run-record.md)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from merchantbench.catalog.market import Market
from merchantbench.sim.engine import Engine
from merchantbench.sim.orders import OUTCOME_NAMES


def _rmb(fen: np.ndarray | list[int]) -> pa.Array:
    return pa.array(np.asarray(fen, dtype=np.int64) / 100.0, type=pa.float64())


def timeseries_table(engine: Engine) -> pa.Table:
    s = engine.state.samples
    hours = len(s.balance)
    t = np.arange(hours, dtype=np.int64)
    net = s.balance + s.deposit + s.in_transit + s.receivable
    return pa.table(
        {
            "t": t,
            "day": t // 24,
            "balance": _rmb(s.balance),
            "deposit": _rmb(s.deposit),
            "in_transit": _rmb(s.in_transit),
            "receivable": _rmb(s.receivable),
            "net_assets": _rmb(net),
            "rating": s.rating,
            "stars": s.stars,
            "active_listings": s.active_listings,
        }
    )


def _type_name(market: Market, product: int) -> str:
    names = market.type_names
    tid = int(market.type_id[product])
    return str(names[tid]) if 0 <= tid < len(names) else ""


def orders_table(engine: Engine) -> pa.Table:
    market, orders = engine.market, engine.state.orders
    return pa.table(
        {
            "order_id": pa.array([o.order_id for o in orders], pa.int64()),
            "product_id": pa.array([str(market.product_ids[o.product]) for o in orders]),
            "product_type": pa.array([_type_name(market, o.product) for o in orders]),
            "sale_price": _rmb([o.price for o in orders]),
            "cost": _rmb([o.cost for o in orders]),
            "placed_t": pa.array([o.placed_t for o in orders], pa.int64()),
            "ship_t": pa.array([o.ship_t for o in orders], pa.int64()),
            "cancel_t": pa.array([o.cancel_t for o in orders], pa.int64()),
            "delivered_t": pa.array([o.delivered_t for o in orders], pa.int64()),
            "resolved_t": pa.array([o.resolved_t for o in orders], pa.int64()),
            "late": pa.array([o.late_t >= 0 for o in orders], pa.bool_()),
            "outcome": pa.array([OUTCOME_NAMES[o.outcome] for o in orders]),
            "fines": _rmb([o.fines for o in orders]),
        }
    )


def daily_table(engine: Engine) -> pa.Table:
    s = engine.state.samples
    return pa.table(
        {
            "day": np.arange(len(s.daily_rating), dtype=np.int64),
            "rating": s.daily_rating,
            "stars": s.daily_stars,
        }
    )


def listings_table(engine: Engine) -> pa.Table:
    market, spells = engine.market, engine.state.spells
    return pa.table(
        {
            "product_id": pa.array([str(market.product_ids[s.product]) for s in spells]),
            "product_type": pa.array([_type_name(market, s.product) for s in spells]),
            "listed_t": pa.array([s.listed_t for s in spells], pa.int64()),
            "delisted_t": pa.array([s.delisted_t for s in spells], pa.int64()),
            "first_price": _rmb([s.first_price for s in spells]),
            "last_price": _rmb([s.last_price for s in spells]),
            "cost_at_listing": _rmb([s.cost_at_listing for s in spells]),
        }
    )


def write_tables(engine: Engine, run_dir: Path) -> None:
    """Write the four Parquet tables of a run record."""
    for name, table in (
        ("timeseries", timeseries_table(engine)),
        ("orders", orders_table(engine)),
        ("daily", daily_table(engine)),
        ("listings", listings_table(engine)),
    ):
        pq.write_table(table, run_dir / f"{name}.parquet")


def final_accounts(engine: Engine) -> dict[str, float]:
    a = engine.state.ledger.accounts
    return {
        "balance": a.balance / 100,
        "deposit": a.deposit / 100,
        "in_transit": a.in_transit / 100,
        "receivable": a.receivable / 100,
        "net_assets": a.net_assets / 100,
    }

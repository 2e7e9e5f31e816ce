"""Writing a run record's data files from a finished engine (format: docs/run-record.md; column
types: `record.schema`). Money columns hold integer fen, exactly as the engine keeps it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from merchantbench.catalog.market import Market
from merchantbench.money import rmb
from merchantbench.record.schema import (
    DAILY_FILE,
    LISTINGS_FILE,
    ORDERS_FILE,
    TIMESERIES_FILE,
    arrow_table,
)
from merchantbench.sim.engine import Engine
from merchantbench.sim.ledger import Reason
from merchantbench.sim.orders import OUTCOME_NAMES


def _type_name(market: Market, product: int) -> str:
    names = market.type_names
    tid = int(market.type_id[product])
    return str(names[tid]) if 0 <= tid < len(names) else ""


def timeseries_columns(engine: Engine) -> dict[str, np.ndarray]:
    s = engine.state.samples
    t = np.arange(len(s.balance), dtype=np.int64)
    return {
        "t": t,
        "day": t // 24,
        "balance": s.balance,
        "deposit": s.deposit,
        "in_transit": s.in_transit,
        "receivable": s.receivable,
        "net_assets": s.balance + s.deposit + s.in_transit + s.receivable,
        "rating": s.rating,
        "stars": s.stars,
        "active_listings": s.active_listings,
    }


def orders_columns(engine: Engine) -> dict[str, list]:
    """One row per order. Fees and collected fines come from the ledger's entries for the order
    (a fine that closed the store may have been collected only in part)."""
    market, orders, ledger = engine.market, engine.state.orders, engine.state.ledger
    fees, collected = ledger.per_order(Reason.FEE), ledger.per_order(Reason.FINE)
    return {
        "order_id": [o.order_id for o in orders],
        "product_id": [str(market.product_ids[o.product]) for o in orders],
        "product_type": [_type_name(market, o.product) for o in orders],
        "sale_price": [o.price for o in orders],
        "cost": [o.cost for o in orders],
        "placed_t": [o.placed_t for o in orders],
        "ship_t": [o.ship_t for o in orders],
        "cancel_t": [o.cancel_t for o in orders],
        "delivered_t": [o.delivered_t for o in orders],
        "resolved_t": [o.resolved_t for o in orders],
        "late": [o.late_t >= 0 for o in orders],
        "outcome": [OUTCOME_NAMES[o.outcome] for o in orders],
        "fees": [-fees.get(o.order_id, 0) for o in orders],
        "fines_assessed": [o.fines for o in orders],
        "fines_collected": [-collected.get(o.order_id, 0) for o in orders],
    }


def daily_columns(engine: Engine) -> dict[str, np.ndarray]:
    s = engine.state.samples
    return {
        "day": np.arange(len(s.daily_rating), dtype=np.int64),
        "rating": s.daily_rating,
        "stars": s.daily_stars,
    }


def listings_columns(engine: Engine) -> dict[str, list]:
    market, spells = engine.market, engine.state.spells
    return {
        "product_id": [str(market.product_ids[s.product]) for s in spells],
        "product_type": [_type_name(market, s.product) for s in spells],
        "listed_t": [s.listed_t for s in spells],
        "delisted_t": [s.delisted_t for s in spells],
        "first_price": [s.first_price for s in spells],
        "last_price": [s.last_price for s in spells],
        "cost_at_listing": [s.cost_at_listing for s in spells],
    }


def write_tables(engine: Engine, run_dir: Path) -> None:
    """Write the four Parquet tables of a run record."""
    for name, columns in (
        (TIMESERIES_FILE, timeseries_columns(engine)),
        (ORDERS_FILE, orders_columns(engine)),
        (DAILY_FILE, daily_columns(engine)),
        (LISTINGS_FILE, listings_columns(engine)),
    ):
        pq.write_table(arrow_table(name, columns), run_dir / name)


def final_accounts(engine: Engine) -> dict[str, float]:
    """The accounts after draining, in RMB (as `run.json` shows them)."""
    a = engine.state.ledger.accounts
    return {
        "balance": rmb(a.balance),
        "deposit": rmb(a.deposit),
        "in_transit": rmb(a.in_transit),
        "receivable": rmb(a.receivable),
        "net_assets": rmb(a.net_assets),
    }

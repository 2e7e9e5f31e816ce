"""Hand-built run records for the metrics tests, written with the contract's column types."""

from __future__ import annotations

from itertools import count
from pathlib import Path
from typing import Any

import pytest

from merchantbench.scenario import ClockConfig, Scenario
from record_rows import fen, run_manifest, write_run_record

HOURS_PER_WINDOW = 12


class Records:
    """Builds rows of a run record and writes records into a temporary directory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._numbers = count()

    @staticmethod
    def call(window: int, tool: str = "search_products", **fields: Any) -> dict[str, Any]:
        """One trace line of an env call in `window` (fields override the defaults)."""
        line = {"window": window, "t": window * HOURS_PER_WINDOW, "tool": tool, "args": {},
                "ok": True, "error": None, "origin": "env", "forced": False}  # fmt: skip
        return line | fields

    @staticmethod
    def order(
        outcome: str,
        sale: float,
        cost: float,
        fines: float = 0.0,
        collected: float | None = None,
        fees: float = 0.0,
        **fields: Any,
    ) -> dict:
        """One orders.parquet row; money in RMB here, written as fen; fines are collected in
        full unless `collected` says otherwise; hours default to a normal life cycle."""
        collected = fines if collected is None else collected
        row = {"order_id": 0, "product_id": "p1", "product_type": "storage box",
               "sale_price": fen(sale), "cost": fen(cost), "placed_t": 1, "ship_t": 5,
               "cancel_t": -1, "delivered_t": 30, "resolved_t": 60, "late": False,
               "outcome": outcome, "fees": fen(fees), "fines_assessed": fen(fines),
               "fines_collected": fen(collected)}  # fmt: skip
        return row | fields

    @staticmethod
    def listing(product_id: str, product_type: str, listed_t: int, delisted_t: int = -1,
                cost: float = 30.0) -> dict[str, Any]:  # fmt: skip
        """One listings.parquet row (one listing spell; money in RMB here, written as fen)."""
        return {"product_id": product_id, "product_type": product_type, "listed_t": listed_t,
                "delisted_t": delisted_t, "first_price": fen(cost * 1.5),
                "last_price": fen(cost * 1.5), "cost_at_listing": fen(cost)}  # fmt: skip

    @staticmethod
    def hourly(days: int, net_assets: float = 3000.0, listings: int = 1) -> list[dict[str, Any]]:
        """Timeseries rows for `days` days with constant accounts (RMB here, written as fen)."""
        return [{"t": t, "day": t // 24, "balance": fen(net_assets - 1000.0),
                 "deposit": fen(1000.0), "in_transit": 0, "receivable": 0,
                 "net_assets": fen(net_assets), "rating": 4.0, "stars": 4,
                 "active_listings": listings} for t in range(days * 24)]  # fmt: skip

    @staticmethod
    def horizon(days: int) -> Scenario:
        """`paper` with a horizon of `days` days (2 windows a day are scheduled)."""
        return Scenario(clock=ClockConfig(days=days))

    def write(
        self,
        trace=(),
        orders=(),
        timeseries=None,
        ratings=None,
        listings=(),
        scenario: Scenario | None = None,
        **run,
    ) -> Path:
        """Write a record of a `scenario` run (default `paper`); `run` entries override the
        `run.json` keys."""
        meta = run_manifest(scenario, **run)
        tables = {
            "timeseries": self.hourly(2) if timeseries is None else timeseries,
            "orders": [o | {"order_id": i} for i, o in enumerate(orders, start=1)],
            "daily": [{"day": d, "rating": r, "stars": 4} for d, r in enumerate(ratings or [4.0])],
            "listings": list(listings),
        }
        lines = [{"seq": i} | line for i, line in enumerate(trace)]
        return write_run_record(self.root / f"run{next(self._numbers)}", meta, lines, tables)


@pytest.fixture
def records(tmp_path: Path) -> Records:
    """A builder that writes hand-built run records into tmp_path."""
    return Records(tmp_path)

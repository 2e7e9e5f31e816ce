"""Hand-built markets for exact mechanics tests: every number is chosen, nothing is random."""

from __future__ import annotations

import numpy as np
import pytest

from merchantbench.catalog.market import CHANNELS, Market, SupplierEvents
from merchantbench.scenario import ClockConfig, Scenario, load_scenario


def no_events(n: int) -> SupplierEvents:
    empty_i = np.zeros(0, dtype=np.int32)
    return SupplierEvents(
        empty_i, empty_i, empty_i, np.zeros(0, np.float32), np.zeros(n + 1, np.int64)
    )


def make_events(n: int, events: list[tuple[int, int, int, float]]) -> SupplierEvents:
    """events: (product, start, end, value), any order."""
    events = sorted(events)
    product = np.array([e[0] for e in events], dtype=np.int32)
    offsets = np.searchsorted(product, np.arange(n + 1)).astype(np.int64)
    return SupplierEvents(
        product,
        np.array([e[1] for e in events], dtype=np.int32),
        np.array([e[2] for e in events], dtype=np.int32),
        np.array([e[3] for e in events], dtype=np.float32),
        offsets,
    )


def make_market(
    n: int = 4,
    days: int = 14,
    demand: float = 24.0,
    cost_fen: int = 1000,
    p_ref_fen: int = 1500,
    elasticity: float = 3.0,
    ship_hours: int = 24,
    logistics_hours: int = 24,
    risks: dict[str, float] | None = None,
    events: dict[str, list[tuple[int, int, int, float]]] | None = None,
    stock_capacity: int = 500,
    stock_refill: int = 10,
    launch_day: list[int] | None = None,
) -> Market:
    history = 30
    risks = risks or {}
    cats = ("office", "toys")
    ev = {ch: make_events(n, (events or {}).get(ch, [])) for ch in CHANNELS}
    return Market(
        n_products=n,
        n_suppliers=1,
        days=days,
        history_days=history,
        categories=cats,
        product_ids=np.array([f"10000{i}" for i in range(n)]),
        titles=np.array([f"Foldable Storage Box {i}" for i in range(n)]),
        category=np.zeros(n, np.int16),
        supplier=np.zeros(n, np.int32),
        base_price_fen=np.full(n, cost_fen, np.int64),
        ship_hours=np.full(n, ship_hours, np.int16),
        logistics_hours=np.full(n, logistics_hours, np.int16),
        historical_avg_rating=np.full(n, 4.6, np.float32),
        launch_day=np.array(launch_day or [-100] * n, np.int32),
        market_sales_cum=np.zeros((history + days + 1, n), np.int32),
        p_ref_fen=np.full(n, p_ref_fen, np.int64),
        elasticity=np.full(n, elasticity, np.float32),
        demand=np.full((history + days, n), demand, np.float32),
        type_id=np.zeros(n, np.int32),
        risk_cancel=np.full(n, risks.get("cancel", 0.0), np.float32),
        risk_return=np.full(n, risks.get("return", 0.0), np.float32),
        risk_refund_only=np.full(n, risks.get("refund_only", 0.0), np.float32),
        risk_bad_review=np.full(n, risks.get("bad_review", 0.0), np.float32),
        is_trap=np.zeros(n, bool),
        stock_capacity=np.full(n, stock_capacity, np.int32),
        stock_refill=np.full(n, stock_refill, np.int32),
        events=ev,
        supplier_ids=np.array(["S1"]),
        supplier_names=np.array(["Yiwu Test Trading Co."]),
        shop_rating=np.array([4.8], np.float32),
        return_buyer_rate=np.array([0.3], np.float32),
        supplier_age_years=np.array([5.0], np.float32),
        supplier_product_count=np.array([n], np.int32),
        hourly_weights=np.full((len(cats), 24), 1 / 24),
        ship_extra_hours=np.zeros(days, np.int16),
        type_names=np.array(["storage box"], dtype=object),
    )


def tiny_scenario(days: int = 14) -> Scenario:
    base = load_scenario("smoke")
    return base.model_copy(update={"clock": ClockConfig(days=days)})


@pytest.fixture
def scenario() -> Scenario:
    return tiny_scenario()

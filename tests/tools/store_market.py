"""A small hand-built market and sessions on it, for the store tools' tests.

Eight products of three types from three suppliers, with chosen prices, risks, a product and a
supplier launching later, market sales history, and supplier events at chosen hours:

- product 1 (`P1001`): price change ×1.25 from hour 30 to 400;
- product 2 (`P1002`): delisted by its supplier from hour 40 to 300;
- product 3 (`P1003`): shipment delay of +60 h from hour 20 to 500;
- product 0 (`P1000`): shipment delay from hour 60 to 110 (recovers within window 9);
- product 4 (`P1004`): price change ×1.10 from hour 115 to 300 (starts within window 9).

Reference prices have odd cents (15.57 …) while every cost and test sale price is a multiple of
0.10 RMB, so a reference price can never appear in an output by coincidence.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from merchantbench.catalog.market import CHANNELS, Market, SupplierEvents
from merchantbench.catalog.search import SearchIndex
from merchantbench.scenario import Scenario, load_scenario
from merchantbench.session import Session

HISTORY = 30
DAYS = 14
CATEGORIES = ("home_goods", "office", "toys")
TYPES = ("storage box", "gel pen", "plush toy")


@dataclass(frozen=True)
class Item:
    title: str
    category: int
    type_id: int
    supplier: int
    cost_fen: int
    p_ref_fen: int
    launch_day: int = -100
    daily_sales: int = 5


ITEMS = (
    Item("Foldable Oxford Storage Box", 0, 0, 0, 1000, 1557, daily_sales=9),
    Item("Plastic Storage Box with Lid", 0, 0, 0, 840, 1339, daily_sales=6),
    Item("Gel Pen Black Ink 12 Pack", 1, 1, 1, 320, 517, daily_sales=14),
    Item("Retractable Gel Pen Blue", 1, 1, 1, 430, 693, daily_sales=3),
    Item("Plush Bear Toy Soft", 2, 2, 1, 1410, 2197, daily_sales=4),
    Item("Plush Rabbit Toy Large", 2, 2, 0, 1290, 2051, launch_day=5, daily_sales=2),
    Item("Stackable Storage Box Drawer", 0, 0, 2, 1170, 1863, launch_day=9, daily_sales=1),
    Item("Gel Pen Refill Black", 1, 1, 0, 110, 171, daily_sales=0),
)
SUPPLIERS = (("S100", "Yiwu Homeware Factory", 4.8), ("S200", "Ningbo Stationery Co.", 4.3),
             ("S300", "Shantou Toy Works", 4.1))  # fmt: skip
EVENTS = {
    "price_change": [(1, 30, 400, 1.25), (4, 115, 300, 1.10)],
    "delisting": [(2, 40, 300, 0.0)],
    "delay": [(3, 20, 500, 60.0), (0, 60, 110, 30.0)],
}
RISKS = {"cancel": 0.12, "return": 0.1, "refund_only": 0.06, "bad_review": 0.1}


def _events(n: int, rows: list[tuple[int, int, int, float]]) -> SupplierEvents:
    rows = sorted(rows)
    product = np.array([r[0] for r in rows], dtype=np.int32)
    return SupplierEvents(
        product,
        np.array([r[1] for r in rows], dtype=np.int32),
        np.array([r[2] for r in rows], dtype=np.int32),
        np.array([r[3] for r in rows], dtype=np.float32),
        np.searchsorted(product, np.arange(n + 1)).astype(np.int64),
    )


def _sales_history(items: tuple[Item, ...]) -> np.ndarray:
    """Cumulative market sales: each product sells its daily amount from launch, growing 3 %
    a day, so weeks differ and the report has trends to show."""
    rows = np.arange(HISTORY + DAYS)[:, None] - HISTORY
    launch = np.array([it.launch_day for it in items])[None, :]
    base = np.array([it.daily_sales for it in items])[None, :]
    daily = np.where(rows >= launch, np.floor(base * 1.03 ** (rows + HISTORY)), 0)
    return np.vstack([np.zeros((1, len(items))), np.cumsum(daily, axis=0)]).astype(np.int32)


def _risk(n: int, name: str) -> np.ndarray:
    return np.full(n, RISKS[name], np.float32)


def store_market(demand: float = 30.0) -> Market:
    n = len(ITEMS)
    supplier = np.array([it.supplier for it in ITEMS], np.int32)
    return Market(
        n_products=n, n_suppliers=len(SUPPLIERS), days=DAYS, history_days=HISTORY,
        categories=CATEGORIES,
        product_ids=np.array([f"P{1000 + i}" for i in range(n)], dtype=object),
        titles=np.array([it.title for it in ITEMS], dtype=object),
        category=np.array([it.category for it in ITEMS], np.int16),
        supplier=supplier,
        base_price_fen=np.array([it.cost_fen for it in ITEMS], np.int64),
        ship_hours=np.full(n, 30, np.int16),
        logistics_hours=np.full(n, 20, np.int16),
        historical_avg_rating=np.linspace(4.1, 4.8, n).astype(np.float32),
        launch_day=np.array([it.launch_day for it in ITEMS], np.int32),
        market_sales_cum=_sales_history(ITEMS),
        p_ref_fen=np.array([it.p_ref_fen for it in ITEMS], np.int64),
        elasticity=np.full(n, 3.3, np.float32),
        demand=np.full((HISTORY + DAYS, n), demand, np.float32),
        type_id=np.array([it.type_id for it in ITEMS], np.int32),
        risk_cancel=_risk(n, "cancel"), risk_return=_risk(n, "return"),
        risk_refund_only=_risk(n, "refund_only"), risk_bad_review=_risk(n, "bad_review"),
        is_trap=np.zeros(n, bool),
        stock_capacity=np.full(n, 400, np.int32),
        stock_refill=np.full(n, 3, np.int32),
        events={ch: _events(n, EVENTS.get(ch, [])) for ch in CHANNELS},
        supplier_ids=np.array([s[0] for s in SUPPLIERS], dtype=object),
        supplier_names=np.array([s[1] for s in SUPPLIERS], dtype=object),
        shop_rating=np.array([s[2] for s in SUPPLIERS], np.float32),
        return_buyer_rate=np.array([0.31, 0.22, 0.4], np.float32),
        supplier_age_years=np.array([6.0, 3.5, 1.0], np.float32),
        supplier_product_count=np.bincount(supplier, minlength=len(SUPPLIERS)).astype(np.int32),
        hourly_weights=np.full((len(CATEGORIES), 24), 1 / 24),
        ship_extra_hours=np.zeros(DAYS, np.int16),
        type_names=np.array(TYPES, dtype=object),
    )  # fmt: skip


def scenario(*overrides: str) -> Scenario:
    return load_scenario("smoke", overrides=list(overrides))


@cache
def shared_market() -> tuple[Market, SearchIndex]:
    """One market and its search index for every session that does not bring its own (both are
    immutable, so sessions can share them)."""
    market = store_market()
    return market, SearchIndex.build(market)


def new_session(*overrides: str, seed: int = 7, market: Market | None = None) -> Session:
    if market is None:
        market, index = shared_market()
        return Session(scenario(*overrides), market, seed, index)
    return Session(scenario(*overrides), market, seed)


OPENING_LISTINGS = [
    {"product_id": "P1000", "sale_price": 16.8},
    {"product_id": "P1001", "sale_price": 12.9},
    {"product_id": "P1002", "sale_price": 5.0},
    {"product_id": "P1003", "sale_price": 6.6},
    {"product_id": "P1004", "sale_price": 19.9},
]


def ok(result: dict[str, Any]) -> dict[str, Any]:
    """The result of a call that must succeed."""
    assert result["ok"], result
    return result


def busy_session(windows: int = 10, **kw: Any) -> Session:
    """A session `windows` windows in, with five listings since window 0: orders in every
    state, events active, started and ended."""
    session = new_session(**kw)
    ok(session.call("list_product", {"items": OPENING_LISTINGS}))
    while session.window < windows:
        ok(session.call("end_of_step"))
    return session

"""The paper's Table-1 metrics of one run (SPEC §9; definitions in docs/metrics.md).

Money is summed in integer fen (each RMB figure of the record rounded to the fen first), so
totals are exact; it is reported in RMB rounded to two decimals.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from merchantbench.metrics.record import RunRecord, Table, is_one_of
from merchantbench.metrics.run_info import ACCOUNTS, RunInfo
from merchantbench.metrics.windows import (
    WindowActivity,
    env_mask,
    monthly_rates,
    sustained_window_rate,
)
from merchantbench.tools.toolset import END_OF_STEP

OUTCOMES = (
    "normal",
    "bad_review",
    "return_refund",
    "returnless_refund",
    "cancelled",
    "stockout",
    "insufficient_balance",
    "open",
)
NOT_PROCURED = ("stockout", "insufficient_balance")
SOLD = ("normal", "bad_review")  # revenue kept, cost spent
COST_LOST = ("normal", "bad_review", "returnless_refund")
ANOMALOUS = (
    "cancelled",
    "return_refund",
    "returnless_refund",
    "bad_review",
    "stockout",
    "insufficient_balance",
)
TABLE1_KEYS = (
    "final_net_assets",
    "gmv",
    "net_profit_margin",
    "orders",
    "swr",
    "tool_calls",
    "fines",
    "avg_store_rating",
    "anomaly_rate",
    "avg_active_listings",
)


def to_fen(rmb: np.ndarray) -> np.ndarray:
    """RMB amounts as integer fen."""
    return np.rint(np.asarray(rmb, dtype=np.float64) * 100).astype(np.int64)


def to_rmb(fen: int | np.integer) -> float:
    """Integer fen as RMB with two decimals."""
    return round(int(fen) / 100, 2)


@dataclass(frozen=True)
class OrderMoney:
    """Per-order money in fen (docs/metrics.md, "Net profit").

    Attributes:
        procured: The store paid the supplier (every outcome but stockout and
            insufficient balance).
        revenue: Sale price kept by the store.
        cost_lost: Procurement cost not recovered.
        fines: Fines charged on the order.
        fees: Platform fees on the order (0 without the platform economy).
    """

    procured: np.ndarray
    revenue: np.ndarray
    cost_lost: np.ndarray
    fines: np.ndarray
    fees: np.ndarray

    @property
    def net_profit(self) -> np.ndarray:
        """Revenue − cost lost − fines − fees, per order."""
        return self.revenue - self.cost_lost - self.fines - self.fees


def order_money(orders: Table) -> OrderMoney:
    """Split each order's effect on net assets into revenue, lost cost, fines and fees.

    An order still `open` when the run ended counts as sold if it was delivered (its price is
    receivable) and as neither sold nor lost if not (its cost is still in transit).
    """
    outcome = orders["outcome"]
    open_delivered = (outcome == "open") & (orders["delivered_t"] >= 0)
    sold = is_one_of(outcome, SOLD) | open_delivered
    lost = is_one_of(outcome, COST_LOST) | open_delivered
    sale, cost = to_fen(orders["sale_price"]), to_fen(orders["cost"])
    fees = to_fen(orders["fees"]) if "fees" in orders else np.zeros(len(orders), np.int64)
    return OrderMoney(
        procured=~is_one_of(outcome, NOT_PROCURED),
        revenue=np.where(sold, sale, 0),
        cost_lost=np.where(lost, cost, 0),
        fines=to_fen(orders["fines"]),
        fees=fees,
    )


def anomalous_orders(orders: Table) -> np.ndarray:
    """Orders that were late or ended anomalously (each order counted once)."""
    return orders["late"] | is_one_of(orders["outcome"], ANOMALOUS)


def orders_by_outcome(orders: Table) -> dict[str, int]:
    """Order count per outcome (every outcome listed, zeros included)."""
    return {name: int(np.sum(orders["outcome"] == name)) for name in OUTCOMES}


def order_metrics(orders: Table) -> dict[str, Any]:
    """GMV, net profit and margin, orders, fines and the anomaly rate."""
    money = order_money(orders)
    gmv = int(to_fen(orders["sale_price"])[money.procured].sum())
    net_profit = int(money.net_profit.sum())
    anomalies = int(anomalous_orders(orders).sum())
    return {
        "gmv": to_rmb(gmv),
        "net_profit": to_rmb(net_profit),
        "net_profit_margin": net_profit / gmv if gmv else 0.0,
        "orders": int(money.procured.sum()),
        "all_orders": len(orders),
        "late_orders": int(orders["late"].sum()),
        "anomalous_orders": anomalies,
        "anomaly_rate": anomalies / len(orders) if len(orders) else 0.0,
        "fines": to_rmb(money.fines.sum()),
        "fees": to_rmb(money.fees.sum()),
        "orders_by_outcome": orders_by_outcome(orders),
    }


def _horizon_mean(values: np.ndarray, days: np.ndarray, last_day: int) -> float:
    within = values[days <= last_day]
    return float(within.mean()) if len(within) else 0.0


def _final_accounts(series: Table, info: RunInfo) -> dict[str, float]:
    if info.final_accounts is not None:
        return info.final_accounts
    if not len(series):
        return {"net_assets": info.initial_net_assets}
    return {account: round(float(series[account][-1]), 2) for account in ACCOUNTS}


def store_metrics(record: RunRecord, info: RunInfo) -> dict[str, Any]:
    """Final and initial net assets, average rating and average active listings."""
    series = record.timeseries
    final = _final_accounts(series, info)
    listings = series["active_listings"]
    return {
        "final_net_assets": final["net_assets"],
        "final_accounts": final,
        "initial_net_assets": info.initial_net_assets,
        "avg_store_rating": _horizon_mean(
            record.daily["rating"], record.daily["day"], info.last_day
        ),
        "avg_active_listings": float(listings.mean()) if len(listings) else 0.0,
    }


def call_metrics(trace: Table, activity: WindowActivity, info: RunInfo) -> dict[str, Any]:
    """Tool calls, windows, the SWR and effective-window rates."""
    env = env_mask(trace)
    end_of_step = env & (trace["tool"] == END_OF_STEP)
    months = info.months
    period = info.calendar.windows_per_rolling_period
    return {
        "tool_calls": int(env.sum()),
        "framework_calls": int((~env).sum()),
        "error_calls": int((env & ~trace["ok"]).sum()),
        "forced_end_of_step": int((end_of_step & trace["forced"]).sum()),
        "windows": activity.total,
        "effective_windows": int(activity.effective.sum()),
        "effective_window_rate": float(activity.effective.mean()) if activity.total else 0.0,
        "swr": sustained_window_rate(activity.effective, period),
        "monthly_effective_window_rate": monthly_rates(activity, info.calendar, months),
        "months": info.calendar.month_labels(months),
    }

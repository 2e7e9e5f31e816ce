"""The paper's Table-1 metrics of one run (docs/design.md §9; definitions in docs/metrics.md).

Money is summed in integer fen, as the record holds it, so totals are exact; it is reported in
RMB (`merchantbench.money.rmb`).
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
from merchantbench.money import rmb
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
# The headline of a finished run, what `merchantbench run` prints and a front end shows last.
HEADLINE_METRICS = ("final_net_assets", "gmv", "orders", "net_profit_margin", "fines", "swr")


@dataclass(frozen=True)
class OrderMoney:
    """Per-order money in fen (docs/metrics.md, "Net profit").

    Attributes:
        procured: The store paid the supplier (every outcome but stockout and
            insufficient balance).
        revenue: Sale price kept by the store.
        cost_lost: Procurement cost not recovered.
        fines_assessed: Fines charged on the order.
        fines_collected: The part of them the store paid (less than assessed only when a fine
            found the balance and deposit short, which closes the store).
        fees: Platform fees on the order (0 without the platform economy).
    """

    procured: np.ndarray
    revenue: np.ndarray
    cost_lost: np.ndarray
    fines_assessed: np.ndarray
    fines_collected: np.ndarray
    fees: np.ndarray

    @property
    def net_profit(self) -> np.ndarray:
        """Revenue − cost lost − fines collected − fees, per order: its effect on net assets."""
        return self.revenue - self.cost_lost - self.fines_collected - self.fees


def order_money(orders: Table) -> OrderMoney:
    """Split each order's effect on net assets (fen) into revenue, lost cost, fines and fees.

    An order still `open` when the run ended counts as sold if it was delivered (its price is
    receivable) and as neither sold nor lost if not (its cost is still in transit).
    """
    outcome = orders["outcome"]
    open_delivered = (outcome == "open") & (orders["delivered_t"] >= 0)
    sold = is_one_of(outcome, SOLD) | open_delivered
    lost = is_one_of(outcome, COST_LOST) | open_delivered
    return OrderMoney(
        procured=~is_one_of(outcome, NOT_PROCURED),
        revenue=np.where(sold, orders["sale_price"], 0),
        cost_lost=np.where(lost, orders["cost"], 0),
        fines_assessed=orders["fines_assessed"],
        fines_collected=orders["fines_collected"],
        fees=orders["fees"],
    )


def anomalous_orders(orders: Table) -> np.ndarray:
    """Orders that were late or ended anomalously (each order counted once)."""
    return orders["late"] | is_one_of(orders["outcome"], ANOMALOUS)


def orders_by_outcome(orders: Table) -> dict[str, int]:
    """Order count per outcome (every outcome listed, zeros included)."""
    return {name: int(np.sum(orders["outcome"] == name)) for name in OUTCOMES}


def order_metrics(orders: Table) -> dict[str, Any]:
    """GMV, net profit and margin, orders, fines assessed and collected, fees and the anomaly
    rate."""
    money = order_money(orders)
    gmv = int(orders["sale_price"][money.procured].sum())
    net_profit = int(money.net_profit.sum())
    anomalies = int(anomalous_orders(orders).sum())
    return {
        "gmv": rmb(gmv),
        "net_profit": rmb(net_profit),
        "net_profit_margin": net_profit / gmv if gmv else 0.0,
        "orders": int(money.procured.sum()),
        "all_orders": len(orders),
        "late_orders": int(orders["late"].sum()),
        "anomalous_orders": anomalies,
        "anomaly_rate": anomalies / len(orders) if len(orders) else 0.0,
        "fines": rmb(money.fines_assessed.sum()),
        "fines_collected": rmb(money.fines_collected.sum()),
        "fees": rmb(money.fees.sum()),
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
    return {account: rmb(series[account][-1]) for account in ACCOUNTS}


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
        "windows": info.windows,
        "scheduled_windows": activity.total,
        "effective_windows": int(activity.effective.sum()),
        "effective_window_rate": float(activity.effective.mean()) if activity.total else 0.0,
        "swr": sustained_window_rate(activity.effective, period),
        "monthly_effective_window_rate": monthly_rates(activity, info.calendar, months),
        "months": info.calendar.month_labels(months),
    }

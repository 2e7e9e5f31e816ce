"""Table-1 metrics on hand-built run records: windows, SWR, orders, money, reading."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from merchantbench.metrics import RunRecordError, compute_metrics, load_run_record
from merchantbench.scenario import ClockConfig, Scenario


def test_swr_is_the_minimum_over_rolling_60_windows(records):
    idle = set(range(50, 65)) | {100}  # 16 idle windows fit in one 60-window period
    trace = [records.call(w) for w in range(120) if w not in idle]
    metrics = compute_metrics(records.write(trace=trace, windows=120, scenario=records.horizon(60)))
    assert metrics["swr"] == pytest.approx(44 / 60)
    assert metrics["effective_window_rate"] == pytest.approx(104 / 120)
    assert metrics["effective_windows"] == 104


def test_swr_of_a_short_run_is_the_overall_share(records):
    metrics = compute_metrics(
        records.write(
            trace=[records.call(0), records.call(4), records.call(9)],
            windows=10,
            scenario=records.horizon(5),
        )
    )
    assert metrics["swr"] == pytest.approx(0.3)
    assert metrics["effective_window_rate"] == pytest.approx(0.3)


def test_effective_windows_ignore_end_of_step_and_framework_calls(records):
    trace = [
        records.call(0, "end_of_step"),
        records.call(1, "write_plan", origin="framework"),
        records.call(1, "end_of_step", forced=True),
        records.call(2, "get_product_detail", ok=False, error="not_found"),
        records.call(2, "end_of_step"),
        records.call(4, "query_balance"),
    ]  # windows 3 and 5 have no trace line at all
    metrics = compute_metrics(records.write(trace=trace, windows=6, scenario=records.horizon(3)))
    assert metrics["effective_windows"] == 2
    assert metrics["effective_window_rate"] == pytest.approx(2 / 6)
    assert metrics["coherence"]["idle"]["longest_idle_streak"] == 2
    assert metrics["tool_calls"] == 5
    assert metrics["framework_calls"] == 1
    assert metrics["error_calls"] == 1
    assert metrics["forced_end_of_step"] == 1


def test_windows_default_to_the_last_traced_window(records):
    metrics = compute_metrics(
        records.write(
            trace=[records.call(0), records.call(3, "end_of_step")], scenario=records.horizon(2)
        )
    )
    assert metrics["windows"] == 4
    assert metrics["effective_window_rate"] == pytest.approx(0.25)


def test_anomaly_rate_counts_each_order_once_and_includes_unprocured(records):
    orders = [
        records.order("normal", 50, 30),
        records.order("normal", 50, 30, 3, late=True),
        records.order("bad_review", 50, 30, 8, late=True),  # late and bad review: one anomaly
        records.order("stockout", 50, 30, 5),
        records.order("insufficient_balance", 50, 30, 5),
        records.order("cancelled", 50, 30),
        records.order("return_refund", 50, 30, 8),
        records.order("normal", 50, 30),
    ]
    metrics = compute_metrics(records.write(orders=orders))
    assert metrics["anomalous_orders"] == 6
    assert metrics["anomaly_rate"] == pytest.approx(6 / 8)
    assert metrics["late_orders"] == 2
    assert metrics["orders"] == 6
    assert metrics["orders_by_outcome"]["normal"] == 3


def test_gmv_excludes_stockout_and_insufficient_balance(records):
    orders = [
        records.order("normal", 59.9, 30),
        records.order("cancelled", 20.05, 10),
        records.order("return_refund", 40, 20, 8),
        records.order("stockout", 1000, 500, 5),
        records.order("insufficient_balance", 2000, 900, 5),
    ]
    metrics = compute_metrics(records.write(orders=orders))
    assert metrics["gmv"] == 119.95
    assert metrics["orders"] == 3
    assert metrics["fines"] == 18.0


# What the store is credited when an order resolves, from (price, cost); returnless: nothing.
SETTLED_CREDIT = {
    "normal": lambda price, cost: price,
    "bad_review": lambda price, cost: price,
    "return_refund": lambda price, cost: cost,
}


def ledger_final_accounts(orders: list[dict[str, Any]]) -> dict[str, float]:
    """Replay each order's ledger movements (docs/design.md §2, §5) in fen, independently of the
    metrics."""
    accounts = {"balance": 200_000, "deposit": 100_000, "in_transit": 0, "receivable": 0}

    def credit(fen: int) -> None:
        refill = min(fen, 100_000 - accounts["deposit"])
        accounts["deposit"] += refill
        accounts["balance"] += fen - refill

    def fine(fen: int) -> None:
        from_balance = min(fen, accounts["balance"])
        accounts["balance"] -= from_balance
        accounts["deposit"] -= fen - from_balance

    for o in orders:
        price, cost, outcome = o["sale_price"], o["cost"], o["outcome"]
        if outcome not in ("stockout", "insufficient_balance"):
            accounts["balance"] -= cost
            accounts["in_transit"] += cost
        if outcome == "cancelled":
            accounts["in_transit"] -= cost
            credit(cost)
        elif outcome not in ("stockout", "insufficient_balance") and o["delivered_t"] >= 0:
            accounts["in_transit"] -= cost
            accounts["receivable"] += price
            if outcome != "open":
                accounts["receivable"] -= price
                credit(SETTLED_CREDIT.get(outcome, lambda p, c: 0)(price, cost))
        fine(o["fines_collected"])
    rmb = {k: v / 100 for k, v in accounts.items()}
    return rmb | {"net_assets": sum(accounts.values()) / 100}


def test_net_profit_equals_the_change_in_net_assets(records):
    orders = [
        records.order("normal", 59.90, 35.15),  # +24.75
        records.order("normal", 48.00, 30.00, 3, late=True),  # +15.00
        records.order("bad_review", 45.50, 28.25, 5),  # +12.25
        records.order("return_refund", 60.00, 36.40, 8),  # -8.00: cost comes back
        records.order("returnless_refund", 39.99, 24.99),  # -24.99: cost lost
        records.order("cancelled", 30.00, 20.00, delivered_t=-1, resolved_t=-1, cancel_t=9),  # 0
        records.order("stockout", 35.00, 22.00, 5, delivered_t=-1),  # -5
        records.order("insufficient_balance", 80.00, 70.00, 5, delivered_t=-1),  # -5
        records.order("open", 50.00, 31.00, resolved_t=-1),  # +19.00: delivered, receivable
        records.order("open", 44.00, 27.00, delivered_t=-1, resolved_t=-1),  # 0: cost in transit
    ]
    final = ledger_final_accounts(orders)
    metrics = compute_metrics(records.write(orders=orders, final_accounts=final))
    assert metrics["net_profit"] == 28.01
    assert final["net_assets"] == pytest.approx(3028.01)
    assert metrics["net_profit"] == pytest.approx(metrics["final_net_assets"] - 3000.0)
    assert metrics["net_asset_change"] == metrics["net_profit"]
    assert metrics["gmv"] == 377.39
    assert metrics["net_profit_margin"] == pytest.approx(28.01 / 377.39)


def test_final_net_assets_from_run_json_else_last_timeseries_row(records):
    accounts = {"balance": 2500.5, "deposit": 1000.0, "in_transit": 0.0, "receivable": 0.0,
                "net_assets": 3500.5}  # fmt: skip
    with_accounts = compute_metrics(records.write(final_accounts=accounts))
    without = compute_metrics(records.write(timeseries=records.hourly(3, net_assets=3210.4)))
    assert with_accounts["final_net_assets"] == 3500.5
    assert without["final_net_assets"] == 3210.4
    assert without["final_accounts"]["balance"] == 2210.4


def test_rating_and_listings_are_averaged_over_the_horizon(records):
    series = records.hourly(2, listings=3)
    for row in series[24:]:
        row["active_listings"] = 5
    ratings = [4.0, 3.5, 1.0]  # day 2 lies past the 2-day horizon (draining)
    metrics = compute_metrics(records.write(timeseries=series, ratings=ratings))
    assert metrics["avg_store_rating"] == pytest.approx(3.75)
    assert metrics["avg_active_listings"] == pytest.approx(4.0)


def test_monthly_rates_bucket_windows_by_calendar_month(records):
    july = [61, 121]  # day 30 (1 July) evening and day 60 (31 July) evening
    trace = [records.call(w) for w in [*range(60), *july, 122]]  # 122 opens on 1 August
    rates = compute_metrics(records.write(trace=trace, windows=730))[
        "monthly_effective_window_rate"
    ]
    assert len(rates) == 12
    assert rates[:3] == pytest.approx([1.0, 2 / 62, 1 / 62])
    assert rates[3:] == [0.0] * 9


def test_monthly_rates_of_a_short_run_have_12_entries(records):
    trace = [records.call(w) for w in range(70)]
    metrics = compute_metrics(records.write(trace=trace, windows=80, scenario=records.horizon(40)))
    assert metrics["monthly_effective_window_rate"] == [1.0, 0.5] + [None] * 10
    assert metrics["months"][0] == "2025-06" and metrics["months"][11] == "2026-05"


def test_recorded_scenario_sets_the_calendar(records):
    clock = ClockConfig(days=20, hours_per_window=24, start_date="2025-06-15")
    trace = [records.call(w, t=w * 24) for w in range(16, 20)]  # days 16-19 are 1-4 July
    metrics = compute_metrics(
        records.write(trace=trace, windows=20, scenario=Scenario(clock=clock))
    )
    assert metrics["monthly_effective_window_rate"][:2] == [0.0, 1.0]
    assert metrics["months"][0] == "2025-06"


def test_reader_tolerates_narrow_types_and_column_order(records):
    run_dir = records.write(orders=[records.order("normal", 50, 30)])
    narrow = pa.table({"stars": pa.array([4, 4], pa.int8()), "rating": [4.0, 3.5],
                       "day": pa.array([0, 1], pa.int32())})  # fmt: skip
    pq.write_table(narrow, run_dir / "daily.parquet")
    record = load_run_record(run_dir)
    assert record.daily["day"].dtype == np.int64
    assert list(record.daily["stars"]) == [4, 4]
    assert compute_metrics(run_dir)["avg_store_rating"] == pytest.approx(3.75)


def test_reader_names_a_missing_column(records):
    run_dir = records.write()
    pq.write_table(pa.table({"day": [0]}), run_dir / "daily.parquet")
    with pytest.raises(RunRecordError, match="daily.parquet: column 'rating' is missing"):
        load_run_record(run_dir)


def test_reader_rejects_a_directory_without_run_json(tmp_path):
    with pytest.raises(RunRecordError, match="not a run record"):
        load_run_record(tmp_path)


def test_platform_fees_reduce_net_profit_when_recorded(records):
    orders = [
        records.order("normal", 50, 30, fees=2.5),
        records.order("stockout", 50, 30, 5, fees=0),
    ]
    metrics = compute_metrics(records.write(orders=orders))
    assert metrics["fees"] == 2.5
    assert metrics["net_profit"] == 12.5


def test_a_store_closed_on_its_first_day_has_swr_0_over_the_scheduled_windows(records):
    # Closed at hour 22 of a `paper` run: windows 0 (acted) and 1 (end_of_step) opened out of
    # 730 scheduled. Counted over the two opened windows the SWR was 0.5.
    trace = [records.call(0), records.call(1, "end_of_step")]
    metrics = compute_metrics(records.write(trace=trace, windows=2, closed=True))
    assert (metrics["windows"], metrics["scheduled_windows"]) == (2, 730)
    assert metrics["swr"] == 0.0
    assert metrics["effective_window_rate"] == pytest.approx(1 / 730)
    assert metrics["monthly_effective_window_rate"] == [pytest.approx(1 / 60)] + [0.0] * 11


def test_net_profit_uses_fines_collected_and_reports_both(records):
    orders = [
        records.order("normal", 50, 30, 3, late=True),  # +17
        records.order("insufficient_balance", 50, 30, 5, collected=2.5),  # the closing fine
    ]
    metrics = compute_metrics(records.write(orders=orders))
    assert (metrics["fines"], metrics["fines_collected"]) == (8.0, 5.5)
    assert metrics["net_profit"] == 14.5

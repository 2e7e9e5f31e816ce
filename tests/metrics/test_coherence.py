"""Coherence analyses on hand-built run records."""

from __future__ import annotations

import numpy as np
import pytest

from merchantbench.metrics import compute_metrics
from merchantbench.metrics.coherence import rating_drop_days


def coherence_of(run_dir) -> dict:
    return compute_metrics(run_dir)["coherence"]


def test_longest_idle_streak_and_abandonment_day(records):
    trace = [records.call(w) for w in (0, 1, 2, 3, 4, 9, 12)]
    trace += [records.call(w, "end_of_step") for w in range(13, 20)]  # closing is not acting
    idle = coherence_of(records.write(trace=trace, windows=20, scenario=records.horizon(10)))
    idle = idle["idle"]
    assert idle["longest_idle_streak"] == 7
    assert idle["longest_idle_streak_start_window"] == 13
    assert idle["longest_idle_streak_start_day"] == 6
    assert idle["last_effective_window"] == 12
    assert idle["abandonment_day"] == 7


@pytest.mark.parametrize(
    ("effective_windows", "expected"),
    [((2,), None), ((3,), None), ((), 0), ((0,), 1)],
)
def test_abandonment_needs_a_whole_day_without_action(records, effective_windows, expected):
    trace = [records.call(w) for w in effective_windows]
    run_dir = records.write(trace=trace, windows=4, scenario=records.horizon(2))  # days 0 and 1
    idle = coherence_of(run_dir)["idle"]
    assert idle["abandonment_day"] == expected


def test_call_mix_by_month(records):
    june = ["search_products", "get_daily_report", "get_supplier_profile", "query_open_orders",
            "query_balance", "end_of_step"]  # fmt: skip
    july = ["adjust_price", "delist_product", "end_of_step"]
    trace = [records.call(0, tool) for tool in june] + [records.call(70, tool) for tool in july]
    mix = coherence_of(records.write(trace=trace, windows=730))["call_mix_by_month"]
    assert [m["month"] for m in mix[:3]] == ["2025-06", "2025-07", "2025-08"]
    assert mix[0] | {} == {
        "month": "2025-06", "calls": 5, "sourcing_calls": 3, "supplier_handling_calls": 1,
        "sourcing_share": 0.6, "supplier_handling_share": 0.2,
    }  # fmt: skip
    assert (mix[1]["sourcing_share"], mix[1]["supplier_handling_share"]) == (0.0, 1.0)
    assert mix[2]["calls"] == 0 and mix[2]["sourcing_share"] is None
    assert len(mix) == 12


def test_procurement_price_of_new_products_by_quarter(records):
    day = 24
    listings = [
        records.listing("p1", "box", 0, 10 * day, cost=40.0),
        records.listing("p2", "box", 10 * day, cost=50.0),
        records.listing("p5", "mug", 91 * day + 23, cost=90.0),  # 31 August, last hour
        records.listing("p1", "box", 100 * day, cost=99.0),  # a relisting is not new
        records.listing("p3", "lamp", 92 * day, cost=70.0),  # 1 September
        records.listing("p4", "lamp", 100 * day, cost=80.0),
    ]
    quarters = coherence_of(records.write(listings=listings, windows=730))["procurement_by_quarter"]
    assert [q["quarter"] for q in quarters] == ["Q1", "Q2", "Q3", "Q4"]
    assert quarters[0]["months"] == "2025-06 to 2025-08"
    assert (quarters[0]["new_products"], quarters[0]["mean_cost"]) == (3, 60.0)
    assert quarters[0]["median_cost"] == 50.0
    assert (quarters[1]["new_products"], quarters[1]["mean_cost"]) == (2, 75.0)
    assert quarters[2]["new_products"] == 0 and quarters[2]["median_cost"] is None


def adverse_record(records):
    """Two listings hit while listed (one stockout, one refund), one hit after delisting."""
    r = records
    listings = [
        r.listing("p1", "storage box", 0, 48),
        r.listing("p2", "cat bowl", 0),
        r.listing("p4", "mug", 0, 24),
        r.listing("p5", "lamp", 0),
        r.listing("p9", "storage box", 48),
        r.listing("p3", "mug", 120),
    ]
    orders = [
        r.order("stockout", 50, 30, 5, product_id="p1", product_type="storage box", placed_t=30),
        r.order("return_refund", 50, 30, 8, product_id="p2", product_type="cat bowl",
                placed_t=10, resolved_t=100),
        r.order("normal", 50, 30, 3, product_id="p2", product_type="cat bowl", placed_t=60,
                late=True),  # late at 108, after the refund at 100
        r.order("bad_review", 50, 30, 5, product_id="p4", product_type="mug", placed_t=20,
                resolved_t=50),  # resolved after p4 was delisted at 24
        r.order("normal", 50, 30, product_id="p5", product_type="lamp", placed_t=5),
    ]  # fmt: skip
    trace = [
        r.call(2, "delist_product", args={"product_ids": ["p4"]}),
        r.call(3, "delist_product", args={"product_ids": ["p1"]}, ok=False, error="busy"),
        r.call(4, "delist_product", args={"product_ids": ["p1"]}),
        r.call(4, "list_product", args={"items": [{"product_id": "p9", "sale_price": 60}]}),
        r.call(8, "adjust_price", args={"product_id": "p2", "sale_price": 55}),  # before refund
        r.call(9, "adjust_price", args={"product_id": "p2", "sale_price": 45}),
        r.call(10, "list_product", args={"items": [{"product_id": "p3", "sale_price": 20}]}),
    ]
    return r.write(trace=trace, orders=orders, listings=listings, windows=20)


def test_reactions_to_adverse_outcomes(records):
    coherence = coherence_of(adverse_record(records))
    rows = {row["product_id"]: row for row in coherence["adverse_reaction_listings"]}
    assert set(rows) == {"p1", "p2"}
    assert rows["p1"] | {} == {
        "product_id": "p1", "product_type": "storage box", "listed_t": 0, "adverse_t": 30,
        "adverse_kind": "stockout", "delist": 18, "reprice": None, "replace": 18,
    }  # fmt: skip
    assert (rows["p2"]["adverse_t"], rows["p2"]["adverse_kind"]) == (100, "return_refund")
    assert (rows["p2"]["delist"], rows["p2"]["reprice"], rows["p2"]["replace"]) == (None, 8, None)


def test_reaction_summary(records):
    summary = coherence_of(adverse_record(records))["adverse_reaction"]
    assert summary["listings_with_adverse"] == 2
    assert summary["delist_rate"] == summary["reprice_rate"] == summary["replace_rate"] == 0.5
    assert summary["reacted_rate"] == 1.0
    assert summary["median_hours_to_delist"] == 18.0
    assert summary["median_hours_to_reprice"] == 8.0
    assert summary["median_hours_to_reaction"] == 13.0
    assert summary["by_kind"] == {"late": 0, "stockout": 1, "bad_review": 0, "return_refund": 1,
                                  "returnless_refund": 0}  # fmt: skip


def test_rating_drop_is_measured_from_the_7_day_maximum():
    rating = np.array([4.2, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.14, 4.15, 4.10, 4.11])
    assert rating_drop_days(rating).tolist() == [1, 2, 3, 4, 5, 6, 9]


def test_repricing_after_rating_drops(records):
    ratings = [4.0] * 10 + [3.96, 3.95, 3.99] + [4.0] * 7  # only day 11 drops by 0.05
    adjust = {"product_id": "p1", "sale_price": 10}
    trace = [records.call(w, "adjust_price", args=adjust) for w in (10, 22, 23, 27)]
    trace.append(records.call(24, "adjust_price", args=adjust, ok=False, error="not_listed"))
    run_dir = records.write(trace=trace, ratings=ratings, timeseries=records.hourly(20))
    repricing = coherence_of(run_dir)["rating_drop_repricing"]
    assert repricing["drop_days"] == 1
    assert repricing["days_after_drop"] == 3
    assert repricing["adjust_price_calls_after_drop"] == 3
    assert repricing["calls_per_day_after_drop"] == pytest.approx(1.0)
    assert repricing["baseline_calls_per_day"] == pytest.approx(1 / 17)
    assert repricing["ratio_to_baseline"] == pytest.approx(17.0)

"""Failure-mode detectors on hand-built run records: each flags its failure with its onset day
and not a healthy pattern, and no record (no windows, a run that ended early, no listings)
breaks one."""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pytest

from merchantbench.metrics import compute_metrics
from merchantbench.metrics.chains import response_chains
from merchantbench.metrics.diagnosis import DETECTORS, _poisson_cdf
from merchantbench.metrics.record import load_run_record

DAY = 24
YEAR = 730  # windows of a paper year
SEPTEMBER_1 = 92  # day index on paper (day 0 is 2025-06-01)


def diagnosis_of(run_dir) -> dict:
    return compute_metrics(run_dir)["diagnosis"]


def month_of_window(window: int) -> int:
    day = window // 2
    starts = [0, 30, 61, 92, 122, 153, 183, 214, 245, 273, 304, 334]
    return sum(day >= s for s in starts) - 1


@pytest.mark.parametrize("windows", [0, 3])
def test_no_windows_or_nothing_done_flags_nothing(records, windows):
    run_dir = records.write(windows=windows, scenario=records.horizon(2))
    found = diagnosis_of(run_dir)
    assert set(found) == {"flagged", *DETECTORS}
    assert found["flagged"] == []
    for name in DETECTORS:
        assert set(found[name]) == {"flagged", "onset_day", "evidence"}


def test_abandonment_is_a_long_idle_run_while_the_store_is_open(records):
    trace = [records.call(w) for w in range(40)]  # days 0-19
    trace += [records.call(w, "end_of_step") for w in range(40, 120)]  # closing is not acting
    found = diagnosis_of(records.write(trace=trace, windows=120, scenario=records.horizon(60)))
    abandon = found["premature_abandonment"]
    assert abandon["flagged"] and abandon["onset_day"] == 20
    assert abandon["evidence"]["idle_run_windows"] == 80
    assert "early_sourcing_stop" not in found["flagged"]  # it stopped acting, not sourcing


def test_idle_days_shorter_than_the_threshold_and_a_closed_store_are_not_abandonment(records):
    idle_13_days = [records.call(w) for w in range(120) if not 40 <= w < 66]
    found = diagnosis_of(
        records.write(trace=idle_13_days, windows=120, scenario=records.horizon(60))
    )
    assert not found["premature_abandonment"]["flagged"]
    # The store closed at window 40 of 120: the windows it never had are not idle ones.
    closed = [records.call(w) for w in range(40)]
    found = diagnosis_of(records.write(trace=closed, windows=40, scenario=records.horizon(60)))
    assert not found["premature_abandonment"]["flagged"]


def acts(window: int, onset: int, shape: str) -> bool:
    """Acts in every window until `onset`, then in a share falling by `shape` (as the
    validation agents do, agents/baselines/failing.py; straight: 20 points a month, a gentler
    slope is not datable within 15 days, docs/diagnosis.md): the skipped windows by a hash."""
    day = window // 2
    months = max(0.0, (day - onset) / 30)
    share = {"straight": 1.0 - 0.2 * months, "halving": 0.5**months, "step": 0.4}[shape]
    share = 1.0 if day < onset else max(0.2, share)
    draw = int.from_bytes(hashlib.sha256(f"0:{window}".encode()).digest()[:8], "big") / 2**64
    return draw < share


@pytest.mark.parametrize(
    ("shape", "onset"),
    [("straight", 97), ("halving", 143), ("step", 211), ("straight", 211), ("halving", 97),
     ("halving", 100), ("halving", 150), ("step", 97)],
)  # fmt: skip
def test_activity_decay_dates_each_shape_of_decline_within_15_days(records, shape, onset):
    trace = [records.call(w) for w in range(YEAR) if acts(w, onset, shape)]
    found = diagnosis_of(records.write(trace=trace, windows=YEAR, scenario=records.horizon(365)))
    decay = found["activity_decay"]
    assert decay["flagged"], decay["evidence"]
    assert abs(decay["onset_day"] - onset) <= 15, decay["evidence"]


def test_steady_activity_is_not_decay(records):
    steady = [records.call(w) for w in range(YEAR) if w % 4]  # 75 % all year
    found = diagnosis_of(records.write(trace=steady, windows=YEAR, scenario=records.horizon(365)))
    assert not found["activity_decay"]["flagged"]
    noisy = [records.call(w) for w in range(YEAR) if acts(w, 0, "step")]  # 40 % all year
    found = diagnosis_of(records.write(trace=noisy, windows=YEAR, scenario=records.horizon(365)))
    assert not found["activity_decay"]["flagged"], found["activity_decay"]["evidence"]


def test_narrowing_is_a_lasting_collapse_of_the_sourcing_share(records):
    trace = []
    for month in range(12):
        sourcing = 10 if month < 3 else 1
        window = [w for w in range(YEAR) if month_of_window(w) == month][0]
        trace += [records.call(window, "search_products") for _ in range(sourcing)]
        trace += [records.call(window, "query_order_updates") for _ in range(30 - sourcing)]
    found = diagnosis_of(records.write(trace=trace, windows=YEAR, scenario=records.horizon(365)))
    narrow = found["control_loop_narrowing"]
    assert narrow["flagged"] and narrow["onset_day"] == SEPTEMBER_1
    assert narrow["evidence"]["reference_share"] == pytest.approx(10 / 30, abs=1e-3)
    one_low_month = [c for c in trace if c["window"] < 2 * 122]  # September alone is low
    found = diagnosis_of(
        records.write(trace=one_low_month, windows=YEAR, scenario=records.horizon(365))
    )
    assert not found["control_loop_narrowing"]["flagged"]


def test_early_sourcing_stop_is_the_day_after_the_last_new_product(records):
    listings = [records.listing(f"p{d}", "box", d * DAY) for d in range(0, 201, 5)]
    listings.append(records.listing("p0", "box", 300 * DAY))  # a relisting is not new
    trace = [records.call(w) for w in range(YEAR)]
    found = diagnosis_of(records.write(trace=trace, listings=listings, windows=YEAR,
                                       timeseries=records.hourly(365),
                                       scenario=records.horizon(365)))  # fmt: skip
    stop = found["early_sourcing_stop"]
    assert stop["flagged"] and stop["onset_day"] == 201
    assert stop["evidence"]["days_before_horizon"] == 164
    nothing_listed = diagnosis_of(records.write(trace=trace, windows=YEAR,
                                                scenario=records.horizon(365)))  # fmt: skip
    assert nothing_listed["early_sourcing_stop"]["onset_day"] == 0
    assert nothing_listed["early_sourcing_stop"]["evidence"]["last_new_product_day"] is None


def flat_record(records, later_cost: float, net_assets: float):
    opening = [records.listing(f"o{i}", "box", i * DAY, cost=40.0 + i) for i in range(4)]
    later = [records.listing(f"l{i}", "box", (100 + 20 * i) * DAY, cost=later_cost - i)
             for i in range(12)]  # fmt: skip
    return records.write(listings=opening + later, windows=YEAR, scenario=records.horizon(365),
                         timeseries=records.hourly(2, net_assets=net_assets))  # fmt: skip


@pytest.mark.parametrize(
    ("later_cost", "net_assets", "flagged"),
    [(45.0, 9000.0, True), (120.0, 9000.0, False), (45.0, 4000.0, False)],
)
def test_flat_prices_need_a_band_that_never_rose_while_capital_grew(
    records, later_cost, net_assets, flagged
):
    found = diagnosis_of(flat_record(records, later_cost, net_assets))["flat_procurement_prices"]
    assert found["flagged"] is flagged
    assert found["onset_day"] is None
    assert found["evidence"]["opening_band_top"] == 43.0


def test_flat_prices_need_later_products_in_two_quarters(records):
    opening = [records.listing(f"o{i}", "box", i * DAY, cost=40.0) for i in range(4)]
    weeks = [records.listing(f"l{i}", "box", (92 + i // 2) * DAY, cost=40.0) for i in range(12)]
    run_dir = records.write(listings=opening + weeks, windows=YEAR, scenario=records.horizon(365),
                            timeseries=records.hourly(2, net_assets=9000.0))  # fmt: skip
    assert not diagnosis_of(run_dir)["flat_procurement_prices"]["flagged"]


def test_flat_prices_without_listings_are_not_judged(records):
    found = diagnosis_of(records.write(windows=YEAR, scenario=records.horizon(365)))
    assert not found["flat_procurement_prices"]["flagged"]
    assert found["flat_procurement_prices"]["evidence"]["band_growth"] is None


def chain_of(records, calls, within: int = 14 * 12) -> int | None:
    listings = [records.listing("p1", "box", 0), records.listing("p2", "box", 30),
                records.listing("p3", "mug", 30)]  # fmt: skip
    record = load_run_record(records.write(trace=calls, listings=listings, windows=40))
    rows = [{"product_id": "p1", "product_type": "box", "adverse_t": 10}]
    return response_chains(rows, record.trace, record.listings, within)[0]


def test_a_chain_is_delist_then_search_then_a_same_type_listing_in_time(records):
    c = records.call
    delist = c(2, "delist_product", args={"product_ids": ["p1"]})
    search = c(2, "search_products", args={"query": "box"})
    replace = c(3, "list_product", args={"items": [{"product_id": "p2", "sale_price": 9.0}]})
    other = c(3, "list_product", args={"items": [{"product_id": "p3", "sale_price": 9.0}]})
    assert chain_of(records, [delist, search, replace]) == 36 - 10
    assert chain_of(records, [delist, replace]) is None  # no search
    assert chain_of(records, [search, delist, replace]) is None  # searched before delisting
    assert chain_of(records, [delist, search, other]) is None  # another product type
    assert chain_of(records, [delist, search, replace], within=20) is None  # too late
    early = c(0, "delist_product", args={"product_ids": ["p1"]})  # before the outcome
    assert chain_of(records, [early, search, replace]) is None
    refused = delist | {"ok": False}
    assert chain_of(records, [refused, search, replace]) is None


def test_poisson_lower_tail():
    assert _poisson_cdf(0, 3.0) == pytest.approx(math.exp(-3.0))
    assert _poisson_cdf(2, 3.0) == pytest.approx(math.exp(-3.0) * (1 + 3 + 4.5))
    assert _poisson_cdf(5, 0.0) == 1.0
    assert _poisson_cdf(3000, 3000.0) == pytest.approx(0.5, abs=0.01)


def repricing_record(records, quiet_after_drops: bool):
    ratings = [4.0] * 60
    ratings[20] = ratings[21] = 3.9  # a drop on days 20 and 21
    ratings[40] = 3.8
    drop_days = {20, 21, 22, 23, 40, 41, 42}
    trace = [
        records.call(2 * day, "adjust_price", args={"product_id": "p1", "sale_price": 9.0})
        for day in range(60) for _ in range(3)
        if not (quiet_after_drops and day in drop_days)
    ]  # fmt: skip
    return records.write(trace=trace, ratings=ratings, windows=120,
                         timeseries=records.hourly(60), scenario=records.horizon(60))  # fmt: skip


def test_rating_adaptation_flags_prices_held_after_drops(records):
    held = diagnosis_of(repricing_record(records, quiet_after_drops=True))["rating_adaptation"]
    assert held["flagged"] and held["onset_day"] == 20
    assert held["evidence"]["calls_after_drops"] == 0
    usual = diagnosis_of(repricing_record(records, quiet_after_drops=False))["rating_adaptation"]
    assert not usual["flagged"]


def test_an_agent_that_never_reprices_is_not_judged_on_rating_drops(records):
    ratings = [4.0] * 30
    ratings[10] = 3.5
    run_dir = records.write(
        ratings=ratings, windows=60, timeseries=records.hourly(30), scenario=records.horizon(30)
    )
    assert not diagnosis_of(run_dir)["rating_adaptation"]["flagged"]


def test_a_gentle_straight_decline_is_dated_by_the_likelihood_of_the_windows():
    """The validation agents' default straight decline (8 points a month) over 20 skip seeds
    and three onsets: the binomial fit dates 52 of 60 within 15 days (least squares on the
    daily rates: 42, its errors up to +112 days; docs/diagnosis.md). The first skipped window
    comes about 16 days after the onset at that slope, so no fit dates every one."""
    from merchantbench.agents.baselines.failing import (
        RuleBasedDecayAgent,
        RuleBasedDecaySettings,
    )
    from merchantbench.metrics.diagnosis import _change_point

    errors = []
    for onset in (97, 143, 211):
        for seed in range(20):
            agent = RuleBasedDecayAgent(RuleBasedDecaySettings(onset_day=onset, skip_seed=seed))
            acted = [not agent.skips(w, w // 2) for w in range(YEAR)]
            rates = [(a + b) / 2 for a, b in zip(acted[::2], acted[1::2], strict=True)]
            days = list(range(YEAR // 2))
            found = _change_point(np.array(days), np.array(rates), np.full(len(days), 2.0))
            errors.append(found[0] - onset)
    assert sum(abs(e) <= 15 for e in errors) >= 50, errors
    assert max(abs(e) for e in errors) <= 30, errors

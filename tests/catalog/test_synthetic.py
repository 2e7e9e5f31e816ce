"""The synthetic market generator (docs/design.md §3) on the `smoke` and `small` presets."""

from __future__ import annotations

import json
import re
from dataclasses import fields

import numpy as np
import pytest

from merchantbench.catalog import calendar, vocab
from merchantbench.catalog.events import delisted_hours_by_day, supplier_history
from merchantbench.catalog.market import CHANNELS, Market
from merchantbench.catalog.market_demand import store_saturation
from merchantbench.catalog.stats import market_stats
from merchantbench.catalog.synthetic import generate_market
from merchantbench.scenario import PRESETS, load_scenario

SMALL = PRESETS["small"]


@pytest.fixture(scope="module")
def small() -> Market:
    return generate_market(SMALL, 3)


def _total_risk(m: Market) -> np.ndarray:
    return m.risk_cancel.astype(np.float64) + m.risk_return + m.risk_refund_only + m.risk_bad_review


def _assert_same_market(a: Market, b: Market) -> None:
    for f in fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y, err_msg=f.name)
    for channel in CHANNELS:
        for name in ("product", "start", "end", "value", "offsets"):
            np.testing.assert_array_equal(
                getattr(a.events[channel], name), getattr(b.events[channel], name)
            )


def test_the_market_is_a_pure_function_of_scenario_and_seed(small):
    _assert_same_market(small, generate_market(SMALL, 3))
    other = generate_market(SMALL, 4)
    assert not np.array_equal(other.demand, small.demand)
    assert not np.array_equal(other.titles, small.titles)


def test_shapes_and_dtypes_follow_the_market_contract(small):
    small.validate_shapes()
    assert small.demand.shape == (395, 2000) and small.demand.dtype == np.float32
    assert small.market_sales_cum.dtype == np.int32
    assert small.category.dtype == np.int16 and small.base_price_fen.dtype == np.int64
    assert small.hourly_weights.shape == (10, 24)
    np.testing.assert_allclose(small.hourly_weights.sum(axis=1), 1.0)
    assert len(small.type_names) == 10 * SMALL.market.types_per_category
    smoke = generate_market(PRESETS["smoke"], 1)
    smoke.validate_shapes()
    assert smoke.demand.shape == (30 + 365, 200)  # the market's year is always built whole


def test_demand_is_zero_before_launch_and_positive_after(small):
    rows = np.arange(small.demand.shape[0])[:, None] - small.history_days
    before = rows < small.launch_day[None, :]
    assert before.any() and (small.demand[before] == 0).all()
    assert (small.demand[~before] > 0).all()
    launched = small.launch_day >= 1
    assert launched.mean() == pytest.approx(SMALL.market.launch_fraction, abs=0.04)
    sales = np.diff(small.market_sales_cum, axis=0)
    assert (small.market_sales_cum[0] == 0).all() and (sales >= 0).all()
    assert (sales[before] == 0).all()


def _listed_share(market: Market, seed: int) -> np.ndarray:
    """Share of each day [row, product] in which the supplier lists the product."""
    history = supplier_history(seed, SMALL.suppliers, market.n_products, market.days * 24)
    return (24 - delisted_hours_by_day(history["delisting"], market.n_products, market.days)) / 24


def _run_totals(market: Market) -> tuple[np.ndarray, np.ndarray]:
    """Store demand D while the supplier lists the product and realised market sales of each
    product, summed over the run days."""
    listed = _listed_share(market, 3)[market.history_days :]
    demand = (market.demand[market.history_days :] * listed).sum(axis=0, dtype=np.float64)
    sales = market.market_sales_cum[-1] - market.market_sales_cum[market.history_days]
    return demand, sales.astype(np.float64)


def test_market_sales_count_every_competing_store(small):
    """Market sales are Poisson draws of the market's demand: the store's D times a competition
    factor that is 1 for niche products and grows for best sellers, most for cheap ones."""
    demand, sales = _run_totals(small)
    scale = SMALL.market.market_sales_scale
    np.testing.assert_array_equal(
        small.sales_30d(100), small.market_sales_cum[130] - small.market_sales_cum[100]
    )
    counted = demand > 20  # enough expected sales for the ratio to be sharp
    ratio = sales[counted] / (scale * demand[counted])
    assert np.quantile(ratio, 0.01) > 0.9  # a store never gets more than the market
    level = (
        demand[counted]
        / SMALL.clock.days
        / store_saturation(SMALL.market, small.p_ref_fen)[counted]
    )
    niche = level < 0.05
    assert sales[counted][niche].sum() == pytest.approx(
        scale * demand[counted][niche].sum(), rel=0.1
    )
    assert (
        ratio[level >= np.quantile(level, 0.9)].mean() > 3 * ratio[level <= np.median(level)].mean()
    )
    p_ref = small.p_ref_fen[counted] / 100
    best = sales[counted] >= np.quantile(sales[counted], 0.9)
    assert ratio[best & (p_ref < 25)].mean() > 2 * ratio[best & (p_ref > 80)].mean()


def test_no_market_sales_while_the_supplier_has_a_product_delisted(small):
    """docs/design.md §3 (before the fix: 7.01 orders a day delisted against 7.03 available,
    paper)."""
    daily = np.diff(small.market_sales_cum.astype(np.int64), axis=0)
    listed = _listed_share(small, 3)
    on_sale = small.demand > 0
    assert (listed == 0).mean() > 0.3  # delistings are common, in the history too
    assert (daily[(listed == 0) & on_sale] == 0).all()
    assert daily[(listed == 1) & on_sale].mean() > 0.5


def test_cheap_products_sell_more_and_store_demand_has_a_thinner_tail(small):
    demand, sales = _run_totals(small)
    assert np.corrcoef(np.log1p(sales), np.log(small.p_ref_fen))[0, 1] < -0.2
    top = len(demand) // 10
    store_share = np.sort(demand)[::-1][:top].sum() / demand.sum()
    market_share = np.sort(sales)[::-1][:top].sum() / sales.sum()
    assert store_share < market_share - 0.1


def test_prices_margins_and_elasticities(small):
    m = SMALL.market
    p_ref, cost = small.p_ref_fen / 100, small.base_price_fen / 100
    assert np.median(p_ref) == pytest.approx(m.p_ref_median, rel=0.15)
    assert p_ref.min() >= m.p_ref_clip[0] and p_ref.max() <= m.p_ref_clip[1]
    assert np.quantile(p_ref, 0.99) > 4 * np.median(p_ref)  # long right tail
    margin = 1 - small.base_price_fen / small.p_ref_fen
    normal = ~small.is_trap
    assert margin[normal].min() >= m.margin_range[0] - 0.01
    assert margin[normal].max() <= m.margin_range[1] + 0.01
    np.testing.assert_allclose(small.elasticity[normal], 1 / margin[normal], rtol=0.02)
    assert (cost > 0).all() and (cost < p_ref).all()
    by_category = [np.median(margin[normal & (small.category == c)]) for c in range(10)]
    assert max(by_category) - min(by_category) > 0.04  # per-category sub-ranges


def test_traps_look_profitable_sell_well_and_carry_high_hidden_risk(small):
    trap = small.is_trap
    assert trap.mean() == pytest.approx(SMALL.market.trap_fraction, abs=0.002)
    margin = 1 - small.base_price_fen / small.p_ref_fen
    assert margin[trap].min() > margin[~trap].max()
    risk = _total_risk(small)
    assert risk[trap].mean() > 3 * risk[~trap].mean()
    demand = small.demand.mean(axis=0)
    assert np.median(demand[trap]) > 2 * np.median(demand[~trap])


def test_trust_signals_track_hidden_quality_with_noise(small):
    risk = _total_risk(small)
    shop = small.shop_rating[small.supplier]
    returning = small.return_buyer_rate[small.supplier]
    for signal in (small.historical_avg_rating, shop, returning):
        corr = np.corrcoef(signal[~small.is_trap], risk[~small.is_trap])[0, 1]
        assert -0.8 < corr < -0.15
    fast = small.ship_hours <= 12
    assert risk[fast].mean() < risk[~fast].mean()
    normal = risk[~small.is_trap]
    assert 0.07 < normal.mean() < 0.16


def test_public_ranges_and_supplier_sizes(small):
    sc = SMALL.suppliers
    assert small.ship_hours.min() >= sc.ship_hours[0] and small.ship_hours.max() <= 48
    assert (small.ship_hours >= 24).mean() > 0.6
    lo, hi = SMALL.orders.logistics_hours
    assert small.logistics_hours.min() >= lo and small.logistics_hours.max() <= hi
    assert small.stock_capacity.min() >= 50 and small.stock_capacity.max() <= 500
    assert small.stock_refill.min() >= 1 and small.stock_refill.max() <= 20
    assert small.historical_avg_rating.min() >= 1 and small.historical_avg_rating.max() <= 5
    counts = np.bincount(small.supplier, minlength=small.n_suppliers)
    np.testing.assert_array_equal(counts, small.supplier_product_count)
    assert counts.min() >= 1 and (counts <= 3).mean() > 0.6 and counts.max() >= 10


def test_ids_and_names_look_like_a_marketplace_and_are_unique(small):
    assert len(set(small.product_ids.tolist())) == small.n_products
    assert all(re.fullmatch(r"[6-8]\d{11}", pid) for pid in small.product_ids.tolist())
    order = np.argsort(small.product_ids)
    assert abs(np.corrcoef(order, np.arange(small.n_products))[0, 1]) < 0.1
    assert len(set(small.supplier_names.tolist())) == small.n_suppliers
    assert all(name.endswith("Co., Ltd.") for name in small.supplier_names.tolist())
    assert len(set(small.supplier_ids.tolist())) == small.n_suppliers
    assert small.index_of[str(small.product_ids[7])] == 7


def test_titles_share_their_type_keyword(small):
    for i in range(0, small.n_products, 37):
        assert str(small.type_names[small.type_id[i]]) in str(small.titles[i])
    same_type = np.flatnonzero(small.type_id == small.type_id[0])
    assert len(same_type) > 1
    assert len(set(small.titles[same_type].tolist())) > 1  # substitutes, not copies


def test_type_trajectories_make_the_best_portfolio_change_over_the_year(small):
    by_type = np.zeros((small.demand.shape[0], len(small.type_names)))
    np.add.at(by_type.T, small.type_id, small.demand.T)
    june = by_type[calendar.HISTORY_DAYS + 20 : calendar.HISTORY_DAYS + 50].mean(axis=0)
    december = by_type[calendar.HISTORY_DAYS + 190 : calendar.HISTORY_DAYS + 220].mean(axis=0)
    top_june, top_december = set(np.argsort(june)[-20:]), set(np.argsort(december)[-20:])
    assert len(top_june & top_december) < 15


def test_calendar_peaks_show_in_market_totals(small):
    total = small.demand[calendar.HISTORY_DAYS :].sum(axis=1)
    assert total[calendar.festival_day("2025-06-01", "double11")] > 1.8 * np.median(total)
    assert total[calendar.festival_day("2025-06-01", "spring_festival")] < 0.7 * np.median(total)


def test_progress_is_reported_up_to_completion():
    seen: list[tuple[str, float]] = []
    generate_market(PRESETS["smoke"], 1, lambda stage, done: seen.append((stage, done)))
    fractions = [done for _, done in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert {"demand", "events"} <= {stage for stage, _ in seen}


def test_stats_are_json_and_hold_the_headline_figures(small):
    stats = market_stats(small)
    json.dumps(stats)
    assert stats["n_products"] == 2000 and stats["n_suppliers"] == 740
    assert sum(stats["categories"].values()) == 2000
    assert stats["mean_daily_demand"] == pytest.approx(small.demand[30:].mean(), rel=1e-4)
    assert 0.35 < stats["top10pct_demand_share"] < 0.8
    assert stats["calendar"]["double11_ratio"] > 1.8


def test_overrides_reach_the_generator():
    scenario = load_scenario(
        "smoke", overrides=["market.trap_fraction=0.2", "market.p_ref_median=80"]
    )
    market = generate_market(scenario, 1)
    assert market.is_trap.mean() == pytest.approx(0.2, abs=0.01)
    assert np.median(market.p_ref_fen) > 5000


@pytest.mark.slow
def test_paper_scale_market_meets_the_documented_calibration(tmp_path, monkeypatch):
    """The targets of docs/catalog.md ("Calibration targets") on the paper-scale market."""
    from merchantbench.catalog.cache import CACHE_ENV, get_market

    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    paper = PRESETS["paper"]
    market = get_market(paper, 1)
    stats = market_stats(market, paper.clock.start_date)
    assert (stats["n_products"], stats["n_suppliers"]) == (98_843, 36_576)
    assert 0.75 <= stats["diligent_pick_demand"] <= 1.1
    assert 0.08 <= stats["mean_daily_demand"] <= 0.18
    tail = stats["demand_tail"]
    assert 0.3 <= tail["top10pct_share"] <= 0.45 and tail["top1pct_share"] >= 0.05
    sales = np.sort(np.diff(market.market_sales_cum[market.history_days :], axis=0).sum(axis=0))
    top10, top1 = (sales[-len(sales) // k :].sum() / sales.sum() for k in (10, 100))
    assert 0.45 <= top10 <= 0.75 and top1 >= 0.12  # the public signal keeps the heavy tail
    cal = stats["calendar"]
    assert cal["618_ratio"] >= 1.6 and cal["double12_ratio"] >= 1.3
    assert cal["double11_ratio"] >= 2.2 and cal["double11_ratio"] > cal["618_ratio"]
    assert min(cal["double11_ratio_by_category"].values()) >= 1.5
    assert cal["spring_festival_ratio"] <= 0.6
    launches = np.array(list(stats["launches_by_month"].values()))
    assert len(launches) == 12 and launches.min() >= 0.05 * launches.sum()
    assert launches.max() <= 0.15 * launches.sum()
    assert stats["trap_share"] == pytest.approx(0.04, abs=0.001)
    sizes = stats["supplier_sizes"]
    assert sizes["share_1_to_3"] >= 0.75 and sizes["n_over_100"] >= 5 and sizes["max"] <= 1000
    risk = stats["risk"]
    assert risk["top_rated_total_risk"] <= 0.09 and risk["trap_total_risk"] >= 0.35
    assert 0.08 <= risk["mean_total_risk"] <= 0.14


def test_more_types_than_the_vocabulary_lists_are_derived_with_qualifiers():
    scenario = load_scenario("smoke", overrides=["market.types_per_category=40"])
    market = generate_market(scenario, 1)
    names = market.type_names.tolist()
    assert len(names) == 400 and len(set(names)) == 400
    derived = 0
    for t, name in enumerate(names):
        category = scenario.market.categories[t // 40]
        base_names = {bt.name for bt in vocab.category_vocab(category).types}
        if name not in base_names:
            qualifier = next(q for q in vocab.TYPE_QUALIFIERS if name.startswith(f"{q} "))
            assert name.removeprefix(f"{qualifier} ") in base_names
            derived += 1
    assert derived >= 100  # 40 types per category, 30 listed
    for i in range(market.n_products):
        assert names[market.type_id[i]] in str(market.titles[i])


def test_a_category_without_vocabulary_is_refused():
    scenario = load_scenario("smoke", overrides=["market.categories=[office, jewellery]"])
    with pytest.raises(ValueError, match="jewellery"):
        generate_market(scenario, 1)

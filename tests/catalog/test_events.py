"""Supplier events (docs/design.md §7): pure per product, geometric waits, durations, values, CSR
layout."""

from __future__ import annotations

import numpy as np
import pytest

from merchantbench.catalog.events import (
    PROCESS_START,
    delisted_hours_by_day,
    event_hazards,
    stationary_share,
    supplier_events,
    supplier_events_for,
    supplier_history,
)
from merchantbench.catalog.market import CHANNELS, SupplierEvents
from merchantbench.scenario import SupplierConfig

HORIZON = 8760
CONFIG = SupplierConfig()


def _of(events: SupplierEvents, position: int) -> tuple[np.ndarray, ...]:
    lo, hi = events.offsets[position], events.offsets[position + 1]
    return events.start[lo:hi], events.end[lo:hi], events.value[lo:hi]


@pytest.fixture(scope="module")
def thousand() -> dict[str, SupplierEvents]:
    return supplier_events(7, CONFIG, 1000, HORIZON)


def test_a_products_events_do_not_depend_on_how_many_products_there_are(thousand):
    hundred = supplier_events(7, CONFIG, 100, HORIZON)
    for channel in CHANNELS:
        assert hundred[channel].offsets[-1] > 0
        for i in range(100):
            for a, b in zip(_of(hundred[channel], i), _of(thousand[channel], i), strict=True):
                np.testing.assert_array_equal(a, b)


def test_any_subset_of_products_gets_the_same_events(thousand):
    products = np.array([912, 5, 17, 5])
    subset = supplier_events_for(7, CONFIG, products, HORIZON)
    for channel in CHANNELS:
        for position, product in enumerate(products):
            for a, b in zip(
                _of(subset[channel], position), _of(thousand[channel], product), strict=True
            ):
                np.testing.assert_array_equal(a, b)
            lo, hi = subset[channel].offsets[position : position + 2]
            assert (subset[channel].product[lo:hi] == product).all()


def test_layout_is_sorted_by_product_then_start_with_csr_offsets(thousand):
    for events in thousand.values():
        assert len(events.offsets) == 1001 and events.offsets[0] == 0
        assert events.offsets[-1] == len(events.start)
        assert (np.diff(events.product) >= 0).all()
        counts = np.bincount(events.product, minlength=1000)
        np.testing.assert_array_equal(np.diff(events.offsets), counts)
        assert events.product.dtype == np.int32 and events.start.dtype == np.int32
        assert events.end.dtype == np.int32 and events.value.dtype == np.float32
        assert events.offsets.dtype == np.int64


def test_durations_gaps_and_horizon(thousand):
    for events in thousand.values():
        length = events.end - events.start
        running = events.start == 0  # already in force when the run starts: what is left of it
        assert length[~running].min() >= 168 and length.max() <= 672 and length.min() >= 1
        assert events.start.min() >= 0 and events.start.max() < HORIZON
        same = events.product[1:] == events.product[:-1]
        # The next event of a channel starts only after recovery (at least one clean hour).
        assert (events.start[1:][same] >= events.end[:-1][same] + 1).all()


def test_event_values_follow_their_channel(thousand):
    price = thousand["price_change"].value
    assert price.min() >= 0.9 and price.max() < 1.5
    assert price.std() > 0.1  # spread over the range, not a constant
    delay = thousand["delay"].value
    assert delay.min() >= 12 and delay.max() <= 96
    np.testing.assert_array_equal(delay, np.round(delay))
    assert (thousand["delisting"].value == 0).all()


def test_hazards_lie_in_each_channels_range():
    hazards = event_hazards(3, CONFIG, np.arange(5000))
    for channel, (lo, hi) in zip(
        CHANNELS,
        (CONFIG.price_change_hazard, CONFIG.delisting_hazard, CONFIG.delay_hazard),
        strict=True,
    ):
        h = hazards[channel]
        assert h.min() >= lo and h.max() <= hi
        assert h.max() - h.min() > 0.9 * (hi - lo)


def test_event_count_matches_the_renewal_rate_of_a_fixed_hazard():
    config = SupplierConfig(price_change_hazard=(0.01, 0.01), delisting_hazard=(0.001, 0.001))
    events = supplier_events(11, config, 4000, HORIZON)
    mean_length = (168 + 672) / 2
    for channel, hazard in (("price_change", 0.01), ("delisting", 0.001)):
        per_product = len(events[channel].start) / 4000
        # Stationary renewal: one cycle = wait + event; plus the event in force at hour 0.
        in_force = mean_length / (mean_length + 1 / hazard)
        expected = HORIZON / (1 / hazard + mean_length) + in_force
        assert per_product == pytest.approx(expected, rel=0.05)


def test_a_higher_hazard_means_an_earlier_first_event(thousand):
    hazards = event_hazards(7, CONFIG, np.arange(1000))["price_change"]
    ev = thousand["price_change"]
    has = np.diff(ev.offsets) > 0
    first = np.where(has, ev.start[np.minimum(ev.offsets[:-1], len(ev.start) - 1)], HORIZON)
    assert np.corrcoef(hazards, first)[0, 1] < -0.2


def test_the_seed_changes_the_events(thousand):
    other = supplier_events(8, CONFIG, 1000, HORIZON)
    assert not np.array_equal(other["delay"].start[:50], thousand["delay"].start[:50])


def test_a_short_horizon_keeps_only_events_that_start_inside_it():
    events = supplier_events(7, CONFIG, 300, 200)
    for channel in CHANNELS:
        assert (events[channel].start < 200).all()
        assert len(events[channel].offsets) == 301


def _share_in_event(events, n: int, hours: int, first_hour: int = 0) -> np.ndarray:
    """Share of the n products in an event of the channel, hour by hour from `first_hour`."""
    active = np.zeros(hours + 1, dtype=np.int64)
    np.add.at(active, np.clip(events.start - first_hour, 0, hours), 1)
    np.add.at(active, np.clip(events.end - first_hour, 0, hours), -1)
    return np.cumsum(active)[:hours] / n


def test_the_first_weeks_look_like_any_other(thousand):
    """Stationary start (docs/design.md §7): the share of products in an event in week 0 is that of
    later weeks and of the long-run share the hazards imply (before the fix: 19 % delisted in week 0
    against 50 % later on the paper market)."""
    events = supplier_events(7, CONFIG, 20_000, HORIZON)
    hazards = event_hazards(7, CONFIG, np.arange(20_000))
    for channel in CHANNELS:
        weekly = _share_in_event(events[channel], 20_000, 52 * 168).reshape(52, 168).mean(axis=1)
        later = weekly[4:].mean()
        assert weekly[0] == pytest.approx(later, abs=0.015), channel
        assert weekly[1] == pytest.approx(later, abs=0.015), channel
        assert later == pytest.approx(stationary_share(hazards[channel], CONFIG).mean(), abs=0.01)


def test_an_event_in_force_at_the_start_has_the_stationary_remaining_length():
    """The hours left of an event in force at a fixed hour: mean E[L²] / (2 E[L]) + 1/2 for
    integer lengths L uniform on 168 … 672 (a uniformly placed hour of a length-biased event)."""
    events = supplier_events(5, CONFIG, 20_000, HORIZON)["price_change"]
    running = events.end[events.start == 0].astype(np.float64)
    lengths = np.arange(168, 673, dtype=np.float64)
    expected = (lengths**2).mean() / (2 * lengths.mean()) + 0.5
    assert running.mean() == pytest.approx(expected, rel=0.02)
    assert running.min() >= 1 and running.max() <= 672


def test_history_and_run_views_agree():
    history = supplier_history(7, CONFIG, 500, HORIZON)
    run = supplier_events(7, CONFIG, 500, HORIZON)
    for channel in CHANNELS:
        full, seen = history[channel], run[channel]
        assert full.start.min() >= PROCESS_START and full.start.min() < 0
        ongoing = full.end > 0
        np.testing.assert_array_equal(seen.end, full.end[ongoing])
        np.testing.assert_array_equal(seen.start, np.maximum(full.start[ongoing], 0))
        np.testing.assert_array_equal(
            np.diff(seen.offsets), np.bincount(seen.product, minlength=500)
        )


def test_delisted_hours_by_day_counts_each_hour_once():
    history = supplier_history(9, CONFIG, 300, 60 * 24)
    delistings = history["delisting"]
    hours = delisted_hours_by_day(delistings, 300, 60)
    assert hours.shape == (30 + 60, 300) and hours.min() >= 0 and hours.max() <= 24
    for product in (0, 17, 299):
        lo, hi = delistings.offsets[product], delistings.offsets[product + 1]
        mask = np.zeros(90 * 24, dtype=bool)
        for start, end in zip(delistings.start[lo:hi], delistings.end[lo:hi], strict=True):
            mask[max(start - PROCESS_START, 0) : max(min(end - PROCESS_START, 90 * 24), 0)] = True
        np.testing.assert_array_equal(hours[:, product], mask.reshape(90, 24).sum(axis=1))

"""catalog_view_at: supplier events, launches, calendar and stock applied to the public catalog."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from handmade_market import ITEMS, Events, handmade_market

from merchantbench.catalog.market import VIEW_COLUMNS
from merchantbench.catalog.view import (
    CHECKPOINT_HOURS,
    StockOverrides,
    ViewCursor,
    catalog_view_at,
    event_price_fen,
)
from merchantbench.sim.suppliers import SupplierBook

LATE_LAUNCH = next(i for i, item in enumerate(ITEMS) if item.launch_day == 5)


def test_no_events_shows_the_base_catalog():
    market = handmade_market()
    view = catalog_view_at(market, 30)
    assert view.hour == 30 and view.day == 1
    assert np.array_equal(view.price_fen, market.base_price_fen)
    assert np.array_equal(view.ship_hours, market.ship_hours)
    assert np.array_equal(view.stock, market.stock_capacity)
    assert np.array_equal(view.sales_30d, market.sales_30d(1))
    assert view.visible.sum() == len(ITEMS) - 1 and not view.visible[LATE_LAUNCH]


def test_a_product_becomes_visible_on_its_launch_day():
    market = handmade_market()
    assert not catalog_view_at(market, 5 * 24 - 1).visible[LATE_LAUNCH]
    assert catalog_view_at(market, 5 * 24).visible[LATE_LAUNCH]


def test_delisting_hides_a_product_from_start_until_end_exclusive():
    market = handmade_market(events=Events(delisting=[(3, 100, 300, 0.0)]))
    hidden = [h for h in (99, 100, 299, 300) if not catalog_view_at(market, h).visible[3]]
    assert hidden == [100, 299]


def test_price_change_multiplies_and_rounds_half_to_even():
    # 12.50 RMB × 1.25 = 1562.5 fen, which rounds to the even 1562.
    market = handmade_market(events=Events(price_change=[(0, 10, 500, 1.25), (1, 0, 50, 1.1)]))
    during, after = catalog_view_at(market, 10), catalog_view_at(market, 500)
    assert during.price_fen[0] == 1562 == round(1250 * 1.25)
    assert during.price_fen[1] == round(890 * float(np.float32(1.1)))
    assert after.price_fen[0] == 1250 and catalog_view_at(market, 50).price_fen[1] == 890
    assert event_price_fen(np.array([1250, 1251]), np.array([1.25, 1.25])).tolist() == [1562, 1564]


def test_delay_and_calendar_add_ship_hours():
    market = handmade_market(events=Events(delay=[(2, 48, 400, 36.0)]))
    extra = np.zeros(market.days, dtype=np.int16)
    extra[3] = 24
    market = dataclasses.replace(market, ship_extra_hours=extra)
    base = int(market.ship_hours[2])
    assert catalog_view_at(market, 47).ship_hours[2] == base
    assert catalog_view_at(market, 48).ship_hours[2] == base + 36
    assert catalog_view_at(market, 3 * 24).ship_hours[2] == base + 36 + 24
    assert catalog_view_at(market, 3 * 24).ship_hours[0] == market.ship_hours[0] + 24


def test_stock_override_by_mapping_or_array():
    market = handmade_market()
    by_map = catalog_view_at(market, 0, stock={4: 17, 9: 0})
    assert by_map.stock[4] == 17 and by_map.stock[9] == 0 and by_map.stock[5] == 200
    levels = np.arange(market.n_products)
    assert np.array_equal(catalog_view_at(market, 0, stock=levels).stock, levels)
    with pytest.raises(ValueError, match="shape"):
        catalog_view_at(market, 0, stock=np.zeros(3))


def test_negative_hour_is_refused_and_draining_hours_use_the_last_day():
    market = handmade_market()
    with pytest.raises(ValueError):
        catalog_view_at(market, -1)
    view = catalog_view_at(market, market.days * 24 + 30)
    assert np.array_equal(view.sales_30d, market.sales_30d(market.days))


def _random_events(rng: np.random.Generator, n: int, horizon: int) -> list[tuple]:
    events = []
    for product in range(n):
        t = int(rng.integers(-200, 300))
        while t < horizon + 500:
            length = int(rng.integers(168, 673))
            events.append((product, t, t + length, float(rng.choice([1.2, 1.35, 36.0, 90.0]))))
            t += length + int(rng.integers(1, 400))
    return events


def test_view_agrees_with_the_supplier_book_at_every_probe():
    rng = np.random.default_rng(11)
    n, horizon = len(ITEMS), 14 * 24 * 6
    events = Events(
        price_change=_random_events(rng, n, horizon),
        delisting=_random_events(rng, n, horizon),
        delay=_random_events(rng, n, horizon),
    )
    market = handmade_market(events=events, days=14 * 6)
    book = SupplierBook(market)
    hours = [
        0,
        CHECKPOINT_HOURS - 1,
        CHECKPOINT_HOURS,
        2 * CHECKPOINT_HOURS,
        *rng.integers(0, horizon, 40),
    ]
    for hour in map(int, hours):
        view = catalog_view_at(market, hour)
        states = [book.state(i, hour) for i in range(n)]
        assert view.visible.tolist() == [s.available for s in states]
        assert view.price_fen.tolist() == [s.price_fen for s in states]
        assert view.ship_hours.tolist() == [s.ship_hours for s in states]


def _eventful_market():
    rng = np.random.default_rng(5)
    n, horizon = len(ITEMS), 14 * 24 * 6
    events = Events(
        price_change=_random_events(rng, n, horizon),
        delisting=_random_events(rng, n, horizon),
        delay=_random_events(rng, n, horizon),
    )
    return handmade_market(events=events, days=14 * 6), rng


COLUMNS = ("visible", "price_fen", "ship_hours", "stock", "sales_30d")


def test_take_reads_what_the_whole_column_holds():
    market, rng = _eventful_market()
    stock = {3: 0, 7: 12, 20: 49, 1: 50}
    for hour in (0, 5 * 24 + 3, CHECKPOINT_HOURS + 30, 70 * 24):
        for given in (None, stock, StockOverrides.of(stock), np.arange(market.n_products)):
            # A fresh view per read, so that `take` cannot fall back on a built column.
            picks = rng.integers(0, market.n_products, 9)
            for name in COLUMNS:
                taken = catalog_view_at(market, hour, given).take(name, picks)
                whole = catalog_view_at(market, hour, given).column(name)
                assert taken.dtype == whole.dtype == VIEW_COLUMNS[name]
                assert taken.tolist() == whole[picks].tolist()


def test_a_cursor_never_changes_a_view_it_gave_out():
    market, _ = _eventful_market()
    cursor = ViewCursor(market)
    hours = list(range(0, 14 * 24 * 6, 17))
    kept = []
    for hour in hours:
        view = cursor.view_at(hour, {2: 5})
        if hour % 2:
            kept.append(view)  # held while the cursor moves on
        else:
            assert all(
                view.column(n).tolist() == catalog_view_at(market, hour, {2: 5}).column(n).tolist()
                for n in COLUMNS
            )
        del view
    for view in kept:
        fresh = catalog_view_at(market, view.hour, {2: 5})
        for name in COLUMNS:
            assert (
                view.take(name, np.arange(market.n_products)).tolist()
                == fresh.column(name).tolist()
            )


def test_view_columns_are_read_only_and_a_restricted_view_hides_the_rest():
    market, _ = _eventful_market()
    view = catalog_view_at(market, 40)
    with pytest.raises(ValueError):
        view.price_fen[0] = 1
    shown = np.zeros(market.n_products, dtype=bool)
    shown[[0, 4, 9]] = True
    narrow = view.restricted(shown)
    assert narrow.visible.tolist() == (view.visible & shown).tolist()
    assert narrow.take("visible", np.array([0, 1, 4])).tolist() == [
        bool(view.visible[0]),
        False,
        bool(view.visible[4]),
    ]
    assert narrow.price_fen.tolist() == view.price_fen.tolist()

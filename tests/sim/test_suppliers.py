"""Supplier events and stock (docs/design.md §7): price changes, delistings, delays and their
recovery."""

from __future__ import annotations

import pytest
from sim_support import make_market, tiny_scenario

from merchantbench.catalog.cache import get_market
from merchantbench.catalog.market import CHANNELS
from merchantbench.scenario import load_scenario
from merchantbench.sim.actions import ActionRejected
from merchantbench.sim.engine import Engine
from merchantbench.sim.suppliers import SupplierBook, YearBook, stock_levels, stock_now


def test_price_change_applies_during_event_and_recovers():
    market = make_market(cost_fen=1000, events={"price_change": [(0, 10, 20, 1.234)]})
    book = SupplierBook(market)
    assert book.state(0, 9).price_fen == 1000
    assert book.state(0, 10).price_fen == 1234 and book.state(0, 10).price_changed
    assert book.state(0, 19).price_fen == 1234
    assert book.state(0, 20).price_fen == 1000


def test_orders_keep_the_price_they_were_bought_at():
    market = make_market(demand=0.0, cost_fen=1000, events={"price_change": [(0, 5, 400, 1.5)]})
    engine = Engine(tiny_scenario(), market, seed=1)
    engine.list_products([(0, 1500)])
    engine._procure(0, 0, 0)
    engine._procure(0, 6, 0)
    assert [o.cost for o in engine.state.orders] == [1000, 1500]


def test_delisting_makes_product_unavailable_then_recovers():
    market = make_market(events={"delisting": [(1, 24, 48, 0.0)]})
    book = SupplierBook(market)
    assert book.state(1, 23).available
    assert not book.state(1, 24).available and not book.state(1, 47).available
    assert book.state(1, 48).available
    assert book.state(0, 30).available


def test_cannot_list_a_delisted_product():
    market = make_market(events={"delisting": [(1, 0, 48, 0.0)]})
    engine = Engine(tiny_scenario(), market, seed=1)
    with pytest.raises(ActionRejected) as err:
        engine.list_products([(0, 1500), (1, 1500)])
    assert err.value.code == "product_unavailable" and err.value.index == 1
    assert not engine.state.listings  # the whole batch was refused


def test_shipment_delay_adds_hours_for_orders_placed_during_it():
    market = make_market(demand=0.0, ship_hours=10, events={"delay": [(0, 5, 100, 40.0)]})
    engine = Engine(tiny_scenario(), market, seed=1)
    engine.list_products([(0, 1500)])
    engine._procure(0, 0, 0)
    engine._procure(0, 5, 0)
    first, second = engine.state.orders
    assert first.ship_t == 10 and second.ship_t == 5 + 50


def test_spring_festival_ship_extra_hours():
    market = make_market(ship_hours=10)
    market.ship_extra_hours[2] = 24
    book = SupplierBook(market)
    assert book.state(0, 47).ship_hours == 10
    assert book.state(0, 48).ship_hours == 34


def test_events_between_windows():
    market = make_market(events={"delay": [(0, 13, 30, 20.0)], "delisting": [(0, 40, 50, 0.0)]})
    book = SupplierBook(market)
    assert book.started_between(0, 12, 24) == [("delay", 13, 30)]
    assert book.ended_between(0, 24, 36) == [("delay", 13, 30)]
    assert book.started_between(0, 36, 48) == [("delisting", 40, 50)]


def test_stock_refills_lazily_up_to_capacity():
    market = make_market(stock_capacity=100, stock_refill=7)
    stock: dict[int, tuple[int, int]] = {}
    assert stock_now(market, 0, stock, 50) == 100
    stock[0] = (10, 50)
    assert stock_now(market, 0, stock, 52) == 24
    assert stock_now(market, 0, stock, 500) == 100


def test_unlaunched_product_is_unknown():
    market = make_market(launch_day=[-5, 3, -5, -5])
    engine = Engine(tiny_scenario(), market, seed=1)
    with pytest.raises(ActionRejected) as err:
        engine.product_index(str(market.product_ids[1]))
    assert err.value.code == "unknown_product"
    assert engine.product_index(str(market.product_ids[0])) == 0


def test_event_lookups_with_several_events_per_channel():
    events = {"delay": [(0, 10, 20, 5.0), (0, 30, 50, 7.0), (0, 60, 61, 9.0)]}
    book = SupplierBook(make_market(ship_hours=10, events=events))
    assert [book.state(0, h).ship_hours for h in (9, 10, 19, 20, 30, 49, 50, 60, 61)] == [
        10, 15, 15, 10, 17, 17, 10, 19, 10,
    ]  # fmt: skip
    assert book.active_events(0, 35) == [("delay", 30, 50)] and book.active_events(0, 55) == []
    assert book.ended_between(0, 15, 60) == [("delay", 10, 20), ("delay", 30, 50)]
    assert book.ended_between(0, 20, 61) == [("delay", 30, 50), ("delay", 60, 61)]
    assert book.started_between(0, 10, 60) == [("delay", 30, 50), ("delay", 60, 61)]


def test_stock_levels_agree_with_stock_now():
    market = make_market(n=4, stock_capacity=100, stock_refill=7)
    stock = {0: (10, 50), 2: (95, 60), 3: (0, 70)}
    for hour in (70, 71, 75, 200):
        levels = stock_levels(market, stock, hour)
        assert list(levels) == [stock_now(market, p, stock, hour) for p in range(4)]


def test_the_stock_mirror_is_the_stock_dict_after_inserts_updates_and_restores():
    from types import SimpleNamespace

    from merchantbench.sim.suppliers import StockMirror, stock_overrides

    market = make_market(n=6, stock_capacity=50, stock_refill=2)
    mirror, stock, orders = StockMirror(market), {}, []

    def buy(product: int, level: int, hour: int) -> None:
        stock[product] = (level, hour)
        orders.append(SimpleNamespace(product=product))

    def agrees(current: dict, placed: list, hour: int) -> None:
        got, expected = (
            mirror.overrides(current, placed, hour),
            stock_overrides(market, current, hour),
        )
        assert got.products.tolist() == expected.products.tolist()
        assert got.units.tolist() == expected.units.tolist()

    agrees(stock, orders, 0)
    for hour, product, level in [(1, 4, 10), (2, 1, 3), (3, 4, 2), (3, 5, 0), (9, 1, 1), (9, 0, 7)]:
        buy(product, level, hour)
        orders.append(SimpleNamespace(product=2))  # an order that bought nothing (a stockout)
        agrees(stock, orders, hour + 1)
    assert mirror.overrides(stock, orders, 10).units.tolist() == [9, 3, 16, 14]  # +2 an hour
    restored = {3: (0, 5)}  # a snapshot restored: another dict, with as many orders
    agrees(restored, orders, 12)
    restored[2] = (4, 12)  # the same dict but fewer orders than seen: starts over
    agrees(restored, orders[:1], 13)


def test_a_year_book_answers_as_the_book_at_every_hour():
    """`YearBook` (each product's year walked once, then searched) gives the state and span of
    `SupplierBook` at every hour of the year, on a real market with every kind of event, and
    outside the year too."""
    market = get_market(load_scenario("smoke"), 1)
    hours = market.days * 24
    # the product with the most events of each channel, and the one launched last
    products: list[int] = []
    for channel in CHANNELS:
        offsets = market.events[channel].offsets
        products.append(int((offsets[1:] - offsets[:-1]).argmax()))
    products.append(int(market.launch_day.argmax()))
    year = YearBook(market)
    for product in products:
        book = SupplierBook(market)
        for hour in [*range(hours), hours, hours + 500]:
            assert year.state_span(product, hour) == book.state_span(product, hour), (product, hour)
        assert year.state(product, 100) == book.state(product, 100)

"""What tools show of supplier stock: a band of the current stock, never the hidden capacity."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from merchantbench.catalog.cache import get_market
from merchantbench.catalog.stock_band import LOW_STOCK_UNITS, STOCK_BANDS, band_floor, stock_band
from merchantbench.scenario import load_scenario
from merchantbench.session import Session


@pytest.fixture(scope="module")
def small():
    scenario = load_scenario("small")
    return scenario, get_market(scenario, 1)


@pytest.fixture
def session(small):
    return Session(small[0], small[1], 1)  # fresh: a window allows 100 calls


def browse_all(session: Session, **filters) -> list[list]:
    rows, page = [], 1
    while True:
        found = session.call("search_products", {"page_size": 50, "page": page, **filters})
        assert found["ok"], found
        rows += found["rows"]
        if page >= found["pages"]:
            return rows
        page += 1


def test_the_shown_stock_says_nothing_about_capacity(session):
    # Before: the stock column was the capacity itself in every row sampled (13,639 of 13,639).
    market = session.market
    index = {str(pid): i for i, pid in enumerate(market.product_ids)}
    rows = browse_all(session)
    assert len(rows) > 500  # about half the catalog is supplier-delisted at any hour
    capacities: dict[str, list[int]] = defaultdict(list)
    for row in rows:
        assert isinstance(row[4], str) and row[4] in STOCK_BANDS
        capacities[row[4]].append(int(market.stock_capacity[index[row[0]]]))
    # Nobody has bought yet: every product shows the same band, whatever its capacity.
    assert set(capacities) == {"in_stock"}
    shown = capacities["in_stock"]
    assert min(shown) <= 60 and max(shown) >= 450 and len(set(shown)) > 100


def test_details_show_the_same_band(session):
    rows = browse_all(session, query="box")
    for row in rows[:20]:
        detail = session.call("get_product_detail", {"product_id": row[0]})
        assert detail["stock"] == row[4] == "in_stock"


def test_the_stock_filter_takes_bands_only(session):
    def total(**filters) -> int:
        return session.call("search_products", {"query": "", **filters})["total"]

    assert total() > 500 and total(min_stock="in_stock") == total(min_stock="low") == total()
    for units in (1, 137, 499):  # a unit count would let a bisection find the capacity
        refused = session.call("search_products", {"min_stock": units})
        assert refused["ok"] is False and refused["error"]["code"] == "invalid_argument"


@given(st.integers(min_value=0, max_value=10_000))
def test_the_band_depends_on_the_stock_alone_through_two_thresholds(units):
    band = stock_band(units)
    assert band == ("out_of_stock" if units == 0 else "low" if units < 50 else "in_stock")
    assert units >= band_floor(band)  # "at least this band" keeps exactly these products
    assert all(units < band_floor(b) for b in STOCK_BANDS[STOCK_BANDS.index(band) + 1 :])


def test_a_band_covers_a_range_of_capacities_not_one():
    capacities = np.arange(LOW_STOCK_UNITS, 501)
    assert {stock_band(int(c)) for c in capacities} == {"in_stock"}

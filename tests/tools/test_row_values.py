"""Table cells computed a column at a time equal the per-value renderings they replace."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from merchantbench.catalog.stock_band import stock_band, stock_bands
from merchantbench.money import rmb, rmb_list
from merchantbench.tools.sourcing import shown_rating


def test_shown_rating_is_round_to_two_decimals_for_every_kind_of_float32():
    rng = np.random.default_rng(2)
    halves = (np.arange(0, 1001) / 200).astype(np.float32)  # x.xx5 and its float32 neighbours
    near = np.concatenate([np.nextafter(halves, np.float32(0)), halves, np.nextafter(halves, 9)])
    ratings = np.concatenate([near, rng.uniform(0, 5, 200_000).astype(np.float32)])
    expected = [round(r, 2) for r in ratings.astype(np.float64).tolist()]
    assert shown_rating(ratings) == expected
    wide = rng.uniform(0, 5, 50).astype(np.float64)  # not float32: rounded one by one
    assert shown_rating(wide) == [round(r, 2) for r in wide.tolist()]


@given(st.lists(st.integers(-(2**53) + 1, 2**53 - 1), max_size=50))
def test_a_column_of_fen_is_the_rmb_of_each(amounts):
    assert rmb(np.array(amounts, dtype=np.int64)).tolist() == [rmb(a) for a in amounts]


@given(st.lists(st.integers(-(2**53) + 1, 2**53 - 1), max_size=50))
def test_rmb_list_is_the_rmb_of_the_array_bit_for_bit(amounts):
    column = rmb(np.array(amounts, dtype=np.int64)).tolist()
    assert [value.hex() for value in rmb_list(amounts)] == [value.hex() for value in column]
    assert [value.hex() for value in rmb_list(np.array(amounts, dtype=np.int64))] == [
        value.hex() for value in column
    ]


@given(st.lists(st.integers(-5, 10_000), max_size=50))
def test_stock_bands_are_the_band_of_each(units):
    assert stock_bands(np.array(units, dtype=np.int64)) == [stock_band(u) for u in units]

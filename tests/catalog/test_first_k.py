"""A page of search results is the first k of a stable sort, whichever way it is found."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from merchantbench.catalog.search import _SORT_ALL_UP_TO, _first_k_in_order


@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 3 * _SORT_ALL_UP_TO),
    st.integers(1, 60),
    st.integers(1, 40),
    st.integers(0, 2**31),
)
def test_first_k_is_the_stable_order_cut(n: int, k: int, distinct: int, seed: int):
    keys = np.random.default_rng(seed).integers(-distinct, distinct, n)  # many ties
    expected = np.argsort(keys, kind="stable")[:k]
    assert _first_k_in_order(keys, k).tolist() == expected.tolist()

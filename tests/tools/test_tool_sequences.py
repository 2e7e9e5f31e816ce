"""Property: whatever sequence of store calls an agent makes, no call raises, a refused call
changes nothing, the ledger stays exact, and the listing cap holds."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from store_market import ITEMS, new_session

PRODUCT_IDS = [f"P{1000 + i}" for i in range(len(ITEMS))] + ["NOPE", ""]
prices = st.one_of(
    st.sampled_from([0, 0.01, 0.5, 9.99, 16.8, 300.0, 1500.0, -1]),
    st.floats(min_value=0.01, max_value=60, allow_nan=False).map(lambda x: round(x, 2)),
)
items = st.fixed_dictionaries({"product_id": st.sampled_from(PRODUCT_IDS), "sale_price": prices})
calls = st.one_of(
    st.tuples(
        st.just("list_product"), st.fixed_dictionaries({"items": st.lists(items, max_size=4)})
    ),
    st.tuples(
        st.just("delist_product"),
        st.fixed_dictionaries({"product_ids": st.lists(st.sampled_from(PRODUCT_IDS), max_size=3)}),
    ),
    st.tuples(
        st.just("adjust_price"),
        st.fixed_dictionaries({"product_id": st.sampled_from(PRODUCT_IDS), "sale_price": prices}),
    ),
    st.tuples(
        st.sampled_from(["query_my_orders", "query_order_updates", "query_open_orders"]),
        st.fixed_dictionaries({"page": st.integers(0, 3), "page_size": st.integers(0, 60)}),
    ),
    st.tuples(st.just("review_my_listings"), st.just({})),
    st.tuples(st.just("end_of_step"), st.just({})),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(calls, min_size=1, max_size=30))
def test_random_call_sequences_keep_the_store_consistent(sequence: list[tuple[str, Any]]) -> None:
    session = new_session("tools.max_active_listings=3")
    for tool, args in sequence:
        if session.over:
            break
        before = session.state_hash()
        result = session.call(tool, args)
        if not result["ok"]:
            assert session.state_hash() == before, result
            assert result["error"]["code"] != "limit"
        assert len(session.engine.state.listings) <= 3
        session.engine.state.ledger.check_identity()
    session.observation()

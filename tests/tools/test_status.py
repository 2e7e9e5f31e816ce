"""The store status (`surface.status()`): the observation text's numbers, typed, from one
definition; only what the agent already sees; free of calls and of the trace."""

from __future__ import annotations

from store_market import OPENING_LISTINGS, ok
from store_market import new_session as new_store

from frontend_script import (
    action_script,
    assert_status_states,
    new_session,
    scan,
)
from merchantbench.catalog.hidden import hidden_names_in
from merchantbench.money import fen
from merchantbench.surface import StoreStatus
from merchantbench.tools.status import ACCOUNTS

SEED = 7
# Every field of the status, each one a number, clock or flag the agent already sees.
PUBLIC_FIELDS = {
    "window", "windows_total", "windows_left", "hour", "day", "hour_of_day", "at", "date",
    "over", "store", "closed_at", *ACCOUNTS, "net_assets_change", "rating", "stars",
    "rating_multiplier", "active_listings", "listing_cap", "open_orders", "orders_placed",
    "calls_left_in_window", "calls_per_window",
}  # fmt: skip
SNAPSHOT_FIELDS = ("at", "date", "store", *ACCOUNTS, "stars", "rating_multiplier",
                   "active_listings", "listing_cap", "open_orders")  # fmt: skip


def test_the_status_states_what_every_observation_says_across_a_smoke_run() -> None:
    session = new_session(SEED)
    surface = session.surface
    orders = 0
    windows = 0
    for calls in action_script(SEED):
        status = surface.status()
        assert set(status.to_json()) == PUBLIC_FIELDS
        orders = assert_status_states(status.to_json(), surface.observation(), orders)
        # The snapshot tool answers the same numbers (its own call is one call of the window).
        calls_left = status.calls_left_in_window
        snapshot = ok(session.call("get_store_snapshot"))
        assert {k: snapshot[k] for k in SNAPSHOT_FIELDS} == {
            k: status.to_json()[k] for k in SNAPSHOT_FIELDS
        }
        assert snapshot["rating"] == round(status.rating, 3)
        assert snapshot["calls_left_in_window"] == calls_left - 1
        assert surface.status().calls_left_in_window == calls_left - 1
        balance = ok(session.call("query_balance"))
        assert {k: balance[k] for k in ACCOUNTS} == {k: getattr(status, k) for k in ACCOUNTS}
        for tool, args in calls:
            session.call(tool, args)
        windows += 1
    assert windows == session.scenario.clock.windows and orders > 0
    final = surface.status()
    assert final.over and final.windows_left == 0 and final.window == windows
    assert fen(final.net_assets) == session.engine.state.ledger.accounts.net_assets
    assert final.orders_placed == len(session.engine.state.orders)


def test_the_status_is_public_costs_no_call_and_is_not_traced() -> None:
    session = new_session(SEED)
    before = (len(session.trace), session.state_hash())
    status = session.surface.status()
    assert (len(session.trace), session.state_hash()) == before
    assert status.calls_left_in_window == session.scenario.clock.calls_per_window
    assert not hidden_names_in(status.to_json())
    scan(status.to_json(), ["seed"])  # no hidden name, nor a word of the seed
    # The JSON form is the whole object, and the schema documents every field.
    assert StoreStatus.model_validate(status.to_json()) == status
    schema = StoreStatus.model_json_schema()["properties"]
    assert set(schema) == PUBLIC_FIELDS and all(p.get("description") for p in schema.values())


def test_a_closed_store_says_so_in_both() -> None:
    session = new_store("money.initial_balance_fen=0", "money.initial_deposit_fen=1")
    ok(session.call("list_product", {"items": OPENING_LISTINGS}))
    while not session.engine.state.closed:
        session.call("end_of_step")
    status = session.surface.status()
    assert status.store == "closed" and status.closed_at is not None
    assert f"The store was closed at {status.closed_at}: " in session.observation()
    assert status.over and status.deposit == 0.0

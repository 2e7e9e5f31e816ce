"""Property (issue 8, item 5): whatever an agent does, and whether platform fees are on, the
store can close or the horizon is short, net profit equals the change in net assets to the fen,
no fine is collected beyond what was assessed, and the ledger identity holds."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from store_market import ITEMS, scenario, shared_market

from merchantbench.metrics import compute_metrics, load_run_record
from merchantbench.metrics.table1 import order_money
from merchantbench.record.manifest import FinalAccounts
from merchantbench.record.schema import TRACE_FILE
from merchantbench.record.tables import final_accounts, write_tables
from merchantbench.session import Session
from record_rows import run_manifest

PRODUCT_IDS = [f"P{1000 + i}" for i in range(len(ITEMS))]
prices = st.sampled_from([0.5, 4.9, 9.9, 12.9, 16.8, 25.0, 60.0])
items = st.fixed_dictionaries({"product_id": st.sampled_from(PRODUCT_IDS), "sale_price": prices})
calls = st.one_of(
    st.tuples(
        st.just("list_product"),
        st.fixed_dictionaries({"items": st.lists(items, min_size=1, max_size=4)}),
    ),
    st.tuples(
        st.just("delist_product"),
        st.fixed_dictionaries({"product_ids": st.lists(st.sampled_from(PRODUCT_IDS), max_size=3)}),
    ),
    st.tuples(
        st.just("adjust_price"),
        st.fixed_dictionaries({"product_id": st.sampled_from(PRODUCT_IDS), "sale_price": prices}),
    ),
    st.tuples(st.just("query_my_orders"), st.just({})),
    st.tuples(st.just("end_of_step"), st.just({})),
)
flags = st.fixed_dictionaries({
    "money.platform_fees": st.booleans(),
    "money.fulfilment_fee_fen": st.sampled_from([0, 80]),
    "money.initial_balance_fen": st.sampled_from([0, 400, 3_000, 200_000]),
    "money.initial_deposit_fen": st.sampled_from([200, 1_000, 100_000]),
    "clock.days": st.integers(1, 4),
})  # fmt: skip


def _play(overrides: dict[str, Any], sequence: list[tuple[str, Any]]) -> Session:
    market, index = shared_market()
    session = Session(scenario(*(f"{k}={v}" for k, v in overrides.items())), market, 3, index)
    for tool, args in sequence:
        if session.over:
            break
        session.call(tool, args)
    while not session.over:
        session.force_end_of_step()
    return session


def _write_record(session: Session, run_dir: Path) -> None:
    engine = session.engine
    manifest = run_manifest(
        session.scenario, seed=3, ended="closed" if engine.state.closed else "completed",
        windows=session.memory.windows_closed, closed=engine.state.closed,
        final_accounts=FinalAccounts(**final_accounts(engine)), state_hash=session.state_hash(),
    )  # fmt: skip
    manifest.write(run_dir)
    lines = "".join(json.dumps(entry) + "\n" for entry in session.trace)
    (run_dir / TRACE_FILE).write_text(lines, encoding="utf-8")
    write_tables(engine, run_dir)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(flags, st.lists(calls, max_size=25))
def test_net_profit_is_the_change_in_net_assets(overrides, sequence) -> None:
    session = _play(overrides, sequence)
    ledger = session.engine.state.ledger
    ledger.check_identity()
    with tempfile.TemporaryDirectory() as tmp:
        _write_record(session, Path(tmp))
        record = load_run_record(tmp)
        metrics = compute_metrics(tmp)
    money = order_money(record.orders)
    initial = ledger.initial_balance + ledger.initial_deposit
    assert int(money.net_profit.sum()) == ledger.accounts.net_assets - initial
    assert metrics["net_profit"] == metrics["net_asset_change"]
    assert np.all(money.fines_collected <= money.fines_assessed)
    assert np.all(money.fines_collected >= 0) and np.all(money.fees >= 0)
    written_off = int((money.fines_assessed - money.fines_collected).sum())
    assert written_off == ledger.written_off
    event(f"closed={session.engine.state.closed} written_off={written_off > 0}")
    event(f"orders={'some' if len(record.orders) else 'none'} fees={int(money.fees.sum()) > 0}")
    if written_off:
        assert session.engine.state.closed  # only a fine the store could not pay closes it
    if not overrides["money.platform_fees"]:
        assert metrics["fees"] == 0.0
    assert metrics["scheduled_windows"] == overrides["clock.days"] * 2

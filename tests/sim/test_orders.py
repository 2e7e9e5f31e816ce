"""Each order outcome's timings, cash effects, fines and rating evidence, against
docs/design.md §5."""

from __future__ import annotations

import pytest
from sim_support import make_market, tiny_scenario

from merchantbench.sim.engine import Engine
from merchantbench.sim.orders import Fate, Order, Outcome
from merchantbench.sim.rating import RatingState

COST, PRICE = 1000, 1500


def one_order(fate: str | None, ship_hours: int = 24, **kw) -> tuple[Engine, object]:
    """An engine with no organic demand and one order placed at t=0 with a forced fate."""
    risks = {fate: 1.0} if fate else {}
    market = make_market(demand=0.0, risks=risks, ship_hours=ship_hours, **kw)
    engine = Engine(tiny_scenario(), market, seed=3)
    engine.list_products([(0, PRICE)])
    engine._procure(0, 0, 0)
    return engine, engine.state.orders[0]


def run_to(engine: Engine, hour: int) -> None:
    while engine.t < hour and not engine.done:
        engine.advance()


def test_procurement_moves_cost_from_balance_to_in_transit():
    engine, order = one_order(None)
    a = engine.state.ledger.accounts
    assert (a.balance, a.deposit, a.in_transit, a.receivable) == (200_000 - COST, 100_000, COST, 0)
    assert order.cost == COST and order.price == PRICE


def test_normal_order_timings_and_settlement():
    engine, order = one_order(None, ship_hours=24, logistics_hours=30)
    assert order.fate == Fate.NORMAL
    assert order.ship_t == 24 and order.delivered_t == 54
    assert 54 <= order.resolved_t <= 54 + 168
    run_to(engine, order.delivered_t + 1)
    a = engine.state.ledger.accounts
    assert (a.in_transit, a.receivable) == (0, PRICE)
    engine.finish()
    a = engine.state.ledger.accounts
    assert a.balance == 200_000 - COST + PRICE and a.receivable == 0
    assert order.outcome == Outcome.NORMAL and order.fines == 0
    assert a.net_assets == 300_000 + PRICE - COST


@pytest.mark.parametrize(
    ("fate", "outcome", "fine", "net_change"),
    [
        ("bad_review", Outcome.BAD_REVIEW, 500, PRICE - COST - 500),
        ("return", Outcome.RETURN_REFUND, 800, -800),
        ("refund_only", Outcome.RETURNLESS_REFUND, 0, -COST),
        ("cancel", Outcome.CANCELLED, 0, 0),
    ],
)
def test_outcome_cash_effects(fate, outcome, fine, net_change):
    engine, order = one_order(fate)
    engine.finish()
    assert order.outcome == outcome
    assert order.fines == fine
    assert engine.state.ledger.accounts.net_assets == 300_000 + net_change
    engine.state.ledger.check_identity()


def test_cancellation_happens_before_shipment_without_rating():
    engine, order = one_order("cancel", ship_hours=30)
    assert 0 <= order.cancel_t < order.ship_t
    engine.finish()
    assert engine.state.rating.rated_outcomes == 0
    assert engine.state.ledger.accounts.in_transit == 0


def test_late_order_is_fined_once_at_48_hours_and_rated_as_late(monkeypatch):
    engine, order = one_order(None, ship_hours=60)
    assert order.late_t == 48
    evidence = []
    monkeypatch.setattr(
        RatingState, "add", lambda self, score, weight: evidence.append((score, weight))
    )
    engine.finish()
    assert order.fines == 300
    assert evidence == [(3.0, 1.0)]
    assert [u for u in engine.state.updates if u[2] == "late"] == [(48, 1, "late")]


def test_order_shipped_at_exactly_48_hours_is_not_late():
    _, order = one_order(None, ship_hours=48)
    assert order.late_t == -1


def test_stockout_when_supplier_delisted_fines_and_rates():
    market = make_market(demand=0.0, events={"delisting": [(0, 5, 200, 0.0)]})
    engine = Engine(tiny_scenario(), market, seed=3)
    engine.list_products([(0, PRICE)])
    engine._procure(0, 10, 0)
    order = engine.state.orders[0]
    assert order.outcome == Outcome.STOCKOUT and order.fines == 500 and order.cost == 0
    assert engine.state.rating.today_v == 3.0 and engine.state.rating.today_vu == 3.0
    assert engine.state.ledger.accounts.net_assets == 300_000 - 500


def test_stockout_when_stock_is_exhausted_and_refill():
    market = make_market(demand=0.0, stock_capacity=2, stock_refill=1)
    engine = Engine(tiny_scenario(), market, seed=3)
    engine.list_products([(0, PRICE)])
    for index in range(3):
        engine._procure(0, 0, index)
    outcomes = [o.outcome for o in engine.state.orders]
    assert outcomes[2] == Outcome.STOCKOUT and outcomes[0] != Outcome.STOCKOUT
    engine._procure(0, 1, 0)  # one unit refilled an hour later
    assert engine.state.orders[3].outcome == Outcome.OPEN


def test_insufficient_balance_is_fined_not_rated():
    market = make_market(demand=0.0, cost_fen=250_000, p_ref_fen=300_000)
    engine = Engine(tiny_scenario(), market, seed=3)
    engine.list_products([(0, 300_000)])
    engine._procure(0, 0, 0)
    order = engine.state.orders[0]
    assert order.outcome == Outcome.INSUFFICIENT_BALANCE and order.fines == 500
    assert engine.state.rating.rated_outcomes == 0
    assert engine.state.ledger.accounts.balance == 200_000 - 500


def test_fines_come_from_balance_then_deposit_and_inflows_refill_deposit_first():
    market = make_market(demand=0.0)
    engine = Engine(tiny_scenario(), market, seed=3)
    ledger = engine.state.ledger
    ledger.accounts.balance = 300
    engine.list_products([(0, PRICE)])
    engine._fine(Order(0, 0, 0, 0, 0), 0, 500)
    assert (ledger.accounts.balance, ledger.accounts.deposit) == (0, 99_800)
    ledger.cancel(1, 1000, 0)  # an inflow of 10 RMB refills the deposit first
    assert (ledger.accounts.balance, ledger.accounts.deposit) == (800, 100_000)


def test_store_closes_when_deposit_is_exhausted():
    market = make_market(demand=0.0)
    engine = Engine(tiny_scenario(), market, seed=3)
    engine.list_products([(0, PRICE)])
    engine.state.ledger.accounts.balance = 0
    engine.state.ledger.accounts.deposit = 400
    engine._procure(0, 0, 0)  # insufficient balance: fine 5 > deposit 4
    assert engine.state.closed and engine.done
    assert engine.state.ledger.accounts.deposit == 0
    assert engine.state.ledger.written_off == 100
    assert not engine.state.listings

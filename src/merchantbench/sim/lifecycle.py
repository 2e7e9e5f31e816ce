"""Order arrivals, procurement and every later step of an order, with their cash and rating
effects (docs/design.md §5). A mixin of the engine: it reads and changes `self._state` only.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

from merchantbench.catalog.market import Market
from merchantbench.scenario import Scenario
from merchantbench.sim.orders import (
    FATE_BAD_REVIEW,
    FATE_RETURN_REFUND,
    FATE_RETURNLESS_REFUND,
    OUTCOME_NAMES,
    STEP_CANCEL,
    STEP_DELIVER,
    STEP_LATE,
    STEP_SHIP,
    Order,
    Outcome,
    plan_lifecycle,
)
from merchantbench.sim.state import StoreState
from merchantbench.sim.suppliers import SupplierBook, SupplierState, stock_now

_NOT_PROCURED = frozenset((Outcome.STOCKOUT, Outcome.INSUFFICIENT_BALANCE))


class Lifecycle:
    scenario: Scenario
    market: Market
    seed: int
    _state: StoreState
    _listed: tuple[list[int], list[int], list[int]] | None  # `StoreActions._listed`
    _supplier_state: Callable[[int, int], SupplierState]  # `StoreActions._supplier_state`
    suppliers: SupplierBook

    def _arrivals(self, product: int, t: int, count: int) -> None:
        for index in range(count):
            if self._state.closed:
                return
            self._procure(product, t, index)

    def _procure(self, product: int, t: int, index: int) -> None:
        st = self._state
        listing = st.listings[product]
        listing.orders += 1
        listing.last_order_t = t
        supplier = self._supplier_state(product, t)
        order = Order(len(st.orders) + 1, product, listing.price, supplier.price_fen, t)
        st.orders.append(order)
        fines = self.scenario.orders.fines
        stock = stock_now(self.market, product, st.stock, t)
        fee = self._fulfilment_fee()
        if not supplier.available or stock <= 0:
            self._terminal(order, t, Outcome.STOCKOUT, fines.stockout_fen)
            ev = self.scenario.rating.stockout
            st.rating.add(ev.score, ev.weight)
            return
        if st.ledger.accounts.balance < order.cost + fee:
            self._terminal(order, t, Outcome.INSUFFICIENT_BALANCE, fines.insufficient_balance_fen)
            return
        st.stock[product] = (stock - 1, t)
        st.ledger.procure(t, order.cost, order.order_id)
        if fee:
            st.ledger.fee(t, fee, order.order_id)
        st.updates.append((t, order.order_id, "placed"))
        steps = plan_lifecycle(
            order, self.scenario, self.market, self.seed, supplier.ship_hours, index
        )
        for hour, step in steps:
            heapq.heappush(st.pending, (hour, order.order_id, int(step)))

    def _terminal(self, order: Order, t: int, outcome: Outcome, fine: int) -> None:
        order.outcome = outcome
        order.resolved_t = t
        order.cost = 0 if outcome in _NOT_PROCURED else order.cost
        self._state.updates.append((t, order.order_id, OUTCOME_NAMES[outcome]))
        if fine:
            self._fine(order, t, fine)

    def _fine(self, order: Order, t: int, amount: int) -> None:
        ledger = self._state.ledger
        ledger.fine(t, amount, order.order_id)
        order.fines += amount
        if ledger.accounts.deposit == 0 and not self._state.closed:
            self._close(t)

    def _close(self, t: int) -> None:
        """The deposit is gone: the store closes for good and its listings come down."""
        st = self._state
        st.closed_t = t
        for product in sorted(st.listings):
            st.spells[st.listings[product].spell].delisted_t = t
        st.listings.clear()
        self._listed = None
        st.updates.append((t, 0, "store_closed"))

    def _step(self, t: int, order_id: int, step: int) -> None:
        order = self._state.orders[order_id - 1]
        ledger = self._state.ledger
        if step == STEP_LATE:
            self._state.updates.append((t, order_id, "late"))
            self._fine(order, t, self.scenario.orders.fines.late_fen)
        elif step == STEP_CANCEL:
            ledger.cancel(t, order.cost, order_id)
            self._terminal(order, t, Outcome.CANCELLED, self.scenario.orders.fines.cancel_fen)
        elif step == STEP_SHIP:
            self._state.updates.append((t, order_id, "shipped"))
        elif step == STEP_DELIVER:
            ledger.deliver(t, order.cost, order.price, order_id)
            self._state.updates.append((t, order_id, "delivered"))
        else:
            self._resolve(order, t)

    def _resolve(self, order: Order, t: int) -> None:
        ledger, fines, rating = self._state.ledger, self.scenario.orders.fines, self.scenario.rating
        oid = order.order_id
        if order.fate == FATE_RETURN_REFUND:
            ledger.return_refund(t, order.price, order.cost, oid)
            outcome, fine, ev = Outcome.RETURN_REFUND, fines.return_refund_fen, rating.return_refund
        elif order.fate == FATE_RETURNLESS_REFUND:
            ledger.returnless_refund(t, order.price, oid)
            outcome, fine = Outcome.RETURNLESS_REFUND, fines.returnless_refund_fen
            ev = rating.returnless_refund
        else:
            ledger.settle(t, order.price, self._commission(order), oid)
            if order.fate == FATE_BAD_REVIEW:
                outcome, fine, ev = Outcome.BAD_REVIEW, fines.bad_review_fen, rating.bad_review
            else:
                outcome, fine = Outcome.NORMAL, 0
                ev = rating.late_normal if order.late_t >= 0 else rating.normal
        self._state.rating.add(ev.score, ev.weight)
        self._terminal(order, t, outcome, fine)

    def _commission(self, order: Order) -> int:
        money = self.scenario.money
        if not money.platform_fees:
            return 0
        lo, hi = money.commission_range
        n = max(len(self.market.categories) - 1, 1)
        rate = lo + (hi - lo) * int(self.market.category[order.product]) / n
        return round(order.price * rate)

    def _fulfilment_fee(self) -> int:
        money = self.scenario.money
        return money.fulfilment_fee_fen if money.platform_fees else 0

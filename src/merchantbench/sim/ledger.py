"""Exact money: the four cash accounts and the ledger of every movement, in integer fen.

Accounts (docs/design.md §2): balance `B` (spendable), security deposit `D`, in-transit `I` (cost of
orders paid to suppliers and not yet delivered), receivable `Q` (price of delivered orders not yet
settled). Net assets = B + D + I + Q.

Two rules shape every movement: an inflow refills the deposit up to its initial value before the
rest reaches the balance; a fine is taken from the balance first and the remainder from the
deposit, and the balance never goes negative. A fine larger than B + D takes both to zero and the
rest is written off (there is nothing left to take it from); the store is then closed anyway.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum


class Reason(IntEnum):
    """Why money moved. Grouped by how the movement changes net assets."""

    PROCUREMENT = 1  # B → I: neutral
    CANCEL_REFUND = 2  # I → B/D: neutral
    DELIVERY = 3  # I → Q: + margin (price − cost)
    SETTLEMENT = 4  # Q → B/D: neutral (commission, if enabled, is a fee)
    RETURN_REFUND = 5  # Q → B/D (cost back): − margin
    RETURNLESS_REFUND = 6  # Q → nothing: − price (margin reversed and cost lost)
    FINE = 7  # B/D → nothing: − fine
    FEE = 8  # B → nothing: − fee (optional platform economy)


@dataclass(slots=True)
class Entry:
    t: int
    d_balance: int
    d_deposit: int
    d_in_transit: int
    d_receivable: int
    reason: Reason
    order_id: int

    @property
    def d_net(self) -> int:
        return self.d_balance + self.d_deposit + self.d_in_transit + self.d_receivable


@dataclass(slots=True)
class Accounts:
    balance: int
    deposit: int
    in_transit: int = 0
    receivable: int = 0

    @property
    def net_assets(self) -> int:
        return self.balance + self.deposit + self.in_transit + self.receivable

    def as_tuple(self) -> tuple[int, int, int, int]:
        return (self.balance, self.deposit, self.in_transit, self.receivable)


@dataclass(slots=True)
class Ledger:
    """Accounts plus the list of entries that produced them from the initial state."""

    initial_balance: int
    initial_deposit: int
    accounts: Accounts = field(init=False)
    entries: list[Entry] = field(default_factory=list)
    written_off: int = 0  # fine amounts that exceeded B + D

    def __post_init__(self) -> None:
        self.accounts = Accounts(self.initial_balance, self.initial_deposit)

    def _post(self, t: int, db: int, dd: int, di: int, dq: int, reason: Reason, oid: int) -> None:
        a = self.accounts
        a.balance += db
        a.deposit += dd
        a.in_transit += di
        a.receivable += dq
        self.entries.append(Entry(t, db, dd, di, dq, reason, oid))

    def _split_inflow(self, amount: int) -> tuple[int, int]:
        to_deposit = min(amount, self.initial_deposit - self.accounts.deposit)
        return amount - to_deposit, to_deposit

    def procure(self, t: int, cost: int, order_id: int) -> None:
        self._post(t, -cost, 0, cost, 0, Reason.PROCUREMENT, order_id)

    def cancel(self, t: int, cost: int, order_id: int) -> None:
        db, dd = self._split_inflow(cost)
        self._post(t, db, dd, -cost, 0, Reason.CANCEL_REFUND, order_id)

    def deliver(self, t: int, cost: int, price: int, order_id: int) -> None:
        self._post(t, 0, 0, -cost, price, Reason.DELIVERY, order_id)

    def settle(self, t: int, price: int, commission: int, order_id: int) -> None:
        db, dd = self._split_inflow(price - commission)
        self._post(t, db, dd, 0, -(price - commission), Reason.SETTLEMENT, order_id)
        if commission:
            self._post(t, 0, 0, 0, -commission, Reason.FEE, order_id)

    def return_refund(self, t: int, price: int, cost: int, order_id: int) -> None:
        db, dd = self._split_inflow(cost)
        self._post(t, db, dd, 0, -price, Reason.RETURN_REFUND, order_id)

    def returnless_refund(self, t: int, price: int, order_id: int) -> None:
        self._post(t, 0, 0, 0, -price, Reason.RETURNLESS_REFUND, order_id)

    def fee(self, t: int, amount: int, order_id: int) -> None:
        self._post(t, -amount, 0, 0, 0, Reason.FEE, order_id)

    def fine(self, t: int, amount: int, order_id: int) -> int:
        """Take a fine from B, then D. Returns the part actually collected."""
        a = self.accounts
        from_balance = min(amount, a.balance)
        from_deposit = min(amount - from_balance, a.deposit)
        self.written_off += amount - from_balance - from_deposit
        self._post(t, -from_balance, -from_deposit, 0, 0, Reason.FINE, order_id)
        return from_balance + from_deposit

    def per_order(self, reason: Reason) -> dict[int, int]:
        """Net-asset effect (fen, negative for an outflow) of the entries of one reason, summed
        per order id: what each order's fines actually took (`FINE`) or its fees cost (`FEE`)."""
        totals: dict[int, int] = {}
        for e in self.entries:
            if e.reason == reason:
                totals[e.order_id] = totals.get(e.order_id, 0) + e.d_net
        return totals

    def check_identity(self) -> None:
        """Raise AssertionError unless the entries sum exactly to the accounts."""
        sums = [self.initial_balance, self.initial_deposit, 0, 0]
        for e in self.entries:
            sums[0] += e.d_balance
            sums[1] += e.d_deposit
            sums[2] += e.d_in_transit
            sums[3] += e.d_receivable
        if tuple(sums) != self.accounts.as_tuple():
            raise AssertionError(f"ledger {sums} != accounts {self.accounts.as_tuple()}")
        a = self.accounts
        if min(a.balance, a.deposit, a.in_transit, a.receivable) < 0:
            raise AssertionError(f"negative account: {a.as_tuple()}")

"""Orders (docs/design.md §5): what happens to one customer order, decided at arrival, revealed over
time.

An order's whole future (fate, shipping, cancellation, delivery, resolution hours) is drawn when
it is procured, from counter-based uniforms keyed by (seed, product, arrival hour, index in that
hour). The engine then reveals each step at its hour. Deciding everything up front keeps the
engine's state small and makes identical customers meet identical fates in every store.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from merchantbench.catalog.market import Market
from merchantbench.random_streams import Stream, uniform1
from merchantbench.scenario import Scenario


class Fate(IntEnum):
    NORMAL = 0
    CANCEL = 1
    RETURN_REFUND = 2
    RETURNLESS_REFUND = 3
    BAD_REVIEW = 4


class Outcome(IntEnum):
    """Terminal states; OPEN while an order is still running."""

    OPEN = 0
    NORMAL = 1
    BAD_REVIEW = 2
    RETURN_REFUND = 3
    RETURNLESS_REFUND = 4
    CANCELLED = 5
    STOCKOUT = 6
    INSUFFICIENT_BALANCE = 7


OUTCOME_NAMES = {o: o.name.lower() for o in Outcome}
OUTCOME_NAMES[Outcome.CANCELLED] = "cancelled"


class Step(IntEnum):
    """Lifecycle steps that happen after procurement, in their order within one hour."""

    LATE = 1
    CANCEL = 2
    SHIP = 3
    DELIVER = 4
    RESOLVE = 5


@dataclass(slots=True)
class Order:
    order_id: int
    product: int
    price: int  # sale price, fen
    cost: int  # procurement cost, fen (0 when not procured)
    placed_t: int
    fate: Fate = Fate.NORMAL
    ship_t: int = -1
    cancel_t: int = -1
    late_t: int = -1
    delivered_t: int = -1
    resolved_t: int = -1
    outcome: Outcome = Outcome.OPEN
    fines: int = 0  # fen assessed (the ledger's FINE entries hold what was collected)

    @property
    def procured(self) -> bool:
        return self.outcome not in (Outcome.STOCKOUT, Outcome.INSUFFICIENT_BALANCE)


# Members the per-order paths use, bound once: on Python 3.11 an attribute of an Enum class is
# looked up through the metaclass's __getattr__ hook (~0.15 µs, a dozen times per order).
FATE_NORMAL, FATE_CANCEL = Fate.NORMAL, Fate.CANCEL
FATE_RETURN_REFUND, FATE_RETURNLESS_REFUND = Fate.RETURN_REFUND, Fate.RETURNLESS_REFUND
FATE_BAD_REVIEW = Fate.BAD_REVIEW
STEP_LATE, STEP_CANCEL, STEP_SHIP = Step.LATE, Step.CANCEL, Step.SHIP
STEP_DELIVER, STEP_RESOLVE = Step.DELIVER, Step.RESOLVE
_RISKY_FATES = (FATE_CANCEL, FATE_RETURN_REFUND, FATE_RETURNLESS_REFUND, FATE_BAD_REVIEW)

_RISKS: weakref.WeakKeyDictionary[Market, np.ndarray] = weakref.WeakKeyDictionary()


def _risks(market: Market) -> np.ndarray:
    """P(fate)[product, fate] for `_RISKY_FATES`, as float64 (the float32 values exactly)."""
    risks = _RISKS.get(market)
    if risks is None:
        columns = (market.risk_cancel, market.risk_return, market.risk_refund_only)
        risks = np.stack([*columns, market.risk_bad_review], axis=1).astype(np.float64)
        _RISKS[market] = risks
    return risks


def draw_fate(market: Market, seed: int, product: int, hour: int, index: int) -> Fate:
    u = uniform1(seed, Stream.ORDER_FATE, product, hour, index)
    for fate, p in zip(_RISKY_FATES, _risks(market)[product].tolist(), strict=True):
        if u < p:
            return fate
        u -= p
    return FATE_NORMAL


def plan_lifecycle(
    order: Order, scenario: Scenario, market: Market, seed: int, ship_hours: int, index: int
) -> list[tuple[int, Step]]:
    """Fix a procured order's future and return its (hour, step) transitions."""
    t0, product = order.placed_t, order.product
    order.fate = draw_fate(market, seed, product, t0, index)
    order.ship_t = t0 + ship_hours
    late_at = t0 + scenario.orders.late_after_hours
    steps: list[tuple[int, Step]] = []
    if order.fate == FATE_CANCEL:
        u = uniform1(seed, Stream.CANCEL_HOUR, product, t0, index)
        order.cancel_t = t0 + int(u * ship_hours)
        if order.cancel_t > late_at:
            order.late_t = late_at
            steps.append((late_at, STEP_LATE))
        steps.append((order.cancel_t, STEP_CANCEL))
        return steps
    if order.ship_t > late_at:
        order.late_t = late_at
        steps.append((late_at, STEP_LATE))
    order.delivered_t = order.ship_t + int(market.logistics_hours[product])
    lo, hi = scenario.orders.resolution_hours
    u = uniform1(seed, Stream.RESOLUTION, product, t0, index)
    order.resolved_t = order.delivered_t + lo + int(u * (hi - lo + 1))
    steps += [
        (order.ship_t, STEP_SHIP),
        (order.delivered_t, STEP_DELIVER),
        (order.resolved_t, STEP_RESOLVE),
    ]
    return steps

"""Supplier state of one product at one hour (SPEC §7): events and stock.

Supplier events are part of the market (a pure function of seed and product, precomputed by the
generator); what the store does never changes them. Looking one product up is a slice of its
events, memoised per product, so untouched products cost nothing. Stock is the only supplier
state the store changes: it is kept only for products the store has bought from, and refilled
lazily (`refill` units an hour up to capacity) when next looked at.
"""

from __future__ import annotations

from dataclasses import dataclass

from merchantbench.catalog.market import CHANNELS, Market

# One channel's events of one product: (start, end, value) tuples sorted by start.
EventList = list[tuple[int, int, float]]


@dataclass(frozen=True, slots=True)
class SupplierState:
    available: bool  # False while a delisting event is active (or before launch)
    price_fen: int  # current procurement price
    ship_hours: int  # ship hours for an order placed now
    delayed: bool  # a shipment-delay event is active
    price_changed: bool  # a price-change event is active


class SupplierBook:
    """Event look-ups for the products a store touches. Immutable facts, so never snapshotted."""

    def __init__(self, market: Market) -> None:
        self.market = market
        self._events: dict[int, dict[str, EventList]] = {}

    def events(self, product: int) -> dict[str, EventList]:
        cached = self._events.get(product)
        if cached is None:
            cached = {}
            for channel in CHANNELS:
                ev = self.market.events[channel]
                lo, hi = int(ev.offsets[product]), int(ev.offsets[product + 1])
                cached[channel] = [
                    (int(s), int(e), float(v))
                    for s, e, v in zip(ev.start[lo:hi], ev.end[lo:hi], ev.value[lo:hi], strict=True)
                ]
            self._events[product] = cached
        return cached

    @staticmethod
    def _active(events: EventList, hour: int) -> tuple[int, int, float] | None:
        for event in events:
            if event[0] > hour:
                return None
            if hour < event[1]:
                return event
        return None

    def state(self, product: int, hour: int) -> SupplierState:
        m = self.market
        ev = self.events(product)
        day = min(hour // 24, m.days - 1)
        price_event = self._active(ev["price_change"], hour)
        delay_event = self._active(ev["delay"], hour)
        launched = int(m.launch_day[product]) <= hour // 24
        available = launched and self._active(ev["delisting"], hour) is None
        base = int(m.base_price_fen[product])
        price = base if price_event is None else round(base * price_event[2])
        ship = int(m.ship_hours[product]) + int(m.ship_extra_hours[day])
        if delay_event is not None:
            ship += int(delay_event[2])
        return SupplierState(
            available, price, ship, delay_event is not None, price_event is not None
        )

    def started_between(self, product: int, after: int, upto: int) -> list[tuple[str, int, int]]:
        """Events of a product that started in hours (after, upto]: (channel, start, end)."""
        found: list[tuple[str, int, int]] = []
        for channel, events in self.events(product).items():
            found.extend((channel, s, e) for s, e, _ in events if after < s <= upto)
        return sorted(found, key=lambda x: (x[1], x[0]))

    def ended_between(self, product: int, after: int, upto: int) -> list[tuple[str, int, int]]:
        """Events of a product that recovered in hours (after, upto]."""
        found: list[tuple[str, int, int]] = []
        for channel, events in self.events(product).items():
            found.extend((channel, s, e) for s, e, _ in events if after < e <= upto)
        return sorted(found, key=lambda x: (x[2], x[0]))


def stock_now(market: Market, product: int, stock: dict[int, tuple[int, int]], hour: int) -> int:
    """Current supplier stock: capacity if never bought from, else refilled since last purchase."""
    cap = int(market.stock_capacity[product])
    known = stock.get(product)
    if known is None:
        return cap
    level, since = known
    return min(cap, level + int(market.stock_refill[product]) * (hour - since))

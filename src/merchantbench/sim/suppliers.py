"""Supplier state of one product at one hour (docs/design.md §7): events and stock.

Supplier events are part of the market (a pure function of seed and product, precomputed by the
generator); what the store does never changes them. Looking one product up is a slice of its
events, memoised per product, so untouched products cost nothing. Stock is the only supplier
state the store changes: it is kept only for products the store has bought from, and refilled
lazily (`refill` units an hour up to capacity) when next looked at.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING

import numpy as np

from merchantbench.catalog.market import CHANNELS, Market
from merchantbench.catalog.number_view import number_view
from merchantbench.catalog.view import StockOverrides

if TYPE_CHECKING:
    from merchantbench.sim.orders import Order

# One channel's events of one product: (start, end, value) tuples sorted by start.
EventList = list[tuple[int, int, float]]
_NEVER_BEFORE, _NEVER_AFTER = -(1 << 62), 1 << 62  # open ends of a span of hours


@dataclass(frozen=True, slots=True)
class SupplierState:
    available: bool  # False while a delisting event is active (or before launch)
    price_fen: int  # current procurement price
    ship_hours: int  # ship hours for an order placed now
    delayed: bool  # a shipment-delay event is active
    price_changed: bool  # a price-change event is active


class SupplierBook:
    """Event look-ups for the products a store touches. Immutable facts, so never snapshotted.

    A product's state changes only when one of its events starts or ends, when it launches and
    when the calendar's extra ship hours change, so each computed state is kept with the span
    of hours over which it holds: tools ask about the same listed products window after window,
    and most answers come from that memo.
    """

    def __init__(self, market: Market) -> None:
        self.market = market
        self._events: dict[int, dict[str, EventList]] = {}
        self._starts: dict[int, dict[str, list[int]]] = {}
        self._known: dict[int, tuple[int, int, SupplierState]] = {}  # product → (from, to, state)
        self._extra_runs: list[int] | None = None
        # Python-number views of the market's columns (bisect searches them in place).
        self._columns = {
            name: number_view(getattr(market, name))
            for name in ("launch_day", "base_price_fen", "ship_hours", "ship_extra_hours")
        }
        self._channels = {
            channel: tuple(
                number_view(getattr(market.events[channel], name))
                for name in ("start", "end", "value", "offsets")
            )
            for channel in CHANNELS
        }

    def events(self, product: int) -> dict[str, EventList]:
        cached = self._events.get(product)
        if cached is None:
            cached = {}
            for channel in CHANNELS:
                ev = self.market.events[channel]
                lo, hi = int(ev.offsets[product]), int(ev.offsets[product + 1])
                # tolist() gives the Python ints and floats at once (no numpy scalar per cell).
                cached[channel] = list(
                    zip(
                        ev.start[lo:hi].tolist(),
                        ev.end[lo:hi].tolist(),
                        ev.value[lo:hi].tolist(),
                        strict=True,
                    )
                )
            self._events[product] = cached
            self._starts[product] = {ch: [e[0] for e in evs] for ch, evs in cached.items()}
        return cached

    def state(self, product: int, hour: int) -> SupplierState:
        """The supplier's state of `product` at `hour` (≥ 0)."""
        known = self._known.get(product)
        if known is not None and known[0] <= hour < known[1]:
            return known[2]
        since, until, state = self._compute_state(product, hour)
        self._known[product] = (since, until, state)
        return state

    def state_span(self, product: int, hour: int) -> tuple[int, int, SupplierState]:
        """`state(product, hour)` and the hours [since, until) it holds over unchanged (a
        caller watching many products asks again only once `until` has passed)."""
        known = self._known.get(product)
        if known is None or not known[0] <= hour < known[1]:
            known = self._known[product] = self._compute_state(product, hour)
        return known

    def _compute_state(self, product: int, hour: int) -> tuple[int, int, SupplierState]:
        """The state at `hour` and the hours [since, until) it holds over unchanged."""
        columns = self._columns
        day = min(hour // 24, self.market.days - 1)
        since, until = self._extra_run(hour)
        found = []
        for channel in CHANNELS:
            event, lo, hi = self._channel_span(product, channel, hour)
            since, until = max(since, lo), min(until, hi)
            found.append(event)
        price_event, delisting_event, delay_event = found
        launch_hour = columns["launch_day"][product] * 24
        launched = launch_hour <= hour
        since, until = (
            (max(since, launch_hour), until) if launched else (since, min(until, launch_hour))
        )
        base = columns["base_price_fen"][product]
        price = base if price_event is None else round(base * price_event[2])
        ship = columns["ship_hours"][product] + columns["ship_extra_hours"][day]
        if delay_event is not None:
            ship += int(delay_event[2])
        state = SupplierState(
            launched and delisting_event is None,
            price,
            ship,
            delay_event is not None,
            price_event is not None,
        )
        return since, until, state

    def _channel_span(
        self, product: int, channel: str, hour: int
    ) -> tuple[tuple[int, int, float] | None, int, int]:
        """The channel's event in force at `hour` (or None) and the hours [lo, hi) over which
        that stays so: events of a channel never overlap, so it can only be the last one
        started by then, and nothing changes before the next one starts. Read from the
        market's arrays directly: most products are looked up once or twice a run."""
        start, end, value, offsets = self._channels[channel]
        first, stop = offsets[product], offsets[product + 1]
        k = bisect_right(start, hour, first, stop) - 1
        lo = _NEVER_BEFORE
        if k >= first:
            begins, ends = start[k], end[k]
            if hour < ends:
                return (begins, ends, value[k]), begins, ends
            lo = ends
        hi = start[k + 1] if k + 1 < stop else _NEVER_AFTER
        return None, lo, hi

    def _extra_run(self, hour: int) -> tuple[int, int]:
        """The hours [lo, hi) around `hour` over which the calendar's extra ship hours stay
        the same (hours past the horizon use the last day, as the state does)."""
        if self._extra_runs is None:
            extra = np.asarray(self.market.ship_extra_hours)
            self._extra_runs = (np.flatnonzero(extra[1:] != extra[:-1]) + 1).tolist()
        runs = self._extra_runs
        k = bisect_right(runs, hour // 24)
        lo = runs[k - 1] * 24 if k > 0 else _NEVER_BEFORE
        hi = runs[k] * 24 if k < len(runs) else _NEVER_AFTER
        return lo, hi

    def active_events(self, product: int, hour: int) -> list[tuple[str, int, int]]:
        """Events of a product in force at `hour`: (channel, start, end)."""
        found = []
        for channel in CHANNELS:
            event = self._channel_span(product, channel, hour)[0]
            if event is not None:
                found.append((channel, event[0], event[1]))
        return found

    def started_between(self, product: int, after: int, upto: int) -> list[tuple[str, int, int]]:
        """Events of a product that started in hours (after, upto]: (channel, start, end)."""
        found: list[tuple[str, int, int]] = []
        for channel, events in self.events(product).items():
            starts = self._starts[product][channel]
            lo, hi = bisect_right(starts, after), bisect_right(starts, upto)
            found.extend((channel, s, e) for s, e, _ in events[lo:hi])
        return sorted(found, key=lambda x: (x[1], x[0]))

    def ended_between(self, product: int, after: int, upto: int) -> list[tuple[str, int, int]]:
        """Events of a product that recovered in hours (after, upto]. A channel's events never
        overlap, so its end hours are in start order too."""
        found: list[tuple[str, int, int]] = []
        for channel, events in self.events(product).items():
            starts = self._starts[product][channel]
            # an event ending in (after, upto] started before upto
            recent = events[max(bisect_right(starts, after) - 1, 0) : bisect_right(starts, upto)]
            found.extend((channel, s, e) for s, e, _ in recent if after < e <= upto)
        return sorted(found, key=lambda x: (x[2], x[0]))


class YearBook(SupplierBook):
    """A supplier book that walks each product's year once, span by span (`_compute_state`,
    the one definition), and answers every later look-up from that walk: the same states,
    found by a search in the hours they begin. Meant for many stores of one market at
    different hours (the classic RL env shares one per market), where the one-span memo of
    `SupplierBook` would be recomputed at every switch between stores; hours outside the
    year are looked up as `SupplierBook` does."""

    def __init__(self, market: Market) -> None:
        super().__init__(market)
        self.hours = market.days * 24
        self._years: dict[int, tuple[list[int], list[tuple[int, int, SupplierState]]]] = {}

    def year(self, product: int) -> list[tuple[int, int, SupplierState]]:
        """The product's spans over the year: (since, until, state), in order."""
        return self._year(product)[1]

    def _year(self, product: int) -> tuple[list[int], list[tuple[int, int, SupplierState]]]:
        found = self._years.get(product)
        if found is None:
            spans, hour = [], 0
            while hour < self.hours:
                spans.append(self._compute_state(product, hour))
                hour = spans[-1][1]
            found = self._years[product] = ([max(0, span[0]) for span in spans], spans)
        return found

    def state(self, product: int, hour: int) -> SupplierState:
        return self.state_span(product, hour)[2]

    def state_span(self, product: int, hour: int) -> tuple[int, int, SupplierState]:
        if not 0 <= hour < self.hours:
            return super().state_span(product, hour)
        begins, spans = self._years.get(product) or self._year(product)
        return spans[bisect_right(begins, hour) - 1]


def stock_levels(market: Market, stock: dict[int, tuple[int, int]], hour: int) -> np.ndarray:
    """Current supplier stock of every product (vectorised `stock_now`)."""
    levels = market.stock_capacity.astype(np.int64)
    if stock:
        products = np.fromiter(stock, dtype=np.int64, count=len(stock))
        known = np.array(list(stock.values()), dtype=np.int64)
        refilled = known[:, 0] + market.stock_refill[products] * (hour - known[:, 1])
        levels[products] = np.minimum(levels[products], refilled)
    return levels


def stock_overrides(market: Market, stock: dict[int, tuple[int, int]], hour: int) -> StockOverrides:
    """Current supplier stock of the products the store has bought from (the others are at
    capacity), as a catalog view takes it: `stock_levels` at those products only."""
    return _levels(market, *_entries(stock), hour)


def _entries(stock: dict[int, tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """The products of `stock` ascending, and their (level, hour of last purchase) rows."""
    products = np.fromiter(stock, dtype=np.int64, count=len(stock))
    # (level, hour) pairs flattened: numpy reads a flat run of ints far faster than tuples.
    flat = chain.from_iterable(stock.values())
    known = np.fromiter(flat, dtype=np.int64, count=2 * len(stock)).reshape(-1, 2)
    order = np.argsort(products, kind="stable")
    return products[order], known[order]


def _levels(market: Market, products: np.ndarray, known: np.ndarray, hour: int) -> StockOverrides:
    refilled = known[:, 0] + market.stock_refill[products] * (hour - known[:, 1])
    levels = np.minimum(market.stock_capacity[products].astype(np.int64), refilled)
    return StockOverrides(products, levels)


class StockMirror:
    """`stock_overrides` of one run, kept up to date from the orders placed since the last call
    rather than read from the whole stock dict each time (which grows to hundreds of products
    over a year). Only a placed order draws on a supplier's stock (`Lifecycle._procure`), so
    only the products of new orders can have changed; another stock dict (a restored
    snapshot) or fewer orders than already seen starts over from the dict."""

    def __init__(self, market: Market) -> None:
        self.market = market
        self._stock: dict[int, tuple[int, int]] | None = None  # the dict mirrored
        self._seen = 0  # orders already looked at
        # Replaced, never changed in place: views keep the products array they were given.
        self._products = np.zeros(0, np.int64)
        self._known = np.zeros((0, 2), np.int64)  # (level, hour) per product; private

    def overrides(
        self, stock: dict[int, tuple[int, int]], orders: Sequence[Order], hour: int
    ) -> StockOverrides:
        """`stock_overrides(market, stock, hour)`, given the run's orders so far."""
        if stock is not self._stock or len(orders) < self._seen:
            self._products, self._known = _entries(stock)
        else:
            changed = sorted({order.product for order in orders[self._seen :]} & stock.keys())
            if changed:
                self._update(np.array(changed, np.int64), [stock[p] for p in changed])
        self._stock, self._seen = stock, len(orders)
        return _levels(self.market, self._products, self._known, hour)

    def _update(self, products: np.ndarray, entries: list[tuple[int, int]]) -> None:
        """Set the entries of `products` (ascending), inserting those not mirrored yet."""
        rows = np.array(entries, np.int64).reshape(-1, 2)
        at = self._products.searchsorted(products)
        known = at < len(self._products)
        known[known] = self._products[at[known]] == products[known]
        self._known[at[known]] = rows[known]
        if not known.all():  # (np.insert costs several times this)
            new = ~known
            merged = np.concatenate((self._products, products[new]))
            order = np.argsort(merged, kind="stable")
            self._products = merged[order]
            self._known = np.concatenate((self._known, rows[new]))[order]


def stock_now(market: Market, product: int, stock: dict[int, tuple[int, int]], hour: int) -> int:
    """Current supplier stock: capacity if never bought from, else refilled since last purchase."""
    cap = int(market.stock_capacity[product])
    known = stock.get(product)
    if known is None:
        return cap
    level, since = known
    return min(cap, level + int(market.stock_refill[product]) * (hour - since))

"""The catalog as a shopper sees it at one hour: `catalog_view_at(market, hour)`.

Supplier events (SPEC §7) make the public catalog time-varying: a price-change event multiplies
the procurement price, a delisting hides the product, a shipment delay adds ship hours. A view is
a pure function of (market, hour, current stock), computed for all products at once.

Scanning every event of a paper-scale market (millions per channel) would take milliseconds per
channel, so each channel is bucketed once per market into fixed spans of hours: a bucket lists
the events that overlap it, and a view only scans the bucket holding its hour. The rules here
agree with `sim.suppliers.SupplierBook.state`, the per-product look-up of the same facts.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from merchantbench.catalog.market import CHANNELS, CatalogView, Market, SupplierEvents

# Hours per bucket. Events last 168–672 h, so a bucket of four weeks holds each event in at most
# two or three buckets (memory ≈ 2× the events) while one bucket scan stays a small slice.
BUCKET_HOURS = 672


def event_price_fen(base_price_fen: np.ndarray, factor: np.ndarray) -> np.ndarray:
    """Procurement price during a price-change event: base × factor, rounded half-to-even to fen.

    Computed in float64 so it agrees exactly with `round(base * float(factor))` in Python.
    """
    exact = np.asarray(base_price_fen, dtype=np.float64) * np.asarray(factor, dtype=np.float64)
    return np.rint(exact).astype(np.int64)


@dataclass(frozen=True, eq=False)
class _ChannelBuckets:
    """One channel's events by bucket: entries offsets[b]:offsets[b+1] overlap bucket b, each
    with the value it applies (new price in fen, extra ship hours)."""

    offsets: np.ndarray  # int64 [n_buckets + 1]
    product: np.ndarray  # int32, per entry
    start: np.ndarray  # int32
    end: np.ndarray  # int32, exclusive
    value: np.ndarray  # per entry, dtype of the applied value

    @classmethod
    def build(cls, events: SupplierEvents, value: np.ndarray) -> _ChannelBuckets:
        start = events.start.astype(np.int64)
        end = events.end.astype(np.int64)
        keep = end > np.maximum(start, 0)  # empty or wholly pre-run events are never active
        first = np.maximum(start, 0) // BUCKET_HOURS
        span = np.where(keep, (end - 1) // BUCKET_HOURS - first + 1, 0)
        event_of_entry = np.repeat(np.arange(len(start)), span)
        step = np.arange(len(event_of_entry)) - np.repeat(np.cumsum(span) - span, span)
        bucket = first[event_of_entry] + step
        # Few buckets: a stable sort of 16-bit numbers is a radix sort, and it keeps each
        # bucket's entries in event order, so the gathers below read memory in order.
        small = len(bucket) and bucket.max() < 2**15
        order = np.argsort(bucket.astype(np.int16) if small else bucket, kind="stable")
        event_of_entry, bucket = event_of_entry[order], bucket[order]
        n_buckets = int(bucket[-1]) + 1 if len(bucket) else 0
        counts = np.bincount(bucket, minlength=n_buckets)
        return cls(
            offsets=np.concatenate(([0], np.cumsum(counts))).astype(np.int64),
            product=events.product[event_of_entry].astype(np.int32),
            start=events.start[event_of_entry].astype(np.int32),
            end=events.end[event_of_entry].astype(np.int32),
            value=value[event_of_entry],
        )

    def active(self, hour: int) -> tuple[np.ndarray, np.ndarray]:
        """(products, values) of the events active at `hour` (start ≤ hour < end)."""
        bucket = hour // BUCKET_HOURS
        if bucket >= len(self.offsets) - 1:
            return self.product[:0], self.value[:0]
        lo, hi = self.offsets[bucket], self.offsets[bucket + 1]
        # Positions then `take`: several times faster than boolean-mask indexing here.
        on = np.flatnonzero((self.start[lo:hi] <= hour) & (self.end[lo:hi] > hour))
        return self.product[lo:hi].take(on), self.value[lo:hi].take(on)


_BUCKETS: weakref.WeakKeyDictionary[Market, dict[str, _ChannelBuckets]] = (
    weakref.WeakKeyDictionary()
)


def _buckets_of(market: Market) -> dict[str, _ChannelBuckets]:
    """The market's bucketed events, built on first use and kept while the market lives."""
    cached = _BUCKETS.get(market)
    if cached is None:
        price, delisting, delay = (market.events[channel] for channel in CHANNELS)
        new_price = event_price_fen(market.base_price_fen[price.product], price.value)
        cached = {
            "price_change": _ChannelBuckets.build(price, new_price),
            "delisting": _ChannelBuckets.build(delisting, np.zeros(len(delisting.start), bool)),
            "delay": _ChannelBuckets.build(delay, delay.value.astype(np.int32)),
        }
        _BUCKETS[market] = cached
    return cached


def _current_stock(market: Market, stock: np.ndarray | Mapping[int, int] | None) -> np.ndarray:
    if stock is None:
        return market.stock_capacity.astype(np.int64)
    if isinstance(stock, Mapping):
        current = market.stock_capacity.astype(np.int64)
        if stock:
            current[np.fromiter(stock.keys(), dtype=np.int64, count=len(stock))] = np.fromiter(
                stock.values(), dtype=np.int64, count=len(stock)
            )
        return current
    current = np.asarray(stock, dtype=np.int64)
    if current.shape != (market.n_products,):
        raise ValueError(f"stock has shape {current.shape}, expected ({market.n_products},)")
    return current.copy()


def catalog_view_at(
    market: Market, hour: int, stock: np.ndarray | Mapping[int, int] | None = None
) -> CatalogView:
    """The public catalog at the start of `hour`, with every supplier event active then applied.

    Args:
        market: the market.
        hour: simulation hour `t` ≥ 0. Hours past the horizon (draining) use the last day's
            calendar, as the supplier book does.
        stock: current supplier stock, either for every product (array of length n_products) or
            for some products (mapping product index → units); products not given are at their
            stock capacity. The store's purchases are the only thing that drains stock, so the
            engine passes what it tracks.

    Returns:
        The view: `visible` (launched by this day and not delisted by an active event),
        `price_fen` (base × active price-change factor, see `event_price_fen`), `ship_hours`
        (base + active delay extra hours + the calendar's extra hours of the day), `stock`, and
        `sales_30d` (market orders over the 30 completed days before this day).
    """
    if hour < 0:
        raise ValueError(f"hour must be >= 0, got {hour}")
    day = hour // 24
    calendar_day = min(day, market.days - 1)
    buckets = _buckets_of(market)

    visible = market.launch_day <= day
    delisted, _ = buckets["delisting"].active(hour)
    visible[delisted] = False

    price = market.base_price_fen.astype(np.int64)
    changed, new_price = buckets["price_change"].active(hour)
    price[changed] = new_price

    ship = market.ship_hours.astype(np.int32) + np.int32(market.ship_extra_hours[calendar_day])
    delayed, extra = buckets["delay"].active(hour)
    ship[delayed] += extra

    return CatalogView(
        hour=hour,
        day=day,
        visible=visible,
        price_fen=price,
        ship_hours=ship,
        stock=_current_stock(market, stock),
        sales_30d=market.sales_30d(min(day, market.days)).astype(np.int64),
    )

"""The catalog as a shopper sees it at one hour: `catalog_view_at(market, hour)`.

Supplier events (SPEC §7) make the public catalog time-varying: a price-change event multiplies
the procurement price, a delisting hides the product, a shipment delay adds ship hours. A view is
a pure function of (market, hour, current stock), computed for all products at once.

The events' effect at an hour is a state per channel and product (price, delisted, extra ship
hours) that changes only when an event starts or ends (`catalog.event_log`). Scanning every
event of a paper-scale market would take milliseconds, so the state is kept once per market at
checkpoints `CHECKPOINT_HOURS` apart, and a view starts from the checkpoint before its hour and
applies the changes since. A `ViewCursor` serves one run, whose hours only move forward: it
keeps its own state and applies only the changes since its previous view. The rules here agree
with `sim.suppliers.SupplierBook.state`, the per-product look-up of the same facts.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from merchantbench.catalog.event_log import ChannelLog, channel_logs
from merchantbench.catalog.event_log import event_price_fen as event_price_fen
from merchantbench.catalog.market import CatalogView, Market

# Hours between kept states: 4 weeks of changes (≈ 2 % of a year's) to apply at most, for ≈ 15
# kept states of a year (3 arrays over the products each).
CHECKPOINT_HOURS = 672


@dataclass(eq=False)
class _EventState:
    """Every product's state per channel at `hour` (`event_log.channel_logs`)."""

    hour: int
    channels: dict[str, np.ndarray]

    def copy(self) -> _EventState:
        return _EventState(self.hour, {ch: state.copy() for ch, state in self.channels.items()})

    def advance(self, logs: dict[str, ChannelLog], hour: int) -> None:
        """Move forward to `hour` (≥ the current hour), in place."""
        for channel, log in logs.items():
            log.apply(self.channels[channel], self.hour, hour)
        self.hour = hour


_CHECKPOINTS: weakref.WeakKeyDictionary[Market, list[_EventState]] = weakref.WeakKeyDictionary()


def _checkpoints(market: Market) -> list[_EventState]:
    """States at hours 0, CHECKPOINT_HOURS, 2 × CHECKPOINT_HOURS, … up to the last change;
    built on first use by one pass over the logs, kept while the market lives."""
    cached = _CHECKPOINTS.get(market)
    if cached is None:
        logs = channel_logs(market)
        state = _EventState(-1, {ch: log.neutral.copy() for ch, log in logs.items()})
        last = max((int(log.hour[-1]) for log in logs.values() if len(log.hour)), default=0)
        cached = []
        for hour in range(0, last + 1, CHECKPOINT_HOURS):
            state.advance(logs, hour)
            cached.append(state.copy())
        _CHECKPOINTS[market] = cached
    return cached


def _state_at(market: Market, hour: int, known: _EventState | None) -> _EventState:
    """The event state at `hour`: `known` moved forward (in place) when it is at or after the
    checkpoint before `hour`, else a copy of that checkpoint moved forward."""
    checkpoints = _checkpoints(market)
    before = checkpoints[min(hour // CHECKPOINT_HOURS, len(checkpoints) - 1)]
    state = known if known is not None and before.hour <= known.hour <= hour else before.copy()
    state.advance(channel_logs(market), hour)
    return state


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


def _check_hour(hour: int) -> None:
    if hour < 0:
        raise ValueError(f"hour must be >= 0, got {hour}")


def _view(
    market: Market, hour: int, state: _EventState, stock: np.ndarray | Mapping[int, int] | None
) -> CatalogView:
    day = hour // 24
    calendar_day = min(day, market.days - 1)
    return CatalogView(
        hour=hour,
        day=day,
        visible=(market.launch_day <= day) & state.channels["delisting"],
        price_fen=state.channels["price_change"].copy(),
        ship_hours=state.channels["delay"] + np.int32(market.ship_extra_hours[calendar_day]),
        stock=_current_stock(market, stock),
        sales_30d=market.sales_30d(min(day, market.days)).astype(np.int64),
    )


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
    _check_hour(hour)
    return _view(market, hour, _state_at(market, hour, None), stock)


class ViewCursor:
    """`catalog_view_at` for one run: views at non-decreasing hours cost only the supplier
    events that started or ended since the previous one (an earlier hour is answered too,
    from the market's checkpoints). Not shared between threads."""

    def __init__(self, market: Market) -> None:
        self.market = market
        self._state: _EventState | None = None

    def view_at(
        self, hour: int, stock: np.ndarray | Mapping[int, int] | None = None
    ) -> CatalogView:
        """The view `catalog_view_at(self.market, hour, stock)` returns."""
        _check_hour(hour)
        self._state = _state_at(self.market, hour, self._state)
        return _view(self.market, hour, self._state, stock)

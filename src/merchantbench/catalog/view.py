"""The catalog as a shopper sees it at one hour: `catalog_view_at(market, hour)`.

Supplier events (docs/design.md §7) make the public catalog time-varying: a price-change event
multiplies the procurement price, a delisting hides the product, a shipment delay adds ship hours. A
view is a pure function of (market, hour, current stock), computed for all products at once.

The events' effect at an hour is a state per channel and product (price, delisted, extra ship
hours) that changes only when an event starts or ends (`catalog.event_log`). Scanning every
event of a paper-scale market would take milliseconds, so the state is kept once per market at
checkpoints `CHECKPOINT_HOURS` apart (each built when first needed), and a view starts from the
checkpoint before its hour and applies the changes since. A `ViewCursor` serves one run, whose
hours only move forward: it keeps its own state and applies only the changes since its previous
view (a run's cursor needs only the first checkpoint). The rules here agree
with `sim.suppliers.SupplierBook.state`, the per-product look-up of the same facts.

A view's columns are built from that state only when asked for (`CatalogView.column`), and a
few products of a column are read without building it (`CatalogView.take`): a run reads a few
hundred products of each day's view, so its daily cost is the changes applied, not five passes
over ≈ 100,000 products.
"""

from __future__ import annotations

import threading
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


class _Checkpoints:
    """A market's event states at hours 0, CHECKPOINT_HOURS, 2 × CHECKPOINT_HOURS, … up to its
    last change, each built when first needed by moving the one before forward (a run's
    cursor moves its own state forward and needs only the first)."""

    def __init__(self, market: Market) -> None:
        self.logs = channel_logs(market)
        last = max((log.last_hour for log in self.logs.values()), default=0)
        self.count = last // CHECKPOINT_HOURS + 1
        self._states: list[_EventState] = []
        self._lock = threading.Lock()

    def at(self, index: int) -> _EventState:
        """The state at hour `index` × CHECKPOINT_HOURS (`index` < `count`); not to be moved."""
        states = self._states
        if index < len(states):
            return states[index]
        with self._lock:
            while len(states) <= index:
                if states:
                    state = states[-1].copy()
                else:
                    state = _EventState(
                        -1, {ch: log.neutral.copy() for ch, log in self.logs.items()}
                    )
                state.advance(self.logs, len(states) * CHECKPOINT_HOURS)
                states.append(state)
        return states[index]


_CHECKPOINTS: weakref.WeakKeyDictionary[Market, _Checkpoints] = weakref.WeakKeyDictionary()
_CHECKPOINTS_LOCK = threading.Lock()


def _checkpoints(market: Market) -> _Checkpoints:
    """The market's kept states, kept while the market lives."""
    cached = _CHECKPOINTS.get(market)
    if cached is None:
        with _CHECKPOINTS_LOCK:
            cached = _CHECKPOINTS.setdefault(market, _Checkpoints(market))
    return cached


def _state_at(market: Market, hour: int, known: _EventState | None) -> _EventState:
    """The event state at `hour`: `known` moved forward (in place) when it is at most
    CHECKPOINT_HOURS before `hour` or at or after the checkpoint before `hour`, else a copy of
    that checkpoint moved forward. Either way the same state: moving forward is exact."""
    checkpoints = _checkpoints(market)
    index = min(hour // CHECKPOINT_HOURS, checkpoints.count - 1)
    if (
        known is not None
        and known.hour <= hour
        and (hour - known.hour <= CHECKPOINT_HOURS or known.hour >= index * CHECKPOINT_HOURS)
    ):
        state = known
    else:
        state = checkpoints.at(index).copy()
    state.advance(checkpoints.logs, hour)
    return state


@dataclass(frozen=True, eq=False)
class StockOverrides:
    """The current stock of some products (`products` ascending, each once); every other
    product is at its stock capacity. What a run passes: it has bought from a few products."""

    products: np.ndarray  # int64
    units: np.ndarray  # int64

    @classmethod
    def of(cls, stock: Mapping[int, int]) -> StockOverrides:
        products = np.fromiter(stock.keys(), dtype=np.int64, count=len(stock))
        units = np.fromiter(stock.values(), dtype=np.int64, count=len(stock))
        order = np.argsort(products, kind="stable")
        return cls(products[order], units[order])

    def column(self, market: Market) -> np.ndarray:
        current = market.stock_capacity.astype(np.int64)
        current[self.products] = self.units
        return current


@dataclass(frozen=True, eq=False)
class _AllStock:
    """The current stock of every product."""

    units: np.ndarray  # int64 [n]

    def column(self, market: Market) -> np.ndarray:
        return self.units.copy()


Stock = np.ndarray | Mapping[int, int] | StockOverrides | None


def _stock_of(market: Market, stock: Stock) -> StockOverrides | _AllStock:
    if stock is None:
        return StockOverrides(np.zeros(0, np.int64), np.zeros(0, np.int64))
    if isinstance(stock, StockOverrides):
        return stock
    if isinstance(stock, Mapping):
        return StockOverrides.of(stock)
    current = np.asarray(stock, dtype=np.int64)
    if current.shape != (market.n_products,):
        raise ValueError(f"stock has shape {current.shape}, expected ({market.n_products},)")
    return _AllStock(current.copy())


class _EventColumns:
    """A view's columns at one hour, read from the event state of that hour (`channels`).

    A `ViewCursor` moves its state forward in place, so while a view built on that state
    lives, the cursor copies the state before moving (see `ViewCursor.view_at`); whole
    columns handed out are always new arrays, so nothing outside reads the state itself.
    """

    def __init__(
        self,
        market: Market,
        hour: int,
        channels: dict[str, np.ndarray],
        stock: StockOverrides | _AllStock,
    ) -> None:
        day = hour // 24
        self.market, self.day, self.stock = market, day, stock
        self.channels = dict(channels)
        self.extra_ship = np.int32(market.ship_extra_hours[min(day, market.days - 1)])
        self.sales_end = min(day, market.days) + market.history_days  # as Market.sales_30d
        self._stock: np.ndarray | None = None  # every product's, once a take asks for some

    def column(self, name: str) -> np.ndarray:
        m, channels = self.market, self.channels
        if name == "visible":
            return (m.launch_day <= self.day) & channels["delisting"]
        if name == "price_fen":
            return channels["price_change"].copy()
        if name == "ship_hours":
            return channels["delay"] + self.extra_ship
        if name == "stock":
            return self.stock.column(m)
        if name == "sales_30d":
            return m.sales_30d(self.sales_end - m.history_days).astype(np.int64)
        raise KeyError(name)

    def take(self, name: str, products: np.ndarray) -> np.ndarray:
        m, channels = self.market, self.channels
        if name == "visible":
            return (m.launch_day[products] <= self.day) & channels["delisting"][products]
        if name == "price_fen":
            return channels["price_change"][products]
        if name == "ship_hours":
            return channels["delay"][products] + self.extra_ship
        if name == "stock":
            # Searches read stock several times a view: one dense column beats look-ups.
            if self._stock is None:
                self._stock = self.stock.column(m)
            return self._stock[products]
        if name == "sales_30d":
            # Rows of a plain view of the memory map (its subclass costs more than the gather
            # itself), then 1-D gathers: cheaper than gathers from the 2-D array.
            cum, end = np.asarray(m.market_sales_cum), self.sales_end
            return (cum[end][products] - cum[max(end - 30, 0)][products]).astype(np.int64)
        raise KeyError(name)


def _check_hour(hour: int) -> None:
    if hour < 0:
        raise ValueError(f"hour must be >= 0, got {hour}")


def catalog_view_at(market: Market, hour: int, stock: Stock = None) -> CatalogView:
    """The public catalog at the start of `hour`, with every supplier event active then applied.

    Args:
        market: the market.
        hour: simulation hour `t` ≥ 0. Hours past the horizon (draining) use the last day's
            calendar, as the supplier book does.
        stock: current supplier stock, either for every product (array of length n_products) or
            for some products (mapping product index → units, or `StockOverrides`); products
            not given are at their stock capacity. The store's purchases are the only thing
            that drains stock, so the engine passes what it tracks.

    Returns:
        The view: `visible` (launched by this day and not delisted by an active event),
        `price_fen` (base × active price-change factor, see `event_price_fen`), `ship_hours`
        (base + active delay extra hours + the calendar's extra hours of the day), `stock`, and
        `sales_30d` (market orders over the 30 completed days before this day).
    """
    _check_hour(hour)
    columns = _stock_of(market, stock)
    state = _state_at(market, hour, None)
    return CatalogView(hour, hour // 24, _EventColumns(market, hour, state.channels, columns))


class ViewCursor:
    """`catalog_view_at` for one run: views at non-decreasing hours cost only the supplier
    events that started or ended since the previous one (an earlier hour is answered too,
    from the market's checkpoints). Not shared between threads.

    The cursor moves one event state forward in place and its latest view reads that state;
    if that view is still alive when the next one is asked for, the state is copied first,
    so a view never changes. A caller that drops its previous view before asking for the
    next (as the session does) saves the copy.
    """

    def __init__(self, market: Market) -> None:
        self.market = market
        self._state: _EventState | None = None
        self._lent: weakref.ref[CatalogView] | None = None  # the latest view on `_state`

    def view_at(self, hour: int, stock: Stock = None) -> CatalogView:
        """The view `catalog_view_at(self.market, hour, stock)` returns."""
        _check_hour(hour)
        columns = _stock_of(self.market, stock)
        state = self._state
        lent = self._lent() if self._lent is not None else None
        if state is not None and state.hour != hour and lent is not None:
            state = state.copy()  # the latest view still reads these arrays
        del lent
        self._state = state = _state_at(self.market, hour, state)
        view = CatalogView(
            hour, hour // 24, _EventColumns(self.market, hour, state.channels, columns)
        )
        self._lent = weakref.ref(view)
        return view

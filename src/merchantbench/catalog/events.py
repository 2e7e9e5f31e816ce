"""Supplier events (docs/design.md §7): price changes, delistings and shipment delays of every
product.

Each product has one hazard per channel, drawn from the channel's range. A channel alternates
between waiting for an event and being in one: waiting times are geometric (at least one hour, so
a product recovers for at least an hour between events); an event lasts U(168, 672) hours and the
next one is scheduled after recovery.

The process starts in its stationary state, at the start of the market's history
(`PROCESS_START`, 30 days before the run): with the long-run probability `stationary_share` the
channel is already in an event, whose remaining hours are those of a uniformly placed hour of a
length-biased event (long events cover more hours); otherwise it is waiting, and a geometric wait
is memoryless. So the run's first weeks look like any other, and the history's delistings stop the
market sales that `sales_30d` shows on the first day (`delisted_hours_by_day`). The run sees the
events in force at or after hour 0 (`from_hour_zero`): one already in force starts at hour 0.

Every draw is a counter-based uniform `random_streams.uniform(seed, stream, product, channel, k)`
for the product's k-th event of that channel, so a product's events are a pure function of
(seed, product): the same whether 100 or 98,843 products are generated, and computable for a
single product. The computation loops over the event number k, vectorised over products.
"""

from __future__ import annotations

import numpy as np

from merchantbench.catalog.calendar import HISTORY_DAYS
from merchantbench.catalog.market import CHANNELS, SupplierEvents
from merchantbench.random_streams import Stream, uniform
from merchantbench.scenario import SupplierConfig

PROCESS_START = -24 * HISTORY_DAYS  # hour at which every channel is in its stationary state


def _hazard_range(config: SupplierConfig, channel: str) -> tuple[float, float]:
    return {
        "price_change": config.price_change_hazard,
        "delisting": config.delisting_hazard,
        "delay": config.delay_hazard,
    }[channel]


def event_hazards(seed: int, config: SupplierConfig, products: np.ndarray) -> dict[str, np.ndarray]:
    """Per-hour hazard of each channel for the given product indices, uniform in its range."""
    products = np.asarray(products, dtype=np.int64)
    hazards = {}
    for number, channel in enumerate(CHANNELS):
        lo, hi = _hazard_range(config, channel)
        hazards[channel] = lo + (hi - lo) * uniform(seed, Stream.EVENT_HAZARD, products, number)
    return hazards


def stationary_share(hazard: np.ndarray, config: SupplierConfig) -> np.ndarray:
    """Long-run share of hours a channel with this hazard spends in an event: mean event length
    over mean cycle (mean wait 1 / hazard for a geometric wait on {1, 2, …})."""
    lo, hi = config.event_hours
    mean_length = (lo + hi) / 2
    return mean_length / (mean_length + 1 / np.asarray(hazard, dtype=np.float64))


def _uniform_int(u: np.ndarray, bounds: tuple[int, int]) -> np.ndarray:
    """Integers uniform on the closed range `bounds` from uniforms in [0, 1)."""
    lo, hi = bounds
    return lo + np.floor(u * (hi - lo + 1)).astype(np.int64)


def _length_biased_int(u: np.ndarray, bounds: tuple[int, int]) -> np.ndarray:
    """Integers on the closed range `bounds` with probability ∝ their value (inverse CDF): the
    length of the event in force at a given hour, when lengths are uniform on `bounds`."""
    lo, hi = bounds
    below = (lo - 1) * lo  # 2 · Σ k for k < lo; the CDF at l is (l(l + 1) − below) / (2 S)
    target = below + u * (hi * (hi + 1) - below)
    length = np.ceil((np.sqrt(1 + 4 * target) - 1) / 2)  # least l with l(l + 1) ≥ target
    return np.clip(length, lo, hi).astype(np.int64)


def _event_values(channel: str, config: SupplierConfig, u: np.ndarray) -> np.ndarray:
    if channel == "price_change":
        lo, hi = config.price_factor
        return lo + (hi - lo) * u
    if channel == "delay":
        return _uniform_int(u, config.delay_extra_hours).astype(np.float64)
    return np.zeros(len(u))  # a delisting carries no value


def _initial_events(
    seed: int, config: SupplierConfig, channel: str, products: np.ndarray, hazard: np.ndarray
) -> tuple[np.ndarray, ...]:
    """The stationary state at the process start: which products are in an event, the hours it
    still lasts (uniform on 1 … its length-biased length) and its value."""
    number = CHANNELS.index(channel)
    u = [uniform(seed, Stream.EVENT_START, products, number, index) for index in range(4)]
    in_event = np.flatnonzero(u[0] < stationary_share(hazard, config))
    length = _length_biased_int(u[1][in_event], config.event_hours)
    remaining = 1 + np.floor(u[2][in_event] * length).astype(np.int64)
    return in_event, remaining, _event_values(channel, config, u[3][in_event])


def _channel_events(
    seed: int,
    config: SupplierConfig,
    channel: str,
    products: np.ndarray,
    hazard: np.ndarray,
    horizon_hours: int,
) -> SupplierEvents:
    """Events of one channel from `PROCESS_START`, in hours counted from the process start."""
    number = CHANNELS.index(channel)
    log_survive = np.log1p(-hazard)
    in_event, remaining, value = _initial_events(seed, config, channel, products, hazard)
    free_from = np.zeros(len(products), dtype=np.int64)  # hour the product is next event-free
    free_from[in_event] = remaining
    found: list[tuple[np.ndarray, ...]] = [
        (in_event, np.zeros(len(in_event), dtype=np.int64), remaining, value)
    ]
    pending = np.arange(len(products))  # positions still able to start an event in the horizon
    k = 0
    while len(pending):
        who = products[pending]
        u_wait = uniform(seed, Stream.EVENT_WAIT, who, number, k)
        # Geometric on {1, 2, …}: hours until the next event; capped to stay in int64.
        wait = 1 + np.minimum(np.floor(np.log1p(-u_wait) / log_survive[pending]), horizon_hours)
        start = free_from[pending] + wait.astype(np.int64)
        inside = start < horizon_hours
        pending, start = pending[inside], start[inside]
        who = products[pending]
        length = _uniform_int(
            uniform(seed, Stream.EVENT_LENGTH, who, number, k), config.event_hours
        )
        value = _event_values(channel, config, uniform(seed, Stream.EVENT_VALUE, who, number, k))
        found.append((pending, start, start + length, value))
        free_from[pending] = start + length
        k += 1
    return _as_csr(found, products, len(products))


def _as_csr(
    found: list[tuple[np.ndarray, ...]], products: np.ndarray, n_positions: int
) -> SupplierEvents:
    """Events collected round by round → sorted by (product position, start) with offsets."""
    if found:
        position, start, end, value = (np.concatenate(parts) for parts in zip(*found, strict=True))
    else:
        position = start = end = np.zeros(0, dtype=np.int64)
        value = np.zeros(0)
    # Within a product, rounds come in start order, so a stable sort by position suffices.
    order = np.argsort(position, kind="stable")
    position = position[order]
    counts = np.bincount(position, minlength=n_positions)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return SupplierEvents(
        product=products[position].astype(np.int32),
        start=start[order].astype(np.int32),
        end=end[order].astype(np.int32),
        value=value[order].astype(np.float32),
        offsets=offsets,
    )


def _shifted(events: SupplierEvents, hours: int) -> SupplierEvents:
    return SupplierEvents(
        events.product, events.start + hours, events.end + hours, events.value, events.offsets
    )


def from_hour_zero(events: SupplierEvents) -> SupplierEvents:
    """The events of one channel as the run sees them: those in force at or after hour 0, an
    event already in force at hour 0 starting there."""
    keep = events.end > 0
    positions = len(events.offsets) - 1
    position = np.repeat(np.arange(positions), np.diff(events.offsets))[keep]
    counts = np.bincount(position, minlength=positions)
    return SupplierEvents(
        product=events.product[keep],
        start=np.maximum(events.start[keep], 0),
        end=events.end[keep],
        value=events.value[keep],
        offsets=np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
    )


def supplier_history_for(
    seed: int, config: SupplierConfig, products: np.ndarray, horizon_hours: int
) -> dict[str, SupplierEvents]:
    """Events of the given products (any subset, any order) from `PROCESS_START` (the start of
    the market's history, so starts may be negative) up to the horizon, keyed by channel.

    `offsets` index positions in `products` (offsets[j]:offsets[j+1] are the events of
    products[j]); `product` holds the product indices themselves.
    """
    products = np.asarray(products, dtype=np.int64)
    hazards = event_hazards(seed, config, products)
    span = horizon_hours - PROCESS_START
    return {
        channel: _shifted(
            _channel_events(seed, config, channel, products, hazards[channel], span),
            PROCESS_START,
        )
        for channel in CHANNELS
    }


def supplier_events_for(
    seed: int, config: SupplierConfig, products: np.ndarray, horizon_hours: int
) -> dict[str, SupplierEvents]:
    """`supplier_history_for` as the run sees it (`from_hour_zero`)."""
    history = supplier_history_for(seed, config, products, horizon_hours)
    return {channel: from_hour_zero(events) for channel, events in history.items()}


def supplier_history(
    seed: int, config: SupplierConfig, n_products: int, horizon_hours: int
) -> dict[str, SupplierEvents]:
    """Supplier events of products 0 … n_products−1 from `PROCESS_START` to the horizon.

    Args:
        seed: the market seed.
        config: the scenario's supplier parameters (hazard ranges, durations, values).
        n_products: number of products.
        horizon_hours: events starting at or after this hour are dropped.

    Returns:
        One `SupplierEvents` per channel in `CHANNELS`, sorted by (product, start), CSR offsets;
        hours count from the run's start, so the history's events have negative starts.
    """
    return supplier_history_for(seed, config, np.arange(n_products), horizon_hours)


def supplier_events(
    seed: int, config: SupplierConfig, n_products: int, horizon_hours: int
) -> dict[str, SupplierEvents]:
    """Supplier events of products 0 … n_products−1 as the run sees them: those in force at or
    after hour 0 that start before `horizon_hours` (arguments as `supplier_history`)."""
    history = supplier_history(seed, config, n_products, horizon_hours)
    return {channel: from_hour_zero(events) for channel, events in history.items()}


def delisted_hours_by_day(delistings: SupplierEvents, n_products: int, days: int) -> np.ndarray:
    """Hours of each day (the history's `HISTORY_DAYS` days, then the run's `days`) in which the
    supplier had each product delisted: int8 [HISTORY_DAYS + days, n_products], 0 … 24.

    Args:
        delistings: the delisting channel of `supplier_history` (negative starts included),
            sorted by (product, start) as it comes.
        n_products: number of products.
        days: days of the run.
    """
    rows, product = HISTORY_DAYS + days, delistings.product.astype(np.int64)
    start = np.clip(delistings.start.astype(np.int64) - PROCESS_START, 0, 24 * rows)
    end = np.clip(delistings.end.astype(np.int64) - PROCESS_START, 0, 24 * rows)
    first, last = start // 24, (end - 1) // 24
    # Product-major, so that a product's events touch neighbouring cells (sorted, as they come).
    hours = np.zeros((n_products, rows + 1), dtype=np.int16)
    cell = product * (rows + 1)
    # Whole days from the first to the last day touched, then less the uncovered hours of those.
    _add_sorted(hours, cell + first, np.full(len(first), 24))
    _add_sorted(hours, cell + last + 1, np.full(len(last), -24))
    np.cumsum(hours, axis=1, out=hours)
    _add_sorted(hours, cell + first, -(start - 24 * first))
    _add_sorted(hours, cell + last, -(24 * (last + 1) - end))
    return np.ascontiguousarray(hours[:, :rows].T).astype(np.int8)


def _add_sorted(matrix: np.ndarray, cells: np.ndarray, values: np.ndarray) -> None:
    """matrix.flat[cells] += values for sorted `cells`, repeated cells summed."""
    if not len(cells):
        return
    runs = np.flatnonzero(np.concatenate([[True], cells[1:] != cells[:-1]]))
    matrix.reshape(-1)[cells[runs]] += np.add.reduceat(values, runs).astype(matrix.dtype)

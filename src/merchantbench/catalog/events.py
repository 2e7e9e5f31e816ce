"""Supplier events (SPEC §7): price changes, delistings and shipment delays of every product.

Each product has one hazard per channel, drawn from the channel's range. Waiting times are
geometric (at least one hour, so a product starts the run clean and recovers for at least an hour
between events); an event lasts U(168, 672) hours and the next one is scheduled after recovery.

Every draw is a counter-based uniform `rng.uniform(seed, stream, product, channel, k)` for the
product's k-th event of that channel, so a product's events are a pure function of (seed, product):
the same whether 100 or 98,843 products are generated, and computable for a single product when
it is first touched. The computation loops over the event number k, vectorised over products.
"""

from __future__ import annotations

import numpy as np

from merchantbench.catalog.market import CHANNELS, SupplierEvents
from merchantbench.random_streams import Stream, uniform
from merchantbench.scenario import SupplierConfig


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


def _uniform_int(u: np.ndarray, bounds: tuple[int, int]) -> np.ndarray:
    """Integers uniform on the closed range `bounds` from uniforms in [0, 1)."""
    lo, hi = bounds
    return lo + np.floor(u * (hi - lo + 1)).astype(np.int64)


def _event_values(channel: str, config: SupplierConfig, u: np.ndarray) -> np.ndarray:
    if channel == "price_change":
        lo, hi = config.price_factor
        return lo + (hi - lo) * u
    if channel == "delay":
        return _uniform_int(u, config.delay_extra_hours).astype(np.float64)
    return np.zeros(len(u))  # a delisting carries no value


def _channel_events(
    seed: int,
    config: SupplierConfig,
    channel: str,
    products: np.ndarray,
    hazard: np.ndarray,
    horizon_hours: int,
) -> SupplierEvents:
    number = CHANNELS.index(channel)
    log_survive = np.log1p(-hazard)
    free_from = np.zeros(len(products), dtype=np.int64)  # hour the product is next event-free
    pending = np.arange(len(products))  # positions still able to start an event in the horizon
    found: list[tuple[np.ndarray, ...]] = []
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


def supplier_events_for(
    seed: int, config: SupplierConfig, products: np.ndarray, horizon_hours: int
) -> dict[str, SupplierEvents]:
    """Events of the given products (any subset, any order), keyed by channel.

    `offsets` index positions in `products` (offsets[j]:offsets[j+1] are the events of
    products[j]); `product` holds the product indices themselves.
    """
    products = np.asarray(products, dtype=np.int64)
    hazards = event_hazards(seed, config, products)
    return {
        channel: _channel_events(seed, config, channel, products, hazards[channel], horizon_hours)
        for channel in CHANNELS
    }


def supplier_events(
    seed: int, config: SupplierConfig, n_products: int, horizon_hours: int
) -> dict[str, SupplierEvents]:
    """Supplier events of products 0 … n_products−1 that start before `horizon_hours`.

    Args:
        seed: the market seed.
        config: the scenario's supplier parameters (hazard ranges, durations, values).
        n_products: number of products.
        horizon_hours: events starting at or after this hour are dropped.

    Returns:
        One `SupplierEvents` per channel in `CHANNELS`, sorted by (product, start), CSR offsets.
    """
    return supplier_events_for(seed, config, np.arange(n_products), horizon_hours)

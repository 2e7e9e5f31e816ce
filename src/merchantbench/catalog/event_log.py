"""Supplier events (docs/design.md §7) as a time-ordered log of changes, one log per channel.

An event of a channel is in force over hours start ≤ t < end; a channel's events of one product
never overlap (the next is scheduled after recovery). So the channel's state of a product at hour
t (its price, delisted or not, its extra ship hours) is the value set by the product's last change
at or before t: an event starting sets the event's value, an event ending sets the neutral one.
Sorted by hour, the changes let a view move forward from one hour to a later one by applying only
the changes in between (`catalog.view`), and let the anomaly table find the events that started
or ended in a window for the few listed products (`tools.monitoring`) without a per-product walk.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from merchantbench.catalog import verified
from merchantbench.catalog.market import CHANNELS, Market, SupplierEvents
from merchantbench.catalog.number_view import number_view

LOG_FORMAT = 1
_META = "event_log_meta.json"


def event_price_fen(base_price_fen: np.ndarray, factor: np.ndarray) -> np.ndarray:
    """Procurement price during a price-change event: base × factor, rounded half-to-even to fen.

    Computed in float64 so it agrees exactly with `round(base * float(factor))` in Python.
    """
    exact = np.asarray(base_price_fen, dtype=np.float64) * np.asarray(factor, dtype=np.float64)
    return np.rint(exact).astype(np.int64)


@dataclass(frozen=True, eq=False)
class Changes:
    """Changes of one kind (event starts, or event ends) by hour: at `hour[k]`, `product[k]`'s
    state becomes `value[k]`. Hours are ≥ 0."""

    hour: np.ndarray  # int32, non-decreasing
    product: np.ndarray  # intp: numpy scatters with native indices twice as fast as with int32
    value: np.ndarray  # the state from that hour on
    # through[h]: how many changes are at hours ≤ h, for h up to the last change's hour; a
    # memory view, so finding a span is two Python look-ups rather than a numpy search.
    through: memoryview

    @classmethod
    def of(cls, hour: np.ndarray, product: np.ndarray, value: np.ndarray) -> Changes:
        if len(hour) and hour.min() < 0:
            raise ValueError("changes before hour 0")
        # Hours fit in 15 bits for any run of about a year: a stable sort of int16 is a radix sort.
        small = len(hour) and hour.max() < 2**15
        order = np.argsort(hour.astype(np.int16) if small else hour, kind="stable")
        hour = hour[order].astype(np.int32)
        last = int(hour[-1]) if len(hour) else -1
        through = hour.searchsorted(np.arange(last + 1, dtype=np.int32), side="right")
        return cls(hour, product[order].astype(np.intp), value[order], number_view(through))

    def arrays(self) -> dict[str, np.ndarray]:
        """The arrays to save (`Changes.saved` reads them back)."""
        return {
            "hour": self.hour,
            "product": self.product,
            "value": self.value,
            "through": np.asarray(self.through),
        }

    @classmethod
    def saved(cls, arrays: dict[str, np.ndarray]) -> Changes:
        """Changes from the arrays of `arrays()`, as saved: no sorting again."""
        through = number_view(arrays["through"])
        return cls(arrays["hour"], arrays["product"], arrays["value"], through)

    def _count_through(self, hour: int) -> int:
        if hour < 0:
            return 0
        return self.through[hour] if hour < len(self.through) else len(self.hour)

    def span(self, after: int, upto: int) -> slice:
        """Positions of the changes in hours (after, upto]."""
        lo = self._count_through(after)
        return slice(lo, max(lo, self._count_through(upto)))

    def apply(self, state: np.ndarray, after: int, upto: int) -> None:
        """Set the state of the changes in hours (after, upto] (each product at most once)."""
        span = self.span(after, upto)
        state[self.product[span]] = self.value[span]


@dataclass(frozen=True, eq=False)
class ChannelLog:
    """One channel's changes by hour, kept as two logs: event `ends` and event `starts`. At one
    hour, ends come before starts.

    `neutral` is every product's state outside events; `min_length` the shortest event that
    starts after hour 0 (events in force at hour 0 count from there and may be shorter).
    """

    ends: Changes  # to the neutral state
    starts: Changes  # to the event's state
    neutral: np.ndarray  # [n_products]
    min_length: int

    @classmethod
    def build(cls, events: SupplierEvents, applied: np.ndarray, neutral: np.ndarray) -> ChannelLog:
        """The log of `events`, whose event k sets the state `applied[k]` while in force."""
        start = np.maximum(events.start.astype(np.int64), 0)  # the run sees hours ≥ 0 only
        end = events.end.astype(np.int64)
        keep = end > start
        start, end, applied = start[keep], end[keep], applied[keep]
        product = events.product[keep].astype(np.int32)
        later = start > 0
        return cls(
            ends=Changes.of(end, product, neutral[product]),
            starts=Changes.of(start, product, applied),
            neutral=neutral,
            min_length=int((end - start)[later].min()) if later.any() else 1 << 30,
        )

    @property
    def last_hour(self) -> int:
        """The hour of the last change (0 without changes)."""
        return max(
            (int(log.hour[-1]) for log in (self.ends, self.starts) if len(log.hour)), default=0
        )

    def apply(self, state: np.ndarray, after: int, upto: int) -> None:
        """Move `state` (the channel's state of every product at hour `after`) to hour `upto`.

        Within a span of at most `min_length` hours a product has at most one end and one
        start (an end first), so applying the span's ends, then its starts, is exact; longer
        spans go in such steps. Before hour 0 nothing is in force: from `after` = -1 the state
        is `neutral`.
        """
        while after < upto:
            # Hour 0 alone first: events in force at hour 0 start there and may end soon after.
            step = min(upto, after + self.min_length if after >= 0 else 0)
            self.ends.apply(state, after, step)
            self.starts.apply(state, after, step)
            after = step


_LOGS: weakref.WeakKeyDictionary[Market, dict[str, ChannelLog]] = weakref.WeakKeyDictionary()
# Where a cached market keeps its logs (`keep_logs_in`): read from there, or built and saved.
_KEPT_IN: weakref.WeakKeyDictionary[Market, Path] = weakref.WeakKeyDictionary()


def keep_logs_in(market: Market, directory: Path) -> None:
    """Keep `market`'s change logs in `directory` (beside its cache): the first use in a process
    reads them from there (memory-mapped: a few milliseconds) instead of sorting about three
    million events again (half a second on a paper-scale market), or builds and saves them."""
    _KEPT_IN[market] = directory


def channel_logs(market: Market) -> dict[str, ChannelLog]:
    """The market's change logs by channel (`CHANNELS`), built on first use and kept while the
    market lives. A channel's state is what a shopper sees of it: the procurement price in fen
    (price_change), whether the supplier has the product on sale (delisting), and the ship
    hours before the calendar's extra hours (delay)."""
    cached = _LOGS.get(market)
    if cached is None:
        directory = _KEPT_IN.get(market)
        cached = build_logs(market) if directory is None else _load_or_build(directory, market)
        _LOGS[market] = cached
    return cached


def build_logs(market: Market) -> dict[str, ChannelLog]:
    """Sort the market's supplier events into change logs by channel."""
    price, delisting, delay = (market.events[channel] for channel in CHANNELS)
    base_price = market.base_price_fen.astype(np.int64)
    base_ship = market.ship_hours.astype(np.int32)
    delayed_ship = base_ship[delay.product] + delay.value.astype(np.int32)
    return {
        "price_change": ChannelLog.build(
            price, event_price_fen(base_price[price.product], price.value), base_price
        ),
        "delisting": ChannelLog.build(
            delisting, np.zeros(len(delisting.start), bool), np.ones(market.n_products, bool)
        ),
        "delay": ChannelLog.build(delay, delayed_ship, base_ship),
    }


def _identity(market: Market) -> dict[str, int]:
    """What ties saved logs to their market, beyond the sealed directory they sit in."""
    counts = {f"{channel}.events": len(market.events[channel].start) for channel in CHANNELS}
    return {"format": LOG_FORMAT, "n_products": market.n_products, **counts}


def save_logs(logs: dict[str, ChannelLog], market: Market, directory: Path) -> None:
    """Write `logs` (of `market`) into `directory` and seal it (`verified`)."""
    directory.mkdir(parents=True, exist_ok=True)
    meta: dict[str, int] = dict(_identity(market))
    for channel, log in logs.items():
        np.save(directory / f"{channel}.neutral.npy", log.neutral)
        meta[f"{channel}.min_length"] = log.min_length
        for part in ("ends", "starts"):
            for name, array in getattr(log, part).arrays().items():
                np.save(directory / f"{channel}.{part}.{name}.npy", array)
    (directory / _META).write_text(json.dumps(meta, indent=1))
    verified.seal(directory)


def load_logs(directory: Path, market: Market) -> dict[str, ChannelLog]:
    """Read logs written by `save_logs` for this very market (memory-mapped).

    Raises:
        ValueError: no logs there, logs of another market or format, or a damaged file
            (`verified.DamagedCache`).
    """
    meta_path = directory / _META
    if not meta_path.is_file():
        raise ValueError(f"no event log in {directory}")
    meta = json.loads(meta_path.read_text())
    if any(meta.get(key) != value for key, value in _identity(market).items()):
        raise ValueError(f"event log in {directory} belongs to another market or format")
    verified.check(directory)

    def load(name: str) -> np.ndarray:
        # Mapped, but seen as a plain array: a slice of a `np.memmap` builds another memmap
        # object (each `changes_between` slices a dozen; ~0.05 s a paper year).
        return np.asarray(np.load(directory / f"{name}.npy", mmap_mode="r"))

    logs = {}
    for channel in CHANNELS:
        parts = {
            part: Changes.saved(
                {n: load(f"{channel}.{part}.{n}") for n in ("hour", "product", "value", "through")}
            )
            for part in ("ends", "starts")
        }
        logs[channel] = ChannelLog(
            ends=parts["ends"],
            starts=parts["starts"],
            neutral=np.array(load(f"{channel}.neutral")),
            min_length=int(meta[f"{channel}.min_length"]),
        )
    return logs


def _load_or_build(directory: Path, market: Market) -> dict[str, ChannelLog]:
    """The logs saved in `directory`, or built and saved there (written into a temporary
    sibling and renamed into place: a concurrent reader never sees half a log; if another
    process publishes first, its identical logs stay)."""
    try:
        return load_logs(directory, market)
    except verified.DamagedCache as exc:
        verified.notice(f"event log {exc}")
    except (ValueError, OSError, EOFError, KeyError):
        pass  # none yet, or one being replaced: build ours
    logs = build_logs(market)
    try:
        directory.parent.mkdir(parents=True, exist_ok=True)
        temp = Path(tempfile.mkdtemp(prefix=f".tmp-{directory.name}-", dir=directory.parent))
    except OSError:
        return logs  # a read-only cache: use the logs without keeping them
    try:
        save_logs(logs, market, temp)
        if directory.exists():
            try:
                load_logs(directory, market)
                return logs  # another process published first: keep theirs
            except (ValueError, OSError, EOFError, KeyError):
                shutil.rmtree(directory, ignore_errors=True)
        os.rename(temp, directory)
    except OSError:
        pass  # out of space or a lost race: the logs in memory are sound either way
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    return logs


# Channel names in alphabetical order, the order the anomaly table breaks ties in.
_BY_NAME = sorted(CHANNELS)


def changes_between(
    market: Market, products: np.ndarray, after: int, upto: int
) -> list[tuple[int, str, int, bool]]:
    """Events of `products` that started or ended in hours (after, upto].

    Returns:
        (product, channel, hour, ended) tuples ordered by product, hour, starts before ends,
        then channel name.
    """
    logs, chosen = channel_logs(market), np.zeros(market.n_products, dtype=bool)
    chosen[np.asarray(products, dtype=np.int64)] = True
    found: list[tuple[int, str, int, bool]] = []
    for channel in _BY_NAME:
        for changes, ended in ((logs[channel].starts, False), (logs[channel].ends, True)):
            span = changes.span(after, upto)
            at = np.flatnonzero(chosen[changes.product[span]]) + span.start
            if len(at):  # a window changes few products: the rest is cheaper in Python
                found += [
                    (product, channel, hour, ended)
                    for product, hour in zip(
                        changes.product[at].tolist(), changes.hour[at].tolist(), strict=True
                    )
                ]
    return sorted(found, key=lambda change: (change[0], change[2], change[3], change[1]))

"""The mutable state of one store run: everything `snapshot()` saves and `state_hash()` covers.

The market itself is immutable and shared; this holds only what the store's actions and the
passage of time change. It is plain data (ints, floats, lists, dicts, numpy sample arrays) so a
snapshot is a pickle and a restore reproduces it exactly.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, fields

import numpy as np

from merchantbench.sim.ledger import Ledger
from merchantbench.sim.orders import Order
from merchantbench.sim.rating import RatingState


@dataclass(slots=True)
class Listing:
    product: int
    price: int  # fen
    listed_t: int
    spell: int  # index into StoreState.spells
    orders: int = 0
    last_order_t: int = -1


@dataclass(slots=True)
class ListingSpell:
    """One continuous listing of a product, for the run record."""

    product: int
    listed_t: int
    first_price: int
    cost_at_listing: int
    last_price: int
    delisted_t: int = -1


@dataclass(slots=True)
class Samples:
    """Hourly samples over the horizon (step 5 of each hour) and the rating in force per day."""

    balance: np.ndarray
    deposit: np.ndarray
    in_transit: np.ndarray
    receivable: np.ndarray
    rating: np.ndarray
    stars: np.ndarray
    active_listings: np.ndarray
    daily_rating: np.ndarray
    daily_stars: np.ndarray

    @classmethod
    def empty(cls, hours: int, days: int) -> Samples:
        def ints(n: int) -> np.ndarray:
            return np.zeros(n, dtype=np.int64)

        return cls(
            ints(hours), ints(hours), ints(hours), ints(hours),
            np.zeros(hours), ints(hours), ints(hours), np.zeros(days), ints(days),
        )  # fmt: skip


@dataclass(slots=True)
class StoreState:
    t: int  # the next hour to simulate; a window is open at t when t % window_hours == 0
    ledger: Ledger
    rating: RatingState
    samples: Samples
    listings: dict[int, Listing] = field(default_factory=dict)
    spells: list[ListingSpell] = field(default_factory=list)
    orders: list[Order] = field(default_factory=list)
    pending: list[tuple[int, int, int]] = field(default_factory=list)  # heap (t, order_id, step)
    stock: dict[int, tuple[int, int]] = field(default_factory=dict)  # product → (level, hour)
    updates: list[tuple[int, int, str]] = field(default_factory=list)  # (t, order_id, event)
    closed_t: int = -1
    drained: bool = False

    @property
    def closed(self) -> bool:
        return self.closed_t >= 0

    def digest(self) -> str:
        """SHA-256 of a canonical rendering of every field (floats by exact repr)."""
        h = hashlib.sha256()
        for f in fields(self):
            h.update(f.name.encode())
            h.update(_canonical(getattr(self, f.name)))
        return h.hexdigest()


def _canonical(value: object) -> bytes:
    if isinstance(value, np.ndarray):
        return value.dtype.str.encode() + value.tobytes()
    if isinstance(value, Samples | Ledger | RatingState):
        return b"".join(_canonical(getattr(value, f.name)) for f in fields(value))
    if isinstance(value, dict):
        return repr(sorted(value.items(), key=lambda kv: kv[0])).encode()
    return repr(value).encode()

"""A market with several merchants (docs/design.md §11), advanced window by window.

The contract:

- `Marketplace(scenario, market, seed, merchants)` holds one store engine per merchant id
  (`merchant(id)`), each with its private accounts, listings (its own slots), orders, fines and
  rating, and shares among them the catalog, the supplier book (prices and events), the
  supplier stock and the clock. Merchant ids are kept in sorted order whatever order they were
  given in: that order, never the order of arrival or of calls, is the market's.
- While a window is open each merchant acts on its own engine (`list_products`, `delist_products`,
  `set_price`); what one does changes nothing another sees before the next window, whose
  opening posts the board of offers (`sim.rivals`) every merchant's tools read.
- `advance()` closes the window for every merchant and simulates its hours, each in the order
  of a single store (docs/design.md §1): supplier events (looked up), arrivals and their
  procurement, order transitions, end of day, samples. Arrivals of a product in an hour are procured
  in arrival-index order, whoever sells to them: who gets the last units of a supplier's stock is
  decided by the draws.
- Demand: for product i at hour t, each merchant m listing it has its single-store intensity
  λ_m = D · w · a_m (`WindowDemand.intensity`, with a_m = r_m · ℓ_m · price term). The
  product's count is Poisson(Λ) with Λ = (Σ_m λ_m^β)^(1/β) = D · w · (Σ_m a_m^β)^(1/β), drawn
  by inverse CDF from the same uniform as a single store's; arrival k goes to merchant m with
  probability λ_m^β / Σ λ^β, by its own uniform keyed by (seed, SELLER_CHOICE, product, hour,
  k) against the cumulative shares in merchant-id order. A product with one seller is §4's
  formula exactly: a market of one merchant is its single-store run, bit for bit.
- `done` once the horizon is reached or every merchant is closed (a closed merchant's orders
  go on with the market's hours: it is drained with the others). `finish()` drains every
  merchant. `snapshot()` / `restore()` cover every merchant at once (the stock is one dict);
  `state_hash()` is the one merchant's hash in a market of one, else a hash of every
  merchant's hash with its id.
"""

from __future__ import annotations

import hashlib
import pickle
import re
from collections.abc import Iterable, Mapping
from typing import TypeVar

import numpy as np

from merchantbench.catalog.market import Market
from merchantbench.random_streams import Stream, uniform
from merchantbench.scenario import INDEPENDENT_SELLERS, Scenario
from merchantbench.sim.demand import WindowDemand, arrival_cells
from merchantbench.sim.engine import Engine, SharedParts
from merchantbench.sim.rivals import Offers, RivalView
from merchantbench.sim.state import StoreState
from merchantbench.sim.suppliers import SupplierBook

__all__ = ["MERCHANT_ID", "MarketError", "Marketplace", "merchant_of", "seller_shares"]

MERCHANT_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}")

# hour of the window → (product, [(arrival index, merchant id)]) in product order
WindowPlan = dict[int, list[tuple[int, list[tuple[int, str]]]]]


class MarketError(ValueError):
    """A market that cannot be: no merchant, a duplicate or unusable id, a foreign snapshot."""


Of = TypeVar("Of")


def merchant_of(merchants: Mapping[str, Of], merchant: str) -> Of:
    """`merchant`'s entry of a market's `merchants` (its store, its session …).

    Raises:
        MarketError: the market has no such merchant.
    """
    found = merchants.get(merchant)
    if found is None:
        raise MarketError(f"no merchant {merchant!r} in this market")
    return found


def seller_shares(lam: np.ndarray, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """Λ[hour] and each seller's share[seller, hour] of a product with λ[seller, hour] ≥ 0.

    Λ = (Σ λ^β)^(1/β), share = λ^β / Σ λ^β, computed relative to the largest λ of each hour so
    that no power overflows; an hour without demand has Λ = 0 and equal shares."""
    if beta == INDEPENDENT_SELLERS:
        total = lam.sum(axis=0)
        weights = lam
    else:
        top = lam.max(axis=0)
        scale = np.where(top > 0, top, 1.0)
        weights = (lam / scale) ** beta
        total = scale * weights.sum(axis=0) ** (1.0 / beta)
    norm = weights.sum(axis=0)
    safe = np.where(norm > 0, norm, 1.0)
    shares = np.where(norm > 0, weights / safe, 1.0 / lam.shape[0])
    return np.where(norm > 0, total, 0.0), shares


class Marketplace:
    """M ≥ 1 merchants on one market (see the module docstring)."""

    def __init__(
        self, scenario: Scenario, market: Market, seed: int, merchants: Iterable[str]
    ) -> None:
        ids = list(merchants)
        if not ids:
            raise MarketError("a market needs at least one merchant")
        if len(set(ids)) != len(ids):
            raise MarketError("merchant ids must be unique")
        for merchant in ids:
            if not isinstance(merchant, str) or not MERCHANT_ID.fullmatch(merchant):
                raise MarketError(
                    f"merchant id {str(merchant)[:40]!r} must be 1-32 characters of a-z, 0-9, "
                    "'-' or '_', starting with a letter or digit"
                )
        self.scenario = scenario
        self.market = market
        self.seed = seed
        self.beta = scenario.market.seller_substitution
        self.window_hours = scenario.clock.hours_per_window
        self.horizon = scenario.clock.hours
        self.suppliers = SupplierBook(market)
        self.demand = WindowDemand(market, scenario.demand, self.window_hours, self.horizon)
        self.offers = Offers()
        stock: dict[int, tuple[int, int]] = {}
        self.merchants: dict[str, Engine] = {}
        for merchant in sorted(ids):
            rivals = RivalView(self.offers, merchant) if len(ids) > 1 else None
            parts = SharedParts(self.suppliers, self.demand, stock, rivals)
            self.merchants[merchant] = Engine(scenario, market, seed, shared=parts)
        self._post_offers()

    # --- clock ---------------------------------------------------------------------------------
    @property
    def ids(self) -> list[str]:
        return list(self.merchants)

    def merchant(self, merchant: str) -> Engine:
        return merchant_of(self.merchants, merchant)

    @property
    def _first(self) -> Engine:
        return next(iter(self.merchants.values()))

    @property
    def t(self) -> int:
        return self._first.state.t

    @property
    def window(self) -> int:
        return self._first.window

    @property
    def done(self) -> bool:
        return self.t >= self.horizon or all(e.state.closed for e in self.merchants.values())

    @property
    def drained(self) -> bool:
        return all(e.state.drained for e in self.merchants.values())

    @property
    def stock(self) -> dict[int, tuple[int, int]]:
        return self._first.state.stock

    # --- time ----------------------------------------------------------------------------------
    def advance(self) -> None:
        """Close the open window of every merchant and simulate its hours."""
        if self.done:
            raise RuntimeError("the market is over: call finish()")
        t0 = self.t
        plan = self._window_plan(t0)
        engines = list(self.merchants.values())
        for k in range(self.window_hours):
            t = t0 + k
            for product, buyers in plan.get(k, ()):
                for index, merchant in buyers:
                    engine = self.merchants[merchant]
                    if not engine.state.closed:
                        engine._procure(product, t, index)
            for engine in engines:
                engine._transitions_due(t)
                if t % 24 == 23:
                    engine._end_of_day(t)
                engine._sample(t, t + 1)
        for engine in engines:
            engine.state.t = t0 + self.window_hours
        self._post_offers()

    def finish(self) -> None:
        """Drain every merchant (no demand; open orders run to their end). Idempotent."""
        for engine in self.merchants.values():
            engine.finish()

    def run_idle(self) -> None:
        """Advance to the end with no actions, then drain (for tests and benchmarks)."""
        while not self.done:
            self.advance()
        self.finish()

    def _listing_rows(self, t0: int) -> tuple[np.ndarray, ...] | None:
        """Every open listing as rows sorted by (product, merchant): product, price, listing
        hour, rating multiplier and merchant position."""
        rows: list[tuple[int, int, int, float, int]] = []
        for position, engine in enumerate(self.merchants.values()):
            state = engine.state
            if state.closed:
                continue
            multiplier = state.rating.multiplier
            for product in sorted(state.listings):
                listing = state.listings[product]
                rows.append((product, listing.price, listing.listed_t, multiplier, position))
        if not rows:
            return None
        rows.sort(key=lambda row: (row[0], row[4]))
        products, prices, listed, multipliers, owners = zip(*rows, strict=True)
        return (
            np.array(products, dtype=np.int64),
            np.array(prices, dtype=np.int64),
            np.array(listed, dtype=np.int64),
            np.array(multipliers, dtype=np.float64),
            np.array(owners, dtype=np.int64),
        )

    def _window_plan(self, t0: int) -> WindowPlan:
        """The window's arrivals: per hour, per product in product order, each arrival's index
        and the merchant it buys from."""
        found = self._listing_rows(t0)
        if found is None:
            return {}
        products, prices, listed, multipliers, owners = found
        lam = self.demand.intensity(products, prices, listed, t0, multipliers)
        unique, first, counts = np.unique(products, return_index=True, return_counts=True)
        total = lam[first]  # a product with one seller: its single-store λ, bit for bit
        shares: dict[int, np.ndarray] = {}
        for j in np.flatnonzero(counts > 1).tolist():
            rows = slice(int(first[j]), int(first[j] + counts[j]))
            total[j], shares[j] = seller_shares(lam[rows], self.beta)
        ids = self.ids
        plan: WindowPlan = {}
        for cell, count in arrival_cells(self.seed, unique, t0, total):
            j, k = divmod(cell, self.window_hours)
            product, start = int(unique[j]), int(first[j])
            if j in shares:
                cumulative = np.cumsum(shares[j][:, k])
                draws = uniform(self.seed, Stream.SELLER_CHOICE, product, t0 + k, np.arange(count))
                picks = np.searchsorted(cumulative / cumulative[-1], draws, side="right")
                picks = np.minimum(picks, int(counts[j]) - 1)
                sellers = [ids[int(owners[start + p])] for p in picks.tolist()]
            else:
                sellers = [ids[int(owners[start])]] * count
            plan.setdefault(k, []).append((product, list(enumerate(sellers))))
        return plan

    def _post_offers(self) -> None:
        """The board of offers at the opening of the window (`sim.rivals`)."""
        board: dict[int, list[tuple[str, int, int]]] = {}
        for merchant, engine in self.merchants.items():
            state = engine.state
            if state.closed:
                continue
            for product, listing in state.listings.items():
                board.setdefault(product, []).append((merchant, listing.price, state.rating.stars))
        self.offers.set(board)

    # --- persistence ---------------------------------------------------------------------------
    def snapshot(self) -> bytes:
        """Every merchant's state in one pickle (the shared stock stays one dict) and the board
        of offers of the open window."""
        states = {merchant: engine.state for merchant, engine in self.merchants.items()}
        return pickle.dumps(
            {"states": states, "offers": self.offers.by_product},
            protocol=pickle.HIGHEST_PROTOCOL,
        )

    def restore(self, blob: bytes) -> None:
        saved = pickle.loads(blob)
        states = saved.get("states") if isinstance(saved, dict) else None
        if not isinstance(states, dict) or sorted(states) != self.ids:
            raise MarketError("not a snapshot of this market's merchants")
        if not all(isinstance(state, StoreState) for state in states.values()):
            raise MarketError("not a market snapshot")
        for merchant, engine in self.merchants.items():
            engine.state = states[merchant]
        self.offers.set(saved["offers"])

    def state_hash(self) -> str:
        if len(self.merchants) == 1:
            return self._first.state_hash()
        h = hashlib.sha256()
        for merchant, engine in self.merchants.items():
            h.update(merchant.encode() + b"\0" + engine.state_hash().encode())
        return h.hexdigest()

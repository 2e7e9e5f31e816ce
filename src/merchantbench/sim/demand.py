"""Customer arrivals (docs/design.md §4): the paper's intensity formula, vectorised over the
listings of a store and the hours of one window, with counter-based Poisson draws (common random
numbers).

    λ = D[i, d(t)] · w[c(i), h(t)] · r(t) · ℓ(age) · min((p / p_ref)^(−ε), cap)

A window has a few dozen listings × 12 hours, so numpy's cost per call, not per element,
dominates: `WindowDemand` keeps what does not change between windows (float64 copies of the
market's per-product terms, ℓ tabulated by age in hours) and computes the rest with as few
calls as the formula allows, in the formula's order of operations (the same floats, hence the
same draws); `window_arrivals` computes many stores' windows in one set of those calls.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from merchantbench.catalog.market import Market
from merchantbench.random_streams import (
    SUM_FROM_ZERO_UP_TO,
    Stream,
    poisson_from_uniform,
    uniform,
)
from merchantbench.scenario import DemandConfig

_HOURS: dict[int, np.ndarray] = {}  # hours → arange(hours), int64


def exposure(age_days: np.ndarray | float, config: DemandConfig) -> np.ndarray:
    """ℓ(age): 0.2 at listing, linear to 1.0 at day 14, then decays towards 0.10."""
    age = np.asarray(age_days, dtype=np.float64)
    ramp_days = config.exposure_ramp_days
    start = config.exposure_start
    ramp = start + (1.0 - start) * age / ramp_days
    floor = config.exposure_floor
    decay = floor + (1.0 - floor) * np.exp(-config.exposure_decay_per_day * (age - ramp_days))
    return np.where(age < ramp_days, ramp, decay)


def price_term(
    price_fen: np.ndarray, p_ref_fen: np.ndarray, elasticity: np.ndarray, cap: float
) -> np.ndarray:
    """min((p / p_ref)^(−ε), cap): the demand response to the listing's sale price."""
    ratio = np.asarray(price_fen, dtype=np.float64) / np.asarray(p_ref_fen, dtype=np.float64)
    return np.minimum(ratio ** (-np.asarray(elasticity, dtype=np.float64)), cap)


@dataclass(frozen=True, eq=False)
class _MarketTerms:
    """The market's per-product demand terms in the dtypes the formula computes in."""

    demand: np.ndarray  # a plain view of the memory map (the subclass costs per call)
    p_ref_fen: np.ndarray  # float64
    elasticity: np.ndarray  # float64


_TERMS: weakref.WeakKeyDictionary[Market, _MarketTerms] = weakref.WeakKeyDictionary()


def _market_terms(market: Market) -> _MarketTerms:
    terms = _TERMS.get(market)
    if terms is None:
        terms = _MarketTerms(
            np.asarray(market.demand),
            market.p_ref_fen.astype(np.float64),
            market.elasticity.astype(np.float64),
        )
        _TERMS[market] = terms
    return terms


class WindowDemand:
    """λ[listing, hour] of one store's windows on one market (`window_intensity`, per run).

    Args:
        market: The market.
        config: The scenario's demand parameters.
        hours: Hours per window; a window lies within one day.
        max_age_hours: The oldest listing age (hours, at the window's last hour) asked for.
    """

    def __init__(
        self, market: Market, config: DemandConfig, hours: int, max_age_hours: int
    ) -> None:
        self.market = market
        self.config = config
        self.hours = hours
        self._terms = _market_terms(market)
        # ℓ at every whole-hour age, exactly as `exposure` gives it for age / 24 days; row a of
        # the sliding view holds the ages a … a + hours − 1 of a listing a hours old at t0.
        table = exposure(np.arange(max_age_hours + 1) / 24.0, config)
        self._exposure_rows = np.lib.stride_tricks.sliding_window_view(table, hours)

    def intensity(
        self,
        products: np.ndarray,
        prices_fen: np.ndarray,
        listed_t: np.ndarray,
        t0: int,
        rating_multiplier: float | np.ndarray,
    ) -> np.ndarray:
        """λ[listing, hour] for hours t0 … t0+hours−1; `listed_t` ≤ t0 (listings so far).
        `rating_multiplier` is the store's, or one per listing (a market of several merchants):
        the same floats either way."""
        ages = t0 - listed_t
        if len(ages) and ages.min() < 0:  # a negative row would silently read the table's end
            raise ValueError(f"a listing is from after hour {t0}")
        return _intensity(
            self, products, prices_fen, t0, rating_multiplier, self._exposure_rows[ages]
        )


def _intensity(
    demand: WindowDemand,
    products: np.ndarray,
    prices_fen: np.ndarray,
    t0: int | np.ndarray,
    multiplier: float | np.ndarray,
    exposure_rows: np.ndarray,
) -> np.ndarray:
    """λ[listing, hour], the formula in its order of operations: `t0` the window's first hour
    (or one per listing, a column), `multiplier` the rating's (or one per listing),
    `exposure_rows` ℓ of each listing's hours."""
    market, terms = demand.market, demand._terms
    days = np.floor_divide(t0, 24) + market.history_days
    base = terms.demand[days if np.ndim(days) == 0 else days[:, 0], products].astype(np.float64)
    price = price_term(
        prices_fen,
        terms.p_ref_fen[products],
        terms.elasticity[products],
        demand.config.price_term_cap,
    )
    hour_of_day = np.remainder(t0, 24) + _hours(demand.hours)
    weights = market.hourly_weights[market.category[products][:, None], hour_of_day]
    per_listing = base * price * multiplier
    return per_listing[:, None] * weights * exposure_rows


def _hours(hours: int) -> np.ndarray:
    """arange(hours), int64, made once per length."""
    step = _HOURS.get(hours)
    if step is None:
        step = _HOURS[hours] = np.arange(hours, dtype=np.int64)
    return step


def window_intensity(
    market: Market,
    products: np.ndarray,
    prices_fen: np.ndarray,
    listed_t: np.ndarray,
    t0: int,
    hours: int,
    rating_multiplier: float,
    config: DemandConfig,
) -> np.ndarray:
    """λ[listing, hour] for hours t0 … t0+hours−1, all within one day (one-off; a run keeps a
    `WindowDemand`)."""
    listed_t = np.asarray(listed_t, dtype=np.int64)
    oldest = int(t0 - listed_t.min()) + hours if listed_t.size else hours
    demand = WindowDemand(market, config, hours, oldest)
    return demand.intensity(products, prices_fen, listed_t, t0, rating_multiplier)


def arrival_cells(
    seed: int, products: np.ndarray, t0: int, lam: np.ndarray
) -> list[tuple[int, int]]:
    """The window's orders as (cell, count > 0) in cell order, where cell = listing · hours +
    hour of λ[listing, hour]; the uniforms are keyed by (seed, product, hour)."""
    return _cells(seed, products, (t0 + np.arange(lam.shape[1]))[None, :], lam)


@dataclass(frozen=True, slots=True)
class StoreWindow:
    """One store's open window as the arrivals see it: its listings in `products` order
    (ascending), their prices and listing hours, the window's first hour and the rating's
    demand multiplier."""

    demand: WindowDemand
    seed: int
    t0: int
    products: list[int]
    prices: list[int]
    listed_t: list[int]
    multiplier: float


def window_arrivals(windows: Sequence[StoreWindow]) -> list[list[tuple[int, int]]]:
    """`arrival_cells` of each window's `intensity`, for many stores at once: per store, its
    orders as (cell, count > 0) in cell order, cell = position in `products` · hours + hour.

    Stores on the same market, seed and demand rules are computed together, their listings
    end to end, with one set of array operations: every element goes through the operations
    of `WindowDemand.intensity` and `arrival_cells` in the same order (elementwise, so the
    same floats and draws as a store computed alone). A single store's window is the case of
    one (`Engine.advance`), so there is one definition of the arrivals."""
    found: list[list[tuple[int, int]]] = [[] for _ in windows]
    groups: dict[tuple[int, int, DemandConfig, int], list[int]] = {}
    for i, window in enumerate(windows):
        if window.products:
            demand = window.demand
            key = (id(demand.market), window.seed, demand.config, demand.hours)
            groups.setdefault(key, []).append(i)
    for members in groups.values():
        _group_arrivals([windows[i] for i in members], [found[i] for i in members])
    return found


def _group_arrivals(windows: list[StoreWindow], into: list[list[tuple[int, int]]]) -> None:
    """`window_arrivals` of stores sharing market, seed, demand rules and window length."""
    first = windows[0].demand
    hours = first.hours
    sizes = [len(w.products) for w in windows]
    if len(windows) == 1:
        w = windows[0]
        products = np.array(w.products, dtype=np.int64)
        prices = np.array(w.prices, dtype=np.int64)
        ages = w.t0 - np.array(w.listed_t, dtype=np.int64)
        t0: int | np.ndarray = w.t0
        multiplier: float | np.ndarray = w.multiplier
    else:
        products = np.array([p for w in windows for p in w.products], dtype=np.int64)
        prices = np.array([p for w in windows for p in w.prices], dtype=np.int64)
        starts = np.array([w.t0 for w in windows], dtype=np.int64).repeat(sizes)
        ages = starts - np.array([t for w in windows for t in w.listed_t], dtype=np.int64)
        t0 = starts[:, None]
        multiplier = np.array([w.multiplier for w in windows]).repeat(sizes)
    if ages.min() < 0:  # a negative row would silently read the table's end
        raise ValueError("a listing is from after its window's first hour")
    if len(windows) == 1:
        exposure = first._exposure_rows[ages]
    else:
        bounds = np.cumsum([0, *sizes]).tolist()
        spans = zip(windows, bounds, bounds[1:], strict=False)
        exposure = np.concatenate([w.demand._exposure_rows[ages[a:b]] for w, a, b in spans])
    lam = _intensity(first, products, prices, t0, multiplier, exposure)
    cells = _cells(windows[0].seed, products, np.add(t0, _hours(hours)), lam)
    if len(windows) == 1:
        into[0].extend(cells)
        return
    ends, k = np.cumsum(sizes).tolist(), 0
    offset = 0
    for cell, count in cells:
        listing = cell // hours
        while listing >= ends[k]:
            offset, k = ends[k], k + 1
        into[k].append((cell - offset * hours, count))


def _cells(
    seed: int, products: np.ndarray, hours: np.ndarray, lam: np.ndarray
) -> list[tuple[int, int]]:
    """The orders of λ[listing, hour] as (cell, count > 0) in cell order; `hours` the market
    hour of each cell (broadcast to λ's shape), the uniforms keyed by (seed, product, hour)."""
    u = uniform(seed, Stream.ARRIVALS, products[:, None], hours)
    # Below SUM_FROM_ZERO_UP_TO the inverse CDF gives 0 where u ≤ P(X = 0) = e^(−λ). A
    # listing-hour rarely sees an order, so only the cells that may are drawn; the margin
    # keeps every cell within rounding of the boundary among them, where the draw decides.
    maybe = np.exp(-lam) * (1.0 - 1e-9) < u
    drawn = np.flatnonzero((lam > SUM_FROM_ZERO_UP_TO) | maybe)
    if not drawn.size:
        return []
    counts = poisson_from_uniform(lam.reshape(-1)[drawn], u.reshape(-1)[drawn])
    return [(cell, n) for cell, n in zip(drawn.tolist(), counts.tolist(), strict=True) if n]

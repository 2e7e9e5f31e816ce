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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate, chain

import numpy as np

from merchantbench.catalog.market import Market
from merchantbench.random_streams import (
    SUM_FROM_ZERO_UP_TO,
    Stream,
    poisson_from_uniform,
    uniform,
    uniform_of_seeds,
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
    flat_demand: np.ndarray  # the same, flat: D[day, product] at day · products + product
    p_ref_fen: np.ndarray  # float64
    elasticity: np.ndarray  # float64


_TERMS: weakref.WeakKeyDictionary[Market, _MarketTerms] = weakref.WeakKeyDictionary()


def _market_terms(market: Market) -> _MarketTerms:
    terms = _TERMS.get(market)
    if terms is None:
        demand = np.ascontiguousarray(market.demand)  # (a view: the cached arrays are)
        terms = _MarketTerms(
            demand,
            demand.reshape(-1),
            market.p_ref_fen.astype(np.float64),
            market.elasticity.astype(np.float64),
        )
        _TERMS[market] = terms
    return terms


def _hour_runs(weights: np.ndarray, hours: int) -> np.ndarray:
    """The hourly weights [row, hour of day] as runs of `hours` hours, [row, first hour,
    hour] (a view): a window's weights, which lie within one day, are one run."""
    return np.lib.stride_tricks.sliding_window_view(weights, hours, axis=1)


def _window_weights(runs: np.ndarray, rows: np.ndarray, t0: int | np.ndarray) -> np.ndarray:
    """weights[rows[:, None], t0 % 24 + arange(hours)] of `_hour_runs` (`t0` the window's
    first hour, or one per row as a column): each row's run, gathered whole."""
    first = np.remainder(t0, 24)
    return runs[rows, first if np.ndim(first) == 0 else first.reshape(-1)]


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
        self._weight_runs = _hour_runs(market.hourly_weights, hours)

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
    base, p_ref, elasticity, weights = _market_part(demand, products, t0)
    return _formula(
        base, p_ref, elasticity, weights, prices_fen, multiplier, exposure_rows, demand.config
    )


def _market_part(
    demand: WindowDemand, products: np.ndarray, t0: int | np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The market's terms of the formula for these listings: D at reference price, p_ref and
    ε (float64), and the hourly weights of each listing's hours."""
    market, terms = demand.market, demand._terms
    days = np.floor_divide(t0, 24) + market.history_days
    base = terms.demand[days if np.ndim(days) == 0 else days[:, 0], products].astype(np.float64)
    weights = _window_weights(demand._weight_runs, market.category[products], t0)
    return base, terms.p_ref_fen[products], terms.elasticity[products], weights


def _formula(
    base: np.ndarray,
    p_ref: np.ndarray,
    elasticity: np.ndarray,
    weights: np.ndarray,
    prices_fen: np.ndarray,
    multiplier: float | np.ndarray,
    exposure_rows: np.ndarray,
    config: DemandConfig,
) -> np.ndarray:
    """λ = D · w · r · ℓ · min((p / p_ref)^(−ε), cap), elementwise in this order."""
    price = price_term(prices_fen, p_ref, elasticity, config.price_term_cap)
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


@dataclass(slots=True)  # (not frozen: a frozen dataclass is made 4 times slower)
class StoreWindow:
    """One store's open window as the arrivals see it: its listings in `products` order
    (ascending), their prices and listing hours, the window's first hour and the rating's
    demand multiplier. Read only (the engine keeps its lists for the next window)."""

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

    Stores under the same demand rules, window length and exposure table are computed
    together, their listings end to end (grouped by market, whose terms are read once per
    market), with one set of array operations: every element goes through the operations of
    `WindowDemand.intensity` and `arrival_cells` in the same order (elementwise, so the same
    floats and draws as a store computed alone; the uniforms keyed by each store's seed). A
    single store's window is the case of one (`Engine.advance`), so there is one definition
    of the arrivals."""
    found: list[list[tuple[int, int]]] = [[] for _ in windows]
    # Per group of rules, per market, the windows (the stores' order within a market does
    # not matter: every element is computed alone).
    groups: dict[tuple[DemandConfig, int, int], dict[int, list[int]]] = {}
    keys: dict[int, list[int]] = {}  # id(demand) → its market's members (rules hashed once)
    for i, window in enumerate(windows):
        if window.products:
            demand = window.demand
            members = keys.get(id(demand))
            if members is None:
                key = (demand.config, demand.hours, len(demand._exposure_rows))
                markets = groups.setdefault(key, {})
                members = keys[id(demand)] = markets.setdefault(id(demand.market), [])
            members.append(i)
    for markets in groups.values():
        order = list(chain.from_iterable(markets.values()))
        _group_arrivals([windows[i] for i in order], [found[i] for i in order])
    return found


def _group_arrivals(windows: list[StoreWindow], into: list[list[tuple[int, int]]]) -> None:
    """`window_arrivals` of stores sharing demand rules, window length and exposure table
    (equal tables: the same ages, the same values), in market order."""
    first = windows[0].demand
    hours = first.hours
    if len(windows) == 1:
        w = windows[0]
        products = np.array(w.products, dtype=np.int64)
        prices = np.array(w.prices, dtype=np.int64)
        ages = w.t0 - np.array(w.listed_t, dtype=np.int64)
        t0: int | np.ndarray = w.t0
        multiplier: float | np.ndarray = w.multiplier
        seeds: int | tuple[list[int], np.ndarray] = w.seed
    else:
        sizes = [len(w.products) for w in windows]
        total = sum(sizes)

        def joined(column: Iterator[list[int]]) -> np.ndarray:
            return np.fromiter(chain.from_iterable(column), dtype=np.int64, count=total)

        products = joined(w.products for w in windows)
        prices = joined(w.prices for w in windows)
        starts = np.array([w.t0 for w in windows], dtype=np.int64).repeat(sizes)
        ages = starts - joined(w.listed_t for w in windows)
        t0 = starts[:, None]
        multiplier = np.array([w.multiplier for w in windows]).repeat(sizes)
        distinct = sorted({w.seed for w in windows})  # (a sealed seed is beyond int64)
        position = {seed: i for i, seed in enumerate(distinct)}
        which = np.array([position[w.seed] for w in windows]).repeat(sizes)
        seeds = (distinct, which)
    if ages.min() < 0:  # a negative row would silently read the table's end
        raise ValueError("a listing is from after its window's first hour")
    exposure = first._exposure_rows[ages]
    runs = _by_market(windows)
    if len(runs) == 1:
        terms = _market_part(first, products, t0)
    else:
        terms = _markets_part(windows, runs, sizes, products, starts)
    lam = _formula(*terms, prices, multiplier, exposure, first.config)
    cells = _cells(seeds, products, np.add(t0, _hours(hours)), lam)
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


def _by_market(windows: list[StoreWindow]) -> list[tuple[int, int]]:
    """The runs [a, b) of windows on one market (`windows` in market order)."""
    runs, a = [], 0
    for b in range(1, len(windows) + 1):
        if b == len(windows) or windows[b].demand.market is not windows[a].demand.market:
            runs.append((a, b))
            a = b
    return runs


def _markets_part(
    windows: list[StoreWindow],
    runs: list[tuple[int, int]],
    sizes: list[int],
    products: np.ndarray,
    starts: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """`_market_part` of listings on several markets (each market's windows a run): D read
    market by market, the per-product terms and hourly weights from the markets' terms put
    end to end (`_Joined`), so the same values in a few operations."""
    markets = [windows[a].demand for a, _ in runs]
    joined = _joined(markets)
    bounds = list(accumulate(sizes, initial=0))
    listings = [bounds[b] - bounds[a] for a, b in runs]  # per market
    at = products + np.repeat(joined.offsets, listings)
    # D[day, product] of each listing as a position in its market's flat D.
    flat = (starts // 24 + np.repeat(joined.history_days, listings)) * np.repeat(
        joined.widths, listings
    ) + products
    base = np.empty(len(products), dtype=np.float32)  # (float32 → float64: exact)
    for demand, (a, b) in zip(markets, runs, strict=True):
        lo, hi = bounds[a], bounds[b]
        base[lo:hi] = demand._terms.flat_demand[flat[lo:hi]]
    weights = _window_weights(joined.weight_runs, joined.weight_row[at], starts)
    return base.astype(np.float64), joined.p_ref_fen[at], joined.elasticity[at], weights


@dataclass(frozen=True, eq=False)
class _Joined:
    """The per-product demand terms of several markets end to end (market k's product p at
    `offsets[k]` + p) and their hourly weights stacked (`weight_row`: each product's row)."""

    markets: tuple[Market, ...]
    offsets: np.ndarray  # int64: market k's first product
    history_days: np.ndarray  # int64, market k's days of history
    widths: np.ndarray  # int64, market k's products (a row of its D)
    p_ref_fen: np.ndarray
    elasticity: np.ndarray
    weight_row: np.ndarray
    weight_runs: np.ndarray  # `_hour_runs` of the hourly weights stacked


# The few most recent, most recent last, keyed by the markets' and the demands' ids (each
# entry holds its markets and weights, so no id of a key is reused while it is kept).
_JOINED: dict[tuple[int, ...], _Joined] = {}


def _joined(demands: list[WindowDemand]) -> _Joined:
    key = (demands[0].hours, *map(id, [demand.market for demand in demands]))
    found = _JOINED.get(key)
    if found is not None:
        return found
    markets = tuple(demand.market for demand in demands)
    sizes = [len(market.category) for market in markets]
    rows = [len(market.hourly_weights) for market in markets]
    row_offsets = np.cumsum([0, *rows[:-1]])
    found = _Joined(
        markets,
        np.cumsum([0, *sizes[:-1]]).astype(np.int64),
        np.array([market.history_days for market in markets], dtype=np.int64),
        np.array([d._terms.demand.shape[1] for d in demands], dtype=np.int64),
        np.concatenate([d._terms.p_ref_fen for d in demands]),
        np.concatenate([d._terms.elasticity for d in demands]),
        np.concatenate(
            [m.category.astype(np.int64) + r for m, r in zip(markets, row_offsets, strict=True)]
        ),
        _hour_runs(np.concatenate([m.hourly_weights for m in markets]), demands[0].hours),
    )
    _JOINED[key] = found
    if len(_JOINED) > 4:
        del _JOINED[next(iter(_JOINED))]
    return found


def _cells(
    seed: int | tuple[list[int], np.ndarray],
    products: np.ndarray,
    hours: np.ndarray,
    lam: np.ndarray,
) -> list[tuple[int, int]]:
    """The orders of λ[listing, hour] as (cell, count > 0) in cell order; `hours` the market
    hour of each cell (broadcast to λ's shape), the uniforms keyed by (seed, product, hour)
    (`seed` the run's, or (seeds, each listing's position in them))."""
    if isinstance(seed, tuple):
        seeds, which = seed
        u = uniform_of_seeds(seeds, which[:, None], Stream.ARRIVALS, products[:, None], hours)
    else:
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

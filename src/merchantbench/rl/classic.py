"""A store for classic RL: fixed-size numeric spaces a policy network can learn from (SB3,
CleanRL, RLlib), over the one engine (`merchantbench.sim.engine`, the rules every run plays).

`StoreEnv` (registered as `MerchantBenchStore-v0`) is one training episode (`rl.episode`: a
store opened new on a market day, for `length` days) seen as numbers:

- **candidates**: at reset, the `slots` products with the most public 30-day market sales
  among those on sale that day (what `search_products(sort="sales_30d")` shows first). The
  slots are fixed for the episode; a slot's product may turn unavailable (supplier delisting).
- **action** `MultiDiscrete([1 + len(markups)] * slots)`: per slot, 0 = not listed, `l` =
  listed at `markups[l-1]` × the supplier's current price. Each step the store is brought to
  that target through the engine's own actions (delist, list, reprice when the supplier's
  price moved), then one window (12 hours) is simulated. A per-listing choice (which products,
  at which markup) and a portfolio choice (how many) in one vector. A refused action (a product
  the supplier delisted, the store closed) is skipped; it never raises.
- **observation** `Box(float32, (GLOBAL + slots × SLOT,))`: the store (time left, cash, deposit,
  money in the pipeline, net-assets change, rating, listings) and, per slot, its public facts
  (listed, markup, procurement price and its change, public 30-day sales, product and shop
  rating, ship hours, available, the stock band the site shows) and the store's own orders of
  the last window, and what the slot has earned so far and in the last window. Only what the
  store's tools show: no demand parameter, risk or future.
- **reward**: the window's change in net assets, in fen first (`info["reward_fen"]`; an
  episode's sum equals its change in net assets exactly, the last step including the final
  drain), `reward_scale` × RMB as the float reward. `info["slot_rewards_fen"]` splits it by
  slot: every ledger entry belongs to an order, every order to a listed product, so the window's
  change is the sum of its slots' (each listing's own margins, fees and fines): a per-listing
  signal for credit assignment (`rl.slot_ppo`).
- **reset(seed=s, options={"index": i, "split": ..., "start_day": d})**: episode `i` of the
  split (`splits.episode_seed`); without an index, one of the env's `pool` first indexes is drawn
  from `np_random` (a fixed pool of markets, so a market is built once per process), and without
  a start day, a day drawn so the episode fits the year.

`StoreVectorEnv` steps N such stores at once on the one engine (`sim.engine.advance_stores`:
the arrivals of all N computed together), as a Gymnasium `VectorEnv` that resets a finished
store in the same step (`final_obs` and `final_info` in the infos).

Speed (docs/performance.md, "The classic store env"): the stores' per-slot state is kept as
(N, slots) arrays (`_Columns`; a `StoreEnv` is the case N = 1), so actions, observations and
rewards are array operations over all N; the supplier facts, ratings and public sales of an
episode's slots at each hour it acts or is observed are one table gathered at reset from
per-product grids of every decision hour of the year (`_Grid`), each made once per process
from the product's year walked with the engine's own look-up (`sim.suppliers.YearBook`, which
the engines of a market share with their demand terms). The engines are read through
`Engine.live` between windows (their hourly samples are written when something reads
`Engine.state`).

docs/rl.md ("Classic RL") has the training script and its held-out results.
"""

from __future__ import annotations

import copy
import itertools
import pickle
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, fields
from functools import cache, cached_property
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from merchantbench.catalog.cache import get_market
from merchantbench.catalog.market import Market
from merchantbench.catalog.stock_band import LOW_STOCK_UNITS
from merchantbench.rl.episode import EpisodeConfig, episode_scenario
from merchantbench.rl.splits import episode_seed
from merchantbench.scenario import DemandConfig, Scenario
from merchantbench.sim.demand import WindowDemand
from merchantbench.sim.engine import ActionRejected, Engine, advance_stores
from merchantbench.sim.state import Samples, StoreState
from merchantbench.sim.suppliers import YearBook

__all__ = ["ENV_ID", "GLOBAL", "MARKUPS", "SLOT", "StoreEnv", "StoreVectorEnv"]

ENV_ID = "MerchantBenchStore-v0"
MARKUPS = (1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0)
GLOBAL = 8  # store features
SLOT = 13  # features per candidate slot
_NEVER = 1 << 62


@cache
def _scenario(scenario: str, days: int, start_day: int) -> Scenario:
    return episode_scenario(EpisodeConfig(scenario, length=days, start_day=start_day))


@dataclass(frozen=True, eq=False)
class _Opened:
    """A store's state on the day its episode opens, kept compact: its hourly and daily
    samples (most of the state's bytes) as runs of equal values, the rest pickled. Lossless:
    `state()` gives back the engine's own state, the same arrays and the same hash."""

    rest: bytes  # the pickled state without its samples
    runs: dict[str, tuple[np.ndarray, np.ndarray]]  # per samples field: values, run lengths

    @classmethod
    def of(cls, state: StoreState) -> _Opened:
        runs = {}
        for field in fields(Samples):
            column = getattr(state.samples, field.name)
            starts = np.flatnonzero(np.r_[True, column[1:] != column[:-1]])
            runs[field.name] = (column[starts], np.diff(np.r_[starts, len(column)]))
        rest = copy.copy(state)
        rest.samples = None  # type: ignore[assignment]
        return cls(pickle.dumps(rest, protocol=pickle.HIGHEST_PROTOCOL), runs)

    def state(self) -> StoreState:
        state: StoreState = pickle.loads(self.rest)
        state.samples = Samples(
            **{name: values.repeat(lengths) for name, (values, lengths) in self.runs.items()}
        )
        return state


_OPENED: OrderedDict[tuple[str, int, int], _Opened] = OrderedDict()


def _opened(scenario: str, days: int, start_day: int, market: Market, seed: int) -> _Opened:
    """The engine's state on `start_day` of a new store (the idle windows before simulated
    by the engine), kept per process (the 512 most recent): opening an episode on that day
    again restores it instead of simulating the idle days. A store with no listing has no
    order, so its idle days are the same on every market of the scenario (the state is keyed
    without the market; tests/rl/test_classic.py checks the store it opens against the
    `rl.episode` store of another seed)."""
    key = (scenario, days, start_day)
    found = _OPENED.pop(key, None)
    if found is None:
        opened = _scenario(scenario, days, start_day)
        engine = Engine(opened, market, seed)
        for _ in range(start_day * 24 // engine.window_hours):
            engine.advance()
        if engine.state.orders or engine.state.ledger.entries:
            raise AssertionError("an idle store had orders")
        found = _Opened.of(engine.state)
    _OPENED[key] = found
    if len(_OPENED) > 512:
        _OPENED.popitem(last=False)
    return found


class _MarketParts:
    """A market and what its episodes share: its `YearBook` and demand terms (given to their
    engines), the top candidates of each day, and each product's supplier facts over the year
    as arrays (the hours at which each state begins, and its procurement price, ship hours and
    availability): a product's year is walked once per process with the engine's own look-up,
    and a slot's facts at any hour are a search."""

    def __init__(self, market: Market) -> None:
        self.market, self.book = market, YearBook(market)
        self._demand: dict[tuple[DemandConfig, int], WindowDemand] = {}
        self._known: dict[int, tuple[np.ndarray, ...]] = {}
        self._top: dict[tuple[int, int], np.ndarray] = {}
        self._joined: tuple[np.ndarray, ...] | None = None
        self._grids: dict[int, _Grid] = {}

    def top(self, day: int, slots: int) -> np.ndarray:
        """The `slots` products with the most public 30-day sales on `day` among those on
        sale (int64, best first; kept per day)."""
        found = self._top.get((day, slots))
        if found is None:
            market = self.market
            sales = market.sales_30d(day).astype(np.float64)
            sales[market.launch_day > day] = -1.0
            found = np.argsort(-sales, kind="stable")[:slots].astype(np.int64)
            self._top[day, slots] = found
        return found

    def demand(self, scenario: Scenario) -> WindowDemand:
        """The market's demand terms under `scenario`'s rules, their exposure table over the
        whole year (the same for every episode: the engines' arrivals are computed together)."""
        key = (scenario.demand, scenario.clock.hours_per_window)
        found = self._demand.get(key)
        if found is None:
            found = self._demand[key] = WindowDemand(
                self.market, scenario.demand, key[1], self.book.hours
            )
        return found

    def facts(self, products: np.ndarray, hours: np.ndarray) -> tuple[np.ndarray, ...]:
        """The procurement price, ship hours and availability of `products` at `hours`, as
        [hour, product] arrays: one search in the timelines of every product asked for so far,
        end to end and keyed product · 2^32 + hour (put together again when one is new)."""
        new = [product for product in products.tolist() if product not in self._known]
        for product in new:
            spans = self.book.year(product)
            self._known[product] = (
                np.array([max(0, since) for since, _, _ in spans], dtype=np.int64),
                np.array([state.price_fen for _, _, state in spans], dtype=np.int64),
                np.array([state.ship_hours for _, _, state in spans], dtype=np.int64),
                np.array([state.available for _, _, state in spans], dtype=np.bool_),
            )
        if new or self._joined is None:
            known = sorted(self._known)
            begins, price, ship, on_sale = (
                np.concatenate(column)
                for column in zip(*(self._known[p] for p in known), strict=True)
            )
            sizes = [len(self._known[p][0]) for p in known]
            keys = begins + np.repeat(np.array(known, dtype=np.int64) << 32, sizes)
            self._joined = (keys, price, ship, on_sale)
        keys, price, ship, on_sale = self._joined
        at = np.searchsorted(keys, hours[:, None] + (products << 32), side="right") - 1
        return price[at], ship[at], on_sale[at]

    def grid(self, products: np.ndarray, window_hours: int) -> _Grid:
        """The hour-only slot facts of `products` at every decision hour of the year (`_Grid`),
        each product's computed once per process; the rows of every product known so far end
        to end (put together again when one is new)."""
        found = self._grids.get(window_hours)
        new = set(products.tolist()) - (set() if found is None else found.known)
        if new:
            grid = _Grid.of(self, np.array(sorted(new), dtype=np.int64), window_hours)
            found = self._grids[window_hours] = grid if found is None else found.joined(grid)
        assert found is not None
        return found


@dataclass(frozen=True, eq=False)
class _Grid:
    """The slot features that depend on the product and the hour only, for `products` at every
    hour a store of `window_hours`-hour windows decides or is observed at: row r < `windows`
    is window r's first hour (r · window_hours), row `windows` + d is day d's last hour (the
    episode's last row). Every element is computed as `_Candidates` uses it (elementwise:
    gathered from here or computed for one episode, the same numbers)."""

    products: np.ndarray  # int64, ascending
    windows: int  # windows of the year
    # Per product and row, flat (product · rows + row; `at` gives the positions):
    cost: np.ndarray  # int64: procurement price (fen, ≥ 1)
    available: np.ndarray  # bool
    # float32 [·, 3]: features 2, 6 and 9 of a slot (log procurement price, ship hours, public
    # 30-day sales)
    varying: np.ndarray

    @cached_property
    def known(self) -> set[int]:
        return set(self.products.tolist())

    def at(self, products: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """The flat positions of `products` (known) at `rows`, [row, product]."""
        return (
            np.searchsorted(self.products, products)[None, :] * self.rows_per_product
            + rows[:, None]
        )

    @property
    def rows_per_product(self) -> int:
        return len(self.cost) // len(self.products)

    @classmethod
    def of(cls, parts: _MarketParts, products: np.ndarray, window_hours: int) -> _Grid:
        market, year = parts.market, parts.book.hours
        hours = np.concatenate([np.arange(0, year, window_hours), np.arange(23, year, 24)]).astype(
            np.int64
        )
        price, ship_hours, available = parts.facts(products, hours)  # [hour, product]
        cost, ship = np.maximum(price, 1), ship_hours.astype(np.float64)
        varying = np.zeros((len(hours), len(products), 3), dtype=np.float32)
        varying[..., 0] = np.log1p(cost / 100) / 5.0
        varying[..., 1] = ship / 96.0
        cum, days = market.market_sales_cum, market.history_days + hours // 24
        public = cum[days[:, None], products] - cum[np.maximum(0, days - 30)[:, None], products]
        varying[..., 2] = np.log1p(np.maximum(public, 0)) / 8.0
        return cls(
            products,
            year // window_hours,
            np.ascontiguousarray(cost.T).reshape(-1),
            np.ascontiguousarray(available.T).reshape(-1),
            np.ascontiguousarray(varying.transpose(1, 0, 2)).reshape(-1, 3),
        )

    def joined(self, other: _Grid) -> _Grid:
        """The rows of both grids' products (distinct), ascending by product."""
        order = np.argsort(np.concatenate((self.products, other.products)), kind="stable")
        rows = self.rows_per_product

        def joined(a: np.ndarray, b: np.ndarray) -> np.ndarray:
            shape = (-1, rows, *a.shape[1:])  # [product, row, …]
            both = np.concatenate((a.reshape(shape), b.reshape(shape)))
            return both[order].reshape(-1, *a.shape[1:])

        return _Grid(
            np.concatenate((self.products, other.products))[order],
            self.windows,
            joined(self.cost, other.cost),
            joined(self.available, other.available),
            joined(self.varying, other.varying),
        )

    def rows(self, first: int, end: int, window_hours: int) -> np.ndarray:
        """The rows of an episode's decision hours: its windows' first hours from `first`,
        then its last hour (end − 1, the last hour of a day)."""
        rows = np.arange(first // window_hours, end // window_hours + 1)
        rows[-1] = self.windows + (end - 1) // 24
        return rows


_MARKETS: OrderedDict[tuple[str, int], _MarketParts] = OrderedDict()


def _market(name: str, scenario: Scenario, seed: int) -> _MarketParts:
    """The market of an episode and what its episodes share, held per process (the 64 most
    recently used: the catalog's cache keeps a market while one holds it, and checks its
    files at every other call)."""
    key = (name, seed)
    found = _MARKETS.pop(key, None) or _MarketParts(get_market(scenario, seed))
    _MARKETS[key] = found
    if len(_MARKETS) > 64:
        _MARKETS.popitem(last=False)
    return found


@dataclass(frozen=True, eq=False)
class _Candidates:
    """An episode's slots: the products, their facts fixed at reset, and the supplier facts
    and public sales at every hour the store decides or is observed, as tables.

    A decision row is a window's first hour (rows 0 … W − 1) or the episode's last hour (row
    W, the observation after the end): the hours at which the store acts or is observed."""

    products: list[int]
    index: np.ndarray  # int64 product numbers
    capacity: np.ndarray  # int64 supplier stock capacity
    refill: np.ndarray  # int64 units refilled an hour
    cost: np.ndarray  # int64 [row, slot]: procurement price (fen, ≥ 1)
    available: np.ndarray  # bool [row, slot]
    # float32 [row, slot, 8]: the slot features 2 … 9 that depend on the hour only (procurement
    # price and its change, product and shop rating, ship hours, available, public 30-day
    # sales; feature 8, the store's own orders, is written over). float32 as the observation
    # is: each feature is rounded to it once, as when computed at each step.
    static: np.ndarray

    @classmethod
    def of(cls, engine: Engine, parts: _MarketParts, slots: int, start_day: int) -> _Candidates:
        """The `slots` products with the most public 30-day sales among those on sale."""
        market = parts.market
        top = parts.top(start_day, slots)
        products = top.tolist()
        step = engine.window_hours
        grid = parts.grid(top, step)
        at = grid.at(top, grid.rows(start_day * 24, engine.horizon, step))
        cost, available = grid.cost.take(at), grid.available.take(at)
        varying = grid.varying.take(at, axis=0)
        static = np.zeros((len(at), slots, 8), dtype=np.float32)
        static[..., 0], static[..., 4], static[..., 7] = varying.transpose(2, 0, 1)
        static[..., 1] = cost / cost[0].astype(np.float64)
        static[..., 2] = market.historical_avg_rating[top] / 5.0
        static[..., 3] = market.shop_rating[market.supplier[top]] / 5.0
        static[..., 5] = available
        return cls(
            products,
            np.asarray(top, dtype=np.int64),
            market.stock_capacity[top].astype(np.int64),
            market.stock_refill[top].astype(np.int64),
            cost,
            available,
            static,
        )


_CANDIDATES: OrderedDict[tuple[str, int, int, int, int], _Candidates] = OrderedDict()


def _candidates(
    key: tuple[str, int, int, int, int], engine: Engine, parts: _MarketParts
) -> _Candidates:
    """`_Candidates.of` an opened episode, kept per process (the 512 most recent)."""
    found = _CANDIDATES.pop(key, None) or _Candidates.of(engine, parts, key[-1], key[2])
    _CANDIDATES[key] = found
    if len(_CANDIDATES) > 512:
        _CANDIDATES.popitem(last=False)
    return found


class _Columns:
    """The per-slot state of N stores as (N, slots) arrays: store i's episode writes row i, and
    the actions and observations of all N are computed over the whole arrays at once (a single
    `StoreEnv` is the case N = 1)."""

    def __init__(self, n: int, slots: int, rows: int, window_hours: int) -> None:
        def ints() -> np.ndarray:
            return np.zeros((n, slots), dtype=np.int64)

        self.n, self.window_hours = n, window_hours
        self.first = np.zeros(n, dtype=np.int64)  # the episode's first hour
        self.end = np.ones(n, dtype=np.int64)  # its horizon
        self.initial = np.ones(n, dtype=np.int64)  # the net assets it starts with (fen)

        self.listed = ints()  # the listing's price (0: not listed), as the engine has it
        self.new = ints()  # the listing's orders in the last window
        self.last, self.total = ints(), ints()  # change in net assets: last window, episode
        self.level, self.since = ints(), ints()  # supplier stock after the last purchase
        self.bought = np.zeros((n, slots), dtype=np.bool_)  # bought from in this episode
        self.capacity, self.refill = ints(), ints()
        self.cost = np.ones((n, rows, slots), dtype=np.int64)
        self.available = np.zeros((n, rows, slots), dtype=np.bool_)
        self.static = np.zeros((n, rows, slots, 8), dtype=np.float32)

    def open(self, i: int, found: _Candidates, first: int, end: int) -> None:
        """Row i starts an episode on `found`, from hour `first` to `end`."""
        self.first[i], self.end[i] = first, end
        for column in (self.listed, self.new, self.last, self.total, self.since):
            column[i] = 0
        self.bought[i] = False
        self.capacity[i], self.refill[i] = found.capacity, found.refill
        self.cost[i], self.available[i], self.static[i] = found.cost, found.available, found.static


class StoreEnv(gym.Env[np.ndarray, np.ndarray]):
    """One store, numeric spaces; see the module docstring.

    Args:
        scenario: Market scale and rules (`smoke`, `small`, `paper`).
        length: Episode days (`30d`, `90d`, `365d` or a number).
        slots: Candidate products per episode.
        markups: Sale price levels, multiples of the procurement price.
        split: The seed split of episodes drawn without an index.
        pool: Episodes drawn without an index come from the first `pool` of the split.
        start_day: A fixed first day; None draws one per episode.
        reward_scale: The float reward per RMB of change in net assets.
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(
        self,
        scenario: str = "small",
        length: str | int = "30d",
        slots: int = 32,
        markups: tuple[float, ...] = MARKUPS,
        split: str = "train",
        pool: int = 16,
        start_day: int | None = None,
        reward_scale: float = 0.01,
    ) -> None:
        self.scenario_name, self.slots, self.markups = scenario, slots, tuple(markups)
        self.days = EpisodeConfig(scenario, length=length).days
        self.split, self.pool, self.fixed_start = split, pool, start_day
        self.reward_scale = reward_scale
        clock = _scenario(scenario, 1, 0).clock
        year = _scenario(scenario, 1, 0).market.days
        if not 1 <= self.days <= year or pool < 1 or slots < 1:
            raise ValueError(f"length is 1 to {year} days, pool ≥ 1 and slots ≥ 1")
        self.last_start = year - self.days
        self.action_space = spaces.MultiDiscrete([1 + len(self.markups)] * slots, seed=0)
        size = GLOBAL + SLOT * slots
        self.observation_space = spaces.Box(-10.0, 10.0, shape=(size,), dtype=np.float32)
        self.engine: Engine | None = None
        self._factors = np.array((0.0, *self.markups))  # level → markup (0: not listed)
        self.index = self.start_day = 0
        self.rows = self.days * 24 // clock.hours_per_window + 1  # decision rows of an episode
        self._window_hours = clock.hours_per_window
        # The store's per-slot state: row 0 of its own columns, or row i of a vector's.
        self._columns = _Columns(1, slots, self.rows, clock.hours_per_window)
        self._row = 0

    # --- episodes --------------------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        self._begin(seed, options)
        return _observe([self])[0][0], self._info(0)

    def _begin(self, seed: int | None, options: dict[str, Any] | None) -> None:
        """`reset` but the observation (a vector observes its new episodes at once)."""
        super().reset(seed=seed)
        options = options or {}
        split = options.get("split", self.split)
        index = options.get("index")
        self.index = int(self.np_random.integers(self.pool)) if index is None else int(index)
        start = options.get("start_day", self.fixed_start)
        if start is None:
            start = int(self.np_random.integers(self.last_start + 1))
        if not 0 <= start <= self.last_start:
            raise ValueError(f"start_day is 0 to {self.last_start} for {self.days}-day episodes")
        self.start_day, run_seed = start, episode_seed(split, self.index)
        scenario = _scenario(self.scenario_name, self.days, start)
        shared = _market(self.scenario_name, scenario, run_seed)
        market = shared.market
        opened = _opened(self.scenario_name, self.days, start, market, run_seed).state()
        engine = Engine(
            scenario,
            market,
            run_seed,
            suppliers=shared.book,
            demand=shared.demand(scenario),
            state=opened,
        )
        self.engine = engine
        key = (self.scenario_name, self.days, start, run_seed, self.slots)
        self._open(_candidates(key, engine, shared))

    def _open(self, found: _Candidates) -> None:
        engine = self._engine
        self.candidates, self.products = found, found.products
        self._slot_of = {product: slot for slot, product in enumerate(found.products)}
        self._columns.open(self._row, found, self.start_day * 24, engine.horizon)
        accounts = engine.live.ledger.accounts
        self.initial_fen = self._net_fen = accounts.net_assets
        self._columns.initial[self._row] = self.initial_fen
        self._entries_seen = len(engine.live.ledger.entries)
        self._orders_seen = len(engine.live.orders)

    # --- steps -----------------------------------------------------------------------------------
    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        levels = np.asarray(action, dtype=np.int64)
        if levels.size != self.slots:
            raise ValueError(f"an action is {self.slots} levels, not shape {levels.shape}")
        _prepare([self], levels.reshape(1, self.slots))
        self._engine.advance()
        (reward_fen,) = _conclude([self])
        obs = _observe([self])[0][0]
        done = self._engine.done
        return obs, reward_fen / 100 * self.reward_scale, done, False, self._info(reward_fen)

    def _apply(self, slots: list[int], prices: list[int], listed: list[bool]) -> list[bool]:
        """`_set` of each slot in turn (slots ascending), done as the engine's batch actions
        where that is the same: the delistings, the reprices and the listings (in slot order)
        each one batch, so long as the listings cannot meet the store's listing cap (the
        only rule through which one slot's action could change another's); a refused batch
        changes nothing and is done slot by slot instead. Whether each slot's was done."""
        engine, products = self._engine, self.products
        cap = engine.scenario.tools.max_active_listings
        if len(engine.live.listings) + listed.count(False) > cap:
            return [self._set(*change) for change in zip(slots, prices, listed, strict=True)]
        delist: list[int] = []
        reprice: list[int] = []
        new: list[int] = []
        for k, price in enumerate(prices):
            (delist if price == 0 else reprice if listed[k] else new).append(k)
        done = [True] * len(slots)
        batches: list[tuple[list[int], Callable[[Any], None]]] = [
            (delist, engine.delist_products),
            (reprice, engine.set_prices),
            (new, engine.list_products),
        ]
        for batch, act in batches:
            if not batch:
                continue
            items = [(products[slots[k]], prices[k]) for k in batch]  # (product, price)
            try:
                act([product for product, _ in items] if batch is delist else items)
            except ActionRejected:
                for k in batch:
                    done[k] = self._set(slots[k], prices[k], listed[k])
        return done

    def _set(self, slot: int, price: int, listed: bool) -> bool:
        """Bring one slot's listing (`listed` or not) to `price` (0: not listed) with the
        engine's own actions; False if the engine refused (the slot stays as it is)."""
        engine, product = self._engine, self.products[slot]
        try:
            if price == 0:
                engine.delist_products([product])
            elif listed:
                engine.set_price(product, price)
            else:
                engine.list_products([(product, price)])
        except ActionRejected:
            return False  # unavailable product, closed store
        return True

    def _conclude(self, last: np.ndarray, new: np.ndarray, k: int) -> int:
        """After the window: drain a finished episode; the reward in fen. Row k of `last` (zeros)
        gets the window's change in net assets per slot (from the ledger's new entries: each an
        order's, each order a slot's product), row k of `new` (zeros) its orders per slot; the
        stock of the slots bought from goes into the columns (`_conclude` of the module writes
        the rest, for all stores at once)."""
        engine, i, columns = self._engine, self._row, self._columns
        if engine.done:
            engine.finish()
        state, slot_of = engine.live, self._slot_of
        now = state.ledger.accounts.net_assets
        reward_fen, self._net_fen = now - self._net_fen, now
        entries, orders = state.ledger.entries, state.orders
        if len(entries) > self._entries_seen:
            sums: dict[int, int] = {}
            for entry in entries[self._entries_seen :]:
                slot = slot_of[orders[entry.order_id - 1].product]
                sums[slot] = sums.get(slot, 0) + entry.d_net
            for slot, change in sums.items():
                last[k, slot] = change
            self._entries_seen = len(entries)
        if len(orders) > self._orders_seen:
            stock, counts = state.stock, dict[int, int]()
            for order in orders[self._orders_seen :]:
                slot = slot_of[order.product]
                counts[slot] = counts.get(slot, 0) + 1
                known = stock.get(order.product)
                if known is not None:
                    columns.level[i, slot], columns.since[i, slot] = known
                    columns.bought[i, slot] = True
            for slot, count in counts.items():
                new[k, slot] = count
            self._orders_seen = len(orders)
        if state.closed:  # the listings came down with the store
            columns.listed[i] = 0
        return reward_fen

    def _store_features(self, readout: tuple[float, ...]) -> tuple[float, ...]:
        """The store features (`GLOBAL`) of its `_readout`."""
        t, balance, deposit, in_transit, receivable, net, rating, listings, closed, _ = readout
        end, initial = self._engine.horizon, float(self.initial_fen)
        return (
            (end - t) / max(1, end - self.start_day * 24),
            balance / initial,
            deposit / initial,
            (in_transit + receivable) / initial,
            (net - self.initial_fen) / initial,
            rating / 5.0,
            listings / self.slots,
            float(closed),
        )

    def _readout(self) -> tuple[float, ...]:
        """What the observation and the vector's infos read of the store itself: its hour,
        accounts (balance, deposit, in transit, receivable, net assets), published rating,
        listings, whether it is closed and whether its episode is done (whole numbers but the
        rating; `_NET` and `_DONE` name two positions)."""
        engine = self._engine
        state = engine.live
        a = state.ledger.accounts
        return (
            state.t,
            a.balance,
            a.deposit,
            a.in_transit,
            a.receivable,
            a.net_assets,
            state.rating.published,
            len(state.listings),
            state.closed,
            engine.done,
        )

    def _info(self, reward_fen: int) -> dict[str, Any]:
        engine = self._engine
        return {
            "reward_fen": reward_fen,
            "slot_rewards_fen": self._columns.last[self._row].copy(),
            "net_assets_change_fen": engine.live.ledger.accounts.net_assets - self.initial_fen,
            "window": (engine.t - self.start_day * 24) // engine.window_hours,
            "index": self.index,
            "start_day": self.start_day,
        }

    @property
    def _engine(self) -> Engine:
        if self.engine is None:
            raise RuntimeError("call reset() first")
        return self.engine


def _where(envs: list[StoreEnv]) -> tuple[slice | np.ndarray, np.ndarray]:
    """The rows of `envs` in their columns (all of them in order: a slice) and the hour each
    store's engine is at."""
    return _rows(envs), np.array([env._engine.live.t for env in envs], dtype=np.int64)


def _rows(envs: list[StoreEnv]) -> slice | np.ndarray:
    """The rows of `envs` in their columns (all of them in order: a slice)."""
    everyone = len(envs) == envs[0]._columns.n  # a step: every store, in row order
    return slice(None) if everyone else np.array([env._row for env in envs])


def _decision_rows(columns: _Columns, which: slice | np.ndarray, hours: np.ndarray) -> np.ndarray:
    """The rows of the tables for the engines' hours (the last: the episode is over)."""
    rows = (hours - columns.first[which]) // columns.window_hours
    return np.minimum(rows, columns.cost.shape[1] - 1)


def _prepare(envs: list[StoreEnv], levels: np.ndarray) -> None:
    """Bring every store's listings to its action's levels, (N, slots), with the engine's own
    actions: only the slots whose target price differs from what is listed."""
    first = envs[0]
    which, hours = _where(envs)
    if any(env._engine.done for env in envs):
        raise RuntimeError("the episode is over: call reset()")
    columns = first._columns
    at = (np.arange(columns.n)[which], _decision_rows(columns, which, hours))
    levels = np.minimum(np.maximum(levels, 0), len(first.markups))  # (np.clip costs more)
    targets = np.maximum(1, np.rint(columns.cost[at] * first._factors[levels])).astype(np.int64)
    targets[levels == 0] = 0
    listed = columns.listed[which]
    # A product the supplier delisted cannot be listed (the engine would refuse it): skipped.
    change = (targets != listed) & ((listed > 0) | (targets == 0) | columns.available[at])
    stores, slots = np.nonzero(change)  # store by store, each in slot order
    prices, was = targets[stores, slots].tolist(), (listed[stores, slots] > 0).tolist()
    applied = np.ones(len(stores), dtype=np.bool_)
    bounds = np.searchsorted(stores, np.arange(len(envs) + 1)).tolist()
    slot_list = slots.tolist()
    for i, (a, b) in enumerate(itertools.pairwise(bounds)):
        if a < b:
            applied[a:b] = envs[i]._apply(slot_list[a:b], prices[a:b], was[a:b])
    rows = at[0][stores[applied]]
    columns.listed[rows, slots[applied]] = targets[stores[applied], slots[applied]]


def _conclude(envs: list[StoreEnv]) -> list[int]:
    """`StoreEnv._conclude` of each store, their slots' changes and orders written into the
    columns at once (the orders of the listings still up); the rewards in fen."""
    columns = envs[0]._columns
    which = slice(None) if len(envs) == columns.n else [env._row for env in envs]
    last = np.zeros((len(envs), envs[0].slots), dtype=np.int64)
    new = np.zeros_like(last)
    rewards = [env._conclude(last, new, k) for k, env in enumerate(envs)]
    columns.last[which] = last
    columns.total[which] += last
    new[columns.listed[which] == 0] = 0
    columns.new[which] = new
    return list(rewards)


_NET, _DONE = 5, 9  # positions in a `StoreEnv._readout`


def _infos(envs: list[StoreEnv], rewards_fen: list[int], readouts: np.ndarray) -> dict[str, Any]:
    """`StoreEnv._info` of each store as Gymnasium's vector infos (arrays, with every `_key`
    mask true), built at once from the stores' `_readout`s (whole numbers, exact)."""
    columns = envs[0]._columns
    which = _rows(envs)
    start = np.array([env.start_day for env in envs], dtype=np.int64)
    hours = readouts[:, 0].astype(np.int64)
    net = readouts[:, _NET].astype(np.int64)
    infos = {
        "reward_fen": np.array(rewards_fen, dtype=np.int64),
        "slot_rewards_fen": columns.last[[env._row for env in envs]],
        "net_assets_change_fen": net - columns.initial[which],
        "window": (hours - start * 24) // columns.window_hours,
        "index": np.array([env.index for env in envs], dtype=np.int64),
        "start_day": start,
    }
    every = np.ones(len(envs), dtype=np.bool_)
    return {**infos, **{f"_{key}": every for key in infos}}


def _observe(envs: list[StoreEnv]) -> tuple[np.ndarray, np.ndarray]:
    """The observations of `envs` (stores of the same columns, in row order), (N, size), and
    the stores' `_readout`s they were made from (float64, (N, 10))."""
    first = envs[0]
    columns, slots = first._columns, first.slots
    which = _rows(envs)
    raw = [env._readout() for env in envs]
    readouts = np.array(raw, dtype=np.float64)
    t = readouts[:, 0].astype(np.int64)
    hours = np.minimum(t, columns.end[which] - 1)
    at = (np.arange(columns.n)[which], _decision_rows(columns, which, t))
    # Each feature computed in float64 and rounded to float32 once, as it is written.
    obs = np.empty((len(envs), GLOBAL + slots * SLOT), dtype=np.float32)
    obs[:, :GLOBAL] = np.array(
        [env._store_features(one) for env, one in zip(envs, raw, strict=True)], dtype=np.float64
    )
    per = obs[:, GLOBAL:].reshape(len(envs), slots, SLOT)  # a view
    listed = columns.listed[which]
    per[..., 0] = listed > 0
    per[..., 1] = listed / columns.cost[at] / 3.0
    per[..., 2:10] = columns.static[at]
    per[..., 8] = np.log1p(columns.new[which]) / 3.0
    bought = columns.bought[which]
    if bought.any():
        since = hours[:, None] - columns.since[which]
        units = np.minimum(
            columns.capacity[which], columns.level[which] + columns.refill[which] * since
        )
        band = np.where(units >= LOW_STOCK_UNITS, 1.0, np.where(units > 0, 0.5, 0.0))
        per[..., 10] = np.where(bought, band, 1.0)
    else:
        per[..., 10] = 1.0  # in stock until bought from
    per[..., 11] = columns.total[which] / 5000.0  # RMB 50 earned so far → 1
    per[..., 12] = columns.last[which] / 1000.0  # RMB 10 in the last window → 1
    np.maximum(obs, -10.0, out=obs)  # clipped to the box (np.clip costs more per call)
    return np.minimum(obs, 10.0, out=obs), readouts


def store_seeds(seed: int | list[int | None] | None, num_envs: int) -> list[int | None]:
    """Each store's seed of a vector's `reset(seed=…)`: s + i for store i from one int, as given
    from a list (one a store), None from None."""
    if seed is None or isinstance(seed, int):
        return [None if seed is None else seed + i for i in range(num_envs)]
    seeds = list(seed)
    if len(seeds) != num_envs:
        raise ValueError(f"{len(seeds)} seeds for {num_envs} stores")
    return seeds


class StoreVectorEnv(gym.vector.VectorEnv[np.ndarray, np.ndarray, np.ndarray]):
    """`num_envs` stores (`StoreEnv`, the same arguments) stepped together on the one engine:
    each step brings every store to its action, then `advance_stores` runs their windows, the
    arrivals of all computed at once. A store whose episode ends is reset in the same step
    (Gymnasium's `SAME_STEP` autoreset: its last observation and info are `final_obs` and
    `final_info` in the infos). `reset(seed=s)` seeds store i with s + i. The stores share one
    set of columns (store i is row i), so their actions and observations are array operations
    over all of them."""

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(self, num_envs: int, **kwargs: Any) -> None:
        if num_envs < 1:
            raise ValueError("num_envs ≥ 1")
        self.envs = [StoreEnv(**kwargs) for _ in range(num_envs)]
        first = self.envs[0]
        columns = _Columns(num_envs, first.slots, first.rows, first._window_hours)
        for i, env in enumerate(self.envs):
            env._columns, env._row = columns, i
        self.num_envs = num_envs
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        seeds = store_seeds(seed, self.num_envs)
        observations, infos = [], dict[str, Any]()
        for i, (env, one) in enumerate(zip(self.envs, seeds, strict=True)):
            obs, info = env.reset(seed=one, options=options)
            observations.append(obs)
            infos = self._add_info(infos, info, i)
        return np.stack(observations), infos

    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        envs = self.envs
        actions = np.asarray(actions, dtype=np.int64).reshape(self.num_envs, -1)
        if actions.shape[1] != envs[0].slots:
            raise ValueError(f"an action is {envs[0].slots} levels, not {actions.shape[1]}")
        _prepare(envs, actions)
        advance_stores([env._engine for env in envs])
        rewards_fen = _conclude(envs)
        observations, readouts = _observe(envs)
        done = readouts[:, _DONE] > 0  # each store's `Engine.done`
        scale = np.array([env.reward_scale for env in envs])
        rewards = np.array(rewards_fen, dtype=np.float64) / 100 * scale
        final: dict[str, Any] = {}
        ended = np.flatnonzero(done)
        for i in ended.tolist():
            last = {
                "final_obs": observations[i].copy(),
                "final_info": envs[i]._info(rewards_fen[i]),
            }
            final = self._add_info(final, last, i)
            envs[i]._begin(None, None)
            rewards_fen[i] = 0  # the infos are the new episode's
        if len(ended):  # the new episodes' first observations, at once
            observations[ended], readouts[ended] = _observe([envs[i] for i in ended.tolist()])
        infos = _infos(envs, rewards_fen, readouts)
        return observations, rewards, done, np.zeros_like(done), {**infos, **final}


gym.register(id=ENV_ID, entry_point="merchantbench.rl.classic:StoreEnv")

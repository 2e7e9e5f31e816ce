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

docs/rl.md ("Classic RL") has the training script and its held-out results.
"""

from __future__ import annotations

import zlib
from collections import OrderedDict
from dataclasses import dataclass
from functools import cache
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
from merchantbench.scenario import Scenario
from merchantbench.sim.engine import ActionRejected, Engine, advance_stores

__all__ = ["ENV_ID", "GLOBAL", "MARKUPS", "SLOT", "StoreEnv", "StoreVectorEnv"]

ENV_ID = "MerchantBenchStore-v0"
MARKUPS = (1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0)
GLOBAL = 8  # store features
SLOT = 13  # features per candidate slot
_NEVER = 1 << 62


@cache
def _scenario(scenario: str, days: int, start_day: int) -> Scenario:
    return episode_scenario(EpisodeConfig(scenario, length=days, start_day=start_day))


_OPENED: OrderedDict[tuple[str, int, int], bytes] = OrderedDict()


def _opened(scenario: str, days: int, start_day: int, market: Market, seed: int) -> bytes:
    """The engine's state on `start_day` of a new store (the idle windows before simulated
    by the engine), zlib-compressed, kept per process (the 512 most recent): opening an
    episode on that day again restores it instead of simulating the idle days. A store with
    no listing has no order, so its idle days are the same on every market of the scenario
    (the state is keyed without the market; tests/rl/test_classic.py checks the store it opens
    against the `rl.episode` store of another seed)."""
    key = (scenario, days, start_day)
    blob = _OPENED.pop(key, None)
    if blob is None:
        opened = _scenario(scenario, days, start_day)
        engine = Engine(opened, market, seed)
        for _ in range(start_day * 24 // engine.window_hours):
            engine.advance()
        if engine.state.orders or engine.state.ledger.entries:
            raise AssertionError("an idle store had orders")
        blob = zlib.compress(engine.snapshot(), 1)
    _OPENED[key] = blob
    if len(_OPENED) > 512:
        _OPENED.popitem(last=False)
    return blob


@dataclass(frozen=True, eq=False)
class _Candidates:
    """An episode's slots: the products and their facts fixed at reset."""

    products: list[int]
    index: np.ndarray  # int64 product numbers
    cost0: np.ndarray  # float64 procurement price at reset (fen, ≥ 1)
    rating: np.ndarray  # product rating / 5
    shop: np.ndarray  # shop rating / 5
    capacity: np.ndarray  # int64 supplier stock capacity
    refill: np.ndarray  # int64 units refilled an hour

    @classmethod
    def of(cls, engine: Engine, slots: int) -> _Candidates:
        """The `slots` products with the most public 30-day sales among those on sale."""
        market, day = engine.market, engine.t // 24
        sales = market.sales_30d(day).astype(np.float64)
        sales[market.launch_day > day] = -1.0
        top = np.argsort(-sales, kind="stable")[:slots]
        book, t = engine.suppliers, engine.t
        products = [int(p) for p in top]
        cost0 = np.array([max(1, book.state(p, t).price_fen) for p in products], float)
        return cls(
            products,
            np.asarray(top, dtype=np.int64),
            cost0,
            market.historical_avg_rating[top] / 5.0,
            market.shop_rating[market.supplier[top]] / 5.0,
            market.stock_capacity[top].astype(np.int64),
            market.stock_refill[top].astype(np.int64),
        )


_CANDIDATES: OrderedDict[tuple[str, int, int, int, int], _Candidates] = OrderedDict()


def _candidates(key: tuple[str, int, int, int, int], engine: Engine) -> _Candidates:
    """`_Candidates.of` an opened episode, kept per process (the 512 most recent)."""
    found = _CANDIDATES.pop(key, None) or _Candidates.of(engine, key[-1])
    _CANDIDATES[key] = found
    if len(_CANDIDATES) > 512:
        _CANDIDATES.popitem(last=False)
    return found


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
        year = _scenario(scenario, 1, 0).market.days
        if not 1 <= self.days <= year or pool < 1 or slots < 1:
            raise ValueError(f"length is 1 to {year} days, pool ≥ 1 and slots ≥ 1")
        self.last_start = year - self.days
        self.action_space = spaces.MultiDiscrete([1 + len(self.markups)] * slots, seed=0)
        size = GLOBAL + SLOT * slots
        self.observation_space = spaces.Box(-10.0, 10.0, shape=(size,), dtype=np.float32)
        self.engine: Engine | None = None
        self._markets: dict[int, Market] = {}
        self._factors = np.array((0.0, *self.markups))  # level → markup (0: not listed)
        self.index = self.start_day = 0

    # --- episodes --------------------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
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
        market = self._markets.pop(run_seed, None) or get_market(scenario, run_seed)
        self._markets[run_seed] = market  # held (the cache keeps a market while one holds it)
        while len(self._markets) > self.pool + 32:
            del self._markets[next(iter(self._markets))]  # the least recently used
        engine = Engine(scenario, market, run_seed)
        opened = _opened(self.scenario_name, self.days, start, market, run_seed)
        engine.restore(zlib.decompress(opened))
        self.engine = engine
        key = (self.scenario_name, self.days, start, run_seed, self.slots)
        self._open(_candidates(key, engine))
        return self._observe(), self._info(0)

    def _open(self, found: _Candidates) -> None:
        engine, slots = self._engine, self.slots
        self.candidates, self.products = found, found.products
        self._slot_of = {product: slot for slot, product in enumerate(found.products)}
        self._since = np.full(slots, _NEVER, dtype=np.int64)  # supplier facts to look up
        self._until = np.full(slots, -_NEVER, dtype=np.int64)
        self._cost = np.ones(slots, dtype=np.int64)
        self._ship = np.zeros(slots, dtype=np.float64)
        self._available = np.zeros(slots, dtype=np.float64)
        self._orders_seen = np.zeros(slots, dtype=np.int64)
        self._slot_last = np.zeros(slots, dtype=np.int64)
        self._slot_total = np.zeros(slots, dtype=np.int64)
        self._sales_day = -1
        # The per-slot features, kept between steps: each column is written when it changes.
        self._per = np.zeros((slots, SLOT), dtype=np.float64)
        self._per[:, 4], self._per[:, 5] = found.rating, found.shop
        self._per[:, 10] = 1.0  # in stock until bought from
        accounts = engine.state.ledger.accounts
        self.initial_fen = self._net_fen = accounts.net_assets
        self._entries_seen = len(engine.state.ledger.entries)

    # --- steps -----------------------------------------------------------------------------------
    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self._prepare(action)
        self._engine.advance()
        return self._conclude()

    def _prepare(self, action: Any) -> None:
        """Check the action and bring the listings to it (the window is still open)."""
        if self._engine.done:
            raise RuntimeError("the episode is over: call reset()")
        levels = np.asarray(action, dtype=np.int64).reshape(-1)
        if levels.shape != (self.slots,):
            raise ValueError(f"an action is {self.slots} levels, not shape {levels.shape}")
        self._apply(np.clip(levels, 0, len(self.markups)))

    def _conclude(self) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """After the window: drain a finished episode, the reward, the next observation."""
        engine = self._engine
        if engine.done:
            engine.finish()
        now = engine.state.ledger.accounts.net_assets
        reward_fen, self._net_fen = now - self._net_fen, now
        self._split_reward()
        info = self._info(reward_fen)
        return self._observe(), reward_fen / 100 * self.reward_scale, engine.done, False, info

    def _apply(self, levels: np.ndarray) -> None:
        """Bring the listings to the target levels with the engine's own actions: only the
        slots whose target differs from what is listed."""
        engine = self._engine
        self._look_up_suppliers(engine.t)
        targets = np.maximum(1, np.rint(self._cost * self._factors[levels])).astype(np.int64)
        targets[levels == 0] = 0
        listings = engine.state.listings
        for slot in np.flatnonzero(targets != self._listed(listings)[0]).tolist():
            product, price = self.products[slot], int(targets[slot])
            try:
                if price == 0:
                    engine.delist_products([product])
                elif product in listings:
                    engine.set_price(product, price)
                elif self._available[slot]:  # else the engine refuses it (unavailable)
                    engine.list_products([(product, price)])
            except ActionRejected:
                continue  # unavailable product, closed store: the slot stays as it is

    def _listed(self, listings: dict[int, Any]) -> tuple[np.ndarray, np.ndarray]:
        """Per slot: the listing's price (0: not listed) and its orders so far."""
        prices, orders = [0] * self.slots, [0] * self.slots
        slot_of = self._slot_of
        for product, item in listings.items():
            slot = slot_of[product]
            prices[slot], orders[slot] = item.price, item.orders
        return np.array(prices, dtype=np.int64), np.array(orders, dtype=np.int64)

    def _look_up_suppliers(self, hour: int) -> None:
        """The slots' supplier facts at `hour`, looked up again only where they may change."""
        stale = np.flatnonzero((hour < self._since) | (hour >= self._until))
        if not stale.size:
            return
        book = self._engine.suppliers
        for slot in stale.tolist():
            since, until, state = book.state_span(self.products[slot], hour)
            self._since[slot], self._until[slot] = since, until
            self._cost[slot] = max(1, state.price_fen)
            self._ship[slot], self._available[slot] = state.ship_hours, state.available
        per, cost = self._per, self._cost[stale].astype(np.float64)
        per[stale, 2] = np.log1p(cost / 100) / 5.0
        per[stale, 3] = cost / self.candidates.cost0[stale]
        per[stale, 6] = self._ship[stale] / 96.0
        per[stale, 7] = self._available[stale]

    def _split_reward(self) -> None:
        """The window's change in net assets per slot, from the ledger's new entries (each an
        order's, each order a slot's product)."""
        state, slots = self._engine.state, self.slots
        entries, orders, slot_of = state.ledger.entries, state.orders, self._slot_of
        last = [0] * slots
        for entry in entries[self._entries_seen :]:
            last[slot_of[orders[entry.order_id - 1].product]] += entry.d_net
        self._entries_seen = len(entries)
        self._slot_last = np.array(last, dtype=np.int64)
        self._slot_total += self._slot_last

    # --- what the policy sees --------------------------------------------------------------------
    def _observe(self) -> np.ndarray:
        engine, found = self._engine, self.candidates
        state, market = engine.state, engine.market
        accounts, initial = state.ledger.accounts, float(self.initial_fen)
        t, end = engine.t, engine.horizon
        hour = min(t, end - 1)
        store = [
            (end - t) / max(1, end - self.start_day * 24),
            accounts.balance / initial,
            accounts.deposit / initial,
            (accounts.in_transit + accounts.receivable) / initial,
            (accounts.net_assets - self.initial_fen) / initial,
            state.rating.published / 5.0,
            len(state.listings) / self.slots,
            float(state.closed),
        ]
        per = self._per
        if hour // 24 != self._sales_day:  # public 30-day sales change once a day
            self._sales_day = day = hour // 24
            cum, h = market.market_sales_cum, market.history_days + day
            sales = cum[h, found.index] - cum[max(0, h - 30), found.index]
            per[:, 9] = np.log1p(np.maximum(sales, 0)) / 8.0
        self._look_up_suppliers(hour)
        prices, orders = self._listed(state.listings)
        new, self._orders_seen = orders - self._orders_seen, orders
        slot_of, capacity, refill = self._slot_of, found.capacity, found.refill
        for product, (level, since) in state.stock.items():  # products bought from
            slot = slot_of[product]
            units = min(int(capacity[slot]), level + int(refill[slot]) * (hour - since))
            per[slot, 10] = 1.0 if units >= LOW_STOCK_UNITS else 0.5 if units > 0 else 0.0
        per[:, 0] = prices > 0
        per[:, 1] = prices / self._cost / 3.0
        per[:, 8] = np.log1p(np.maximum(new, 0)) / 3.0
        per[:, 11] = self._slot_total / 5000.0  # RMB 50 earned so far → 1
        per[:, 12] = self._slot_last / 1000.0  # RMB 10 in the last window → 1
        obs = np.concatenate([np.array(store), per.ravel()]).astype(np.float32)
        return np.clip(obs, -10.0, 10.0, out=obs)

    def _info(self, reward_fen: int) -> dict[str, Any]:
        engine = self._engine
        return {
            "reward_fen": reward_fen,
            "slot_rewards_fen": self._slot_last,
            "net_assets_change_fen": engine.state.ledger.accounts.net_assets - self.initial_fen,
            "window": (engine.t - self.start_day * 24) // engine.window_hours,
            "index": self.index,
            "start_day": self.start_day,
        }

    @property
    def _engine(self) -> Engine:
        if self.engine is None:
            raise RuntimeError("call reset() first")
        return self.engine


class StoreVectorEnv(gym.vector.VectorEnv[np.ndarray, np.ndarray, np.ndarray]):
    """`num_envs` stores (`StoreEnv`, the same arguments) stepped together on the one engine:
    each step brings every store to its action, then `advance_stores` runs their windows, the
    arrivals of all computed at once. A store whose episode ends is reset in the same step
    (Gymnasium's `SAME_STEP` autoreset: its last observation and info are `final_obs` and
    `final_info` in the infos). `reset(seed=s)` seeds store i with s + i."""

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(self, num_envs: int, **kwargs: Any) -> None:
        if num_envs < 1:
            raise ValueError("num_envs ≥ 1")
        self.envs = [StoreEnv(**kwargs) for _ in range(num_envs)]
        self.num_envs = num_envs
        self.single_observation_space = self.envs[0].observation_space
        self.single_action_space = self.envs[0].action_space
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        if seed is None or isinstance(seed, int):
            seeds = [None if seed is None else seed + i for i in range(self.num_envs)]
        else:
            seeds = list(seed)
        if len(seeds) != self.num_envs:
            raise ValueError(f"{len(seeds)} seeds for {self.num_envs} stores")
        observations, infos = [], dict[str, Any]()
        for i, (env, one) in enumerate(zip(self.envs, seeds, strict=True)):
            obs, info = env.reset(seed=one, options=options)
            observations.append(obs)
            infos = self._add_info(infos, info, i)
        return np.stack(observations), infos

    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        actions = np.asarray(actions, dtype=np.int64).reshape(self.num_envs, -1)
        for env, action in zip(self.envs, actions, strict=True):
            env._prepare(action)
        advance_stores([env._engine for env in self.envs])
        observations, steps = [], []
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        done = np.zeros(self.num_envs, dtype=np.bool_)
        final: dict[str, Any] = {}
        for i, env in enumerate(self.envs):
            obs, rewards[i], done[i], _, info = env._conclude()
            if done[i]:
                final = self._add_info(final, {"final_obs": obs, "final_info": info}, i)
                obs, info = env.reset()
            observations.append(obs)
            steps.append(info)
        return (
            np.stack(observations),
            rewards,
            done,
            np.zeros_like(done),
            {**_stack(steps), **final},
        )


def _stack(infos: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-store infos of the same keys as Gymnasium's vector infos (arrays, with every
    `_key` mask true), built at once."""
    every = np.ones(len(infos), dtype=np.bool_)
    stacked: dict[str, Any] = {}
    for key in infos[0]:
        stacked[key] = np.array([info[key] for info in infos])
        stacked[f"_{key}"] = every
    return stacked


gym.register(id=ENV_ID, entry_point="merchantbench.rl.classic:StoreEnv")

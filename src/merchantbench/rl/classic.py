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
  the last window. Only what the
  store's tools show: no demand parameter, risk or future.
- **reward**: the window's change in net assets, in fen first (`info["reward_fen"]`; an
  episode's sum equals its change in net assets exactly, the last step including the final
  drain), `reward_scale` × RMB as the float reward.
- **reset(seed=s, options={"index": i, "split": ..., "start_day": d})**: episode `i` of the
  split (`splits.episode_seed`); without an index, one of the env's `pool` first indexes is drawn
  from `np_random` (a fixed pool of markets, so a market is built once per process), and without
  a start day, a day drawn so the episode fits the year.

docs/rl.md ("Classic RL") has the training script and its held-out results.
"""

from __future__ import annotations

from functools import cache, lru_cache
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from merchantbench.catalog.cache import get_market
from merchantbench.catalog.market import Market
from merchantbench.catalog.stock_band import STOCK_BANDS, stock_band
from merchantbench.rl.episode import EpisodeConfig, episode_scenario
from merchantbench.rl.splits import episode_seed
from merchantbench.scenario import Scenario
from merchantbench.sim.engine import ActionRejected, Engine
from merchantbench.sim.suppliers import stock_now

__all__ = ["ENV_ID", "GLOBAL", "MARKUPS", "SLOT", "StoreEnv"]

ENV_ID = "MerchantBenchStore-v0"
MARKUPS = (1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0)
GLOBAL = 8  # store features
SLOT = 11  # features per candidate slot


@cache
def _scenario(scenario: str, days: int, start_day: int) -> Scenario:
    return episode_scenario(EpisodeConfig(scenario, length=days, start_day=start_day))


@lru_cache(maxsize=128)
def _opened(scenario: str, days: int, start_day: int, seed: int) -> bytes:
    """The engine's state on `start_day` of a new store (idle windows before), kept per
    process: opening the same episode again restores it instead of simulating the idle days."""
    opened = _scenario(scenario, days, start_day)
    engine = Engine(opened, get_market(opened, seed), seed)
    for _ in range(start_day * 24 // engine.window_hours):
        engine.advance()
    return engine.snapshot()


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
        if not 1 <= self.days <= year or pool < 1:
            raise ValueError(f"length is 1 to {year} days and pool ≥ 1")
        self.last_start = year - self.days
        self.action_space = spaces.MultiDiscrete([1 + len(self.markups)] * slots, seed=0)
        size = GLOBAL + SLOT * slots
        self.observation_space = spaces.Box(-10.0, 10.0, shape=(size,), dtype=np.float32)
        self.engine: Engine | None = None
        self._markets: dict[int, Market] = {}
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
        engine.restore(_opened(self.scenario_name, self.days, start, run_seed))
        self.engine = engine
        self._candidates()
        self.initial_fen = self._net_fen = engine.state.ledger.accounts.net_assets
        return self._observe(), self._info(0)

    def _candidates(self) -> None:
        engine = self._engine
        market, day = engine.market, engine.t // 24
        sales = market.sales_30d(day).astype(np.float64)
        sales[market.launch_day > day] = -1.0
        top = np.argsort(-sales, kind="stable")[: self.slots]
        self.products = [int(p) for p in top]
        self.sales_index = np.asarray(top, dtype=np.int64)
        book, t = engine.suppliers, engine.t
        self.cost0 = np.array([max(1, book.state(p, t).price_fen) for p in self.products], float)
        self.rating = market.historical_avg_rating[top] / 5.0
        self.shop = market.shop_rating[market.supplier[top]] / 5.0
        self.orders_seen = np.zeros(self.slots, dtype=np.int64)

    # --- steps -----------------------------------------------------------------------------------
    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        engine = self._engine
        if engine.done:
            raise RuntimeError("the episode is over: call reset()")
        levels = np.asarray(action, dtype=np.int64).reshape(-1)
        if levels.shape != (self.slots,):
            raise ValueError(f"an action is {self.slots} levels, not shape {levels.shape}")
        self._apply(np.clip(levels, 0, len(self.markups)))
        engine.advance()
        if engine.done:
            engine.finish()
        now = engine.state.ledger.accounts.net_assets
        reward_fen, self._net_fen = now - self._net_fen, now
        info = self._info(reward_fen)
        return self._observe(), reward_fen / 100 * self.reward_scale, engine.done, False, info

    def _apply(self, levels: np.ndarray) -> None:
        """Bring the listings to the target levels with the engine's own actions."""
        engine = self._engine
        listings = engine.state.listings
        for slot, product in enumerate(self.products):
            level = int(levels[slot])
            listing = listings.get(product)
            try:
                if level == 0:
                    if listing is not None:
                        engine.delist_products([product])
                    continue
                cost = self._suppliers[slot].price_fen
                price = max(1, round(cost * self.markups[level - 1]))
                if listing is None:
                    engine.list_products([(product, price)])
                elif listing.price != price:
                    engine.set_price(product, price)
            except ActionRejected:
                continue  # unavailable product, closed store: the slot stays as it is

    # --- what the policy sees --------------------------------------------------------------------
    def _observe(self) -> np.ndarray:
        engine = self._engine
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
        cum, h = market.market_sales_cum, market.history_days + hour // 24
        sales = cum[h, self.sales_index] - cum[max(0, h - 30), self.sales_index]
        book, listings, stock = engine.suppliers, state.listings, state.stock
        self._suppliers = suppliers = [book.state(product, hour) for product in self.products]
        held = [listings.get(product) for product in self.products]
        costs = np.array([max(1, s.price_fen) for s in suppliers], dtype=np.float64)
        prices = np.array([0 if item is None else item.price for item in held], dtype=np.float64)
        orders = np.array([0 if item is None else item.orders for item in held], dtype=np.int64)
        new, self.orders_seen = orders - self.orders_seen, orders
        bands = [
            STOCK_BANDS.index(stock_band(stock_now(market, product, stock, hour)))
            for product in self.products
        ]
        per = np.empty((self.slots, SLOT), dtype=np.float64)
        per[:, 0] = prices > 0
        per[:, 1] = prices / costs / 3.0
        per[:, 2] = np.log1p(costs / 100) / 5.0
        per[:, 3] = costs / self.cost0
        per[:, 4] = self.rating
        per[:, 5] = self.shop
        per[:, 6] = np.array([s.ship_hours for s in suppliers], dtype=np.float64) / 96.0
        per[:, 7] = np.array([s.available for s in suppliers], dtype=np.float64)
        per[:, 8] = np.log1p(np.maximum(new, 0)) / 3.0
        per[:, 9] = np.log1p(np.maximum(sales, 0)) / 8.0
        per[:, 10] = np.array(bands, dtype=np.float64) / 2
        obs = np.concatenate([np.array(store), per.ravel()]).astype(np.float32)
        return np.clip(obs, -10.0, 10.0, out=obs)

    def _info(self, reward_fen: int) -> dict[str, Any]:
        engine = self._engine
        return {
            "reward_fen": reward_fen,
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


gym.register(id=ENV_ID, entry_point="merchantbench.rl.classic:StoreEnv")

"""`oracle`: a PRIVILEGED policy that reads the hidden market. Not an agent of the benchmark.

It is the benchmark's practical ceiling: it knows every product's future demand, reference price,
elasticity, order-outcome risks and supplier events, picks the listings worth most over the next
two weeks, prices each at its true profit-maximising price, and delists a product just before
its supplier delists it or starts shipping late. Its actions still go through `surface.call`,
so it plays by the same rules (cash, listing cap, call limits, fines) as any agent.

The hidden market is never reachable through a session, a tool or any agent-facing interface:
the in-process runner hands it to `act(surface, market=...)` only for agent classes that declare
`privileged = True`, and the oracle refuses to act without it. Its settings say
`"privileged": true`, so every run record marks it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from merchantbench.agents.base import AgentSettings, BaseAgent
from merchantbench.agents.baselines.tables import open_store_hour
from merchantbench.catalog.market import Market, SupplierEvents
from merchantbench.scenario import DemandConfig, FineConfig
from merchantbench.sim.demand import exposure
from merchantbench.surface import AgentSurface

WINDOW_HOURS = 12  # a window of the paper's clock; the oracle looks one window ahead


class PrivilegeError(RuntimeError):
    """The oracle was asked to act without the host's handle on the hidden market."""


class OracleSettings(AgentSettings):
    horizon_days: int = 14  # how far ahead a listing's value is counted
    swaps_per_day: int = 5
    swap_gain: float = 1.25  # a candidate must beat a held listing's value by this factor
    rating_cost: float = 12.0  # RMB charged per unit of rating weight an adverse outcome adds
    promised_ship_hours: int = 48
    capital_days: float = 7.0
    reserve_days: float = 2.0


class OracleAgent(BaseAgent[OracleSettings]):
    name = "oracle"
    Settings = OracleSettings
    privileged = True  # the agent table marks it; its factory hands it the hidden market

    def __init__(self, config: OracleSettings | None = None, *, hidden_market: Market) -> None:
        super().__init__(config)
        self._market: Market | None = hidden_market
        self.holdings: dict[int, int] = {}  # product index → listing hour
        self.planned_day = -1

    def attach_hidden_market(self, market: Market) -> None:
        """Hand the market again to an oracle restored from a checkpoint."""
        self._market = market

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_market"] = None  # never pickled into a checkpoint
        return state

    def act(self, surface: AgentSurface) -> None:
        market = self._market
        if market is None:
            raise PrivilegeError(
                "the oracle reads the hidden market and runs only in-process: build it with "
                "make_agent('oracle', ..., hidden_market=market)"
            )
        snapshot = surface.call("get_store_snapshot", {})
        t = open_store_hour(snapshot)
        if t is not None:
            book = MarketBook(market, t)
            self._avoid_trouble(surface, book)
            if self.planned_day != t // 24:
                self.planned_day = t // 24
                self._plan(surface, book, snapshot)
        surface.call("end_of_step", {})

    def _avoid_trouble(self, surface: AgentSurface, book: MarketBook) -> None:
        """Delist what the supplier is about to delist or ship late in the coming window."""
        soon = book.t + WINDOW_HOURS
        trouble = book.delisted_during(book.t, soon) | book.late_during(
            book.t, soon, self.config.promised_ship_hours
        )
        self._delist(surface, book, sorted(set(self.holdings) & trouble))

    def _plan(self, surface: AgentSurface, book: MarketBook, snapshot: dict[str, Any]) -> None:
        s = self.config
        economics = book.economics(s.rating_cost)
        clear = book.clear_for(s.horizon_days, s.promised_ship_hours)
        fresh = book.future_value(economics, s.horizon_days, ages=None) * clear
        held = np.array(sorted(self.holdings), dtype=np.int64)
        ages = (book.t - np.array([self.holdings[p] for p in held])) / 24
        kept = book.future_value(economics, s.horizon_days, ages=ages, products=held)
        fresh[held] = 0.0  # a held product is worth its kept value, not a fresh listing's
        ranked = [int(p) for p in np.argsort(-fresh)[:200] if fresh[p] > 0]
        weakest = [int(held[k]) for k in np.argsort(kept)[: s.swaps_per_day]]
        swapped = [
            p
            for p, k, best in zip(weakest, np.sort(kept), ranked, strict=False)
            if fresh[best] > s.swap_gain * k
        ]
        self._delist(surface, book, swapped)
        self._reprice(surface, book, economics)
        self._fill(surface, book, economics, ranked, snapshot)

    def _fill(
        self,
        surface: AgentSurface,
        book: MarketBook,
        economics: Economics,
        ranked: list[int],
        snapshot: dict[str, Any],
    ) -> None:
        """List the most valuable products the free slots and the spare capital allow."""
        s = self.config
        spend = book.daily_spend(economics, snapshot["rating_multiplier"])
        committed = sum(spend[p] for p in self.holdings)
        liquid = snapshot["balance"] + snapshot["in_transit"] + snapshot["receivable"]
        budget = min(
            0.9 * liquid - committed * s.capital_days,
            (snapshot["balance"] - committed * s.reserve_days) * s.capital_days / s.reserve_days,
        )
        free = snapshot["listing_cap"] - len(self.holdings)
        items: list[int] = []
        for p in ranked:
            if len(items) >= free or p in self.holdings or economics.unit[p] <= 0:
                continue
            if spend[p] * s.capital_days <= budget:
                budget -= spend[p] * s.capital_days
                items.append(p)
        if items:
            prices = [{"product_id": book.public_id(p), "sale_price": book.price(economics, p)}
                      for p in items]  # fmt: skip
            if surface.call("list_product", {"items": prices}).get("ok"):
                self.holdings.update({p: book.t for p in items})

    def _reprice(self, surface: AgentSurface, book: MarketBook, economics: Economics) -> None:
        for p in sorted(self.holdings):
            args = {"product_id": book.public_id(p), "sale_price": book.price(economics, p)}
            surface.call("adjust_price", args)

    def _delist(self, surface: AgentSurface, book: MarketBook, products: list[int]) -> None:
        if products:
            ids = [book.public_id(p) for p in products]
            surface.call("delist_product", {"product_ids": ids})
            for p in products:
                self.holdings.pop(p)


@dataclass(frozen=True)
class Economics:
    """Per product, at the profit-maximising price: the price and the expected profit per unit
    of demand × exposure (price response, refunds, lost costs, fines and rating harm counted)."""

    price: np.ndarray  # RMB
    unit: np.ndarray  # RMB per unit of D × exposure
    orders: np.ndarray  # orders per unit of D × exposure (the price response)
    cost: np.ndarray  # RMB


class MarketBook:
    """The hidden market at hour `t`, as the oracle reads it (vectorised over all products)."""

    def __init__(self, market: Market, t: int) -> None:
        self.market, self.t, self.day = market, t, t // 24
        self.config = DemandConfig()

    def public_id(self, product: int) -> str:
        return str(self.market.product_ids[product])

    def _active(self, channel: str, start: int, end: int) -> tuple[np.ndarray, np.ndarray]:
        """Products with an event of `channel` overlapping hours [start, end), and its value."""
        ev: SupplierEvents = self.market.events[channel]
        hit = (ev.start < end) & (ev.end > start)
        return ev.product[hit].astype(np.int64), ev.value[hit]

    def delisted_during(self, start: int, end: int) -> set[int]:
        return set(self._active("delisting", start, end)[0].tolist())

    def late_during(self, start: int, end: int, promised: int) -> set[int]:
        products, extra = self._active("delay", start, end)
        day = min(self.day, self.market.days - 1)
        ship = self.market.ship_hours[products] + extra + self.market.ship_extra_hours[day]
        return set(products[ship > promised].tolist())

    def clear_for(self, days: int, promised: int) -> np.ndarray:
        """1 for launched products free of delistings and late shipping for `days`, else 0."""
        end = self.t + 24 * days
        clear = (self.market.launch_day <= self.day).astype(np.float64)
        clear[list(self.delisted_during(self.t, end) | self.late_during(self.t, end, promised))] = 0
        return clear

    def cost_now(self) -> np.ndarray:
        cost = self.market.base_price_fen.astype(np.float64)
        products, factor = self._active("price_change", self.t, self.t + 1)
        cost[products] = np.round(cost[products] * factor)
        return cost / 100

    def economics(self, rating_cost: float) -> Economics:
        m, fines = self.market, FineConfig()
        cancel, ret, refund, bad = (m.risk_cancel, m.risk_return, m.risk_refund_only,
                                    m.risk_bad_review)  # fmt: skip
        cost, p_ref, eps = self.cost_now(), m.p_ref_fen / 100, m.elasticity.astype(np.float64)
        kept = 1 - cancel - ret - refund  # share of orders whose sale price is kept
        charges = ret * fines.return_refund_fen / 100 + bad * fines.bad_review_fen / 100
        harm = rating_cost * (2 * bad + 2 * refund + ret)
        marginal = cost * (1 - cancel - ret) + charges + harm
        price = np.clip(eps * marginal / ((eps - 1) * kept), cost * 1.01, cost * 99)
        price = np.round(price, 2)
        orders = np.minimum((price / p_ref) ** -eps, self.config.price_term_cap)
        return Economics(price, (price * kept - marginal) * orders, orders, cost)

    def price(self, economics: Economics, product: int) -> float:
        return float(economics.price[product])

    def future_value(
        self,
        economics: Economics,
        days: int,
        ages: np.ndarray | None,
        products: np.ndarray | None = None,
    ) -> np.ndarray:
        """Σ over the next `days` of D × exposure × unit profit: for fresh listings of every
        product (`ages` None) or for `products` listed `ages` days ago."""
        m = self.market
        rows = m.demand[m.history_days + self.day : m.history_days + min(self.day + days, m.days)]
        horizon = np.arange(len(rows)) + 0.5
        if ages is None:
            weights = exposure(horizon, self.config)
            return (weights @ rows) * economics.unit
        assert products is not None
        if not len(products):
            return np.zeros(0)
        weights = exposure(ages[:, None] + horizon[None, :], self.config)
        return (weights * rows[:, products].T).sum(axis=1) * economics.unit[products]

    def daily_spend(self, economics: Economics, rating_multiplier: float) -> np.ndarray:
        """Procurement money an average listing of each product needs per day."""
        demand = self.market.demand_row(min(self.day, self.market.days - 1))
        return demand * 0.6 * rating_multiplier * economics.orders * economics.cost

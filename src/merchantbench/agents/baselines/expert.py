"""`expert`: a strong heuristic operator modelled on the paper's human operators.

It sees only what any agent sees: every read and every action is a `surface.call` of one of the
26 tools. In the first window of each day it

- watches every order outcome (per-product sales statistics) and replaces a listing whose
  refunds and bad reviews show a high risk by a same-keyword substitute, and avoids its shop;
- sources by evidence: the daily report's hot and rising keywords and a browse of the best
  sellers of each price band, valued by market sales (`sales_30d`, through a demand curve it
  fits to its own orders), the keyword's week-over-week trend, the unit margin in RMB and the
  public trust signals, whose link to bad outcomes it learns from its own orders;
- swaps weak listings for clearly better candidates as seasons, festivals and trends move
  demand, and relists listings whose exposure has faded with age;
- sizes the portfolio to its cash: the money its listings lock in the order pipeline stays
  within its liquid assets and the balance keeps a reserve, so procurement does not fail, and
  its procurement price range widens as cash grows.

In the second window it runs a price experiment: every listing alternates daily between two
prices ±8 % around its category's markup, and the ratio of orders between the arms estimates the
price elasticity ε (`ElasticityTrial`); the markup ε / (ε − 1) is the profit-maximising one.
In every window it delists at once on a supplier delisting (substituting a same-keyword
product), reprices on a supplier price change, and raises the price while the supplier ships
past the 48-hour promise (fewer late orders for little profit: the profit curve is flat near
its peak).

`ExpertSettings` also holds the switches of the calibration ablations (docs/calibration.md),
each of which reverts one decision to the rule-based operator's way.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from merchantbench.agents.base import AgentSettings, BaseAgent
from merchantbench.agents.baselines.tables import rows_of
from merchantbench.surface import AgentSurface

_CLOCK = re.compile(r"Day (\d+) ")
PRICE_BANDS = (0.0, 30.0, 80.0, 200.0)  # lower procurement-price bounds of the daily browses
OUTCOMES = ("settled", "bad_review", "return_refund", "returnless_refund", "cancelled")
Candidate = tuple[float, dict[str, Any], str]  # value per exposure-day, product row, keyword


class ExpertSettings(AgentSettings):
    min_rating: float = 4.3
    min_supplier_rating: float = 4.2
    max_ship_hours: int = 36  # leaves room for a delay before the 48-hour promise
    min_stock: str = "in_stock"  # the site shows availability bands, not units
    min_sales_30d: int = 20  # less market evidence than this is noise
    promised_ship_hours: int = 48  # orders shipped later are late (fined, rated lower)
    delay_markup: float = 1.6  # price factor while the supplier ships late
    rotate_days: int = 70  # exposure has faded enough that relisting pays
    capital_days: float = 7.0  # days an order's money spends in the pipeline
    reserve_days: float = 2.0  # days of procurement the balance must cover
    swaps_per_day: int = 2
    swap_gain: float = 1.4  # a candidate must beat the weakest listing by this factor
    keywords_per_day: int = 8
    # Ablation switches (the rule-based operator's way when set).
    fixed_markup: float | None = None  # price at this multiple of cost; no price experiment
    max_cost: float | None = None  # never buy dearer than this, whatever the cash
    watch_outcomes: bool = True  # replace listings whose orders go wrong
    delist_on_delay: bool = False  # replace late-shipping listings instead of repricing
    rank_by_sales: bool = False  # value candidates by sales_30d alone


def exposure_belief(age_days: int) -> float:
    """What the brief says of exposure: it builds up over about 14 days, then slowly fades."""
    if age_days < 14:
        return 0.2 + 0.8 * age_days / 14
    return max(0.1, math.exp(-0.009 * (age_days - 14)))


def trust_score(rating: float, supplier_rating: float) -> float:
    """One public trust reading: the product's rating, helped a little by its shop's."""
    return round(rating + 0.5 * (supplier_rating - 4.5), 1)


@dataclass
class Holding:
    """One of the store's listings as the expert keeps track of it."""

    product_id: str
    keyword: str
    category: str
    supplier_id: str
    cost: float
    sales_30d: int
    trust: float
    listed_day: int
    arm: int  # price-experiment arm: 1 high, 0 low
    delayed: bool = False  # the supplier now ships after the promised hours
    orders: int = 0  # orders seen so far (review_my_listings)
    exposure_days: float = 0.0  # Σ believed exposure × rating multiplier over days listed


@dataclass
class ElasticityTrial:
    """The daily two-price experiment. Orders on the low and high arms of a category give
    ε = ln(low / high) / ln(high price / low price), shrunk towards the all-category estimate,
    itself shrunk towards a prior; the markup on cost is then ε / (ε − 1)."""

    dither: float = 0.08
    prior_elasticity: float = 3.0
    prior_orders: float = 500.0
    orders: dict[str, list[int]] = field(default_factory=dict)  # category → [low, high]

    def record(self, category: str, arm: int, count: int) -> None:
        self.orders.setdefault(category, [0, 0])[arm] += count

    def arm_factor(self, arm: int) -> float:
        return 1 + self.dither if arm else 1 - self.dither

    def _estimate(self, low: float, high: float, prior: float) -> float:
        ratio = self.arm_factor(1) / self.arm_factor(0)
        pseudo_low, pseudo_high = self.prior_orders * ratio**prior, self.prior_orders
        found = math.log((low + pseudo_low) / (high + pseudo_high)) / math.log(ratio)
        return min(max(found, 2.0), 6.0)

    def markups(self, correction: float) -> dict[str, float]:
        """Markup on cost per category (and "" for a category without orders yet)."""
        low = sum(arms[0] for arms in self.orders.values())
        high = sum(arms[1] for arms in self.orders.values())
        overall = self._estimate(low, high, self.prior_elasticity)
        found = {c: self._estimate(lo, hi, overall) for c, (lo, hi) in self.orders.items()}
        found[""] = overall
        return {c: min(max(e / (e - 1) * correction, 1.15), 2.5) for c, e in found.items()}


@dataclass
class DemandCurve:
    """Own orders per exposure-day ≈ scale · x / (1 + x / saturation), x = sales_30d / 30: the
    store's share of a best seller's market sales shrinks (many stores compete for it).
    Fitted by Poisson likelihood to the store's own listings."""

    scale: float = 0.05
    saturation: float = 40.0
    history: list[tuple[float, int, float]] = field(default_factory=list)

    def rate(self, sales_30d: int) -> float:
        x = max(sales_30d, 1) / 30
        return self.scale * x / (1 + x / self.saturation)

    def remember(self, held: Holding) -> None:
        if held.exposure_days >= 2:
            self.history.append((held.sales_30d / 30, held.orders, held.exposure_days))
            del self.history[:-400]  # the market moves: keep the recent listings

    def fit(self, current: list[Holding]) -> None:
        samples = self.history + [
            (h.sales_30d / 30, h.orders, h.exposure_days) for h in current if h.exposure_days >= 2
        ]
        if sum(n for _, n, _ in samples) < 30:
            return
        x, n, e = (np.array(column, dtype=np.float64) for column in zip(*samples, strict=True))
        best = -np.inf
        for saturation in np.geomspace(2.0, 2000.0, 41):
            shape = x / (1 + x / saturation)
            scale = n.sum() / (e * shape).sum()
            prior = 0.5 * math.log(saturation / 40.0) ** 2  # a weak pull towards the start
            fit = float((n * np.log(scale * shape)).sum()) - n.sum() - prior
            if fit > best:
                best, self.scale, self.saturation = fit, float(scale), float(saturation)


@dataclass
class RiskBook:
    """Refunds and bad reviews on the store's own orders: per product, per public trust level
    (0.1 steps), and the shares of orders whose price or cost is lost."""

    prior_risk: float = 0.08
    prior_weight: float = 8.0
    limit: float = 0.2
    outcomes: dict[str, tuple[int, ...]] = field(default_factory=dict)  # product → OUTCOMES
    trust_of: dict[str, float] = field(default_factory=dict)
    by_trust: dict[float, tuple[int, int]] = field(default_factory=dict)  # → adverse, resolved
    correction: float = 1.0

    def observe(self, stats: list[dict[str, Any]]) -> None:
        """Take the latest 30-day outcome counts per product, then re-tally."""
        for row in stats:
            self.outcomes[row["product_id"]] = tuple(row[k] for k in OUTCOMES)
        tally: dict[float, list[int]] = {}
        for pid, counts in self.outcomes.items():
            adverse = counts[1] + counts[2] + counts[3]
            level = tally.setdefault(self.trust_of.get(pid, 4.5), [0, 0])
            level[0], level[1] = level[0] + adverse, level[1] + adverse + counts[0]
        self.by_trust = {t: (a, r) for t, (a, r) in tally.items()}
        c = np.sum(list(self.outcomes.values()) or [(0,) * 5], axis=0) + (20, 0, 0, 0, 0)
        # Revenue is lost on refunds, cost only on returnless ones: the optimal markup rises by
        # (share of orders paying the cost) / (share paying the price).
        self.correction = min(max(float((c[0] + c[1] + c[3]) / (c[0] + c[1])), 1.0), 1.15)

    def risk_of_trust(self, trust: float) -> float:
        near = [v for t, v in self.by_trust.items() if abs(t - trust) < 0.15]
        adverse, resolved = sum(a for a, _ in near), sum(r for _, r in near)
        return (adverse + self.prior_weight * self.prior_risk) / (resolved + self.prior_weight)

    def risk_of(self, product_id: str) -> float:
        counts = self.outcomes.get(product_id, (0,) * 5)
        adverse = counts[1] + counts[2] + counts[3]
        prior = self.risk_of_trust(self.trust_of.get(product_id, 4.5))
        return (adverse + self.prior_weight * prior) / (adverse + counts[0] + self.prior_weight)

    def too_risky(self, product_id: str) -> bool:
        counts = self.outcomes.get(product_id, (0,) * 5)
        return counts[1] + counts[2] + counts[3] >= 2 and self.risk_of(product_id) > self.limit


class ExpertAgent(BaseAgent[ExpertSettings]):
    """The expert (settings: `ExpertSettings`, including the ablation switches)."""

    name = "expert"
    Settings = ExpertSettings

    def __init__(self, config: ExpertSettings | None = None) -> None:
        super().__init__(config)
        self.holdings: dict[str, Holding] = {}
        self.banned: set[str] = set()  # risky products, never listed again
        self.bad_suppliers: set[str] = set()  # shops of risky products
        self.keywords: set[str] = set()  # product-type keywords seen in reports
        self.trends: dict[str, float] = {}  # keyword → demand trend factor
        self.trial = ElasticityTrial()
        self.curve = DemandCurve()
        self.risks = RiskBook()
        self.markup: dict[str, float] = {}  # category → current markup
        self.day = 0
        self.sourced_day = -1
        self.priced_day = -1

    def act(self, surface: AgentSurface) -> None:
        snapshot = surface.call("get_store_snapshot", {})
        if snapshot.get("ok") and snapshot["store"] == "open":
            clock = _CLOCK.match(snapshot["at"])
            self.day = int(clock.group(1)) - 1 if clock else self.day
            self._update_markups()
            self._handle_anomalies(surface, snapshot)
            self._guard_cash(surface, snapshot)
            if self.sourced_day != self.day:
                self.sourced_day = self.day
                self._daily(surface, snapshot)
            elif self.priced_day != self.day:
                self.priced_day = self.day
                self._price_trial(surface, snapshot)
        surface.call("end_of_step", {})

    # --- every window: supplier events and cash ---------------------------------------------
    def _handle_anomalies(self, surface: AgentSurface, snapshot: dict[str, Any]) -> None:
        gone: list[str] = []
        for a in rows_of(surface.call("query_supply_chain_anomalies", {"scope": "new"})):
            held = self.holdings.get(a["product_id"])
            if held is None or held.product_id in gone:
                continue
            kind, late = a["anomaly"], a["ship_hours"] > self.config.promised_ship_hours
            if kind == "supplier_delisted" or (late and self.config.delist_on_delay):
                gone.append(held.product_id)  # every order would be a fined stockout or late
                continue
            if kind in ("price_changed", "price_restored"):
                held.cost = a["procurement_price"]
            elif kind in ("shipment_delayed", "delay_over"):
                held.delayed = late
            self._set_price(surface, held)
        self._replace(surface, snapshot, gone, ban=False)

    def _guard_cash(self, surface: AgentSurface, snapshot: dict[str, Any]) -> None:
        """Delist the hungriest listings if the balance could not pay a day of procurement."""
        by_spend = sorted(self.holdings.values(), key=self._daily_spend, reverse=True)
        spend = sum(self._daily_spend(h) for h in by_spend)
        hungry = []
        for held in by_spend:
            if snapshot["balance"] >= spend:
                break
            hungry.append(held.product_id)
            spend -= self._daily_spend(held)
        self._delist(surface, hungry, ban=False)

    # --- first window of a day: outcomes, rotation, sourcing ---------------------------------
    def _daily(self, surface: AgentSurface, snapshot: dict[str, Any]) -> None:
        self._read_report(surface)
        self.risks.observe(self._sales_stats(surface))
        if self.config.watch_outcomes:
            risky = [pid for pid in self.holdings if self.risks.too_risky(pid)]
            self.bad_suppliers.update(self.holdings[pid].supplier_id for pid in risky)
            self._replace(surface, snapshot, risky, ban=True)
        self.curve.fit(list(self.holdings.values()))
        faded = [
            h for h in self.holdings.values() if self.day - h.listed_day >= self.config.rotate_days
        ][: self.config.swaps_per_day]
        self._delist(surface, [h.product_id for h in faded], ban=False)
        self._list(surface, [(0.0, self._row_of(h), h.keyword) for h in faded])
        candidates = self._candidates(surface, self._search_keywords(), snapshot)
        self._swap_weak(surface, snapshot, candidates)
        self._fill(surface, snapshot, candidates)

    def _read_report(self, surface: AgentSurface) -> None:
        report = surface.call("get_daily_report", {})
        if report.get("ok"):
            self.trends = {}
            for entry in report["rising_keywords"] + report["hot_keywords"]:
                change = entry["week_over_week_pct"]
                factor = 1.0 if change is None else min(max(1 + change / 100, 0.6), 1.6)
                self.trends.setdefault(entry["keyword"], factor)
                self.keywords.add(entry["keyword"])

    def _search_keywords(self) -> list[str]:
        rising = sorted(self.trends, key=lambda k: -self.trends[k])
        return rising[: self.config.keywords_per_day]

    def _sales_stats(self, surface: AgentSurface) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        for page in (1, 2, 3):
            result = surface.call("query_product_sales_stats", {"days": 30, "page": page})
            rows += rows_of(result)
            if not result.get("ok") or page >= result["pages"]:
                break
        return rows

    def _swap_weak(
        self, surface: AgentSurface, snapshot: dict[str, Any], candidates: list[Candidate]
    ) -> None:
        """Trade the weakest proven listings for candidates worth clearly more (as cash grows,
        early cheap listings give way to dearer ones)."""
        s = self.config
        proven = [h for h in self.holdings.values() if self.day - h.listed_day >= 14]
        proven.sort(key=self._held_value)
        budget = self._spare_capital(snapshot)
        for held in proven[: s.swaps_per_day]:
            if not candidates or candidates[0][0] < s.swap_gain * self._held_value(held):
                return
            extra = self._candidate_spend(candidates[0]) - self._daily_spend(held)
            if extra * s.capital_days > budget:
                return
            budget -= max(extra, 0.0) * s.capital_days
            self._delist(surface, [held.product_id], ban=False)
            self._list(surface, [candidates.pop(0)])

    def _fill(self, surface: AgentSurface, snapshot: dict[str, Any], pool: list[Candidate]) -> None:
        """List the best candidates the free slots and the spare capital allow."""
        free = snapshot["listing_cap"] - len(self.holdings)
        budget = self._spare_capital(snapshot)
        chosen: list[Candidate] = []
        for candidate in pool:
            need = self._candidate_spend(candidate) * self.config.capital_days
            if len(chosen) >= free:
                break
            if need <= budget:
                chosen.append(candidate)
                budget -= need
        self._list(surface, chosen)

    def _replace(
        self, surface: AgentSurface, snapshot: dict[str, Any], product_ids: list[str], ban: bool
    ) -> None:
        """Delist listings (banning risky ones for good), then list same-keyword substitutes."""
        if not product_ids:
            return
        keywords = sorted({self.holdings[pid].keyword for pid in product_ids})
        self._delist(surface, product_ids, ban=ban)
        free = min(len(product_ids), snapshot["listing_cap"] - len(self.holdings))
        pool = self._candidates(surface, keywords, snapshot, browse=False)
        self._fill(surface, {**snapshot, "listing_cap": len(self.holdings) + free}, pool)

    # --- second window of a day: the price experiment ----------------------------------------
    def _price_trial(self, surface: AgentSurface, snapshot: dict[str, Any]) -> None:
        """Credit the last day's orders to each listing's arm, then flip every arm."""
        reviewed = []
        for row in rows_of(surface.call("review_my_listings", {})):
            held = self.holdings.get(row["product_id"])
            if held is None:
                continue
            if self.day > held.listed_day:
                self.trial.record(held.category, held.arm, row["orders"] - held.orders)
            held.orders = row["orders"]
            age = self.day - held.listed_day
            held.exposure_days += exposure_belief(age) * snapshot["rating_multiplier"]
            reviewed.append(held)
        if self.config.fixed_markup is None:
            self._update_markups()  # with today's evidence
            for held in reviewed:
                held.arm = 1 - held.arm
                self._set_price(surface, held)

    # --- candidates and their value ----------------------------------------------------------
    def _candidates(
        self,
        surface: AgentSurface,
        keywords: list[str],
        snapshot: dict[str, Any],
        browse: bool = True,
    ) -> list[Candidate]:
        s = self.config
        cap = max(15.0, self._liquid(snapshot) / 40)
        filters: dict[str, Any] = {
            "min_supplier_rating": s.min_supplier_rating, "min_product_rating": s.min_rating,
            "max_ship_hours": s.max_ship_hours, "min_stock": s.min_stock, "sort": "sales_30d",
            "max_price": round(min(cap, s.max_cost or cap), 2),
        }  # fmt: skip
        searches = [(k, {"query": k, "page_size": 30}) for k in keywords]
        for low in PRICE_BANDS if browse else ():  # the best sellers of each affordable band
            if low < filters["max_price"]:
                searches.append(("", {"query": "", "min_price": low, "page_size": 50}))
        found: dict[str, tuple[dict[str, Any], str]] = {}
        for keyword, args in searches:
            for row in rows_of(surface.call("search_products", {**filters, **args})):
                found.setdefault(row["product_id"], (row, keyword or self._keyword_of(row)))
        ranked = [
            (self._candidate_value(row, keyword), row, keyword)
            for row, keyword in found.values()
            if self._eligible(row)
        ]
        ranked.sort(key=lambda c: -c[0])
        return [c for c in ranked if c[0] > 0]

    def _eligible(self, row: dict[str, Any]) -> bool:
        return (
            row["product_id"] not in self.holdings
            and row["product_id"] not in self.banned
            and row["supplier_id"] not in self.bad_suppliers
            and row["sales_30d"] >= self.config.min_sales_30d
        )

    def _keyword_of(self, row: dict[str, Any]) -> str:
        """The longest report keyword in the title (a product type), else its last noun."""
        known = {k.lower(): k for k in self.keywords}
        words = row["title"].split(" for ")[0].split()
        for n in (4, 3, 2, 1):
            for k in range(len(words) - n, -1, -1):
                gram = " ".join(words[k : k + n]).lower()
                if gram in known:
                    return known[gram]
        return words[-1]

    def _update_markups(self) -> None:
        if self.config.fixed_markup is not None:
            self.markup = {"": self.config.fixed_markup}
        else:
            self.markup = self.trial.markups(self.risks.correction)

    def _markup_of(self, category: str) -> float:
        return self.markup.get(category, self.markup[""])

    def _unit_profit(self, cost: float, category: str, risk: float) -> float:
        """Margin per order at the current markup, less what refunds and fines take."""
        markup = self._markup_of(category)
        return cost * (markup - 1) - risk * (markup * cost + 6.0)

    def _candidate_value(self, row: dict[str, Any], keyword: str) -> float:
        if self.config.rank_by_sales:
            return float(row["sales_30d"])
        rate = self.curve.rate(row["sales_30d"]) * self.trends.get(keyword, 1.0)
        risk = self.risks.risk_of_trust(trust_score(row["rating"], row["supplier_rating"]))
        if not self.config.watch_outcomes:
            risk = self.risks.prior_risk
        return rate * self._unit_profit(row["price"], row["category"], risk)

    def _held_rate(self, held: Holding) -> float:
        """Orders per exposure-day: its own record, shrunk towards the demand curve."""
        return (held.orders + 3 * self.curve.rate(held.sales_30d)) / (held.exposure_days + 3)

    def _held_value(self, held: Holding) -> float:
        risk = self.risks.risk_of(held.product_id)
        return self._held_rate(held) * self._unit_profit(held.cost, held.category, risk)

    # --- cash ----------------------------------------------------------------------------------
    @staticmethod
    def _liquid(snapshot: dict[str, Any]) -> float:
        return snapshot["balance"] + snapshot["in_transit"] + snapshot["receivable"]

    def _daily_spend(self, held: Holding) -> float:
        """Procurement a listing needs per day over the coming days of its exposure ramp."""
        soon = exposure_belief(self.day - held.listed_day + 3)
        return self._held_rate(held) * soon * held.cost

    def _candidate_spend(self, candidate: Candidate) -> float:
        rate = self.curve.rate(candidate[1]["sales_30d"]) * exposure_belief(3)
        return rate * candidate[1]["price"]

    def _spare_capital(self, snapshot: dict[str, Any]) -> float:
        """Liquid money the listings' order pipeline does not need yet, keeping the reserve."""
        s = self.config
        committed = sum(self._daily_spend(h) for h in self.holdings.values())
        room = 0.9 * self._liquid(snapshot) - committed * s.capital_days
        reserve = snapshot["balance"] - committed * s.reserve_days
        return max(min(room, reserve * s.capital_days / s.reserve_days), 0.0)

    # --- actions -------------------------------------------------------------------------------
    def _price_of(self, held: Holding) -> float:
        late = self.config.delay_markup if held.delayed else 1.0
        arm = 1.0 if self.config.fixed_markup else self.trial.arm_factor(held.arm)
        return round(held.cost * self._markup_of(held.category) * late * arm, 2)

    def _set_price(self, surface: AgentSurface, held: Holding) -> None:
        args = {"product_id": held.product_id, "sale_price": self._price_of(held)}
        surface.call("adjust_price", args)

    def _row_of(self, held: Holding) -> dict[str, Any]:
        return {
            "product_id": held.product_id, "category": held.category, "price": held.cost,
            "supplier_id": held.supplier_id, "sales_30d": held.sales_30d, "trust": held.trust,
        }  # fmt: skip

    def _list(self, surface: AgentSurface, chosen: list[Candidate]) -> None:
        new = []
        for _, row, keyword in chosen:
            trust = row.get("trust") or trust_score(row["rating"], row["supplier_rating"])
            held = Holding(
                row["product_id"], keyword, row["category"], row["supplier_id"], row["price"],
                row["sales_30d"], trust, self.day, arm=len(self.holdings) % 2,
            )  # fmt: skip
            self.holdings[held.product_id] = held
            self.risks.trust_of[held.product_id] = trust
            new.append(held)
        items = [{"product_id": h.product_id, "sale_price": self._price_of(h)} for h in new]
        if new and not surface.call("list_product", {"items": items}).get("ok"):
            for held in new:  # all or nothing: nothing was listed
                del self.holdings[held.product_id]

    def _delist(self, surface: AgentSurface, product_ids: list[str], ban: bool) -> None:
        if product_ids:
            surface.call("delist_product", {"product_ids": product_ids})
            for pid in product_ids:
                self.curve.remember(self.holdings.pop(pid))
                if ban:
                    self.banned.add(pid)

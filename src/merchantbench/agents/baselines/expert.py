"""`expert`: a strong heuristic operator modelled on the paper's human operators.

It sees only what any agent sees: every read and every action is a `surface.call` of one of the
store tools. In the first window of each day it

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

from typing import Any

from merchantbench.agents.base import AgentSettings, BaseAgent
from merchantbench.agents.baselines.expert_holdings import (
    Candidate,
    Holding,
    exposure_belief,
    trust_score,
)
from merchantbench.agents.baselines.expert_learning import DemandCurve, ElasticityTrial, RiskBook
from merchantbench.agents.baselines.expert_valuation import ExpertValuation
from merchantbench.agents.baselines.tables import open_store_hour, rows_of
from merchantbench.surface import AgentSurface
from merchantbench.tools.context import parse_clock_text

__all__ = [
    "DemandCurve", "ElasticityTrial", "ExpertAgent", "ExpertSettings", "Holding", "RiskBook",
]  # fmt: skip

PRICE_BANDS = (0.0, 30.0, 80.0, 200.0)  # lower procurement-price bounds of the daily browses


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


class ExpertAgent(ExpertValuation, BaseAgent[ExpertSettings]):
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
        self.taken_over = False

    def take_over(self, surface: AgentSurface) -> None:
        """Adopt the listings of a store built by another (a fork): each becomes a holding,
        believed to sell like the least evidence the expert lists on (`min_sales_30d`) until
        its own orders say otherwise. An empty store costs no call."""
        if self.taken_over:
            return
        self.taken_over = True
        if surface.status().active_listings == 0:
            return
        for row in rows_of(surface.call("query_my_listings", {"page_size": 50})):
            detail = surface.call("get_product_detail", {"product_id": row["product_id"]})
            if not detail.get("ok"):
                continue
            listed = parse_clock_text(row["listed_at"])
            supplier = detail["supplier"]
            held = Holding(
                row["product_id"], self._keyword_of(detail), detail["category"],
                supplier["supplier_id"], detail["price"], self.config.min_sales_30d,
                trust_score(detail["rating"], supplier["shop_rating"]),
                0 if listed is None else listed // 24, arm=len(self.holdings) % 2,
                orders=row["orders"],
            )  # fmt: skip
            self.holdings[held.product_id] = held
            self.risks.trust_of[held.product_id] = held.trust

    def act(self, surface: AgentSurface) -> None:
        snapshot = surface.call("get_store_snapshot", {})
        t = open_store_hour(snapshot)
        if t is not None:
            self.day = t // 24
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

    # --- actions -------------------------------------------------------------------------------
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

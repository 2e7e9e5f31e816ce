"""`rule-based`: the paper's rule-based operator, acting only through the tools.

Every window it checks its cash and the supply-chain anomalies of its listings: it delists a
listing whose supplier has delisted the product or now ships later than the 48-hour promise,
and resets the price to 2× the supplier price after a supplier price change. Once a day it
delists listings with 7 days without sales and refills empty slots from the daily report's
keywords, taking only products with cost ≤ 20 RMB, supplier and product rating ≥ 4.5, ship ≤ 48 h
and stock shown `in_stock`, priced at 2× cost. If cash falls below 500 RMB it delists everything.
"""

from __future__ import annotations

from typing import Any

from merchantbench.agents.base import AgentSettings, BaseAgent
from merchantbench.agents.baselines.tables import columns_of
from merchantbench.surface import AgentSurface


class RuleBasedSettings(AgentSettings):
    markup: float = 2.0
    max_cost: float = 20.0
    min_rating: float = 4.5
    max_ship_hours: int = 48
    min_stock: str = "in_stock"  # the site shows availability bands, not units
    cash_floor: float = 500.0
    no_sales_days: int = 7
    keywords_per_day: int = 6


class RuleBasedAgent(BaseAgent[RuleBasedSettings]):
    name = "rule-based"
    Settings = RuleBasedSettings

    def __init__(self, config: RuleBasedSettings | None = None) -> None:
        super().__init__(config)
        self.dropped: set[str] = set()  # products it delisted; never relisted

    def act(self, surface: AgentSurface) -> None:
        balance = surface.call("query_balance", {})
        if balance.get("ok") and balance["balance"] < self.config.cash_floor:
            self._delist_all(surface)
        else:
            self._handle_anomalies(surface)
            if surface.window % 2 == 0:  # the first window of each day
                self._daily(surface)
        surface.call("end_of_step", {})

    def _price(self, cost: float) -> float:
        return round(cost * self.config.markup, 2)

    def _delist(self, surface: AgentSurface, product_ids: list[str]) -> None:
        if product_ids:
            surface.call("delist_product", {"product_ids": sorted(set(product_ids))})
            self.dropped.update(product_ids)

    def _delist_all(self, surface: AgentSurface) -> None:
        listed = columns_of(surface.call("query_my_listings", {}), "product_id")
        self._delist(surface, [pid for (pid,) in listed])

    def _handle_anomalies(self, surface: AgentSurface) -> None:
        found = surface.call("query_supply_chain_anomalies", {"scope": "new"})
        anomalies = columns_of(found, "product_id", "anomaly", "ship_hours", "procurement_price")
        doomed = [
            pid
            for pid, anomaly, ship_hours, _ in anomalies
            if anomaly == "supplier_delisted"
            or (anomaly == "shipment_delayed" and ship_hours > self.config.max_ship_hours)
        ]
        self._delist(surface, doomed)
        for pid, anomaly, _, procurement_price in anomalies:
            if anomaly in ("price_changed", "price_restored") and pid not in doomed:
                price = self._price(procurement_price)
                surface.call("adjust_price", {"product_id": pid, "sale_price": price})

    def _daily(self, surface: AgentSurface) -> None:
        review = surface.call("review_my_listings", {})
        listed = columns_of(review, "product_id", "alerts")
        stale = [pid for pid, alerts in listed if "no_sales_7d" in alerts]
        self._delist(surface, stale)
        free = (
            review["listing_cap"] - review["active_listings"] + len(stale)
            if review.get("ok")
            else 0
        )
        if free > 0:
            self._refill(surface, free, {pid for pid, _ in listed})

    def _refill(self, surface: AgentSurface, free: int, listed: set[str]) -> None:
        report = surface.call("get_daily_report", {})
        keywords = [k["keyword"] for k in report.get("hot_keywords", [])]
        chosen: list[dict[str, Any]] = []
        for keyword in keywords[: self.config.keywords_per_day]:
            for pid, cost in self._candidates(surface, keyword):
                if pid in listed or pid in self.dropped or len(chosen) >= free:
                    continue
                chosen.append({"product_id": pid, "sale_price": self._price(cost)})
                listed.add(pid)
            if len(chosen) >= free:
                break
        if chosen:
            surface.call("list_product", {"items": chosen})

    def _candidates(self, surface: AgentSurface, keyword: str) -> list[tuple[Any, ...]]:
        """(product_id, price) of the products of a keyword that pass the rules."""
        s = self.config
        found = surface.call(
            "search_products",
            {
                "query": keyword,
                "max_price": s.max_cost,
                "min_supplier_rating": s.min_rating,
                "min_product_rating": s.min_rating,
                "max_ship_hours": s.max_ship_hours,
                "min_stock": s.min_stock,
                "sort": "sales_30d",
                "page_size": 20,
            },
        )
        return columns_of(found, "product_id", "price")

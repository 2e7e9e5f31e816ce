"""What the expert's beliefs make of a listing or a candidate: whether a candidate is eligible
and which keyword it answers, its value per exposure-day, the capital its orders lock in the
pipeline, and its price. A mixin of `ExpertAgent` that reads the agent's beliefs and never calls
a tool."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from merchantbench.agents.baselines.expert_holdings import (
    Candidate,
    Holding,
    exposure_belief,
    trust_score,
)
from merchantbench.agents.baselines.expert_learning import DemandCurve, ElasticityTrial, RiskBook

if TYPE_CHECKING:
    from merchantbench.agents.baselines.expert import ExpertSettings


class ExpertValuation:
    """The expert's arithmetic on its beliefs; the attributes are `ExpertAgent`'s fields."""

    config: ExpertSettings
    holdings: dict[str, Holding]
    trends: dict[str, float]
    trial: ElasticityTrial
    curve: DemandCurve
    risks: RiskBook
    markup: dict[str, float]
    day: int
    banned: set[str]
    bad_suppliers: set[str]
    keywords: set[str]

    # --- candidates ----------------------------------------------------------------------------
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

    # --- prices ------------------------------------------------------------------------------
    def _price_of(self, held: Holding) -> float:
        late = self.config.delay_markup if held.delayed else 1.0
        arm = 1.0 if self.config.fixed_markup else self.trial.arm_factor(held.arm)
        return round(held.cost * self._markup_of(held.category) * late * arm, 2)

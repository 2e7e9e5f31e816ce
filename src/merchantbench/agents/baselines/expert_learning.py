"""What the expert learns from its own orders: the price elasticity of each category (a daily
two-price experiment), the demand curve linking market sales to its own orders, and the risk
of refunds and bad reviews by product and by public trust level."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from merchantbench.agents.baselines.expert_holdings import Holding

OUTCOMES = ("settled", "bad_review", "return_refund", "returnless_refund", "cancelled")


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

"""The store rating (docs/design.md §6): a decayed, prior-weighted average of rated order outcomes,
published once a day for the next day, with stars and a demand multiplier.

    R_d = (α R0 + Σ_j γ^(d−1−d_j) v_j u_j) / (α + Σ_j γ^(d−1−d_j) v_j)

Instead of re-summing every outcome each day, two running sums are decayed by γ at each publish
and today's evidence is added undecayed: the result is the formula above exactly (up to float
rounding of the running sums).
"""

from __future__ import annotations

from dataclasses import dataclass

from merchantbench.scenario import RatingConfig


def stars_for(rating: float, config: RatingConfig) -> int:
    """1–5 stars: below each threshold the stars stop rising."""
    stars = 1
    for threshold in config.star_thresholds:
        if rating < threshold:
            return stars
        stars += 1
    return stars


@dataclass(slots=True)
class RatingState:
    """Rating in force today, plus the evidence gathered since the last publish."""

    published: float
    stars: int
    multiplier: float
    sum_vu: float = 0.0  # decayed Σ v·u over days already published
    sum_v: float = 0.0
    today_vu: float = 0.0  # evidence resolved today, not yet published
    today_v: float = 0.0
    rated_outcomes: int = 0

    @classmethod
    def initial(cls, config: RatingConfig) -> RatingState:
        stars = stars_for(config.initial, config)
        return cls(config.initial, stars, config.star_multipliers[stars - 1])

    def add(self, score: float, weight: float) -> None:
        self.today_vu += weight * score
        self.today_v += weight
        self.rated_outcomes += 1

    def publish(self, config: RatingConfig) -> None:
        """End of day d: fold today's evidence in and publish R for day d+1."""
        gamma = config.gamma
        self.sum_vu = self.sum_vu * gamma + self.today_vu
        self.sum_v = self.sum_v * gamma + self.today_v
        self.today_vu = self.today_v = 0.0
        alpha = config.prior_weight
        self.published = (alpha * config.initial + self.sum_vu) / (alpha + self.sum_v)
        self.stars = stars_for(self.published, config)
        self.multiplier = config.star_multipliers[self.stars - 1]

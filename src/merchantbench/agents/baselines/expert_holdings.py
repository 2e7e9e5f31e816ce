"""What the expert keeps of each listing, and what the brief lets it believe of exposure and
of a product's public trust."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

Candidate = tuple[float, dict[str, Any], str]  # value per exposure-day, product row, keyword


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

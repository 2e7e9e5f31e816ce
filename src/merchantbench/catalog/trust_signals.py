"""The trust-signal model (docs/catalog.md): how a product's hidden quality shows in its public
signals and sets its hidden outcome risks.

One definition serves both directions. The synthetic generator draws signals and risks from
quality with it; the real-catalog loader, which sees only the signals, reads them back through
the same curves to estimate quality and fills missing risks from the same risk curve.

Each signal is a standard-normal reading of quality, `r = 0.6 q + 0.8 ε` (correlation 0.6),
shown through a curve: a rating as `5 − scale · exp(−slope · r)` (good shops crowd just under
5), the return-buyer rate as `logistic(slope · r − offset)`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SIGNAL_WEIGHT = 0.6  # weight of quality in each public trust signal's reading
SIGNAL_NOISE = 0.8  # weight of noise in it: a reading has unit variance
RISK_MEDIAN = 0.075  # total outcome risk of a product of median quality
RISK_QUALITY_SLOPE = 0.7  # logit(total risk) per unit of quality
RISK_SHARES = (0.20, 0.35, 0.15, 0.30)  # cancel, return, refund-only, bad review
# Best linear predictor of product quality from the readings of (product rating, shop rating,
# return-buyer rate) under this model and `population.QUALITY_FROM_SUPPLIER` (the two shop
# signals read the supplier's quality), rounded: exact values 0.490, 0.218, 0.218.
QUALITY_WEIGHTS = (0.49, 0.22, 0.22)
QUALITY_ESTIMATE_CLIP = 3.0  # an estimate is kept within ±3 standard deviations


def reading(rng: np.random.Generator, quality: np.ndarray) -> np.ndarray:
    """A standard-normal reading of quality: correlation 0.6 with it."""
    return SIGNAL_WEIGHT * quality + SIGNAL_NOISE * rng.standard_normal(len(quality))


@dataclass(frozen=True)
class RatingCurve:
    """A rating shown as `5 − scale · exp(−slope · reading)`."""

    scale: float
    slope: float

    def show(self, reading: np.ndarray) -> np.ndarray:
        """The rating a reading shows (before rounding and clipping to 1–5)."""
        return 5.0 - self.scale * np.exp(-self.slope * reading)

    def read(self, rating: np.ndarray) -> np.ndarray:
        """The reading a rating shows, its gap to 5 kept within 0.01–4."""
        return -np.log(np.clip(5.0 - rating, 0.01, 4.0) / self.scale) / self.slope


@dataclass(frozen=True)
class RateCurve:
    """A rate shown as `1 / (1 + exp(offset − slope · reading))`."""

    offset: float
    slope: float

    def show(self, reading: np.ndarray) -> np.ndarray:
        """The rate a reading shows (before rounding)."""
        return 1.0 / (1.0 + np.exp(self.offset - self.slope * reading))

    def read(self, rate: np.ndarray) -> np.ndarray:
        """The reading a rate shows, the rate kept within 0.001–0.999."""
        rate = np.clip(rate, 0.001, 0.999)
        return (np.log(rate / (1 - rate)) + self.offset) / self.slope


PRODUCT_RATING = RatingCurve(scale=0.45, slope=0.45)
SHOP_RATING = RatingCurve(scale=0.5, slope=0.4)
RETURN_BUYER_RATE = RateCurve(offset=0.9, slope=0.5)


def logistic(x: np.ndarray) -> np.ndarray:
    """1 / (1 + e^(−x))."""
    return 1.0 / (1.0 + np.exp(-x))


def risk_logit(quality: np.ndarray) -> np.ndarray:
    """logit(total outcome risk) of a product of this quality, before the product's own noise."""
    return np.log(RISK_MEDIAN / (1 - RISK_MEDIAN)) - RISK_QUALITY_SLOPE * quality


def estimated_quality(
    rating: np.ndarray, shop_rating: np.ndarray, return_buyer_rate: np.ndarray
) -> np.ndarray:
    """Product quality estimated from its public signals (unclipped)."""
    w_rating, w_shop, w_return = QUALITY_WEIGHTS
    quality = w_rating * PRODUCT_RATING.read(rating)
    quality += w_shop * SHOP_RATING.read(shop_rating)
    quality += w_return * RETURN_BUYER_RATE.read(return_buyer_rate)
    return quality


def expected_risks(
    rating: np.ndarray, shop_rating: np.ndarray, return_buyer_rate: np.ndarray
) -> tuple[np.ndarray, ...]:
    """Outcome risks (cancel, return, refund-only, bad review) of products known only by their
    public signals: the risk curve at the estimated quality, split in the mean shares.

    Args:
        rating: the products' historical average ratings.
        shop_rating: their suppliers' shop ratings.
        return_buyer_rate: their suppliers' return-buyer rates.

    Returns:
        Four arrays of probabilities per order, in `RISK_SHARES` order.
    """
    quality = estimated_quality(rating, shop_rating, return_buyer_rate)
    clip = QUALITY_ESTIMATE_CLIP
    total = logistic(risk_logit(np.clip(quality, -clip, clip)))
    return tuple(total * share for share in RISK_SHARES)

"""Counter-based random numbers, shared by the catalog (supplier events, real-catalog fills)
and the simulation core: every draw is a pure function of (seed, stream, product, hour, index),
never of the order in which things are asked for. This gives common random numbers
across agents (the same product listed at the same hour meets the same customers) and makes
snapshot/restore trivial: the engine carries no generator state at all.

The mixing function is SplitMix64's finaliser applied to a combination of the five counters; it
passes BigCrush as a counter-based generator. Vector and scalar versions give identical results.
"""

from __future__ import annotations

from enum import IntEnum

import numpy as np
from scipy.special import ndtri

_MASK = (1 << 64) - 1
_K_SEED = 0x9E3779B97F4A7C15
_K_STREAM = 0xBF58476D1CE4E5B9
_K_PRODUCT = 0x94D049BB133111EB
_K_HOUR = 0xD6E8FEB86659FD93
_K_INDEX = 0xA0761D6478BD642F
_INV_2_53 = 1.0 / (1 << 53)


class Stream(IntEnum):
    """What a draw is about. Values are fixed forever: changing one changes every run."""

    ARRIVALS = 1
    ORDER_FATE = 2
    CANCEL_HOUR = 3
    LOGISTICS = 4
    RESOLUTION = 5
    EVENT_HAZARD = 10
    EVENT_WAIT = 11
    EVENT_LENGTH = 12
    EVENT_VALUE = 13
    STOCK = 14
    MARKET_SALES = 15  # realised market sales drawn by the real-catalog loader
    RANDOM_AGENT = 20


def _mix_int(z: int) -> int:
    z = (z ^ (z >> 30)) * _K_STREAM & _MASK
    z = (z ^ (z >> 27)) * _K_PRODUCT & _MASK
    return z ^ (z >> 31)


def uniform1(seed: int, stream: int, product: int, hour: int, index: int = 0) -> float:
    """One uniform in [0, 1) for these counters (pure Python, ~1 µs)."""
    z = (
        (seed * _K_SEED)
        ^ (stream * _K_STREAM)
        ^ (product * _K_PRODUCT)
        ^ (hour * _K_HOUR)
        ^ (index * _K_INDEX)
    ) & _MASK
    z = _mix_int(_mix_int(z))
    return (z >> 11) * _INV_2_53


def _u64(x: object) -> np.ndarray:
    return np.asarray(x).astype(np.int64).astype(np.uint64)


def uniform(seed: int, stream: int, product: object, hour: object, index: object = 0) -> np.ndarray:
    """Uniforms in [0, 1) for broadcast arrays of counters; equal to `uniform1` elementwise."""
    with np.errstate(over="ignore"):
        z = (
            np.uint64((seed * _K_SEED) & _MASK)
            ^ np.uint64((int(stream) * _K_STREAM) & _MASK)
            ^ (_u64(product) * np.uint64(_K_PRODUCT))
            ^ (_u64(hour) * np.uint64(_K_HOUR))
            ^ (_u64(index) * np.uint64(_K_INDEX))
        )
        for _ in range(2):
            z = (z ^ (z >> np.uint64(30))) * np.uint64(_K_STREAM)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(_K_PRODUCT)
            z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) * _INV_2_53


NORMAL_ABOVE = 100.0  # λ above which the count is the normal quantile (exp(−λ) underflows)


def poisson_from_uniform(lam: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Poisson counts by inverse CDF: monotone in λ for a fixed uniform (common random numbers).

    Above `NORMAL_ABOVE` the continuity-corrected normal quantile stands in (still monotone).
    """
    lam = np.asarray(lam, dtype=np.float64)
    u = np.broadcast_to(np.asarray(u, dtype=np.float64), lam.shape)
    counts = np.zeros(lam.shape, dtype=np.int64)
    big = lam > NORMAL_ABOVE
    if big.any():
        normal = np.floor(lam[big] + np.sqrt(lam[big]) * ndtri(u[big]) + 0.5)
        counts[big] = np.maximum(normal, 0)
    todo = np.flatnonzero(~big & (lam > 0))
    flat_counts = counts.reshape(-1)
    rate, left = lam.reshape(-1)[todo], u.reshape(-1)[todo]
    term = np.exp(-rate)
    cdf, k = term.copy(), 0
    while todo.size and k < 1000:  # the bound only guards against rounding at u ≈ 1
        more = left > cdf
        todo, rate, left, term, cdf = todo[more], rate[more], left[more], term[more], cdf[more]
        k += 1
        term = term * rate / k
        cdf = cdf + term
        flat_counts[todo] = k
    return counts

"""Every random stream of the benchmark, by key, in one registry: `Stream` (counter-based draws)
and `Part` (the synthetic market generator's Philox streams). A key's value is fixed forever.

Counter-based random numbers, shared by the catalog (supplier events, real-catalog fills)
and the simulation core: every draw is a pure function of (seed, stream, product, hour, index),
never of the order in which things are asked for. This gives common random numbers
across agents (the same product listed at the same hour meets the same customers) and makes
snapshot/restore trivial: the engine carries no generator state at all.

The mixing function is SplitMix64's finaliser applied to a combination of the five counters; it
passes BigCrush as a counter-based generator. Vector and scalar versions give identical results.

A seed of the sealed range (`merchantbench.seeds`) is never mixed in itself: its 128-bit stream
key is a keyed hash of it, whose low half takes the seed's place and whose high half is mixed in
between the two finaliser rounds (zero for a public seed, whose draws are thus unchanged).

The synthetic market generator draws in bulk from one Philox stream per part of the market
(`part_rng`), keyed by (seed, part), so that a change in one part (say titles) never shifts
another (say demand); a seed of the sealed range keys each by a keyed hash of the seed instead
(BLAKE2b, personalised with the part), so no output says anything about the seed, nor about
another part's stream.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from enum import IntEnum

import numpy as np

from merchantbench.seeds import is_sealed_range, keyed_digest

_MASK = (1 << 64) - 1
_K_SEED = 0x9E3779B97F4A7C15
_K_STREAM = 0xBF58476D1CE4E5B9
_K_PRODUCT = 0x94D049BB133111EB
_K_HOUR = 0xD6E8FEB86659FD93
_K_INDEX = 0xA0761D6478BD642F
_INV_2_53 = 1.0 / (1 << 53)


class Stream(IntEnum):
    """What a counter-based draw is about. Values are fixed forever: changing one changes every
    run."""

    ARRIVALS = 1
    ORDER_FATE = 2
    CANCEL_HOUR = 3
    LOGISTICS = 4
    RESOLUTION = 5
    SELLER_CHOICE = 6  # which merchant an arrival buys from, in a market of several
    # (docs/design.md §11)
    EVENT_HAZARD = 10
    EVENT_WAIT = 11
    EVENT_LENGTH = 12
    EVENT_VALUE = 13
    STOCK = 14
    MARKET_SALES = 15  # realised market sales drawn by the real-catalog loader
    EVENT_START = 16  # the stationary state of each event channel where the process starts
    RANDOM_AGENT = 20


class Part(IntEnum):
    """A part of the synthetic market, each drawn from its own Philox stream (`part_rng`). Values
    are fixed forever (they are the stream keys): append only."""

    SUPPLIERS = 0
    SUPPLIER_SIGNALS = 1
    PRODUCTS = 2
    TRAPS = 3
    PRICES = 4
    RISKS = 5
    PRODUCT_SIGNALS = 6
    TITLES = 7
    IDS = 8
    TRAJECTORIES = 9
    BASE_DEMAND = 10
    LAUNCH = 11
    NOISE = 12
    SALES = 13
    TITLE_WORDS = 14


_PART_DOMAIN = 0x4D42  # "MB": separates the generator's seed sequences from other uses


def part_rng(seed: int, part: Part) -> np.random.Generator:
    """The generator's random stream for one part of the market."""
    if is_sealed_range(seed):
        digest = keyed_digest(seed, f"part-{int(part)}")
        return np.random.Generator(np.random.Philox(int.from_bytes(digest, "big")))
    key = np.random.SeedSequence([seed % (1 << 64), _PART_DOMAIN, int(part)])
    return np.random.Generator(np.random.Philox(key))


def _mix_int(z: int) -> int:
    z = (z ^ (z >> 30)) * _K_STREAM & _MASK
    z = (z ^ (z >> 27)) * _K_PRODUCT & _MASK
    return z ^ (z >> 31)


@functools.lru_cache(maxsize=64)
def stream_key(seed: int) -> tuple[int, int]:
    """(low, high) 64-bit words of the key the draws of `seed` are keyed by: (seed, 0) for a
    public seed, a keyed hash of the seed for one of the sealed range."""
    if not is_sealed_range(seed):
        return seed & _MASK, 0
    digest = keyed_digest(seed, "counter-streams", 16)
    return int.from_bytes(digest[:8], "big"), int.from_bytes(digest[8:], "big")


def uniform1(seed: int, stream: int, product: int, hour: int, index: int = 0) -> float:
    """One uniform in [0, 1) for these counters (pure Python, ~1 µs)."""
    low, high = stream_key(seed)
    z = (
        (low * _K_SEED)
        ^ (stream * _K_STREAM)
        ^ (product * _K_PRODUCT)
        ^ (hour * _K_HOUR)
        ^ (index * _K_INDEX)
    ) & _MASK
    z = _mix_int(_mix_int(z) ^ high)
    return (z >> 11) * _INV_2_53


def _u64(x: object) -> np.ndarray:
    """The counters as int64, their bits read as uint64 (a view, no copy, for int64 input)."""
    return np.asarray(x, dtype=np.int64).view(np.uint64)


_SHIFTS = (np.uint64(30), np.uint64(27), np.uint64(31))
_ROUND_FACTORS = (np.uint64(_K_STREAM), np.uint64(_K_PRODUCT))
_MANTISSA_SHIFT = np.uint64(11)


def _mix_in_place(z: np.ndarray, high: int | np.ndarray) -> None:
    """The two finaliser rounds of `uniform1` on an array, in place (arrays of counters are a
    few hundred cells: numpy's cost per call, not per element, is what counts); `high` the
    key's high word, or one per cell (broadcast)."""
    first, second, third = _SHIFTS
    times_a, times_b = _ROUND_FACTORS
    for mixed_in in (0, high):  # the high key word goes in between the two rounds
        if isinstance(mixed_in, np.ndarray):
            z ^= mixed_in
        elif mixed_in:
            z ^= np.uint64(mixed_in)
        z ^= z >> first
        z *= times_a
        z ^= z >> second
        z *= times_b
        z ^= z >> third


def uniform(seed: int, stream: int, product: object, hour: object, index: object = 0) -> np.ndarray:
    """Uniforms in [0, 1) for broadcast arrays of counters; equal to `uniform1` elementwise."""
    low, high = stream_key(seed)
    # The combination is an XOR of wrapping products: scalar counters fold into one word.
    # (Array integer arithmetic wraps silently; only numpy scalars would warn.)
    word = ((low * _K_SEED) ^ (int(stream) * _K_STREAM)) & _MASK
    z: np.ndarray | None = None
    for counter, factor in ((product, _K_PRODUCT), (hour, _K_HOUR), (index, _K_INDEX)):
        values = np.asarray(counter)
        if values.ndim == 0:
            word ^= (int(values.astype(np.int64)) * factor) & _MASK
            continue
        term = _u64(values) * np.uint64(factor)
        z = term if z is None else z ^ term
    z = np.asarray(np.uint64(word)) if z is None else z ^ np.uint64(word)
    _mix_in_place(z, high)
    # The top 53 bits, exact in a float64, scaled to [0, 1).
    return np.multiply(z >> _MANTISSA_SHIFT, _INV_2_53, dtype=np.float64)


def uniform_of_seeds(
    seeds: Sequence[int], which: np.ndarray, stream: int, product: object, hour: object
) -> np.ndarray:
    """`uniform` with a seed per cell, `seeds[which]` (`which` an int array broadcast with the
    counters; a seed may be of the sealed range): equal to `uniform1` elementwise, for the
    draws of several runs in one set of operations."""
    keys = [stream_key(seed) for seed in seeds]
    words = [((low * _K_SEED) ^ (int(stream) * _K_STREAM)) & _MASK for low, _ in keys]
    z = np.array(words, dtype=np.uint64)[which]
    z = z ^ (_u64(product) * np.uint64(_K_PRODUCT)) ^ (_u64(hour) * np.uint64(_K_HOUR))
    highs = [high for _, high in keys]
    _mix_in_place(z, np.array(highs, dtype=np.uint64)[which] if any(highs) else 0)
    return np.multiply(z >> _MANTISSA_SHIFT, _INV_2_53, dtype=np.float64)


SUM_FROM_ZERO_UP_TO = 10.0  # λ up to which the search starts at k = 0 (cheaper than the gamma)
_MAX_STEPS = 100  # a safety bound: the search starts a few counts from the answer


def poisson_from_uniform(lam: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Poisson(λ) counts by inverse CDF: the least k with P(X ≤ k) ≥ u, for uniforms `u`.

    Exact for every λ (docs/design.md §4), so a higher λ never gives fewer orders for the same
    uniform (common random numbers): P(X ≤ k) falls as λ rises, for every k. Above
    `SUM_FROM_ZERO_UP_TO` the search starts at the Cornish–Fisher approximation of the
    quantile, where the CDF is evaluated exactly (the regularised incomplete gamma function);
    below, at k = 0. It then steps by the pmf recurrence: a few vectorised steps whatever λ is,
    so best sellers with thousands of orders cost no more than the rest.
    """
    lam = np.asarray(lam, dtype=np.float64)
    if lam.size <= _FEW and np.shape(u) == lam.shape:
        few = _few_counts(lam.reshape(-1), np.asarray(u, dtype=np.float64).reshape(-1))
        if few is not None:
            return np.array(few, dtype=np.int64).reshape(lam.shape)
    u = np.broadcast_to(np.asarray(u, dtype=np.float64), lam.shape)
    counts = np.zeros(lam.shape, dtype=np.int64)
    flat_lam, flat_counts = lam.reshape(-1), counts.reshape(-1)  # counts is contiguous: a view
    todo = np.flatnonzero(flat_lam > 0)
    if todo.size:
        flat_counts[todo] = _inverse_cdf(flat_lam[todo], u.reshape(-1)[todo])
    return counts


_FEW = 16  # up to this many draws, all below SUM_FROM_ZERO_UP_TO, the search runs in Python


def _few_counts(rate: np.ndarray, u: np.ndarray) -> list[int] | None:
    """`_inverse_cdf` of a handful of small rates as plain floats: the same operations in the
    same order, element by element (None if a rate needs the quantile start). The start
    e^(−λ) still comes from numpy, whose exp may differ from `math.exp` in the last bit."""
    rates = rate.tolist()
    if any(r > SUM_FROM_ZERO_UP_TO for r in rates):
        return None
    starts = np.exp(-rate).tolist()
    return [
        _count_from_zero(r, cdf, x) if r > 0 else 0
        for r, cdf, x in zip(rates, starts, u.tolist(), strict=True)
    ]


def _count_from_zero(rate: float, cdf: float, u: float) -> int:
    """The least k with P(X ≤ k) ≥ u, stepping up from P(X ≤ 0) = `cdf` (`_inverse_cdf`'s up
    loop for one element)."""
    k, pmf = 0.0, cdf
    for _ in range(_MAX_STEPS):
        if not cdf < u:
            break
        k += 1.0
        pmf *= rate / k
        before, cdf = cdf, cdf + pmf
        if not cdf > before:  # a u within rounding of 1 is never reached
            break
    return int(k)


def _inverse_cdf(rate: np.ndarray, u: np.ndarray) -> np.ndarray:
    """The least k with P(X ≤ k) ≥ u for X ~ Poisson(rate), rate > 0."""
    k, cdf = np.zeros(len(rate)), np.exp(-rate)  # small rates: from k = 0, P(X ≤ 0) = e^(−λ)
    pmf = cdf.copy()
    far = np.flatnonzero(rate > SUM_FROM_ZERO_UP_TO)
    if far.size:
        k[far], cdf[far], pmf[far] = _near_quantile(rate[far], u[far])
    down = np.flatnonzero((k > 0) & (cdf - pmf >= u))  # P(X ≤ k − 1) ≥ u: k is too high
    for _ in range(_MAX_STEPS):
        if not down.size:
            break
        cdf[down] -= pmf[down]
        pmf[down] *= k[down] / rate[down]
        k[down] -= 1
        down = down[(k[down] > 0) & (cdf[down] - pmf[down] >= u[down])]
    up = np.flatnonzero(cdf < u)  # k is too low
    for _ in range(_MAX_STEPS):
        if not up.size:
            break
        k[up] += 1
        pmf[up] *= rate[up] / k[up]
        before = cdf[up]
        cdf[up] = before + pmf[up]
        # A u within rounding of 1 is never reached: stop where the tail no longer adds.
        up = up[(cdf[up] < u[up]) & (cdf[up] > before)]
    return k.astype(np.int64)


def _near_quantile(rate: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, ...]:
    """A start k near the u-quantile (Cornish–Fisher), with P(X ≤ k) and P(X = k) there."""
    # Imported here: only rates above SUM_FROM_ZERO_UP_TO come this way (building a market;
    # rarely in a run), and scipy.special takes a quarter of a second to import.
    from scipy.special import gammaln, ndtri, pdtr

    with np.errstate(invalid="ignore", divide="ignore"):  # u = 0: z = −inf, the start is 0
        z = ndtri(u)
        start = np.floor(rate + np.sqrt(rate) * z + (z * z - 1) / 6)
    k = np.nan_to_num(np.maximum(start, 0.0), nan=0.0)
    pmf = np.exp(k * np.log(rate) - rate - gammaln(k + 1))
    return k, pdtr(k, rate), pmf

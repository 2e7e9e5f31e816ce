"""Seeds: the public and sealed ranges, keyed derivations, commitments, and that 128-bit seeds
work everywhere a seed goes (docs/design.md §10)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from merchantbench import random_streams
from merchantbench.catalog.cache import market_cache_key, market_path
from merchantbench.catalog.synthetic import generate_market
from merchantbench.random_streams import Part, Stream, part_rng, uniform, uniform1
from merchantbench.scenario import load_scenario
from merchantbench.seeds import (
    SEALED_FLOOR,
    SEED_LIMIT,
    SeedError,
    check_seed,
    commitment,
    draw_sealed_seed,
    is_sealed_range,
    keyed_digest,
    keyed_values,
    seed_label,
    verify_commitment,
)

SEALED = 0xC0FFEE_0123456789ABCDEF_FEDCBA98  # a fixed seed of the sealed range, for the tests
_MASK = (1 << 64) - 1


def legacy_uniform1(seed: int, stream: int, product: int, hour: int, index: int) -> float:
    """The counter-based uniform as it was before sealed seeds (for public seeds, unchanged)."""
    z = (
        (seed * 0x9E3779B97F4A7C15)
        ^ (stream * 0xBF58476D1CE4E5B9)
        ^ (product * 0x94D049BB133111EB)
        ^ (hour * 0xD6E8FEB86659FD93)
        ^ (index * 0xA0761D6478BD642F)
    ) & _MASK
    for _ in range(2):
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9 & _MASK
        z = (z ^ (z >> 27)) * 0x94D049BB133111EB & _MASK
        z ^= z >> 31
    return (z >> 11) / (1 << 53)


def test_sealed_draws_cover_the_sealed_range_and_differ():
    drawn = {draw_sealed_seed() for _ in range(200)}
    assert len(drawn) == 200
    assert all(SEALED_FLOOR <= s < SEED_LIMIT and is_sealed_range(s) for s in drawn)
    assert max(drawn).bit_length() == 128  # the top bit is set about half the time


@pytest.mark.parametrize("bad", [SEED_LIMIT, -(1 << 63) - 1, 1.5, True, "7"])
def test_a_seed_out_of_range_or_not_an_integer_is_refused(bad):
    with pytest.raises(SeedError):
        check_seed(bad)


def test_labels_never_show_a_sealed_seed():
    assert seed_label(7) == "s7" and seed_label(-3) == "s-3"
    assert seed_label(SEALED) == "sealed"


def test_the_commitment_is_sha256_of_the_documented_string():
    salt = "ab" * 32
    expected = hashlib.sha256(f"merchantbench-seed-v1:{salt}:{SEALED}".encode()).hexdigest()
    assert commitment(SEALED, salt) == expected
    assert verify_commitment(SEALED, salt, expected.upper())
    assert not verify_commitment(SEALED + 1, salt, expected)
    assert not verify_commitment(SEALED, "cd" * 32, expected)


def test_keyed_values_are_unique_deterministic_and_separated_by_purpose():
    first = keyed_values(SEALED, "offer-id", 3000, 10_000)  # a small modulus forces collisions
    assert len(set(first)) == 3000 and all(0 <= v < 10_000 for v in first)
    assert first == keyed_values(SEALED, "offer-id", 3000, 10_000)
    assert first[:100] != keyed_values(SEALED, "member-id", 100, 10_000)
    assert first[:100] != keyed_values(SEALED + 1, "offer-id", 100, 10_000)


@given(
    seed=st.integers(-(1 << 63), SEALED_FLOOR - 1),
    counters=st.tuples(*[st.integers(0, 10**6)] * 3),
)
def test_public_seeds_draw_exactly_as_before(seed, counters):
    product, hour, index = counters
    old = legacy_uniform1(seed, int(Stream.ORDER_FATE), product, hour, index)
    assert uniform1(seed, Stream.ORDER_FATE, product, hour, index) == old
    assert uniform(seed, Stream.ORDER_FATE, product, hour, index)[()] == old


@given(seed=st.integers(SEALED_FLOOR, SEED_LIMIT - 1))
def test_128_bit_seeds_agree_between_scalar_and_vector_draws(seed):
    products, hours = np.arange(6), np.arange(4)[:, None]
    vector = uniform(seed, Stream.ARRIVALS, products, hours, 2)
    scalar = [[uniform1(seed, Stream.ARRIVALS, p, h, 2) for p in range(6)] for h in range(4)]
    assert np.array_equal(vector, np.array(scalar))


def test_sealed_seeds_use_all_128_bits():
    # The old code kept seed mod 2^64 only: these two seeds would have shared every draw.
    twin = SEALED + (1 << 100)
    assert twin & _MASK == SEALED & _MASK
    assert uniform1(SEALED, 1, 3, 4) != uniform1(twin, 1, 3, 4)
    assert part_rng(SEALED, Part.PRICES).random() != part_rng(twin, Part.PRICES).random()
    # …and are never mixed in raw: the draw differs from the legacy formula of the seed.
    assert uniform1(SEALED, 1, 3, 4, 0) != legacy_uniform1(SEALED, 1, 3, 4, 0)
    assert random_streams.stream_key(5) == (5, 0)


def test_a_sealed_market_is_deterministic_and_its_cache_name_hides_the_seed(tmp_path, monkeypatch):
    monkeypatch.setenv("MERCHANTBENCH_CACHE", str(tmp_path))
    scenario = load_scenario("smoke")
    one, two = generate_market(scenario, SEALED), generate_market(scenario, SEALED)
    assert np.array_equal(one.product_ids, two.product_ids)
    assert np.array_equal(one.market_sales_cum, two.market_sales_cum)
    assert len(set(one.product_ids.tolist())) == one.n_products
    assert all(len(i) == 12 and i.startswith(("6", "7", "8")) for i in one.product_ids.tolist())
    name = market_path(scenario, SEALED).name
    assert name.startswith("market-sealed-") and market_cache_key(scenario, SEALED) in name
    for shown in (str(SEALED), f"{SEALED:x}", str(SEALED & _MASK), str(SEALED >> 64)):
        assert shown not in name
    assert market_path(scenario, 3).name.startswith("market-seed3-")


# The generator's parts as they were keyed before `Part` (a tuple of names; the position was the
# key): every part must draw exactly what it drew then, for public and sealed seeds.
LEGACY_PARTS = (
    "suppliers", "supplier_signals", "products", "traps", "prices", "risks", "product_signals",
    "titles", "ids", "trajectories", "base_demand", "launch", "noise", "sales", "title_words",
)  # fmt: skip


def _legacy_part_rng(seed: int, name: str) -> np.random.Generator:
    index = LEGACY_PARTS.index(name)
    if is_sealed_range(seed):
        digest = keyed_digest(seed, f"part-{index}")
        return np.random.Generator(np.random.Philox(int.from_bytes(digest, "big")))
    key = np.random.SeedSequence([seed % (1 << 64), 0x4D42, index])
    return np.random.Generator(np.random.Philox(key))


@pytest.mark.parametrize("seed", [1, 314159, SEALED])
def test_every_part_draws_what_it_drew_before_the_one_registry(seed):
    assert [p.name.lower() for p in Part] == list(LEGACY_PARTS)
    for part in Part:
        now, then = part_rng(seed, part), _legacy_part_rng(seed, part.name.lower())
        assert np.array_equal(now.random(64), then.random(64)), part
        assert np.array_equal(now.integers(0, 1 << 40, 16), then.integers(0, 1 << 40, 16)), part

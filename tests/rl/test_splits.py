"""Seed splits: train, validation and test never meet; a test episode's market needs the
operator's pool key (its reveal) to be rebuilt."""

from __future__ import annotations

import json
import os
import stat

import pytest
from hypothesis import given
from hypothesis import strategies as st

from merchantbench.rl.episode import Episode, EpisodeConfig
from merchantbench.rl.splits import (
    SPLIT_SIZE,
    SealedPool,
    Split,
    SplitError,
    episode_seed,
    split_of,
)
from merchantbench.seeds import SEALED_FLOOR, is_sealed_range

INDEX = st.integers(min_value=0, max_value=SPLIT_SIZE - 1)
SMOKE = EpisodeConfig(scenario="smoke", length=2)


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> SealedPool:
    return SealedPool.create(tmp_path_factory.mktemp("pool") / "pool.json")


@given(i=INDEX, j=INDEX)
def test_public_splits_never_meet(i: int, j: int) -> None:
    train, validation = episode_seed("train", i), episode_seed(Split.VALIDATION, j)
    assert train != validation
    assert split_of(train) is Split.TRAIN and split_of(validation) is Split.VALIDATION
    assert not is_sealed_range(train) and not is_sealed_range(validation)


def test_split_ranges_are_disjoint_and_clear_of_small_seeds(pool: SealedPool) -> None:
    train = (episode_seed("train", 0), episode_seed("train", SPLIT_SIZE - 1))
    validation = (episode_seed("validation", 0), episode_seed("validation", SPLIT_SIZE - 1))
    assert 1_000_000 < train[0] <= train[1] < validation[0] <= validation[1] < SEALED_FLOOR
    tests = [episode_seed("test", i, pool) for i in range(200)]
    assert all(seed >= SEALED_FLOOR for seed in tests)
    assert len(set(tests)) == 200  # distinct episodes
    assert {split_of(seed) for seed in tests} == {Split.TEST}
    assert split_of(1) is None and split_of(train[0] - 1) is None


@given(i=INDEX)
def test_test_seeds_lie_in_no_public_split(i: int) -> None:
    pool = SealedPool(bytes(range(32)))
    seed = episode_seed("test", i, pool)
    assert split_of(seed) is Split.TEST and seed >= SEALED_FLOOR


@pytest.mark.parametrize(
    ("split", "index"), [("dev", 0), ("train", -1), ("train", SPLIT_SIZE), ("test", 0)]
)
def test_bad_requests_are_refused(split: str, index: int) -> None:
    with pytest.raises(SplitError):
        episode_seed(split, index)


def test_pool_file_is_private_and_never_overwritten(tmp_path) -> None:
    path = tmp_path / "pool.json"
    pool = SealedPool.create(path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with pytest.raises(SplitError, match="exists already"):
        SealedPool.create(path)
    again = SealedPool.load(path)
    assert again.commitment == pool.commitment and again.reveal(7) == pool.reveal(7)
    assert pool.key_hex() not in repr(pool)
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(SplitError, match="not a sealed pool file"):
        SealedPool.load(tmp_path / "bad.json")


def test_a_test_episode_cannot_be_rebuilt_without_the_reveal(pool: SealedPool) -> None:
    sealed = pool.reveal(3)
    episode = Episode(SMOKE, episode_seed("test", 3, pool))
    ids = set(episode.session.market.product_ids[:50])
    seen = episode.brief() + episode.observation()
    seen += json.dumps(episode.call("search_products", {"page_size": 20}).result)
    for secret in (str(sealed.seed), f"{sealed.seed:x}", sealed.salt, pool.key_hex()):
        assert secret not in seen
    # Without the key: the same index under another pool, or any public seed near it, is
    # another market.
    other = Episode(SMOKE, episode_seed("test", 3, SealedPool(bytes(32))))
    assert ids.isdisjoint(other.session.market.product_ids[:50])
    for guess in (3, episode_seed("train", 3), episode_seed("validation", 3)):
        assert ids.isdisjoint(Episode(SMOKE, guess).session.market.product_ids[:50])
    # With the operator's reveal: the same market, the same play, the same state hash.
    replay = Episode(SMOKE, sealed.seed)
    assert set(replay.session.market.product_ids[:50]) == ids
    for run in (episode, replay):
        while not run.over:
            run.call("end_of_step")
    assert replay.session.state_hash() == episode.session.state_hash()

"""The classic store env (`merchantbench.rl.classic`): Gymnasium's and stable-baselines3's own
checkers, rewards fen-exact, the one engine (the store an episode opens is the `rl.episode`
store), determinism, bad input."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from merchantbench.rl.classic import GLOBAL, SLOT, StoreEnv, StoreVectorEnv
from merchantbench.rl.classic_eval import (
    EpisodeSpec,
    constant_action,
    paired,
    play,
    play_rule_based,
)
from merchantbench.rl.episode import Episode, EpisodeConfig
from merchantbench.rl.splits import episode_seed
from merchantbench.rl.trl_tiny import environ
from merchantbench.training_envs import RECIPES, find_env
from requires import need


def _env(**kwargs: object) -> StoreEnv:
    return StoreEnv(scenario="smoke", length=3, slots=8, pool=2, **kwargs)  # type: ignore[arg-type]


def test_gymnasium_check_env() -> None:
    env = _env()
    check_env(env, skip_render_check=True)
    assert env.observation_space.shape == (GLOBAL + SLOT * 8,)
    assert list(env.action_space.nvec) == [8] * 8


def test_stable_baselines3_check_env() -> None:
    """SB3's own checker, in the sb3 environment (torch lives there, not here)."""
    need("sb3")
    found = find_env(RECIPES["sb3"])
    assert found is not None
    code = (
        "from stable_baselines3.common.env_checker import check_env\n"
        "from merchantbench.rl.classic import StoreEnv\n"
        "import warnings\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    check_env(StoreEnv(scenario='smoke', length=3, slots=8, pool=2), warn=True)\n"
        "print([str(w.message) for w in caught])\n"
    )
    done = subprocess.run(
        [str(found.python), "-c", code], env=environ(), capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    warnings = json.loads(done.stdout.strip().splitlines()[-1].replace("'", '"'))
    assert not [w for w in warnings if "StoreEnv" in w or "space" in w.lower()], warnings


def test_rewards_sum_to_the_change_and_the_store_is_the_episodes() -> None:
    env = _env()
    spec = EpisodeSpec("validation", 4, 150)
    options = {"split": "validation", "index": 4, "start_day": 150}
    env.reset(options=options)
    # The store the env opens is the one the training episode opens (one engine, one market).
    episode = Episode(
        EpisodeConfig("smoke", length=3, start_day=150), episode_seed("validation", 4)
    )
    assert env.engine is not None and env.engine.state_hash() == episode.session.state_hash()
    action = constant_action(env, 8, 2)
    change = play(env, lambda _obs: action, spec)  # checks the sum of fen rewards itself
    assert change != 0.0
    assert env.engine.done and env.engine.state.drained
    # Deterministic: the same episode and actions give the same result and observations.
    first, _ = env.reset(options=options)
    again, _ = _env().reset(options=options)
    assert np.array_equal(first, again)
    assert play(env, lambda _obs: action, spec) == change


def test_bad_input_and_the_rule_based_comparison() -> None:
    env = _env()
    with pytest.raises(RuntimeError):
        env.step(np.zeros(8, dtype=np.int64))  # before reset
    env.reset(seed=3)
    assert 0 <= env.start_day <= env.last_start and 0 <= env.index < 2
    with pytest.raises(ValueError):
        env.step(np.zeros(5, dtype=np.int64))
    _, _, _, _, info = env.step(np.full(8, 99))  # out of range: clipped to the top markup
    assert info["window"] == 1
    with pytest.raises(ValueError, match="start_day"):
        env.reset(options={"start_day": 400})
    score = play_rule_based(env, EpisodeSpec("validation", 1, 100))
    assert isinstance(score, float)
    assert paired([3.0, 1.0, 2.0], [1.0, 1.0, 3.0])["wins"] == 1


def test_the_sb3_training_script_runs_and_reports(tmp_path: Path) -> None:
    """`rl.sb3_train` end to end on a tiny budget: PPO trains, and every policy is scored on
    the same held-out episodes, paired."""
    need("sb3")
    found = find_env(RECIPES["sb3"])
    assert found is not None
    command = [str(found.python), "-m", "merchantbench.rl.sb3_train", "--scenario", "smoke",
               "--length", "3", "--minutes", "0.05", "--envs", "2", "--pool", "2", "--test", "2",
               "--tune", "1", "--n-steps", "16", "--out", str(tmp_path)]  # fmt: skip
    done = subprocess.run(command, env=environ(), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads((tmp_path / "results.json").read_text())
    assert set(results["scores"]) == {"ppo", "random", "best_constant", "rule_based"}
    assert all(len(scores) == 2 for scores in results["scores"].values())
    assert results["train_steps"] > 0 and results["ppo_vs"]["random"]["n"] == 2
    curve = json.loads((tmp_path / "curve.json").read_text())
    assert curve[-1]["held_out_mean_rmb"] == results["means"]["ppo"]


def test_slot_rewards_split_the_window_reward_exactly() -> None:
    env = StoreEnv(scenario="smoke", length=7, slots=8, pool=2)
    env.reset(options={"split": "train", "index": 1, "start_day": 20})
    action = constant_action(env, 8, 1)
    total, slots, done = 0, np.zeros(8, dtype=np.int64), False
    while not done:
        _, _, done, _, info = env.step(action)
        assert int(info["slot_rewards_fen"].sum()) == info["reward_fen"]
        total += info["reward_fen"]
        slots += info["slot_rewards_fen"]
    assert total == info["net_assets_change_fen"] and np.count_nonzero(slots) >= 2


def test_an_opening_day_is_the_episodes_store_on_every_market() -> None:
    """The opened store is kept per day, not per market: opening day 90 on one market, then on
    another, gives the `rl.episode` store of each (same state hash)."""
    env = _env()
    for split, index in (("train", 0), ("validation", 5)):
        env.reset(options={"split": split, "index": index, "start_day": 90})
        episode = Episode(
            EpisodeConfig("smoke", length=3, start_day=90), episode_seed(split, index)
        )
        assert env.engine is not None
        assert env.engine.state_hash() == episode.session.state_hash()


def test_the_vector_env_steps_stores_together_as_each_alone() -> None:
    """`StoreVectorEnv` (the stores' windows advanced together) gives each store the
    observations, rewards and resets that a `StoreEnv` of the same seed gives alone."""
    vector = StoreVectorEnv(3, scenario="smoke", length=2, slots=8, pool=2)
    alone = [StoreEnv(scenario="smoke", length=2, slots=8, pool=2) for _ in range(3)]
    obs, _ = vector.reset(seed=10)
    for i, env in enumerate(alone):
        assert np.array_equal(obs[i], env.reset(seed=10 + i)[0])
    rng = np.random.default_rng(0)
    finished = 0
    for _ in range(12):  # 4 windows an episode: each store resets twice or more
        actions = rng.integers(0, 8, size=(3, 8))
        obs, rewards, done, _, infos = vector.step(actions)
        for i, env in enumerate(alone):
            one, reward, over, _, info = env.step(actions[i])
            assert reward == rewards[i] and over == done[i]
            if over:  # the infos are the new episode's; the last step's are final_info
                finished += 1
                assert info["reward_fen"] == infos["final_info"]["reward_fen"][i]
                assert np.array_equal(infos["final_obs"][i], one)
                one, info = env.reset()
            assert info["reward_fen"] == infos["reward_fen"][i]
            assert np.array_equal(obs[i], one)
    assert finished >= 6


def test_the_observation_is_the_engines_state_read_slot_by_slot() -> None:
    """The observations computed as (N, slots) array operations over the tables of an episode
    (supplier facts at each decision hour, public sales per day, the listings kept beside the
    engine) equal the same features read from the engine one slot at a time, at every step
    of episodes with random actions (listings, reprices, delistings, supplier events)."""
    from merchantbench.catalog.stock_band import LOW_STOCK_UNITS
    from merchantbench.sim.suppliers import SupplierBook, stock_now

    vector = StoreVectorEnv(2, scenario="smoke", length=4, slots=8, pool=2)
    vector.reset(seed=4)
    rng = np.random.default_rng(3)
    checked = 0
    for _ in range(30):
        obs, _, done, _, infos = vector.step(rng.integers(0, 8, size=(2, 8)))
        for i, env in enumerate(vector.envs):
            row = infos["final_obs"][i] if done[i] else obs[i]
            if done[i]:
                continue  # the store was reset: its new episode is checked next step
            engine = env.engine
            assert engine is not None
            book, hour = SupplierBook(engine.market), min(engine.t, engine.horizon - 1)
            per = row[GLOBAL:].reshape(8, SLOT)
            listings = engine.state.listings
            for slot, product in enumerate(env.products):
                state = book.state(product, hour)
                cost = max(1, state.price_fen)
                price = listings[product].price if product in listings else 0
                first = max(1, book.state(product, env.start_day * 24).price_fen)
                sales = engine.market.sales_30d(hour // 24)[product]
                units = stock_now(engine.market, product, engine.state.stock, hour)
                band = 1.0 if units >= LOW_STOCK_UNITS else 0.5 if units > 0 else 0.0
                expect = [
                    float(price > 0), price / cost / 3.0, np.log1p(cost / 100) / 5.0,
                    cost / first, state.ship_hours / 96.0, float(state.available),
                    np.log1p(max(sales, 0)) / 8.0,
                    band if product in engine.state.stock else 1.0,
                ]  # fmt: skip
                got = per[slot, [0, 1, 2, 3, 6, 7, 9, 10]]
                assert np.array_equal(got, np.clip(np.float32(expect), -10, 10)), (slot, hour)
                checked += 1
    assert checked > 300


def _rollout_digest(n: int, steps: int, seed: int) -> str:
    """SHA-256 (16 hex digits) of a vector's rollout under random actions: observations,
    rewards, ends, the infos' rewards in fen and per slot, the final observations, and every
    store's state hash at the end."""
    import hashlib

    digest = hashlib.sha256()
    vector = StoreVectorEnv(n)
    obs, _ = vector.reset(seed=seed)
    digest.update(obs.tobytes())
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        obs, rewards, done, _, infos = vector.step(rng.integers(0, 8, size=(n, 32)))
        for part in (obs, rewards, done, infos["reward_fen"], infos["slot_rewards_fen"]):
            digest.update(np.asarray(part).tobytes())
        for i in np.flatnonzero(infos.get("_final_obs", np.zeros(n, dtype=np.bool_))):
            digest.update(infos["final_obs"][i].tobytes())
    for env in vector.envs:
        assert env.engine is not None
        digest.update(env.engine.state_hash().encode())
    return digest.hexdigest()[:16]


def test_a_rollout_is_the_one_made_before_the_speed_work() -> None:
    """16 stores of the default env (`small`, 30 days, 32 slots), 70 steps of random actions
    (each store's episode ends and a new one starts): the same numbers as the code before the
    classic env's speed work of 2026-12-07 evening (digest made with main at 99be5b7)."""
    assert _rollout_digest(16, 70, 5) == EXPECTED_ROLLOUT


EXPECTED_ROLLOUT = "811d1ec75edc2ef3"


def test_batched_actions_are_the_slot_by_slot_actions() -> None:
    """A step's actions done as the engine's batch actions (`StoreEnv._apply`) leave the store
    as the same actions done slot by slot in slot order (`_set`, the definition): 96 slots
    under a listing cap of 50, so both the batches and the slot-by-slot way (when the cap
    could bind) are taken, over episodes of random actions (listings, reprices, delistings,
    refusals at the cap, supplier delistings)."""
    batched, alone = StoreEnv(slots=96), StoreEnv(slots=96)
    ways = {"batched": 0, "slot by slot": 0}

    def one_by_one(slots: list[int], prices: list[int], listed: list[bool]) -> list[bool]:
        return [alone._set(*change) for change in zip(slots, prices, listed, strict=True)]

    real = batched._apply

    def counted(slots: list[int], prices: list[int], listed: list[bool]) -> list[bool]:
        assert batched.engine is not None
        cap = batched.engine.scenario.tools.max_active_listings
        binds = len(batched.engine.live.listings) + listed.count(False) > cap
        ways["slot by slot" if binds else "batched"] += 1
        return real(slots, prices, listed)

    alone._apply = one_by_one  # type: ignore[method-assign]
    batched._apply = counted  # type: ignore[method-assign]
    rng = np.random.default_rng(1)
    for env in (batched, alone):
        env.reset(seed=3, options={"index": 2, "start_day": 40})
    for _ in range(130):  # two episodes and more
        # Some steps delist most slots, some list most: the cap binds at some steps only.
        off = rng.random(96) < rng.choice([0.1, 0.7, 0.95])
        levels = np.where(off, 0, rng.integers(1, 8, size=96))
        obs, reward, done, _, info = batched.step(levels)
        twin_obs, twin_reward, twin_done, _, twin_info = alone.step(levels)
        assert np.array_equal(obs, twin_obs) and reward == twin_reward and done == twin_done
        assert batched.engine is not None and alone.engine is not None
        assert batched.engine.state_hash() == alone.engine.state_hash()
        if done:
            for env in (batched, alone):
                env.reset()
    assert ways["batched"] > 0 and ways["slot by slot"] > 0, ways

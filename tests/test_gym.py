"""`MerchantBench-v0`: Gymnasium's own checker, the spaces, reward and termination, the seeding
contract, determinism against an in-process run, nothing hidden in observations or infos, and a
vector env of 4 in parallel processes."""

from __future__ import annotations

import json
import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from frontend_script import (
    SCENARIO,
    action_script,
    assert_status_states,
    new_session,
    play_in_process,
    scan,
)
from merchantbench.gym import ENV_ID, MerchantBenchEnv, make_vector_env
from merchantbench.tools.toolset import DECLARED

SEED = 5


def make() -> MerchantBenchEnv:
    return gym.make(ENV_ID, scenario=SCENARIO).unwrapped  # type: ignore[return-value]


def actions(env: MerchantBenchEnv, script: list[list[tuple[str, dict]]]) -> list[dict[str, Any]]:
    index = {name: i for i, name in enumerate(env.tool_names)}
    return [
        {"tool": index.get(tool, len(index)), "args": json.dumps(args)}
        for window in script
        for tool, args in window
    ]


def test_gymnasiums_checker_passes_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(make())


def test_spaces_follow_the_declarations() -> None:
    env = make()
    assert env.tool_names == tuple(s["function"]["name"] for s in new_session(1).tool_schemas())
    assert env.action_space["tool"].n == len(DECLARED.tools())
    obs, info = env.reset(seed=SEED)
    assert obs in env.observation_space
    assert info["brief"] == env.unwrapped.session.surface.brief() and info["window"] == 0
    assert [t["function"]["name"] for t in info["tool_schemas"]] == list(env.unwrapped.tool_names)
    assert obs["text"] == env.session.surface.observation()
    store = obs["store"]
    assert (store["net_assets"][0], store["balance"][0], store["window"]) == (3000.0, 2000.0, 0)
    assert (store["calls_left_in_window"], store["store_open"], store["stars"]) == (100, 1, 4)


def test_a_scripted_run_matches_in_process_with_rewards_summing_to_the_gain() -> None:
    script = action_script(SEED)
    reference = play_in_process(SEED, script)
    env = make()
    obs, _ = env.reset(seed=SEED)
    rewards, results, terminated = [], [], False
    for action in actions(env, script):
        assert not terminated
        obs, reward, terminated, truncated, info = env.step(action)
        assert obs in env.observation_space and not truncated
        rewards.append(reward)
        results.append(info["result"])
        scan({"text": obs["text"], "store": list(obs["store"]), "info": info}, [])
    assert terminated and len(results) == len(reference.results)
    for got, expected in zip(results, reference.results, strict=True):
        if not expected["ok"] and expected["error"]["code"] == "unknown_tool":
            # A name outside the action space reaches the surface as its index.
            index = f"'{len(DECLARED.tools())}'"
            assert got["error"]["code"] == "unknown_tool" and index in got["error"]["message"]
        else:
            assert got == expected
    assert env.session.state_hash() == reference.session.state_hash()
    gain = reference.session.engine.state.ledger.accounts.net_assets - 300_000
    assert gain != 0 and sum(rewards) == pytest.approx(gain / 100, abs=1e-6)
    moved = [i for i, r in enumerate(rewards) if r != 0]
    tools = [tool for window in script for tool, _ in window]
    assert moved and all(tools[i] == "end_of_step" for i in moved)


def test_the_store_observation_is_the_store_status_of_the_text() -> None:
    env = make()
    obs, info = env.reset(seed=SEED)
    surface = env.session.surface
    orders, windows = 0, 0
    for action in actions(env, action_script(SEED)):
        status = surface.status()
        store = obs["store"]
        assert set(store) == {*set(status.to_json()) & set(store), "store_open"}
        for name, value in store.items():
            expected = status.store == "open" if name == "store_open" else getattr(status, name)
            assert np.asarray(value).item() == expected, name
        assert (info["window"], info["hour"]) == (status.window, status.hour)
        if tool_of(env, action) == "end_of_step" or windows == 0:
            orders = assert_status_states(status.to_json(), obs["text"], orders)
        windows += tool_of(env, action) == "end_of_step"
        obs, _, terminated, _, info = env.step(action)
    assert terminated and orders > 0 and obs["store"]["window"] == env.scenario.clock.windows


def tool_of(env: MerchantBenchEnv, action: dict[str, Any]) -> str:
    index = int(action["tool"])
    return env.tool_names[index] if index < len(env.tool_names) else "?"


def test_a_refused_action_changes_nothing_and_earns_nothing() -> None:
    env = make()
    env.reset(seed=SEED)
    before = env.session.state_hash()
    for action in ({"tool": 99, "args": "{}"}, {"tool": 5, "args": "{not json"}):
        obs, reward, terminated, _, info = env.step(action)
        assert not info["result"]["ok"] and reward == 0 and not terminated
    codes = [e["error"] for e in env.session.trace]
    assert codes == ["unknown_tool", "invalid_json"] and env.session.state_hash() == before
    assert obs["store"]["calls_left_in_window"] == 98


def test_seeding_contract() -> None:
    first, second = make(), make()
    a, _ = first.reset(seed=11)
    b, _ = second.reset(seed=11)
    assert first.session.seed == second.session.seed == 11 and a["text"] == b["text"]
    first.reset()
    second.reset()
    drawn = first.session.seed
    assert drawn == second.session.seed != 11  # drawn from np_random, seeded by seed=11
    first.reset()
    assert first.session.seed != drawn


def test_a_fixed_market_keeps_the_catalog_across_seeds() -> None:
    def product_ids(env: Any, seed: int) -> list[str]:
        env.reset(seed=seed)
        assert env.session.seed == seed
        return list(env.session.market.product_ids)

    fixed = gym.make(ENV_ID, scenario=SCENARIO, market_seed=1).unwrapped
    assert product_ids(fixed, 2) == product_ids(fixed, 3)
    assert product_ids(make(), 2) != product_ids(make(), 3)


def test_a_vector_env_of_4_runs_stores_in_parallel_processes() -> None:
    seeds = [21, 22, 23, 24]
    envs = make_vector_env(4, scenario=SCENARIO)
    try:
        script = action_script(21)
        singles = [make() for _ in seeds]
        for env, seed in zip(singles, seeds, strict=True):
            env.reset(seed=seed)
        obs, _ = envs.reset(seed=seeds)
        for action in actions(singles[0], script)[:40]:
            obs, rewards, terminated, _, info = envs.step(
                {"tool": np.full(4, action["tool"]), "args": (action["args"],) * 4}
            )
            expected = [env.step(action) for env in singles]
            assert list(obs["text"]) == [e[0]["text"] for e in expected]
            assert list(rewards) == [e[1] for e in expected]
        assert len({process.pid for process in envs.unwrapped.processes}) == 4  # type: ignore[attr-defined]
        hashes = envs.call("state_hash")
        assert list(hashes) == [env.session.state_hash() for env in singles]
    finally:
        envs.close()

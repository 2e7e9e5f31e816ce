"""`MerchantBench-v0` sealed: Gymnasium's checker passes; an env replays its own episode numbers
(Gymnasium's seeding contract) while another env gets other markets for the same numbers; the
seed is of the sealed range, kept host side, never in an observation, info, render or repr; the
commitment opens with the revealed seed and salt, and a public env replays the revealed seed."""

from __future__ import annotations

import json
import pickle
import warnings
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

from frontend_script import SCENARIO, action_script, play_in_process, scan
from merchantbench.gym import ENV_ID, MerchantBenchEnv, make_vector_env
from merchantbench.seeds import is_sealed_range, verify_commitment


@pytest.fixture(autouse=True, scope="module")
def private_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every sealed episode builds a market of its own: keep them out of the shared cache."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MERCHANTBENCH_CACHE", str(tmp_path_factory.mktemp("sealed-markets")))
        yield


def make(**kwargs: Any) -> MerchantBenchEnv:
    return gym.make(ENV_ID, scenario=SCENARIO, **kwargs).unwrapped  # type: ignore[return-value]


def forms_of(seed: int, salt: str) -> list[str]:
    """How a leaked seed could look: decimal, hex, its two 64-bit words; and the salt."""
    return [str(seed), f"{seed:x}", str(seed >> 64), str(seed & (2**64 - 1)), salt]


def step_all(env: MerchantBenchEnv, script: list[list[tuple[str, dict]]]) -> list[Any]:
    """Play the script; every observation and info the env gave, in order."""
    index = {name: i for i, name in enumerate(env.tool_names)}
    seen = []
    for window in script:
        for tool, args in window:
            action = {"tool": index.get(tool, len(index)), "args": json.dumps(args)}
            obs, reward, terminated, truncated, info = env.step(action)
            seen.append({"text": obs["text"], "store": {k: str(v) for k, v in obs["store"].items()},
                         "reward": reward, "info": info, "render": env.render()})  # fmt: skip
    assert terminated and not truncated
    return seen


def test_gymnasiums_checker_passes_on_a_sealed_env() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(make(sealed=True))


def test_an_env_replays_its_episodes_and_another_env_gets_other_markets() -> None:
    first, other = make(sealed=True), make(sealed=True)
    first.reset(seed=7)
    seed, commitment = first.session.seed, first.seed_commitment
    assert is_sealed_range(seed) and first.sealed and not make().sealed
    first.reset(seed=8)
    assert first.session.seed != seed and is_sealed_range(first.session.seed)
    first.reset(seed=7)  # the same number: the same sealed seed, market and commitment
    assert (first.session.seed, first.seed_commitment) == (seed, commitment)
    other.reset(seed=7)  # another key: another market for the same number
    assert other.session.seed != seed and other.seed_commitment != commitment
    assert list(other.session.market.product_ids) != list(first.session.market.product_ids)
    first.reset()  # no seed: a number from np_random (seeded by seed=7), then derived
    drawn = first.session.seed
    first.reset(seed=7)
    first.reset()
    assert first.session.seed == drawn != seed and is_sealed_range(drawn)


def test_the_seed_stays_host_side_and_reveals_to_a_public_replay() -> None:
    env = make(sealed=True, render_mode="ansi")
    obs, info = env.reset(seed=3)
    secret = env.reveal()  # host side, as `merchantbench reveal` reads sealed/seed
    assert env.session.seed == secret.seed
    assert verify_commitment(secret.seed, secret.salt, env.seed_commitment)
    script = action_script(secret.seed)  # a script built on the sealed market (host side)
    seen = [{"text": obs["text"], "info": info}, *step_all(env, script)]
    forbidden = forms_of(secret.seed, secret.salt)
    assert len(seen) > 100
    for answer in seen:
        scan(answer, forbidden)
    for shown in (repr(env), str(env), repr(env._sealed), repr(secret), repr(env.spec)):
        assert not [s for s in forbidden if s in shown], shown
    assert "sealed" in repr(env._sealed) and "sealed" in repr(secret)
    replay = make()  # a public env with the revealed seed plays the same run
    replay.reset(seed=secret.seed)
    step_all(replay, script)
    assert replay.session.state_hash() == env.session.state_hash()
    assert play_in_process(secret.seed, script).session.state_hash() == env.state_hash()


def test_a_sealed_env_refuses_a_public_market_and_a_public_env_has_nothing_to_reveal() -> None:
    with pytest.raises(ValueError, match="market_seed or sealed"):
        make(sealed=True, market_seed=1)
    public = make()
    public.reset(seed=1)
    with pytest.raises(RuntimeError, match="not a sealed env"):
        public.reveal()
    with pytest.raises(RuntimeError, match="reset"):
        make(sealed=True).reveal()


def test_the_key_is_drawn_per_env_so_a_pickled_spec_carries_no_secret() -> None:
    env = make(sealed=True)
    env.reset(seed=1)
    spec = pickle.dumps(env.spec)  # what a vector env ships to its worker processes
    assert env.spec is not None and env.spec.kwargs == {"scenario": SCENARIO, "sealed": True}
    assert not [s for s in forms_of(env.reveal().seed, env.reveal().salt) if s.encode() in spec]
    assert env._sealed is not None and env._sealed._key not in spec


def test_a_sealed_vector_env_gives_each_store_its_own_sealed_run() -> None:
    envs = make_vector_env(2, vectorization_mode="sync", scenario=SCENARIO, sealed=True)
    try:
        obs, infos = envs.reset(seed=5)
        commitments = envs.get_attr("seed_commitment")
        assert len(set(commitments)) == 2
        assert all(is_sealed_range(e.unwrapped.session.seed) for e in envs.unwrapped.envs)  # type: ignore[attr-defined]
        scan({"text": list(obs["text"]), "infos": str(infos)}, [])
    finally:
        envs.close()

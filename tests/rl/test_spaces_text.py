"""The text spaces of one store (`merchantbench.spaces.StoreText`): an `AsyncVectorEnv` with
shared memory hands back the real text (once 65,536 tab characters), and `sample()` is fast
enough for Gymnasium's and PettingZoo's API tests at the default memory-document size."""

from __future__ import annotations

import time
from typing import Any

import gymnasium as gym
import numpy as np

from merchantbench.scenario import load_scenario
from merchantbench.spaces import StoreText, action_space, observation_space


class _Texts(gym.Env[dict[str, Any], int]):
    """A tiny env with the store's observation space: the text says which step it is."""

    def __init__(self) -> None:
        self.observation_space = observation_space(load_scenario("smoke"))
        self.action_space = gym.spaces.Discrete(2)
        self.count = 0

    def _obs(self) -> dict[str, Any]:
        obs = self.observation_space.sample()
        obs["text"] = f"Day {self.count}: 你好, tab\there"
        return obs

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        super().reset(seed=seed)
        self.count = 0
        return self._obs(), {}

    def step(self, action: int) -> Any:
        self.count += 1
        return self._obs(), 0.0, False, False, {}


def test_async_vector_env_with_shared_memory_reads_the_text() -> None:
    for copy in (True, False):
        envs = gym.vector.AsyncVectorEnv([_Texts, _Texts], shared_memory=True, copy=copy)
        try:
            obs, _ = envs.reset(seed=0)
            assert list(obs["text"]) == ["Day 0: 你好, tab\there"] * 2
            obs, *_ = envs.step(np.array([0, 1]))
            assert list(obs["text"]) == ["Day 1: 你好, tab\there"] * 2
            assert obs["text"][1] == "Day 1: 你好, tab\there"
        finally:
            envs.close()


def test_sample_is_fast_and_stays_in_the_space() -> None:
    space = action_space(load_scenario("paper"), [f"t{i}" for i in range(26)])
    space.seed(3)
    started = time.perf_counter()
    samples = [space.sample() for _ in range(20)]
    assert time.perf_counter() - started < 8.0  # Text.sample(): about 11 s for 20 here
    assert all(space.contains(sample) for sample in samples)
    lengths = [len(sample["args"]) for sample in samples]
    assert max(lengths) > space["args"].max_length // 4  # lengths uniform, as Text's
    text = StoreText(8, min_length=2, charset="ab")
    text.seed(0)
    assert {len(text.sample()) for _ in range(200)} == set(range(2, 9))
    assert text.sample(mask=(3, np.array([1, 0], dtype=np.int8))) == "aaa"

"""Steps per second of `MerchantBench-v0` under a random-tool policy: one env in one process,
and a vector env of 4 in parallel processes.

The policy picks a tool uniformly at random with no arguments (`{}`), so about one step in 26 is
`end_of_step` and runs a window; an episode that ends is reset. Run with:

    uv run python benchmarks/bench_gym.py [--steps 4000]

and record the printed figures, with the machine, in docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import gymnasium as gym
import numpy as np

from merchantbench.gym import ENV_ID, make_vector_env

SCENARIO = "smoke"


def one_process(steps: int) -> float:
    env = gym.make(ENV_ID, scenario=SCENARIO)
    rng = np.random.default_rng(0)
    env.reset(seed=1)
    tools = env.action_space["tool"].n  # type: ignore[index]
    start = time.perf_counter()
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step({"tool": int(rng.integers(tools)), "args": "{}"})
        if terminated or truncated:
            env.reset()
    return steps / (time.perf_counter() - start)


def vector_of_4(steps: int) -> float:
    envs = make_vector_env(4, scenario=SCENARIO)
    rng = np.random.default_rng(0)
    envs.reset(seed=[1, 2, 3, 4])
    tools = envs.single_action_space["tool"].n  # type: ignore[index]
    rounds = steps // 4
    start = time.perf_counter()
    for _ in range(rounds):  # autoreset starts a new episode where one ended
        envs.step({"tool": rng.integers(tools, size=4), "args": ("{}",) * 4})
    rate = 4 * rounds / (time.perf_counter() - start)
    envs.close()
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=4000)
    steps = parser.parse_args().steps
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, load {load}, "
          f"Python {platform.python_version()}; {steps} steps on {SCENARIO}")  # fmt: skip
    print(f"one process       {one_process(steps):9.0f} steps/s")
    print(f"vector env of 4   {vector_of_4(steps):9.0f} steps/s (async, 4 processes)")


if __name__ == "__main__":
    main()

"""The Gymnasium front end: `MerchantBench-v0`, one store run as a Gymnasium environment.

Importing this module registers `MerchantBench-v0`; `gymnasium.make("MerchantBench-v0",
scenario="smoke")` then builds one. It is the Gymnasium API on the one env core,
`merchantbench.market_env.MarketEnv`: this env IS the core's market of one merchant (the store
alone `merchantbench run` plays), whose PettingZoo view with several merchants is
`merchantbench.pettingzoo`. The spaces (one tool call; the window's text and store state),
rewards, seeds and sealed seeds, training episodes (`length`, `start_day`, …), run records
(`record_dir`), `restore` and `market_seed` are the core's, described there once. What is
Gymnasium's here:

- **reward**: the change in net assets (RMB) since the previous step; only `end_of_step`,
  which runs the window's 12 simulated hours, moves it. Bad arguments are never an exception:
  the tool answers a structured error, changes nothing, and the step's reward is 0.
- **terminated**: the run is over (horizon reached or store closed). `truncated` is never set;
  wrap the env in `TimeLimit` to bound an episode's steps.
- **info**: `{"tool": name, "result": the tool's JSON result, "window": index, "hour": the
  window's first hour, "reward_fen": the reward in integer fen}`; `reset`'s info carries the
  clock, the system `brief` and the `tool_schemas` (OpenAI function schemas; `tool` indexes
  them), and `run_dir` when recording.
- **reset(seed=N)** plays the run of seed N (the same run as `merchantbench run --seed N`);
  `reset()` without a seed draws the run's seed from the env's `np_random`, so a sequence of
  episodes is reproducible from the first seed (Gymnasium's seeding contract).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, SupportsFloat

import gymnasium as gym

from merchantbench.market_env import MarketEnv
from merchantbench.record.sealed import SealedEpisodes
from merchantbench.scenario import Scenario
from merchantbench.session import STORE, Session
from merchantbench.spaces import TEXT_CHARSET, store_state, store_state_space

__all__ = [
    "ENV_ID",
    "TEXT_CHARSET",
    "MerchantBenchEnv",
    "SealedEpisodes",
    "make_vector_env",
    "store_state",
    "store_state_space",
]

ENV_ID = "MerchantBench-v0"


class MerchantBenchEnv(MarketEnv, gym.Env[dict[str, Any], dict[str, Any]]):
    """One store run: the core's market of one merchant; see the module docstring.

    Args:
        scenario: A scenario preset name (`paper`, `small`, `smoke`) or a `Scenario`.
        overrides: `key=value` scenario overrides, as `--set` on the command line.
        market_seed: Keep one market for every episode (only outcomes follow the run's seed);
            by default the market is the run seed's, as in `merchantbench run`.
        catalog: A real catalog directory instead of the synthetic market.
        render_mode: `None` or `"ansi"` (render returns the observation text).
        **options: The core's (`MarketEnv`): `sealed`, `record_dir` (`reset`'s
            `info["run_dir"]` and `env.run_dir` name the episode's directory), `length`,
            `start_day`, `reward` (`info["reward_fen"]` is the step's reward in integer fen),
            `normalise`, `observation_chars`, `memory_chars`.

    Raises:
        ValueError: As `MarketEnv` (an unknown render mode, `market_seed` with `sealed` or
            `record_dir`, a training option that cannot be used, `start_day` with
            `record_dir`).
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 2}  # two windows a simulated day

    def __init__(
        self,
        scenario: str | Scenario = "smoke",
        overrides: Sequence[str] = (),
        market_seed: int | None = None,
        catalog: str | Path | None = None,
        render_mode: str | None = None,
        **options: Any,
    ) -> None:
        super().__init__(
            scenario, [STORE], overrides, catalog, render_mode, market_seed=market_seed, **options
        )
        self.action_space = self.action_spaces[STORE]
        self.observation_space = self.observation_spaces[STORE]

    @property
    def session(self) -> Session:
        """The run's session (host side: state hash, snapshot); reset() first."""
        return self.merchant_session(STORE)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start a run: of seed `seed`, or of a seed drawn from `np_random` (sealed: of the
        sealed seed derived from that number). `options={"start_day": d}` opens this episode's
        store on market day d (training episodes; not with `record_dir`)."""
        observations, infos = self._reset(seed, options)
        return observations[STORE], infos[STORE]

    def step(
        self, action: dict[str, Any]
    ) -> tuple[dict[str, Any], SupportsFloat, bool, bool, dict[str, Any]]:
        """One tool call; `end_of_step` runs the window. See the module docstring."""
        observations, rewards, _, over, infos = self._step({STORE: action}, [STORE])
        return observations[STORE], rewards[STORE], over[STORE], False, infos[STORE]

    def render(self) -> str | None:  # type: ignore[override]
        """The observation text, in `ansi` mode."""
        if self.render_mode != "ansi":
            return None
        return self._text(STORE)


def make_vector_env(
    num_envs: int, vectorization_mode: str = "async", **env_kwargs: Any
) -> gym.vector.VectorEnv:
    """`num_envs` stores, in parallel processes by default (`"sync"`: one process).

    Use this rather than a bare `gymnasium.make_vec`: Gymnasium's async vector env reads `Text`
    observations out of shared memory once, when it is built, so with its default
    `shared_memory=True` every observation text would be 65,536 tab characters; here it is off.
    """
    vector_kwargs = {"shared_memory": False} if vectorization_mode == "async" else {}
    return gym.make_vec(
        ENV_ID,
        num_envs=num_envs,
        vectorization_mode=vectorization_mode,
        vector_kwargs=vector_kwargs,
        **env_kwargs,
    )


gym.register(id=ENV_ID, entry_point="merchantbench.gym:MerchantBenchEnv")

"""The Gymnasium front end: `MerchantBench-v0`, one store run as a Gymnasium environment.

Importing this module registers `MerchantBench-v0`; `gymnasium.make("MerchantBench-v0",
scenario="smoke")` then builds one. It is a thin adapter over the agent surface:

- **action**: one tool call, `{"tool": Discrete(number of tools), "args": Text}`; `tool` indexes
  `env.unwrapped.tool_names` (the order of `surface.tool_schemas()`), `args` is a JSON object
  string (an empty string means no arguments). Bad arguments are never an exception: the tool
  answers a structured error, changes nothing, and the step's reward is 0.
- **observation**: `{"text": the open window's observation, "store": the public store state}`,
  the state being the surface's store status (`surface.status()`: the numbers the observation
  text states, plus open orders, orders placed and calls left; reading it costs no call of the
  window and is not in the trace) as arrays: see `store_state_space`.
- **reward**: the change in net assets (RMB) since the previous step; only `end_of_step`,
  which runs the window's 12 simulated hours, moves it.
- **terminated**: the run is over (horizon reached or store closed). `truncated` is never set;
  wrap the env in `TimeLimit` to bound an episode's steps.
- **info**: `{"tool": name, "result": the tool's JSON result, "window": index, "hour": the
  window's first hour}`; `reset`'s info carries the clock, the system `brief` and the
  `tool_schemas` (OpenAI function schemas; `tool` indexes them).
- **reset(seed=N)** plays the run of seed N (the same run as `merchantbench run --seed N`);
  `reset()` without a seed draws the run's seed from the env's `np_random`, so a sequence of
  episodes is reproducible from the first seed (Gymnasium's seeding contract).
- **sealed** (`gymnasium.make(ENV_ID, sealed=True)`): the env draws a secret key from the
  operating system when it is built and keeps it host side; episode N (`reset(seed=N)`, or N
  drawn from `np_random`) plays the run of a sealed-range seed derived from (key, N) by keyed
  BLAKE2b. The same env and N replay the same episode (Gymnasium's contract holds), but N says
  nothing about the market without the key: another env, or anyone else, gets another market.
  `env.unwrapped.seed_commitment` and `env.unwrapped.reveal()` are host side (docs/gym.md).
- **training episodes** (`length`, `start_day`, `reward`, `normalise`, `observation_chars`,
  `memory_chars`): the episodes of `merchantbench.rl.episode` (one definition: presets of 30, 90
  and 365 days, the store opening on any market day, rewards per window or at the end, the
  observation budget); `reset(options={"start_day": d})` moves one episode's first day.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

from merchantbench.agents.base import AgentSettings
from merchantbench.money import fen
from merchantbench.record.sealed import SealedEpisodes, SealedSeed
from merchantbench.rl.episode import (
    EpisodeConfig,
    EpisodeError,
    RewardMeter,
    RewardMode,
    bounded_observation,
    episode_brief,
    episode_scenario,
    open_on_start_day,
)
from merchantbench.runs.driver import Driver
from merchantbench.runs.lifecycle import RunLifecycle
from merchantbench.runs.spec import RunSpec
from merchantbench.scenario import Scenario, load_scenario
from merchantbench.session import Session
from merchantbench.spaces import (
    COUNT_BOUND,
    TEXT_CHARSET,
    action_call,
    action_space,
    call_action,
    observation_space,
    store_state,
    store_state_space,
)
from merchantbench.tools.status import StoreStatus
from merchantbench.tools.toolset import build_registry

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
_SEED_BOUND = COUNT_BOUND


class GymDriver(Driver[AgentSettings]):
    """The driver of a run recorded from the Gymnasium environment: the policy stepping it."""

    name = "gym"
    Settings = AgentSettings


class MerchantBenchEnv(gym.Env[dict[str, Any], dict[str, Any]]):
    """One store run; see the module docstring for the spaces, reward and seeding.

    Args:
        scenario: A scenario preset name (`paper`, `small`, `smoke`) or a `Scenario`.
        overrides: `key=value` scenario overrides, as `--set` on the command line.
        market_seed: Keep one market for every episode (only outcomes follow the run's seed);
            by default the market is the run seed's, as in `merchantbench run`.
        catalog: A real catalog directory instead of the synthetic market.
        render_mode: `None` or `"ansi"` (render returns the observation text).
        sealed: Play sealed runs: each episode's seed derives from a secret key the env draws
            from the OS and keeps host side (see the module docstring).
        record_dir: Write each episode as a run record (driver `gym`) in a new directory
            under this one (`episode-0001`, …), as `merchantbench run` would: trace,
            transcript, checkpoints, and the tables and metrics once the run ends; a record
            `merchantbench verify` can replay. An episode left by `reset` or `close` before it
            ended is suspended (resumable). `reset`'s `info["run_dir"]` names the episode's
            directory (also `env.run_dir`).
        length: A training episode of `30d`, `90d`, `365d` or a number of days (None: the
            scenario's run, from `start_day`). With any of the training options below, each
            episode is `merchantbench.rl.episode`'s (docs/rl.md).
        start_day: The market day (0-based) the store opens; the days before are simulated
            idle. `reset(options={"start_day": d})` sets it for one episode.
        reward: `"window"` (each step's change in net assets) or `"end"` (0 until the step
            that ends the episode, which gets the whole change). `info["reward_fen"]` is the
            step's reward in integer fen: over an episode they sum to its change exactly.
        normalise: Rewards divided by the initial net assets.
        observation_chars: Cut the observation text after this many characters (None: whole).
        memory_chars: Show at most this many characters of the memory document after the
            observation (0: none, the default; None: whole).

    Raises:
        ValueError: An unknown render mode, or `market_seed` with `sealed` (a public market
            would unseal the run) or with `record_dir` (a record plays the run seed's market);
            a training option that cannot be used (`EpisodeError`), or `start_day` with
            `record_dir` (a record starts on day 0).
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 2}  # two windows a simulated day

    def __init__(
        self,
        scenario: str | Scenario = "smoke",
        overrides: list[str] | tuple[str, ...] = (),
        market_seed: int | None = None,
        catalog: str | Path | None = None,
        render_mode: str | None = None,
        sealed: bool = False,
        record_dir: str | Path | None = None,
        length: str | int | None = None,
        start_day: int = 0,
        reward: RewardMode = "window",
        normalise: bool = False,
        observation_chars: int | None = None,
        memory_chars: int | None = 0,
    ) -> None:
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be None or 'ansi', not {render_mode!r}")
        if sealed and market_seed is not None:
            raise ValueError("give market_seed or sealed, not both: a public market unseals")
        if record_dir is not None and market_seed is not None:
            raise ValueError("give market_seed or record_dir, not both: a record plays the "
                             "run seed's market")  # fmt: skip
        if isinstance(scenario, str):
            scenario = load_scenario(scenario, overrides=list(overrides))
        if record_dir is not None and start_day:
            raise ValueError("give start_day or record_dir, not both: a record starts on day 0")
        if length is None and start_day:
            length = scenario.clock.days - start_day  # the scenario's run, from start_day
        self.episode_config = EpisodeConfig(
            scenario=scenario,
            length=scenario.clock.days if length is None else length,
            start_day=start_day,
            reward=reward,
            normalise=normalise,
            observation_chars=observation_chars,
            memory_chars=memory_chars,
        )
        self.base_scenario = scenario
        self.training = (length, start_day, reward, normalise, observation_chars, memory_chars) != (
            None, 0, "window", False, None, 0
        )  # fmt: skip
        self.scenario = self._episode_scenario(start_day)
        self.market_seed = market_seed
        self.catalog = None if catalog is None else Path(catalog)
        self.render_mode = render_mode
        schemas = build_registry(scenario).schema_list()
        self.tool_names: tuple[str, ...] = tuple(s["function"]["name"] for s in schemas)
        self.action_space = action_space(scenario, self.tool_names)
        self.observation_space = observation_space(scenario, self._max_windows())
        self._session: Session | None = None
        self._episode_start = start_day
        self._meter = RewardMeter(self.episode_config, 0)
        self._sealed = SealedEpisodes() if sealed else None
        self._episode: SealedSeed | None = None  # the sealed episode being played
        self.record_dir = None if record_dir is None else Path(record_dir)
        self._life: RunLifecycle | None = None  # the episode's run record, with record_dir

    def _episode_scenario(self, start_day: int) -> Scenario:
        if not self.training:
            return self.base_scenario
        config = dataclasses.replace(self.episode_config, start_day=start_day)
        try:
            config.check()  # reward mode, budget, preset, start day: one-line reasons
            return episode_scenario(config)
        except EpisodeError as exc:
            raise ValueError(str(exc)) from None

    def _max_windows(self) -> int:
        """The last window any episode of this env can reach (starting days vary by reset)."""
        if not self.training:
            return self.scenario.clock.windows
        per_day = 24 // self.scenario.clock.hours_per_window
        return self.base_scenario.market.days * per_day

    @property
    def sealed(self) -> bool:
        """Whether the env plays sealed runs."""
        return self._sealed is not None

    # --- host side ------------------------------------------------------------------------------
    @property
    def session(self) -> Session:
        """The run's session (host side: state hash, snapshot); reset() first."""
        if self._session is None:
            raise RuntimeError("call reset() before using the environment")
        return self._session

    def state_hash(self) -> str:
        """The engine's state hash (host side; e.g. `vector_env.call("state_hash")`)."""
        return self.session.state_hash()

    @property
    def seed_commitment(self) -> str:
        """The commitment (`seeds.commitment`, SHA-256 hex) to the sealed episode's seed
        (host side, as a sealed run's `run.json` records it); reset() first."""
        return self._sealed_episode().commitment.sha256

    def reveal(self) -> SealedSeed:
        """The sealed episode's seed and salt (host side, after the episode: a public env's
        `reset(seed=revealed.seed)` replays it); reset() first."""
        return self._sealed_episode()

    def _sealed_episode(self) -> SealedSeed:
        if self._sealed is None:
            raise RuntimeError("not a sealed env: its seeds are public")
        if self._episode is None:
            raise RuntimeError("call reset() before using the environment")
        return self._episode

    def _run_seed(self, seed: int | None) -> int:
        """The seed of the run an episode plays: `seed`, or one drawn from `np_random`; in a
        sealed env, the sealed seed derived from that number."""
        number = seed if seed is not None else int(self.np_random.integers(_SEED_BOUND))
        if self._sealed is None:
            return number
        self._episode = self._sealed.episode(number)
        return self._episode.seed

    def _open(self, run_seed: int) -> Session:
        return Session.open(self.scenario, run_seed, self.catalog, market_seed=self.market_seed)

    def _record(self, run_seed: int) -> RunLifecycle:
        """A new run record of the episode under `record_dir`."""
        assert self.record_dir is not None
        spec = RunSpec("gym", self.scenario, run_seed, catalog=self.catalog, sealed=self._episode)
        number = 1
        while (self.record_dir / f"episode-{number:04d}").exists():
            number += 1
        run_dir = self.record_dir / f"episode-{number:04d}"
        return RunLifecycle.open(spec, run_dir, driver=GymDriver())

    def _leave_record(self) -> None:
        """Suspend the episode's record if it has not ended (resumable), and forget it."""
        if self._life is not None:
            self._life.suspend()
            self._life = None

    def close(self) -> None:
        """Suspend the episode's record if one is being written and has not ended."""
        self._leave_record()
        super().close()

    def restore(self, blob: bytes) -> None:
        """Restore a `session.snapshot()` (host side; the conformance check's); the next
        step's reward counts from the restored net assets. A recorded episode's record is cut
        back to the snapshot too."""
        if self._life is not None:
            self._life.rewind(blob)
        else:
            self.session.restore(blob)
        self._meter.restart_from(fen(self.session.surface.status().net_assets))

    @staticmethod
    def _clock(status: StoreStatus) -> dict[str, int]:
        return {"window": status.window, "hour": status.hour}

    def _observe(self, status: StoreStatus) -> dict[str, Any]:
        return {"text": self._text(), "store": store_state(status)}

    def _text(self) -> str:
        return bounded_observation(self.session, self.episode_config)  # whole by default

    # --- the Gymnasium API ----------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start a run: of seed `seed`, or of a seed drawn from `np_random` (sealed: of the
        sealed seed derived from that number). `options={"start_day": d}` opens this episode's
        store on market day d (training episodes; not with `record_dir`)."""
        super().reset(seed=seed)
        self._leave_record()
        start_day = self._start_day(options)
        self.scenario = self._episode_scenario(start_day)
        run_seed = self._run_seed(seed)
        if self.record_dir is None:
            self._session = self._open(run_seed)
            open_on_start_day(self._session, dataclasses.replace(self.episode_config,
                                                                 start_day=start_day))  # fmt: skip
        else:
            self._life = self._record(run_seed)
            self._session = self._life.session
        surface = self._session.surface
        status = surface.status()
        self._episode_start = start_day
        self._meter = RewardMeter(self.episode_config, fen(status.net_assets))
        info = {
            "brief": self._brief(),
            "tool_schemas": surface.tool_schemas(),
            **self._clock(status),
            **self._record_info(),
        }
        return self._observe(status), info

    def _brief(self) -> str:
        """The system brief; a training episode's says which days it covers."""
        if not self.training:
            return self.session.surface.brief()
        config = dataclasses.replace(self.episode_config, start_day=self._episode_start)
        return episode_brief(self.session, config)

    def _start_day(self, options: dict[str, Any] | None) -> int:
        start_day = (options or {}).get("start_day", self.episode_config.start_day)
        if start_day and not self.training:
            raise ValueError("options start_day needs a training env: make it with length=...")
        if isinstance(start_day, bool) or not isinstance(start_day, int | np.integer):
            raise ValueError(f"start_day is a market day ≥ 0, not {start_day!r}")
        return int(start_day)

    def _record_info(self) -> dict[str, Any]:
        return {} if self._life is None else {"run_dir": str(self._life.run_dir)}

    @property
    def run_dir(self) -> Path | None:
        """The recorded episode's run directory (None without `record_dir`)."""
        return None if self._life is None else self._life.run_dir

    def step(
        self, action: dict[str, Any]
    ) -> tuple[dict[str, Any], SupportsFloat, bool, bool, dict[str, Any]]:
        """One tool call; `end_of_step` runs the window. See the module docstring."""
        surface = self.session.surface
        if self._life is None:
            tool, result = call_action(surface, self.tool_names, action)
        else:  # the lifecycle checkpoints as its policy says after a window, finishes when over
            tool, args = action_call(self.tool_names, action)
            result = self._life.call(tool, args).result
        status = surface.status()
        reward_fen = self._meter.reward_fen(fen(status.net_assets), surface.over)
        info = {"tool": tool, "result": result, **self._clock(status), "reward_fen": reward_fen}
        return self._observe(status), self._meter.value(reward_fen), surface.over, False, info

    def render(self) -> str | None:  # type: ignore[override]
        """The observation text, in `ansi` mode."""
        if self.render_mode != "ansi":
            return None
        return self._text()


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

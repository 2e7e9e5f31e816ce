"""The one RL environment core: a market of merchants, stepped one tool call per merchant.

`MarketEnv` is every behaviour of the two RL front ends, defined once; they are views of it:

- `merchantbench.gym.MerchantBenchEnv` (Gymnasium, `MerchantBench-v0`) is its market of one
  merchant, the store alone that `merchantbench run` plays: `reset` and `step` hand back that
  merchant's entry of each per-merchant dict.
- `merchantbench.pettingzoo.MerchantBenchParallelEnv` (PettingZoo `ParallelEnv`) is the market
  of any number of merchants, one PettingZoo agent each (docs/arena.md).

A market of one is a store alone (`Session`, its engine running its own hours, as `merchantbench
run`); of several, a `MarketSession` whose marketplace runs every store's hours together
(docs/design.md §11). For one merchant the two are the same bit for bit (same state hash).

What the core defines, for every merchant the same:

- **spaces** (`merchantbench.spaces`): action `{"tool": Discrete(number of tools), "args": Text}`,
  `tool` indexing `tool_names` (the order of `surface.tool_schemas()`), `args` a JSON object string
  (`""`: none); observation `{"text": the window's observation, "store": the store status}`. Bad
  arguments, an unknown tool or garbage are never an exception: the tool answers a structured
  error and nothing changes.
- **a step** makes each given merchant's call on the state at the step's start: first the calls
  of merchants already waiting, then every other call but `end_of_step`, then the `end_of_step`
  calls, each group in merchant-id order. `end_of_step` closes the window for its merchant; the
  last merchant still trading to close it runs the window's hours for the whole market.
- **rewards** (`rl.episode.RewardMeter`): the change in net assets since the previous step, in
  integer fen first (`info["reward_fen"]`; over an episode they sum to its change exactly), RMB
  as the reward; `reward="end"` pays it all on the step that ends the episode; `normalise`
  divides by the initial net assets.
- **seeds**: `reset(seed=N)` plays run N (a store alone: `merchantbench run --seed N`; a market:
  `merchantbench arena --seed N`); without a seed, one drawn from the env's `np_random` (seeded
  by the last `reset(seed=…)`). `market_seed` keeps one market for every episode (only outcomes
  follow the run seed). `sealed=True`: the env draws a secret key from the OS and plays episode
  N as a sealed-range seed derived from (key, N) (`record.sealed.SealedEpisodes`);
  `seed_commitment` and `reveal()` are host side.
- **training episodes** (`length`, `start_day`, `reward`, `normalise`, `observation_chars`,
  `memory_chars`): the episodes of `merchantbench.rl.episode` (docs/rl.md);
  `reset(options={"start_day": d})` moves one episode's first day. A store opening on a later
  day is a store alone's: a market of several opens on day 0 (refused otherwise).
- **records** (`record_dir`): each episode is written by the one run lifecycle
  (`runs.lifecycle.RunLifecycle`, a `gym` driver per merchant) in `record_dir/episode-NNNN`:
  a store alone's (the one merchant `store`, the Gymnasium env's) as the run record
  `merchantbench run` writes, any other market's as the arena record `merchantbench arena`
  writes (arena.json, one run record per merchant in `merchants/<id>/`). An episode left by
  `reset` or `close` before its end is suspended (resumable).
- **host side**: `market` (the `MarketSession`), `state_hash()`, `restore(snapshot)` (the next
  reward counts from the restored net assets; a record is cut back too), `run_dir`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding

from merchantbench.agents.base import AgentSettings
from merchantbench.catalog.cache import get_market, get_search_index
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
from merchantbench.runs.arena import ArenaSpec, Entrant
from merchantbench.runs.driver import Driver
from merchantbench.runs.lifecycle import RunLifecycle
from merchantbench.runs.spec import RunSpec
from merchantbench.scenario import Scenario, load_scenario
from merchantbench.session import STORE, MarketSession, Session
from merchantbench.sim.marketplace import MERCHANT_ID
from merchantbench.spaces import (
    COUNT_BOUND,
    action_call,
    action_space,
    observation_space,
    store_state,
)
from merchantbench.tools.status import StoreStatus
from merchantbench.tools.toolset import END_OF_STEP, build_registry

__all__ = ["GymDriver", "MarketEnv", "StepResult", "merchant_ids"]

StepResult = tuple[
    dict[str, dict[str, Any]],  # observations
    dict[str, float],  # rewards
    dict[str, bool],  # closed: the merchant's store closed (its deposit ran out)
    dict[str, bool],  # over: no more windows for the merchant
    dict[str, dict[str, Any]],  # infos
]


class GymDriver(Driver[AgentSettings]):
    """The driver of a run recorded from the env: the policy stepping it."""

    name = "gym"
    Settings = AgentSettings


def merchant_ids(merchants: int | Sequence[str]) -> list[str]:
    """The market's merchant ids, in the market's order: the ids given, or `merchant-1`, … for
    a count.

    Raises:
        ValueError: No merchants, a bad or repeated id.
    """
    if isinstance(merchants, int):
        if merchants < 1:
            raise ValueError("a market needs at least one merchant")
        width = len(str(merchants))
        return [f"merchant-{i:0{width}d}" for i in range(1, merchants + 1)]
    ids = list(merchants)
    if not ids:
        raise ValueError("a market needs at least one merchant")
    for merchant in ids:
        if not isinstance(merchant, str) or not MERCHANT_ID.fullmatch(merchant):
            raise ValueError(
                f"merchant id {merchant!r}: 1-32 of a-z 0-9 _ -, starting with a letter or digit"
            )
    if len(set(ids)) != len(ids):
        raise ValueError("two merchants have the same id")
    return sorted(ids)  # the market's order (sim.marketplace)


class MarketEnv:
    """A market of merchants as an RL environment; see the module docstring. The front ends
    (`MerchantBenchEnv`, `MerchantBenchParallelEnv`) add their API's `reset` and `step`.

    Args:
        scenario: A scenario preset name (`arena`, `paper`, `small`, `smoke`) or a `Scenario`.
        merchants: The merchants' ids, or how many (`merchant-1`, `merchant-2`, …).
        overrides: `key=value` scenario overrides, as `--set` on the command line.
        catalog: A real catalog directory instead of the synthetic market.
        render_mode: `None` or `"ansi"` (render returns the observation text).
        market_seed: Keep one market for every episode (only outcomes follow the run's seed);
            by default the market is the run seed's.
        sealed: Play sealed runs (see the module docstring).
        record_dir: Write each episode as a run record in a new directory under this one
            (`episode-0001`, …): trace, transcript, checkpoints, and the tables and metrics
            once the run ends; a record `merchantbench verify` can replay. A store alone only
            (`merchants=["store"]`, the Gymnasium env's).
        length: A training episode of `30d`, `90d`, `365d` or a number of days (None: the
            scenario's run, from `start_day`).
        start_day: The market day (0-based) the store opens; the days before are simulated
            idle. A market of one only.
        reward: `"window"` (each step's change in net assets) or `"end"` (0 until the step
            that ends the episode, which gets the whole change).
        normalise: Rewards divided by the initial net assets.
        observation_chars: Cut the observation text after this many characters (None: whole).
        memory_chars: Show at most this many characters of the memory document after the
            observation (0: none, the default; None: whole).

    Raises:
        ValueError: No merchants, a bad or repeated merchant id, an unknown render mode,
            `market_seed` with `sealed` (a public market would unseal the run) or with
            `record_dir` (a record plays the run seed's market), a training option that cannot
            be used (`EpisodeError`), `start_day` with `record_dir` (a record starts on day 0),
            `start_day` for a market of several.
    """

    def __init__(
        self,
        scenario: str | Scenario,
        merchants: int | Sequence[str],
        overrides: Sequence[str] = (),
        catalog: str | Path | None = None,
        render_mode: str | None = None,
        *,
        market_seed: int | None = None,
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
        self.possible_agents: list[str] = merchant_ids(merchants)
        self.agents: list[str] = []
        if isinstance(scenario, str):
            scenario = load_scenario(scenario, overrides=list(overrides))
        if record_dir is not None and start_day:
            raise ValueError("give start_day or record_dir, not both: a record starts on day 0")
        self._check_start_day(start_day)
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
        windows = self._max_windows()
        self.action_spaces: dict[str, spaces.Space[Any]] = {
            m: action_space(scenario, self.tool_names) for m in self.possible_agents
        }
        self.observation_spaces: dict[str, spaces.Space[Any]] = {
            m: observation_space(scenario, windows) for m in self.possible_agents
        }
        self._market: MarketSession | None = None
        self._sessions: dict[str, Session] = {}
        self._episode_start = start_day
        self._meters: dict[str, RewardMeter] = {}
        self._np_random: np.random.Generator | None = None
        self._np_random_seed: int | None = None
        self._sealed = SealedEpisodes() if sealed else None
        self._episode: SealedSeed | None = None  # the sealed episode being played
        self.record_dir = None if record_dir is None else Path(record_dir)
        self._life: RunLifecycle | None = None  # the episode's run record, with record_dir

    def _check_start_day(self, start_day: Any) -> None:
        if start_day and len(self.possible_agents) > 1:
            raise ValueError("a market of several merchants opens on day 0: start_day is a "
                             "store alone's")  # fmt: skip

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
    def market(self) -> MarketSession:
        """The market's host side (every merchant's session, snapshots); reset() first."""
        self._started()
        assert self._market is not None
        return self._market

    def merchant_session(self, merchant: str) -> Session:
        """One merchant's session (host side); reset() first."""
        self._started()
        return self._sessions[merchant]

    def _started(self) -> None:
        if self._market is None:
            raise RuntimeError("call reset() before using the environment")

    def state_hash(self) -> str:
        """The market's state hash (in a market of one, its store's; host side, e.g.
        `vector_env.call("state_hash")`)."""
        return self.market.state_hash()

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

    def _rng(self) -> np.random.Generator:
        """The env's `np_random` (Gymnasium's attributes, seeded as `gymnasium.Env` seeds)."""
        if self._np_random is None:
            self._np_random, self._np_random_seed = seeding.np_random()
        return self._np_random

    def _run_seed(self, seed: int | None) -> int:
        """The seed of the run an episode plays: `seed`, or one drawn from `np_random`; in a
        sealed env, the sealed seed derived from that number."""
        number = seed if seed is not None else int(self._rng().integers(COUNT_BOUND))
        if self._sealed is None:
            return number
        self._episode = self._sealed.episode(number)
        return self._episode.seed

    def _open(self, run_seed: int, start_day: int) -> dict[str, Session]:
        """The episode's sessions: a run record's store, a store alone, or a market of several."""
        ids = self.possible_agents
        if self.record_dir is not None:
            self._life = self._record(run_seed)
            return dict(self._life.market.sessions)  # a record starts on day 0
        market_seed = run_seed if self.market_seed is None else self.market_seed
        market = get_market(self.scenario, market_seed, catalog=self.catalog)
        index = get_search_index(self.scenario, market_seed, market, self.catalog)
        if len(ids) > 1:  # a market opens on day 0
            return MarketSession(self.scenario, market, run_seed, ids, index).sessions
        alone = Session(self.scenario, market, run_seed, index, merchant=ids[0])
        open_on_start_day(alone, dataclasses.replace(self.episode_config, start_day=start_day))
        return {ids[0]: alone}

    def _record(self, run_seed: int) -> RunLifecycle:
        """A new record of the episode under `record_dir`: a run record of the store alone
        (`merchants=["store"]`), else an arena record of the market (one run record per
        merchant in `merchants/<id>/`, as `merchantbench arena` writes), by the one lifecycle
        with a `gym` driver per merchant."""
        assert self.record_dir is not None
        number = 1
        while (self.record_dir / f"episode-{number:04d}").exists():
            number += 1
        out = self.record_dir / f"episode-{number:04d}"
        ids = self.possible_agents
        if ids == [STORE]:
            spec = RunSpec(
                GymDriver.name, self.scenario, run_seed, catalog=self.catalog, sealed=self._episode
            )
            return RunLifecycle.open(spec, out, driver=GymDriver())
        entrants = tuple(Entrant(m, GymDriver.name) for m in ids)
        market = ArenaSpec(self.scenario, run_seed, entrants, self.catalog, self._episode)
        drivers = {m: GymDriver() for m in ids}
        return RunLifecycle.open_market(market, out, drivers=drivers)

    def _leave_record(self) -> None:
        """Suspend the episode's record if it has not ended (resumable), and forget it."""
        if self._life is not None:
            self._life.suspend()
            self._life = None

    @property
    def run_dir(self) -> Path | None:
        """The recorded episode's directory: a store's run directory, a market's arena
        directory (None without `record_dir`)."""
        return None if self._life is None else self._life.layout.root

    def close(self) -> None:
        """Suspend the episode's record if one is being written and has not ended."""
        self._leave_record()

    def restore(self, blob: bytes) -> None:
        """Restore a `market.snapshot()` (host side; the conformance check's); the next step's
        rewards count from the restored net assets. A recorded episode's record is cut back to
        the snapshot too."""
        if self._life is not None:
            self._life.rewind(blob)
        else:
            self.market.restore(blob)
        for merchant, meter in self._meters.items():
            meter.restart_from(fen(self._sessions[merchant].surface.status().net_assets))
        self.agents = [m for m in self.possible_agents if not self._sessions[m].over]

    # --- one episode ----------------------------------------------------------------------------
    def _reset(
        self, seed: int | None, options: dict[str, Any] | None
    ) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
        """Open run `seed` (or one whose seed is drawn from `np_random`; sealed: the sealed seed
        derived from that number); `options={"start_day": d}` opens this episode's store on
        market day d. Returns each live merchant's observation and info."""
        if seed is not None:
            self._np_random, self._np_random_seed = seeding.np_random(seed)
        self._leave_record()
        start_day = self._start_day(options)
        self.scenario = self._episode_scenario(start_day)
        run_seed = self._run_seed(seed)
        self._sessions = self._open(run_seed, start_day)
        self._market = self._sessions[self.possible_agents[0]].market_session
        self._episode_start = start_day
        self.agents = [m for m in self.possible_agents if not self._sessions[m].over]
        observations, infos = {}, {}
        for merchant in self.agents:
            surface = self._sessions[merchant].surface
            status = surface.status()
            self._meters[merchant] = RewardMeter(self.episode_config, fen(status.net_assets))
            observations[merchant] = self._observe(merchant, status)
            infos[merchant] = {
                "brief": self._brief(merchant),
                "tool_schemas": surface.tool_schemas(),
                **self._clock(status),
                **({} if self.run_dir is None else {"run_dir": str(self.run_dir)}),
            }
        return observations, infos

    def _start_day(self, options: dict[str, Any] | None) -> int:
        start_day = (options or {}).get("start_day", self.episode_config.start_day)
        if start_day and not self.training:
            raise ValueError("options start_day needs a training env: make it with length=...")
        if isinstance(start_day, bool) or not isinstance(start_day, int | np.integer):
            raise ValueError(f"start_day is a market day ≥ 0, not {start_day!r}")
        self._check_start_day(start_day)
        return int(start_day)

    def _brief(self, merchant: str) -> str:
        """The system brief; a training episode's says which days it covers."""
        session = self._sessions[merchant]
        if not self.training:
            return session.surface.brief()
        config = dataclasses.replace(self.episode_config, start_day=self._episode_start)
        return episode_brief(session, config)

    def _step(self, actions: Mapping[str, Any], merchants: Sequence[str]) -> StepResult:
        """Make the calls of `actions` (merchant: action) in the step's order, then each of
        `merchants`' outcome; merchants no longer trading leave `agents`."""
        self._started()
        calls = {m: self._call(m, actions[m]) for m in self._call_order(actions)}
        observations, rewards, closed, over, infos = {}, {}, {}, {}, {}
        for merchant in merchants:
            session = self._sessions[merchant]
            status = session.surface.status()
            meter = self._meters[merchant]
            reward_fen = meter.reward_fen(fen(status.net_assets), session.over)
            observations[merchant] = self._observe(merchant, status)
            rewards[merchant] = meter.value(reward_fen)
            closed[merchant] = session.engine.state.closed
            over[merchant] = session.over
            info: dict[str, Any] = {**self._clock(status), "reward_fen": reward_fen}
            if merchant in calls:
                info = {"tool": calls[merchant][0], "result": calls[merchant][1], **info}
            infos[merchant] = info
        self.agents = [m for m in self.agents if not (closed.get(m) or over.get(m))]
        return observations, rewards, closed, over, infos

    def _call(self, merchant: str, action: Any) -> tuple[str, Any]:
        """Make the tool call an action names (never raises for bad input); a recorded
        episode's goes through its lifecycle, which checkpoints and finishes the record."""
        tool, args = action_call(self.tool_names, action)
        if self._life is not None:
            return tool, self._life.call(tool, args, merchant=merchant).result
        return tool, self._sessions[merchant].surface.call(tool, args)

    def _call_order(self, given: Mapping[str, Any]) -> list[str]:
        """The order in which a step's calls are made, so that each is made on the state at
        the step's start: first the merchants already waiting (their calls answer
        `window_closed`), then every other call but `end_of_step`, then the `end_of_step`
        calls (the last of which may run the window's hours); each group in merchant-id order,
        whatever the order of the action dict."""
        sessions = self._sessions
        waiting = [m for m in self.possible_agents if m in given and sessions[m].waiting]
        trading = [m for m in self.possible_agents if m in given and m not in waiting]
        closing = [m for m in trading if action_call(self.tool_names, given[m])[0] == END_OF_STEP]
        return waiting + [m for m in trading if m not in closing] + closing

    @staticmethod
    def _clock(status: StoreStatus) -> dict[str, int]:
        return {"window": status.window, "hour": status.hour}

    def _observe(self, merchant: str, status: StoreStatus) -> dict[str, Any]:
        return {"text": self._text(merchant), "store": store_state(status)}

    def _text(self, merchant: str) -> str:
        """The merchant's observation text (whole by default; a training budget cuts it)."""
        return bounded_observation(self.merchant_session(merchant), self.episode_config)

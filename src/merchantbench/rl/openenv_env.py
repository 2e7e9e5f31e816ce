"""The OpenEnv front end: a training episode as an OpenEnv `MCPEnvironment` (the `openenv` extra).

Its tools are MCP tools of a FastMCP server (the surface's own JSON schemas and
descriptions); OpenEnv routes `ListToolsAction` / `CallToolAction` to them through `step`, and
serves `reset` / `step` / `state` over its HTTP and WebSocket protocol (`make_app`). Each
WebSocket session gets an environment of its own.

- `reset(seed=i, split="train", length="30d", start_day=0, reward="window", normalise=False)`
  opens episode i of the split (`splits.episode_seed`; the test split needs the operator's pool
  file, given to the server, never by the client) and returns `MerchantBenchObservation`: the
  brief, the bounded observation and the store status.
- `step(CallToolAction(tool_name, arguments))` calls the tool; the answer is a
  `MerchantBenchToolObservation`: the tool's result, the reward of the call (the change in net
  assets when a window closed), `done`, and the next window's observation when the call closed
  one. Bad arguments are the tool's structured error, never an exception.
- `state`: episode id, steps, split, index, window (numbered as the observation text numbers
  it: the market's windows), the episode's first window, net-assets change (fen).

Serve: `MERCHANTBENCH_RL_SCENARIO=smoke uvicorn --factory merchantbench.rl.openenv_env:make_app`;
drive with `MerchantBenchClient` (OpenEnv's `MCPToolClient` that also reads this env's
observations), or with OpenEnv's stock clients: `MCPToolClient` (its reset observation keeps only
`done`; the window's text is the `get_observation` tool) and `GenericEnvClient` (every field, as
a dict). docs/rl.md.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from functools import partial
from pathlib import Path
from typing import Any

from fastmcp import FastMCP
from fastmcp.tools import Tool
from fastmcp.tools.base import ToolResult
from openenv.core.client_types import StepResult
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation, ToolError
from openenv.core.env_server.types import Action, Observation, State
from openenv.core.mcp_client import MCPToolClient
from pydantic import PrivateAttr

from merchantbench.rl.episode import Episode, EpisodeConfig, EpisodeError, StepOutcome
from merchantbench.rl.splits import SealedPool, SplitError, episode_seed
from merchantbench.scenario import load_scenario
from merchantbench.tools.toolset import build_registry

__all__ = [
    "MerchantBenchClient",
    "MerchantBenchObservation",
    "MerchantBenchOpenEnv",
    "MerchantBenchToolObservation",
    "make_app",
]

SCENARIO_ENV = "MERCHANTBENCH_RL_SCENARIO"
POOL_ENV = "MERCHANTBENCH_RL_POOL"


class MerchantBenchObservation(Observation):
    """What `reset` returns: the brief, the window's bounded observation, the store status and
    the tools' names.

    No field is called `tools`: OpenEnv's own `MCPToolClient` reads any observation with a
    `tools` key as a `ListToolsObservation` (a list of tool schemas), and would fail on names.
    """

    brief: str = ""
    text: str = ""
    store: dict[str, Any] = {}
    tool_names: list[str] = []


class MerchantBenchToolObservation(CallToolObservation):
    """A tool call's answer, with the next window's observation when the call closed one."""

    observation: str | None = None
    window: int = 0


class _EpisodeTool(Tool):
    """One tool of the surface, as a FastMCP tool with the surface's own schema."""

    _env: MerchantBenchOpenEnv = PrivateAttr()

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        outcome = await asyncio.to_thread(self._env.call, self.name, arguments)
        text = json.dumps(outcome.result, ensure_ascii=False)
        return ToolResult(content=text, structured_content=outcome.result)


class MerchantBenchOpenEnv(MCPEnvironment):
    """One MerchantBench training episode at a time, for OpenEnv.

    Args:
        scenario: The market scale and rules (`paper`, `small`, `smoke`).
        pool: The operator's sealed pool file (needed for the test split only).
        defaults: `EpisodeConfig` fields a `reset` does not name (`observation_chars`, ...).
    """

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(
        self, scenario: str = "smoke", pool: str | Path | None = None, **defaults: Any
    ) -> None:
        self.scenario = scenario
        self._pool = None if pool is None else SealedPool.load(Path(pool))
        self._defaults = defaults
        self._episode: Episode | None = None
        self._state = State()
        self._split, self._index = "train", 0
        self._last: StepOutcome | None = None
        server = FastMCP("merchantbench")
        super().__init__(server)  # the server's tools are added below, once named
        for schema in build_registry(load_scenario(scenario)).schema_list():
            function = schema["function"]
            tool = _EpisodeTool(
                name=function["name"],
                description=function.get("description"),
                parameters=function["parameters"],
            )
            tool._env = self
            server.add_tool(tool)

    def _config(self, **fields: Any) -> EpisodeConfig:
        return EpisodeConfig(scenario=self.scenario, **{**self._defaults, **fields})

    # --- the OpenEnv API ------------------------------------------------------------------------
    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        split: str = "train",
        length: str | int = "30d",
        start_day: int = 0,
        reward: str = "window",
        normalise: bool = False,
        **kwargs: Any,
    ) -> MerchantBenchObservation:
        """Open episode `seed` (an index, default 0) of `split`; see the module docstring.

        Raises:
            ValueError: An unknown split or preset, a start day past the market's year, or the
                test split on a server without the operator's pool (one-line reason).
        """
        index = 0 if seed is None else seed
        try:
            run_seed = episode_seed(split, index, self._pool)
            config = self._config(
                length=length, start_day=start_day, reward=reward, normalise=normalise
            )
            self._episode = Episode(config, run_seed)
        except (SplitError, EpisodeError) as exc:
            raise ValueError(str(exc)) from None
        self._split, self._index, self._last = split, index, None
        self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
        episode = self._episode
        return MerchantBenchObservation(
            brief=episode.brief(),
            text=episode.observation(),
            store=episode.status().model_dump(mode="json"),
            tool_names=[s["function"]["name"] for s in episode.tool_schemas()],
        )

    def call(self, tool: str, arguments: dict[str, Any]) -> StepOutcome:
        """A tool call of the open episode (what the MCP tools run)."""
        if self._episode is None:
            raise RuntimeError("call reset() before calling tools")
        self._last = self._episode.call(tool, arguments)
        return self._last

    def step(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        return self._answer(super().step(action, timeout_s=timeout_s, **kwargs))

    async def step_async(
        self, action: Action, timeout_s: float | None = None, **kwargs: Any
    ) -> Observation:
        return self._answer(await super().step_async(action, timeout_s=timeout_s, **kwargs))

    def _answer(self, observation: Observation) -> Observation:
        self._state.step_count += 1
        if not isinstance(observation, CallToolObservation) or self._episode is None:
            return observation
        last, self._last = self._last, None
        episode = self._episode
        closed = last is not None and last.result.get("closed_window") is not None
        return MerchantBenchToolObservation(
            tool_name=observation.tool_name,
            result=observation.result,
            error=observation.error,
            reward=0.0 if last is None else last.reward,
            done=episode.over,
            observation=episode.observation() if closed and not episode.over else None,
            window=episode.window,
        )

    def _step_impl(
        self, action: Action, timeout_s: float | None = None, **kwargs: Any
    ) -> Observation:
        """Any action but a tool call: an error observation (the episode is played by tools)."""
        return CallToolObservation(
            tool_name="",
            error=ToolError(error_type="invalid_args", message="send call_tool or list_tools"),
        )

    @property
    def state(self) -> State:
        episode = self._episode
        extra: dict[str, Any] = {"split": self._split, "index": self._index}
        if episode is not None:
            extra |= {
                "window": episode.window,
                "first_window": episode.first_window,
                "over": episode.over,
                "net_assets_change_fen": episode.change_fen,
            }
        return State(episode_id=self._state.episode_id, step_count=self._state.step_count, **extra)


def make_app(
    scenario: str | None = None, pool: str | Path | None = None, max_concurrent_envs: int = 8
) -> Any:
    """The OpenEnv HTTP/WebSocket app (a FastAPI app); scenario and pool default to
    `$MERCHANTBENCH_RL_SCENARIO` (else `smoke`) and `$MERCHANTBENCH_RL_POOL`."""
    scenario = scenario or os.environ.get(SCENARIO_ENV) or "smoke"
    pool = pool or os.environ.get(POOL_ENV) or None
    factory = partial(MerchantBenchOpenEnv, scenario=scenario, pool=pool)
    return create_app(
        factory,
        CallToolAction,
        MerchantBenchObservation,
        env_name="merchantbench",
        max_concurrent_envs=max_concurrent_envs,
    )


class MerchantBenchClient(MCPToolClient):
    """OpenEnv's MCP tool client, reading this env's observations and state in full."""

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[Observation]:
        data = payload.get("observation", {})
        common = {"done": payload.get("done", False), "reward": payload.get("reward")}
        if "brief" in data:
            observation: Observation = MerchantBenchObservation(**data, **common)
        elif "tool_name" in data:
            error = ToolError(**data["error"]) if data.get("error") else None
            observation = MerchantBenchToolObservation(**{**data, "error": error}, **common)
        else:
            return super()._parse_result(payload)
        return StepResult(observation=observation, **common)

    def _parse_state(self, payload: dict[str, Any]) -> State:
        return State(**payload)

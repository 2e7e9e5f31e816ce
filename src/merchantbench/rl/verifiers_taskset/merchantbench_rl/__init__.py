"""MerchantBench training episodes as a `verifiers` taskset (`vf-eval merchantbench-rl`).

This package runs in verifiers' own environment (it pins `mcp==2.0.0` and `openai<3`, which
MerchantBench's cannot use), made by `merchantbench.rl.verifiers_env`. It never imports
MerchantBench: each rollout's tool server (`StoreTools`, an MCP server verifiers launches per
rollout) starts the episode in MerchantBench's interpreter (`python -m
merchantbench.rl.mcp_episode`, over stdio) and forwards the model's tool calls to it, its
tools with their own schemas. `end_of_step` answers carry the window's reward; the tool server
keeps the sum in the rollout's state, and the task's reward `net_assets` is that sum: the
episode's change in net assets (RMB, or relative with `normalise`).

    vf-eval merchantbench-rl --env.taskset.python /path/to/merchantbench/python \
        --env.taskset.count 4 --env.taskset.length 30d --env.taskset.start-day 120 ...
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from typing import Any

import verifiers.v1 as vf
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.server.mcpserver.tools.base import Tool as ServerTool

__all__ = ["MerchantBenchTaskset"]

PROMPT = (
    "You run a drop-shipping store in a simulation, through the store tools. Read the rules "
    "(query_platform_rules) and the open window's observation (get_observation), act (search, "
    "list products, set prices, read orders), then call end_of_step to close the window; its "
    "answer has the next window's observation and the window's reward. Keep playing windows "
    "until end_of_step answers episode_over: true, then stop. Goal: the highest net assets."
)


class MerchantBenchData(vf.TaskData):
    split: str = "train"
    index: int = 0
    length: str = "30d"
    start_day: int = 0


class MerchantBenchState(vf.State):
    reward: float = 0.0
    reward_fen: int = 0
    net_assets_change_fen: int = 0
    episode_over: bool = False
    calls: int = 0


class StoreToolsConfig(vf.ToolsetConfig):
    python: str = ""
    """MerchantBench's interpreter (its environment); default `$MERCHANTBENCH_PYTHON`."""
    scenario: str = "smoke"
    normalise: bool = False
    pool: str | None = None
    """The operator's sealed pool file (the test split only)."""


class _Forward(ServerTool):
    """A tool whose call goes to the episode server as it is (its schema is the server's)."""

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False):
        text = await self.fn(**{"arguments": arguments})
        return self.fn_metadata.convert_result(text) if convert_result else text


class StoreTools(vf.Toolset[StoreToolsConfig, MerchantBenchState]):
    TOOL_PREFIX = None  # the store's tool names, bare

    async def setup_task(self, task: MerchantBenchData) -> None:
        config, data = self.config, task
        python = config.python or os.environ.get("MERCHANTBENCH_PYTHON", "")
        if not python:
            raise vf.ToolsetError("no MerchantBench interpreter: set MERCHANTBENCH_PYTHON")
        args = ["-m", "merchantbench.rl.mcp_episode", "--scenario", config.scenario,
                "--split", data.split, "--index", str(data.index), "--length", data.length,
                "--start-day", str(data.start_day)]  # fmt: skip
        if config.normalise:
            args.append("--normalise")
        if config.pool:
            args += ["--pool", config.pool]
        server = StdioServerParameters(command=python, args=args, env=dict(os.environ))
        read, write = await self._exit_stack.enter_async_context(stdio_client(server))
        self._session = await self._exit_stack.enter_async_context(ClientSession(read, write))
        await self._session.initialize()
        self._tools = (await self._session.list_tools()).tools

    def register(self, mcp: Any) -> None:
        for remote in getattr(self, "_tools", []):
            forward = self._with_state(self._forwarder(remote.name))
            mcp.add_tool(_placeholder, name=remote.name, description=remote.description or "")
            manager = mcp._tool_manager
            added = manager.get_tool(remote.name)
            fields = {name: getattr(added, name) for name in ServerTool.model_fields}
            fields |= {"fn": forward, "parameters": remote.input_schema, "is_async": True}
            manager._tools[remote.name] = _Forward(**fields)

    def _forwarder(self, name: str):
        async def forward(arguments: dict[str, Any]) -> str:
            result = await self._session.call_tool(name, arguments)
            text = "".join(getattr(part, "text", "") for part in result.content)
            self._account(text)
            return text

        return forward

    def _account(self, text: str) -> None:
        state = self.state
        state.calls += 1
        with contextlib.suppress(ValueError, TypeError):
            answer = json.loads(text)
            if isinstance(answer, dict) and "reward_fen" in answer:
                state.reward += float(answer["reward"])
                state.reward_fen += int(answer["reward_fen"])
                state.net_assets_change_fen = int(answer["net_assets_change_fen"])
                state.episode_over = bool(answer["episode_over"])


async def _placeholder(arguments: dict) -> str:
    """Replaced by the forwarding tool (registered for its name and description)."""
    return ""


class MerchantBenchTaskConfig(vf.TaskConfig):
    tools: StoreToolsConfig = StoreToolsConfig()


class MerchantBenchTask(vf.Task[MerchantBenchData, MerchantBenchState, MerchantBenchTaskConfig]):
    @classmethod
    def toolsets(cls, config: MerchantBenchTaskConfig) -> list[vf.Toolset]:
        return [StoreTools(config.tools)]

    @vf.reward
    async def net_assets(self, trace: vf.Trace) -> float:
        """The episode's reward: the sum of its window rewards (change in net assets)."""
        return float(trace.state.reward)

    @vf.metric
    async def episode_over(self, trace: vf.Trace) -> float:
        return 1.0 if trace.state.episode_over else 0.0

    @vf.metric
    async def net_assets_change_fen(self, trace: vf.Trace) -> float:
        return float(trace.state.net_assets_change_fen)


class MerchantBenchTasksetConfig(vf.TasksetConfig):
    task: MerchantBenchTaskConfig = MerchantBenchTaskConfig()
    split: str = "validation"
    first: int = 0
    count: int = 8
    length: str = "30d"
    start_day: int = 0


class MerchantBenchTaskset(vf.Taskset[MerchantBenchTask, MerchantBenchTasksetConfig]):
    def load(self) -> Iterator[MerchantBenchTask]:
        config = self.config
        for index in range(config.first, config.first + config.count):
            data = MerchantBenchData(
                id=f"{config.split}-{index}",
                name=f"merchantbench {config.split} {index} ({config.length} from day "
                f"{config.start_day})",
                prompt=PROMPT,
                split=config.split,
                index=index,
                length=config.length,
                start_day=config.start_day,
            )
            yield MerchantBenchTask(data, config.task)

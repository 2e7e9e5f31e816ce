"""One run played by an agent outside our process: the host side behind the MCP front end.

`HostedRun` opens (or resumes) an ordinary run record as a `RunLifecycle` driven by the `mcp`
driver, hands the agent's calls to the session's agent surface, checkpoints as the policy says,
and finishes the record when the run ends. It adds one thing to what the surface answers:
`end_of_step` also carries the next window's observation, or the run's summary once the run is
over, so a chat agent can play a whole year in one conversation without asking for the
observation each time.

The run record names its driver `mcp` (`McpDriver`, with the transport in its settings): the
agent lives in the MCP client; the runner never drives it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import anyio

from merchantbench.agents.base import AgentSettings
from merchantbench.mcp_surface import call_locked
from merchantbench.metrics.table1 import HEADLINE_METRICS
from merchantbench.record.manifest import RunManifest
from merchantbench.refusals import Refusal
from merchantbench.runs.driver import Driver
from merchantbench.runs.lifecycle import CheckpointPolicy, RunLifecycle
from merchantbench.runs.spec import RunSpec
from merchantbench.surface import AgentSurface
from merchantbench.tools.errors import failure

__all__ = ["MCP_AGENT", "SUMMARY_METRICS", "HostedRun", "McpDriver", "run_summary"]

MCP_AGENT = "mcp"
# What the final summary tells the agent: the headline metrics of the finished record.
SUMMARY_METRICS = HEADLINE_METRICS


class McpSettings(AgentSettings):
    """Which MCP transport served the run."""

    transport: Literal["stdio", "streamable-http"] = "stdio"


class McpDriver(Driver[McpSettings]):
    """The driver of a run served over MCP: the model of the MCP client plays it."""

    name = "mcp"
    acknowledges = True
    Settings = McpSettings


class HostedRun:
    """A run record whose agent calls tools from outside (see the module docstring).

    Args:
        spec: The run's driver (`mcp`, with its transport in `agent_settings`), scenario, seed.
        run_dir: The run directory.
        resume: Continue the run recorded in `run_dir` from its last checkpoint.
        checkpoints: When to checkpoint between windows (`RunLifecycle`'s default policy).
    """

    def __init__(
        self,
        spec: RunSpec,
        run_dir: Path,
        resume: bool = False,
        checkpoints: CheckpointPolicy | None = None,
    ) -> None:
        driver = McpDriver.from_settings(spec.agent_settings)
        self.life = RunLifecycle.open(
            spec, run_dir, resume=resume, driver=driver, checkpoints=checkpoints
        )
        self.summary: dict[str, Any] | None = None
        self.lock = anyio.Lock()  # MCP requests apply one at a time
        if self.life.over:  # resumed after its last window closed (killed while finishing)
            self.summary = run_summary(self.life.manifest, self.life.store_metrics(), self.surface)

    @property
    def surface(self) -> AgentSurface:
        """The agent surface of the run (brief, observation, tools, clock)."""
        return self.life.surface

    @property
    def state_hash(self) -> str:
        """The engine's state hash (host side: for tests and the conformance check)."""
        return self.life.session.state_hash()

    @property
    def finished(self) -> bool:
        """True once the run record has been finished."""
        return self.summary is not None

    def call(
        self,
        tool: str,
        args: dict[str, Any] | str | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """One tool call of the agent; `end_of_step` also says what comes next.

        Args:
            tool: The tool's name.
            args: Its arguments (a dict or a JSON object string).
            idempotency_key: As `AgentSurface.call`: a repeated state-changing call with the
                same key and arguments returns the first outcome without acting again.

        Returns:
            The surface's result; after a successful `end_of_step` it also has `run_over` and
            either `observation` (the next window's) or `summary` (the finished run's).
        """
        if self.finished:
            # The record is closed (its trace too): a retried last end_of_step gets its answer
            # again, any other call the surface's own refusal; both unrecorded.
            again = self.life.session.close_again(tool, args, idempotency_key)
            if again is not None:
                return {**again, "run_over": True, "summary": self.summary}
            return failure(Refusal.RUN_OVER, "the run has ended; no more calls")
        answer = self.life.call(tool, args, idempotency_key)
        result = answer.result
        if answer.window_closed:
            result = {**result, **self._next_window()}
        self.life.acknowledge()  # durable before the answer leaves (runs/journal.py)
        return result

    async def call_async(
        self, tool: str, args: dict[str, Any] | None, idempotency_key: str | None
    ) -> dict[str, Any]:
        """`call` under the run's lock; `end_of_step` (a window's simulation) in a thread."""
        return await call_locked(self.lock, self.call, tool, args, idempotency_key)

    def _next_window(self) -> dict[str, Any]:
        """What follows a closed window: the finished run's summary, or the next observation."""
        metrics = self.life.metrics
        if metrics is not None:
            self.summary = run_summary(self.life.manifest, metrics, self.surface)
            return {"run_over": True, "summary": self.summary}
        return {"run_over": False, "observation": self.surface.observation()}

    def suspend(self) -> None:
        """The agent went away before the end: checkpoint where the run stands and mark the
        record interrupted, so `--resume` continues from this very call."""
        self.life.suspend()


def run_summary(
    meta: RunManifest, metrics: dict[str, Any], surface: AgentSurface
) -> dict[str, Any]:
    """What the agent is told when its run is over: how it ended and the headline metrics."""
    return {
        "ended": meta.ended,
        "windows_played": meta.windows,
        "final_observation": surface.observation(),
        **{key: metrics[key] for key in SUMMARY_METRICS},
    }

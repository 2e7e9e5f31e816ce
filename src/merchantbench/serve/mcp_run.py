"""One run played by an agent outside our process: the host side behind the MCP front end.

`HostedRun` opens (or resumes) an ordinary run record with `RunWriter`, hands the agent's calls
to the session's agent surface, checkpoints every few windows, and finishes the record when the
run ends. It adds one thing to what the surface answers: `end_of_step` also carries the next
window's observation, or the run's summary once the run is over, so a chat agent can play a
whole year in one conversation without asking for the observation each time.

The run record names the agent `mcp` (`McpClientAgent`): the agent lives in the MCP client, so
the record says which front end and transport served it; the runner never drives it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import anyio

from merchantbench.agents.base import AgentSettings, BaseAgent
from merchantbench.agents.registry import make_agent
from merchantbench.metrics.table1 import HEADLINE_METRICS
from merchantbench.record.manifest import RunManifest
from merchantbench.runs.runner import RunSpec, RunWriter
from merchantbench.serve.mcp_server import call_locked
from merchantbench.session import END_OF_STEP
from merchantbench.surface import AgentSurface
from merchantbench.tools.errors import failure

__all__ = ["MCP_AGENT", "SUMMARY_METRICS", "HostedRun", "McpClientAgent", "run_summary"]

MCP_AGENT = "mcp"
# What the final summary tells the agent: the headline metrics of the finished record.
SUMMARY_METRICS = HEADLINE_METRICS


class McpSettings(AgentSettings):
    """Which MCP transport served the run."""

    transport: Literal["stdio", "streamable-http"] = "stdio"


class McpClientAgent(BaseAgent[McpSettings]):
    """The agent of a run served over MCP. It acts from the client, never in process."""

    name = MCP_AGENT
    Settings = McpSettings

    def act(self, surface: AgentSurface) -> None:
        # Only a runner that drives in-process agents calls this; an MCP agent is driven by
        # its client through `merchantbench mcp`, so being called here is a usage error.
        raise RuntimeError("the mcp agent plays through `merchantbench mcp`, not `run`")


class HostedRun:
    """A run record whose agent calls tools from outside (see the module docstring).

    Args:
        spec: The run's agent (`mcp`, with its transport in `agent_settings`), scenario, seed.
        run_dir: The run directory.
        resume: Continue the run recorded in `run_dir` from its last checkpoint.
        checkpoint_every: Checkpoint when the window index is a multiple of this.
    """

    def __init__(
        self, spec: RunSpec, run_dir: Path, resume: bool = False, checkpoint_every: int = 10
    ) -> None:
        self._writer = RunWriter(spec, run_dir, checkpoint_every)
        agent = make_agent(MCP_AGENT, spec.agent_settings)
        self._session, self._agent, self._meta = self._writer.open_session(resume, agent=agent)
        self._every = checkpoint_every
        self.summary: dict[str, Any] | None = None
        self.lock = anyio.Lock()  # MCP requests apply one at a time

    @property
    def surface(self) -> AgentSurface:
        """The agent surface of the run (brief, observation, tools, clock)."""
        return self._session.surface

    @property
    def state_hash(self) -> str:
        """The engine's state hash (host side: for tests and the conformance check)."""
        return self._session.state_hash()

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
            # The record is closed (its trace too): the surface's own answer, unrecorded.
            return failure("run_over", "the run has ended; no more calls")
        result = self.surface.call(tool, args, idempotency_key)
        if tool == END_OF_STEP and result.get("ok"):
            result = {**result, **self._after_window()}
        return result

    async def call_async(
        self, tool: str, args: dict[str, Any] | None, idempotency_key: str | None
    ) -> dict[str, Any]:
        """`call` under the run's lock; `end_of_step` (a window's simulation) in a thread."""
        return await call_locked(self.lock, self.call, tool, args, idempotency_key)

    def _after_window(self) -> dict[str, Any]:
        surface = self.surface
        if surface.over:
            self._finish()
            return {"run_over": True, "summary": self.summary}
        if surface.window % self._every == 0:
            self._writer.checkpoint(self._session, self._agent)
        return {"run_over": False, "observation": surface.observation()}

    def _finish(self) -> None:
        metrics = self._writer.finish(self._session, self._agent, self._meta)
        self.summary = run_summary(self._meta, metrics, self.surface)

    def suspend(self) -> None:
        """The agent went away before the end: checkpoint where the run stands and mark the
        record interrupted, so `--resume` continues from this very call."""
        if not self.finished:
            self._writer.suspend(self._session, self._agent, self._meta)


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

"""One hosted run: its lifecycle (runs/lifecycle.py) and the external driver's protocol state,
behind an asyncio condition that serialises requests and wakes long-polls. No simulation or tool
logic here: every tool call goes through the session's agent surface."""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict
from typing import Any

from merchantbench.record.manifest import RunManifest
from merchantbench.runs.lifecycle import Answer, RunLifecycle
from merchantbench.serve.act import END_OF_STEP, ProtocolError, plan_calls, stale_step
from merchantbench.serve.channel import AgentChannel, tick_of
from merchantbench.serve.external import ExternalDriver, ProtocolState, add_usage
from merchantbench.serve.hosting import Hosting
from merchantbench.serve.settings import FRONT_END, HostSettings, gone
from merchantbench.serve.usage import usage_record
from merchantbench.session import Session

__all__ = ["HostSettings", "RunHost", "gone", "tick_of"]

HIDDEN_METRICS = ("seed",)  # the summary is agent-readable: the seed stays in run.json


class RunHost(AgentChannel, Hosting):
    """A live run on the server (see the module docstring): one agent's channel."""

    def __init__(self, settings: HostSettings, life: RunLifecycle) -> None:
        assert isinstance(life.driver, ExternalDriver)
        Hosting.__init__(self)
        self.settings = settings
        self.life = life
        self.driver: ExternalDriver = life.driver
        self.surface = life.surface

    # --- state ------------------------------------------------------------------------------
    @property
    def run_id(self) -> str:
        return self.settings.run_id

    @property
    def session(self) -> Session:
        return self.life.session

    @property
    def meta(self) -> RunManifest:
        return self.life.manifest

    @property
    def protocol(self) -> ProtocolState:
        return self.driver.protocol

    @property
    def agent_id(self) -> str:
        return self.settings.agent_id

    @property
    def turns_per_window(self) -> int:
        return self.settings.turns_per_window

    @property
    def metrics(self) -> dict[str, Any] | None:
        return self.life.metrics

    @property
    def finished(self) -> bool:
        return self.life.finished

    @property
    def status(self) -> str:
        if self.finished:
            return "finished"
        return "paused" if self.settings.paused else "open"

    def save_settings(self) -> None:
        """Record how the server hosts the run in run.json (`front_end`), so a restart keeps it."""
        self.life.manifest.host(FRONT_END, asdict(self.settings))
        self.life.write_manifest()

    # --- observation --------------------------------------------------------------------------
    async def observation(self, timeout: float, nowait: bool) -> dict[str, Any]:
        """The open window's packet; waits up to `timeout` s for a window to be open."""
        async with self.cond:
            ready = lambda: self.finished or not self.settings.paused  # noqa: E731
            if not nowait and not ready():
                try:
                    await asyncio.wait_for(self.cond.wait_for(ready), timeout)
                except TimeoutError:
                    raise ProtocolError(
                        408, "window_not_open", "no window opened in time: poll again",
                        timeout=timeout,
                    ) from None  # fmt: skip
            if self.finished:
                raise gone()
            packet = self.packet()
            self.life.acknowledge()  # the brief served (the protocol's memory)
            return packet

    # --- acting -------------------------------------------------------------------------------
    async def act(self, messages: Any, token_usage: Any, step_header: str | None) -> dict[str, Any]:
        """Run the env tool calls of a batch; refusals (`ProtocolError`) change nothing."""
        async with self.cond:
            self._require_open()
            stale_step(step_header, self.surface.hour)
            plan = plan_calls(messages)
            env_calls = [c for c in plan if c.env]
            self.check_turn_cap(env_calls)
            keyed = self.check_call_ids(env_calls)
            ends = any(c.name == END_OF_STEP for c in env_calls)
            # Closing a window simulates its hours: off the event loop, so other runs go on.
            run = self._in_thread if ends else _inline
            results, closing = await run(self.execute, plan, keyed)
            step_done = closing is not None
            state = self.protocol
            turn = state.turns
            state.turns += 1
            if isinstance(token_usage, dict):
                add_usage(state.act_usage, token_usage)
            if step_done:
                await self._window_closed()
            self.life.acknowledge()  # durable before the answer leaves (runs/journal.py)
            return {
                "ok": True,
                "turn_idx": turn,
                "tool_results": results,
                "step_done": step_done,
                "hook_released": step_done,
                "over": self.finished,
            }

    def _require_open(self) -> None:
        if self.finished:
            raise gone()
        if self.settings.paused:
            raise ProtocolError(425, "window_closed", "no window is open: poll the observation")
        self.protocol.enter(self.surface.window)

    # --- our JSON API -------------------------------------------------------------------------
    async def call_tool(
        self, tool: str, args: Any, key: str | None, made_for: int | None = None
    ) -> dict[str, Any]:
        """One tool call (the small JSON API); `end_of_step` closes the window. `made_for`:
        the window the write was made for (`X-Window`; tools/window_bound.py)."""
        async with self.cond:
            self._require_open()
            if tool == END_OF_STEP:
                answer = await self._in_thread(self.call, tool, args, key, made_for)
            else:
                answer = self.call(tool, args, key, made_for)
            if answer.window_closed:
                await self._window_closed()
            self.life.acknowledge()  # durable before the answer leaves (runs/journal.py)
            return answer.result

    def call(self, tool: str, args: Any, key: str | None, made_for: int | None = None) -> Answer:
        return self.life.call(tool, args, key, made_for)

    # --- window ends, finish ------------------------------------------------------------------
    async def _force_window(self) -> None:
        self.protocol.forced_windows.append(self.surface.window)
        await self._in_thread(self.life.end_window)
        await self._window_closed()
        self.life.acknowledge()

    async def _window_closed(self) -> None:
        """A window closed (the lifecycle finished the run, or checkpointed when due): open
        the next one to the agent and wake its waiters."""
        self.protocol.enter(self.surface.window)
        if self.finished:
            for callback in self.on_finish:
                callback(self)
        self.window_opened = time.monotonic()
        self.cond.notify_all()

    # --- usage, registration, summary -------------------------------------------------------------
    async def register(self, payload: dict[str, Any]) -> dict[str, Any]:
        async with self.cond:
            self.protocol.registration = payload
            self.life.manifest.record_registration(payload)
            self.life.write_manifest()
            self.life.acknowledge()
            return {"ok": True, **payload}

    async def record_usage(self, body: dict[str, Any]) -> dict[str, Any]:
        """Delayed token usage, idempotent per `usage_id` (valid after the run ended too)."""
        async with self.cond:
            record = usage_record(body, self.surface.hour)
            usage_id = record["usage_id"]
            known = self.protocol.auxiliary.get(usage_id)
            if known is not None and known != record:
                raise ProtocolError(
                    409, "usage_id_conflict", f"usage_id {usage_id} was recorded differently"
                )
            self.protocol.auxiliary[usage_id] = record
            if self.finished and known is None:  # the record is final but for the usage
                self.life.manifest.record_agent(self.driver.outcome().usage, None)
                self.life.write_manifest()
            self.life.acknowledge()
            return {"ok": True, "usage_id": usage_id, "duplicate": known is not None}

    def summary(self) -> dict[str, Any]:
        state = self.protocol
        return {
            "run_id": self.run_id,
            "label": self.settings.label,
            "status": self.status,
            "scenario": self.session.scenario.name,
            "agent_id": self.settings.agent_id,
            "registered": state.registration is not None,
            "sealed": self.settings.sealed,
            "tick": self.tick(),
            "over": self.finished,
            "turns_per_window": self.settings.turns_per_window,
            "window_seconds": self.settings.window_seconds,
            "forced_windows": list(state.forced_windows),
            "tool_schema_sha256": self.surface.tool_schema_sha256(),
            "metrics": _public_metrics(self.metrics),
        }

    # --- host side, in process only (the conformance check) -------------------------------------
    async def restore(self, blob: bytes) -> None:
        """Restore the session to a `session.snapshot()` blob, reopening a finished record.
        Not a route: a snapshot is a pickle, and unpickling what a client sent would run its
        code; the check calls this on the host object of a server it started itself."""
        async with self.cond:
            self.life.rewind(blob)
            self.protocol.enter(self.surface.window)
            self.window_opened = time.monotonic()
            self.cond.notify_all()

    def finish_if_over(self) -> None:
        """A run whose last window closed but whose record was not finished (the server stopped
        in between) is finished now."""
        if self.surface.over and not self.finished:
            self.life.finish()

    def close(self) -> None:
        """Checkpoint where the run stands (mid-window is fine), mark it interrupted (a
        restart resumes it) and let go of its files."""
        self.life.suspend()


async def _inline(fn: Any, *args: Any) -> Any:
    return fn(*args)


def _public_metrics(metrics: dict[str, Any] | None) -> dict[str, Any] | None:
    if metrics is None:
        return None
    return {k: v for k, v in metrics.items() if k not in HIDDEN_METRICS}

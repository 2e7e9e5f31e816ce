"""A run hosted on the server (docs/http.md): its lifecycle (runs/lifecycle.py), driven by one
`ExternalDriver` per agent outside our process, and the protocol around it. No simulation or
tool logic here: every tool call goes through the run's lifecycle.

A store alone is a market of one merchant: its agent's id names the store's merchant. A market
of several has one agent per merchant (agent id = merchant id) and is the same arena record as
`merchantbench arena` writes (arena.json, each merchant's run record in `merchants/<id>/`,
driver `external`). Both are hosted the same way:

- one `AgentChannel` per agent (its packet, turn cap and call-id ledger);
- one lock for the run, an asyncio condition that also wakes long-polls: calls of different
  agents never interleave inside the market session, and a window's hours are simulated in a
  shielded worker thread;
- the window logic is the market session's: an agent's `end_of_step` closes the window for its
  merchant, the hours run when every merchant still trading has closed it (at once for a store
  alone), and a market's merchant whose deposit runs out is closed on its own. The lifecycle
  says whether a call ran the hours (`Answer.hours_run`) and does the after-window work;
- the wall clock of the open window (`window_seconds`), pause, registration, delayed usage;
- before every answer, what it reports is made durable (`RunLifecycle.acknowledge`).

An agent is only ever answered about itself: its observation, its tool results, its store status
and its own metrics; a market's summary for a merchant names no other merchant."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from merchantbench.runs.layout import MarketLayout
from merchantbench.runs.lifecycle import RunLifecycle
from merchantbench.serve.act import END_OF_STEP, ProtocolError, plan_calls, stale_step
from merchantbench.serve.channel import AgentChannel
from merchantbench.serve.external import add_usage
from merchantbench.serve.settings import (
    FRONT_END,
    HostSettings,
    agent_dead,
    gone,
    public_metrics,
    summary_of,
)
from merchantbench.serve.usage import usage_record
from merchantbench.session import Session
from merchantbench.surface import AgentSurface

__all__ = ["Host", "HostSettings"]


class Host:
    """A live run on the server (see the module docstring).

    Attributes:
        settings: How the server hosts it (saved with the record).
        life: The run's lifecycle.
        channels: Each agent's end of the protocol, by agent id.
        cond: The run's lock; notified whenever a window opens (or the run is paused).
        on_finish: Called with the host once the run has ended.
    """

    def __init__(self, settings: HostSettings, life: RunLifecycle) -> None:
        self.settings = settings
        self.life = life
        self.channels = {a: AgentChannel(life, settings, a) for a in settings.merchants}
        self.cond = asyncio.Condition()
        self.window_opened = time.monotonic()
        self.on_finish: list[Callable[[Host], None]] = []
        self._work: asyncio.Future[Any] | None = None  # session work running in a thread

    # --- state ------------------------------------------------------------------------------
    @property
    def run_id(self) -> str:
        return self.settings.run_id

    @property
    def finished(self) -> bool:
        return self.life.finished

    @property
    def status(self) -> str:
        if self.finished:
            return "finished"
        return "paused" if self.settings.paused else "open"

    def agent(self, agent_id: str) -> AgentChannel:
        found = self.channels.get(agent_id)
        if found is None:
            raise ProtocolError(404, "unknown_agent", f"this run has no agent {agent_id}")
        return found

    @property
    def only(self) -> AgentChannel:
        """The agent of a run that has one (a store alone's)."""
        [channel] = self.channels.values()
        return channel

    @property
    def surface(self) -> AgentSurface:
        """A store alone's agent surface, as server extensions read it."""
        return self.only.surface

    @property
    def session(self) -> Session:
        return self.only.session

    def save_settings(self) -> None:
        """Record how the server hosts the run (`front_end`), so a restart keeps it: a store's
        in its run.json, a market's in its arena.json."""
        layout, saved = self.life.layout, self.settings.to_json()
        if isinstance(layout, MarketLayout):
            layout.manifest.front_end = {"name": FRONT_END, "settings": saved}
            layout.manifest.write(layout.root)
        else:
            self.life.manifest.host(FRONT_END, saved)
            self.life.write_manifest()

    # --- observation --------------------------------------------------------------------------
    async def observation(self, agent_id: str, timeout: float, nowait: bool) -> dict[str, Any]:
        """The agent's packet of its open window; waits up to `timeout` s for one (the run
        paused, or the merchant closed this window and the others of its market have not)."""
        channel = self.agent(agent_id)
        async with self.cond:

            def ready() -> bool:
                return self.finished or channel.dead or self._open_for(channel)

            if not nowait and not ready():
                try:
                    await asyncio.wait_for(self.cond.wait_for(ready), timeout)
                except TimeoutError:
                    raise ProtocolError(
                        408, "window_not_open", "no window opened in time: poll again",
                        timeout=timeout,
                    ) from None  # fmt: skip
            self.require_live(channel)
            packet = channel.packet()
            self.life.acknowledge()  # the brief served (the protocol's memory)
            return packet

    async def view(self, agent_id: str, observation: bool = False) -> dict[str, Any]:
        """The agent's clock, the run's status and its store status (the JSON API), with the
        open window's observation first when asked (410 once the run is over for it)."""
        channel = self.agent(agent_id)
        async with self.cond:  # not while a window is being simulated in a worker thread
            text = {}
            if observation:
                self.require_live(channel)
                text = {"text": channel.surface.observation()}
            return {
                **text,
                "tick": channel.tick(),
                "status": self.status,
                "store": channel.surface.status().to_json(),
            }

    async def store_status(self, agent_id: str) -> dict[str, Any]:
        """The agent's store status (where it ended, once it is over)."""
        channel = self.agent(agent_id)
        async with self.cond:
            return channel.surface.status().to_json()

    def _open_for(self, channel: AgentChannel) -> bool:
        return not self.settings.paused and not channel.session.waiting

    def require_live(self, channel: AgentChannel) -> None:
        if channel.dead:
            raise agent_dead(channel.merchant)
        if self.finished or self.life.market.over:
            raise gone()

    def _require_open(self, channel: AgentChannel) -> None:
        self.require_live(channel)
        if self.settings.paused:
            raise ProtocolError(425, "window_closed", "no window is open: poll the observation")
        if channel.session.waiting:
            raise ProtocolError(
                425,
                "window_closed",
                "you closed this window; the next opens when every merchant has closed it: "
                "poll the observation",
            )
        channel.protocol.enter(channel.surface.window)

    # --- acting -------------------------------------------------------------------------------
    async def act(
        self, agent_id: str, messages: Any, token_usage: Any, step_header: str | None
    ) -> dict[str, Any]:
        """One turn of one agent: the env tool calls of its batch; refusals (`ProtocolError`)
        change nothing."""
        channel = self.agent(agent_id)
        async with self.cond:
            self._require_open(channel)
            stale_step(step_header, channel.surface.hour)
            plan = plan_calls(messages)
            env_calls = [c for c in plan if c.env]
            channel.check_turn_cap(env_calls)
            keyed = channel.check_call_ids(env_calls)
            if any(c.name == END_OF_STEP for c in env_calls):
                results, closing = await self._in_thread(channel.execute, plan, keyed)
            else:
                results, closing = channel.execute(plan, keyed)
            state = channel.protocol
            turn = state.turns
            state.turns += 1
            if isinstance(token_usage, dict):
                add_usage(state.act_usage, token_usage)
            released = closing is not None and closing.hours_run
            if released:
                await self._window_closed()
            self.life.acknowledge()  # durable before the answer leaves (runs/journal.py)
            return {
                "ok": True,
                "turn_idx": turn,
                "tool_results": results,
                "step_done": closing is not None,
                "hook_released": released,
                "over": self.finished or channel.dead,
            }

    async def call_tool(
        self, agent_id: str, tool: str, args: Any, key: str | None, made_for: int | None = None
    ) -> dict[str, Any]:
        """One tool call of one agent (the JSON API, MCP); `end_of_step` closes its window.
        `made_for`: the window the write was made for (`X-Window`; tools/window_bound.py)."""
        channel = self.agent(agent_id)
        async with self.cond:
            again = self._last_close_again(channel, tool, args, key)
            if again is not None:
                return again
            self._require_open(channel)
            if tool == END_OF_STEP:
                answer = await self._in_thread(channel.call, tool, args, key, made_for)
            else:
                answer = channel.call(tool, args, key, made_for)
            if answer.hours_run:
                await self._window_closed()
            self.life.acknowledge()  # durable before the answer leaves (runs/journal.py)
            return answer.result

    def _last_close_again(
        self, channel: AgentChannel, tool: str, args: Any, key: str | None
    ) -> dict[str, Any] | None:
        """A finished run takes no calls, nor does a merchant waiting for the others to close
        the window, but the retry of the keyed `end_of_step` that closed its last window (whose
        answer the client may have lost) gets that answer again."""
        if not (self.finished or channel.session.waiting):
            return None
        return channel.session.close_again(tool, args, key)

    async def wait_for_window(self, agent_id: str) -> None:
        """Wait until the agent has a window open again (or its store closed, or the run is
        over): an MCP client's `end_of_step` answers with the next observation."""
        channel = self.agent(agent_id)
        async with self.cond:
            await self.cond.wait_for(
                lambda: self.finished or channel.dead or not channel.session.waiting
            )

    async def _window_closed(self) -> None:
        """The hours ran under the lock (the lifecycle finished the run, or checkpointed when
        due): every merchant still in the run starts counting its new window; wake every
        waiter."""
        for channel in self.channels.values():
            if not channel.session.over:
                channel.protocol.enter(channel.surface.window)
        self.window_opened = time.monotonic()
        if self.finished:
            for callback in self.on_finish:
                callback(self)
        self.cond.notify_all()

    # --- window ends, wall clock, pause, shutdown -----------------------------------------------
    async def _in_thread(self, fn: Any, *args: Any) -> Any:
        """Run session work in a worker thread. Shielded: a cancelled request (a client gone, a
        server shutting down) must not leave the session half-changed under a released lock, so
        the work always completes, and `aclose` waits for it."""
        self._work = asyncio.ensure_future(asyncio.to_thread(fn, *args))
        return await asyncio.shield(self._work)

    async def force_if_overdue(self, now: float) -> bool:
        """Close a window held longer than the wall-clock limit for every merchant still in it
        (the trace records it forced); True if one was closed."""
        limit = self.settings.window_seconds
        if limit is None or self.finished or self.settings.paused:
            return False
        if now - self.window_opened < limit:
            return False
        async with self.cond:
            if self.finished or self.settings.paused or now - self.window_opened < limit:
                return False
            trading, window = self.life.market.trading(), self.life.market.window
            for channel in self.channels.values():
                if channel.merchant in trading:
                    channel.protocol.forced_windows.append(window)
            await self._in_thread(self.life.end_window)
            await self._window_closed()
            self.life.acknowledge()
            return True

    async def set_paused(self, paused: bool) -> None:
        async with self.cond:
            if self.finished:
                raise gone()
            self.settings.paused = paused
            self.save_settings()
            self.window_opened = time.monotonic()  # the wall clock restarts with the window
            self.cond.notify_all()

    async def aclose(self) -> None:
        """Server shutdown: let running session work end, then `close`."""
        if self._work is not None:
            await asyncio.wait([self._work])
        async with self.cond:
            self.close()

    # --- usage, registration, summary -------------------------------------------------------------
    async def register(self, agent_id: str, payload: dict[str, Any]) -> dict[str, Any]:
        channel = self.agent(agent_id)
        async with self.cond:
            channel.protocol.registration = payload
            record = self.life.records[channel.merchant]
            record.manifest.record_registration(payload)
            record.manifest.write(record.run_dir)
            self.life.acknowledge()
            return {"ok": True, **payload}

    async def record_usage(self, agent_id: str, body: dict[str, Any]) -> dict[str, Any]:
        """Delayed token usage of one agent, idempotent per `usage_id` (valid after the run
        ended too)."""
        channel = self.agent(agent_id)
        async with self.cond:
            record = usage_record(body, channel.surface.hour)
            usage_id = record["usage_id"]
            known = channel.protocol.auxiliary.get(usage_id)
            if known is not None and known != record:
                raise ProtocolError(
                    409, "usage_id_conflict", f"usage_id {usage_id} was recorded differently"
                )
            channel.protocol.auxiliary[usage_id] = record
            if self.finished and known is None:  # the record is final but for the usage
                run = self.life.records[channel.merchant]
                run.manifest.record_agent(channel.driver.outcome().usage, None)
                run.manifest.write(run.run_dir)
            self.life.acknowledge()
            return {"ok": True, "usage_id": usage_id, "duplicate": known is not None}

    def summary(self, viewer: str | None = None) -> dict[str, Any]:
        """Where the run stands (`summary_of`): for the operator (`viewer` None) every agent's
        part; for a merchant of a market, its own only."""
        first = next(iter(self.channels.values()))
        head = {
            "run_id": self.run_id,
            "label": self.settings.label,
            "status": self.status,
            "scenario": self.life.layout.spec.scenario.name,
            "sealed": self.settings.sealed,
            "tick": first.tick(),
            "over": self.finished,
            "turns_per_window": self.settings.turns_per_window,
            "window_seconds": self.settings.window_seconds,
            "tool_schema_sha256": first.surface.tool_schema_sha256(),
        }
        metrics = self.life.results or {}
        agents = {
            agent_id: {
                "registered": channel.protocol.registration is not None,
                "closed": channel.dead,
                "window_closed": channel.session.waiting,
                "forced_windows": list(channel.protocol.forced_windows),
                "metrics": public_metrics(metrics.get(channel.merchant)),
            }
            for agent_id, channel in self.channels.items()
            if viewer is None or agent_id == viewer
        }
        return summary_of(self.settings, head, agents)

    # --- host side, in process only (the conformance check) -------------------------------------
    async def host_turn(self, agent_id: str, play: Callable[[Session], None]) -> None:
        """Play an agent's turn on the host side (the check's rival): `play` its session under
        the run's lock, then what a closed window needs. Not a route."""
        merchant = self.agent(agent_id).merchant
        async with self.cond:
            answer = await self._in_thread(self.life.turn, merchant, play)
            if answer.hours_run:
                await self._window_closed()
            self.life.acknowledge()

    async def rewind(self, blob: bytes) -> None:
        """Restore the market to a `snapshot()` blob, reopening a finished record. Not a route:
        a snapshot is a pickle, and unpickling what a client sent would run its code; the
        check calls this on the host object of a server it started itself."""
        async with self.cond:
            self.life.rewind(blob)
            for channel in self.channels.values():
                channel.protocol.enter(channel.surface.window)
            self.window_opened = time.monotonic()
            self.cond.notify_all()

    def finish_if_over(self) -> None:
        """A run whose last window closed but whose record was not finished (the server stopped
        in between) is finished now."""
        if self.life.market.over and not self.finished:
            self.life.finish()

    def close(self) -> None:
        """Checkpoint where the run stands (mid-window is fine), mark it interrupted (a
        restart resumes it) and let go of its files."""
        self.life.suspend()

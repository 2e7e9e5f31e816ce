"""A hosted market (docs/design.md §11): several merchants, each an agent outside our process with
its own agent id and token, in one market served over HTTP (and MCP).

The market is a market's `RunLifecycle` (runs/lifecycle.py) driven by one `ExternalDriver` per
merchant: the same arena record as `merchantbench arena` writes (arena.json, each merchant's run
record in `merchants/<id>/`, driver `external`). The window logic is the market session's: a
merchant's `end_of_step` closes the window for it alone, the hours run when every merchant still
trading has closed it, a merchant whose deposit runs out is closed on its own. Here there is
only the protocol: one `AgentChannel` per merchant (its packet, turn cap and call-id ledger),
one lock for the whole market (calls of different merchants never interleave inside the
session), and a condition that wakes every long-poll when a window opens.

A merchant is only ever answered about itself: its observation, its tool results, its store
status and its own metrics. The market's summary for a merchant names no other merchant."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from merchantbench.runs.layout import MarketLayout
from merchantbench.runs.lifecycle import Answer, RunLifecycle
from merchantbench.serve.act import END_OF_STEP, ProtocolError, plan_calls, stale_step
from merchantbench.serve.channel import AgentChannel, tick_of
from merchantbench.serve.external import ExternalDriver, ProtocolState, add_usage
from merchantbench.serve.hosting import Hosting
from merchantbench.serve.settings import FRONT_END, gone
from merchantbench.serve.usage import usage_record
from merchantbench.session import Session
from merchantbench.surface import AgentSurface

__all__ = ["MarketHost", "MarketSettings", "MerchantChannel", "MerchantPort"]

HIDDEN_METRICS = ("seed",)


@dataclass
class MarketSettings:
    """How the server hosts a market; recorded in arena.json (`front_end`) for a restart."""

    run_id: str
    agents: list[str] = field(default_factory=list)  # the merchants' agent ids
    label: str = ""
    turns_per_window: int = 100
    window_seconds: float | None = None
    paused: bool = False
    sealed: bool = False


def agent_dead(merchant: str) -> ProtocolError:
    """The artifact's answer to a merchant whose store closed (its deposit ran out)."""
    return ProtocolError(
        410, "agent_dead", f"agent {merchant} is dead (deposit exhausted): its store is closed"
    )


class MerchantChannel(AgentChannel):
    """One merchant's end of the protocol."""

    def __init__(self, host: MarketHost, merchant: str) -> None:
        self.host = host
        self.merchant = merchant
        self.session: Session = host.life.market.session(merchant)
        self.surface: AgentSurface = self.session.surface
        driver = host.life.drivers[merchant]
        assert isinstance(driver, ExternalDriver)
        self.driver = driver

    @property
    def protocol(self) -> ProtocolState:
        return self.driver.protocol

    @property
    def agent_id(self) -> str:
        return self.merchant

    @property
    def turns_per_window(self) -> int:
        return self.host.settings.turns_per_window

    @property
    def dead(self) -> bool:
        return self.session.engine.state.closed

    def call(self, tool: str, args: Any, key: str | None, made_for: int | None = None) -> Answer:
        return self.host.life.call(tool, args, key, made_for, merchant=self.merchant)


class MarketHost(Hosting):
    """A live market on the server (see the module docstring)."""

    def __init__(self, settings: MarketSettings, life: RunLifecycle) -> None:
        super().__init__()
        self.settings = settings
        self.life = life
        self.channels = {m: MerchantChannel(self, m) for m in life.market.ids}

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

    def channel(self, agent_id: str) -> MerchantChannel:
        found = self.channels.get(agent_id)
        if found is None:
            raise ProtocolError(404, "unknown_agent", f"this run has no agent {agent_id}")
        return found

    def port(self, agent_id: str) -> MerchantPort:
        """The merchant's side of the market, as the routes of one agent use it."""
        self.channel(agent_id)
        return MerchantPort(self, agent_id)

    def save_settings(self) -> None:
        """Record how the server hosts the market in arena.json (`front_end`)."""
        arena = self.life.layout
        assert isinstance(arena, MarketLayout)
        arena.manifest.front_end = {"name": FRONT_END, "settings": asdict(self.settings)}
        arena.manifest.write(arena.root)

    # --- observation --------------------------------------------------------------------------
    async def observation(self, agent_id: str, timeout: float, nowait: bool) -> dict[str, Any]:
        """The merchant's packet of its open window; waits up to `timeout` s for one (the
        market paused, or the merchant closed this window and the others have not)."""
        channel = self.channel(agent_id)
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

    def _open_for(self, channel: MerchantChannel) -> bool:
        return not self.settings.paused and not channel.session.waiting

    def require_live(self, channel: MerchantChannel) -> None:
        if channel.dead:
            raise agent_dead(channel.merchant)
        if self.finished or self.life.market.over:
            raise gone()

    def _require_open(self, channel: MerchantChannel) -> None:
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
        """One turn of one merchant; refusals (`ProtocolError`) change nothing."""
        channel = self.channel(agent_id)
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
        """One tool call of one merchant (the JSON API, MCP); `made_for`: the window the write
        was made for (`X-Window`; tools/window_bound.py)."""
        channel = self.channel(agent_id)
        async with self.cond:
            self._require_open(channel)
            if tool == END_OF_STEP:
                answer = await self._in_thread(channel.call, tool, args, key, made_for)
            else:
                answer = channel.call(tool, args, key, made_for)
            if answer.hours_run:
                await self._window_closed()
            self.life.acknowledge()
            return answer.result

    async def wait_for_window(self, agent_id: str) -> None:
        """Wait until the merchant has a window open again (or its store closed, or the
        market is over): an MCP client's `end_of_step` answers with the next observation."""
        channel = self.channel(agent_id)
        async with self.cond:
            await self.cond.wait_for(
                lambda: self.finished or channel.dead or not channel.session.waiting
            )

    async def _window_closed(self) -> None:
        """The market's window closed under the lock (the lifecycle finished the market, or
        checkpointed when due): wake every waiter."""
        self.window_opened = time.monotonic()
        if self.finished:
            for callback in self.on_finish:
                callback(self)
        self.cond.notify_all()

    # --- window ends, wall clock ----------------------------------------------------------------
    async def _force_window(self) -> None:
        market = self.life.market
        window = market.window
        for merchant in market.trading():
            self.channels[merchant].protocol.forced_windows.append(window)
        await self._in_thread(self.life.end_window)
        await self._window_closed()
        self.life.acknowledge()

    # --- usage, registration, summary -------------------------------------------------------------
    async def register(self, agent_id: str, payload: dict[str, Any]) -> dict[str, Any]:
        channel = self.channel(agent_id)
        async with self.cond:
            channel.protocol.registration = payload
            record = self.life.records[agent_id]
            record.manifest.record_registration(payload)
            record.manifest.write(record.run_dir)
            self.life.acknowledge()
            return {"ok": True, **payload}

    async def record_usage(self, agent_id: str, body: dict[str, Any]) -> dict[str, Any]:
        """Delayed token usage of one merchant, idempotent per `usage_id`."""
        channel = self.channel(agent_id)
        async with self.cond:
            record = usage_record(body, channel.surface.hour)
            usage_id = record["usage_id"]
            known = channel.protocol.auxiliary.get(usage_id)
            if known is not None and known != record:
                raise ProtocolError(
                    409, "usage_id_conflict", f"usage_id {usage_id} was recorded differently"
                )
            channel.protocol.auxiliary[usage_id] = record
            if self.finished and known is None:
                run = self.life.records[agent_id]
                run.manifest.record_agent(channel.driver.outcome().usage, None)
                run.manifest.write(run.run_dir)
            self.life.acknowledge()
            return {"ok": True, "usage_id": usage_id, "duplicate": known is not None}

    def summary(self, viewer: str | None = None) -> dict[str, Any]:
        """The market's summary: for the operator (`viewer` None) every merchant; for a
        merchant, itself only."""
        first = next(iter(self.channels.values()))
        shown = list(self.channels) if viewer is None else [viewer]
        metrics = self.life.results or {}
        return {
            "run_id": self.run_id,
            "label": self.settings.label,
            "status": self.status,
            "scenario": self.life.layout.spec.scenario.name,
            "market": True,
            "sealed": self.settings.sealed,
            "tick": tick_of(first.surface.status()),
            "over": self.finished,
            "turns_per_window": self.settings.turns_per_window,
            "window_seconds": self.settings.window_seconds,
            "tool_schema_sha256": first.surface.tool_schema_sha256(),
            "agents": {aid: self._merchant_summary(aid, metrics.get(aid)) for aid in shown},
        }

    def _merchant_summary(self, agent_id: str, metrics: dict[str, Any] | None) -> dict[str, Any]:
        channel = self.channels[agent_id]
        state = channel.protocol
        return {
            "registered": state.registration is not None,
            "closed": channel.dead,
            "window_closed": channel.session.waiting,
            "forced_windows": list(state.forced_windows),
            "metrics": None
            if metrics is None
            else {k: v for k, v in metrics.items() if k not in HIDDEN_METRICS},
        }

    # --- host side, in process only (the conformance check) -------------------------------------
    async def host_turn(self, agent_id: str, play: Callable[[Session], None]) -> None:
        """Play a merchant's turn on the host side (the check's rival): `play` its session
        under the market's lock, then what a closed window needs. Not a route."""
        merchant = self.channel(agent_id).merchant
        async with self.cond:
            answer = await self._in_thread(self.life.turn, merchant, play)
            if answer.hours_run:
                await self._window_closed()
            self.life.acknowledge()

    async def rewind(self, blob: bytes) -> None:
        """Restore the market to a `market.snapshot()` blob, reopening a finished record. Not
        a route (a snapshot is a pickle: see `RunHost.restore`)."""
        async with self.cond:
            self.life.rewind(blob)
            for channel in self.channels.values():
                channel.protocol.enter(channel.surface.window)
            self.window_opened = time.monotonic()
            self.cond.notify_all()

    def finish_if_over(self) -> None:
        if self.life.market.over and not self.finished:
            self.life.finish()

    def close(self) -> None:
        self.life.suspend()


class MerchantPort:
    """One merchant's routes of a market: what the protocol and the JSON API call, with the
    agent id bound (a single run's `RunHost` answers the same methods)."""

    def __init__(self, host: MarketHost, agent_id: str) -> None:
        self.host = host
        self.agent_id = agent_id
        self.channel = host.channels[agent_id]

    @property
    def surface(self) -> AgentSurface:
        return self.channel.surface

    @property
    def cond(self) -> asyncio.Condition:
        return self.host.cond

    @property
    def finished(self) -> bool:
        return self.host.finished

    @property
    def status(self) -> str:
        return self.host.status

    def tick(self) -> dict[str, int]:
        return self.channel.tick()

    async def observation(self, timeout: float, nowait: bool) -> dict[str, Any]:
        return await self.host.observation(self.agent_id, timeout, nowait)

    async def act(self, messages: Any, token_usage: Any, step_header: str | None) -> Any:
        return await self.host.act(self.agent_id, messages, token_usage, step_header)

    async def call_tool(
        self, tool: str, args: Any, key: str | None, made_for: int | None = None
    ) -> dict[str, Any]:
        return await self.host.call_tool(self.agent_id, tool, args, key, made_for)

    async def register(self, payload: dict[str, Any]) -> dict[str, Any]:
        return await self.host.register(self.agent_id, payload)

    async def record_usage(self, body: dict[str, Any]) -> dict[str, Any]:
        return await self.host.record_usage(self.agent_id, body)

    def summary(self) -> dict[str, Any]:
        return self.host.summary(self.agent_id)

"""One agent's end of the artifact protocol: the observation packet, the turn cap, the window's
call-id ledger and running a batch's env calls. A host (`host.Host`) has one channel per agent:
a store alone's one agent, or each merchant of a market. No tool or window logic here: every env
call goes through the run's lifecycle (`RunLifecycle.call`), which says whether it closed the
window (`Answer`)."""

from __future__ import annotations

import json
from typing import Any

from merchantbench.runs.lifecycle import Answer, RunLifecycle
from merchantbench.serve.act import (
    END_OF_STEP,
    PlannedCall,
    ProtocolError,
    canonical_arguments,
)
from merchantbench.serve.external import ExternalDriver, ProtocolState
from merchantbench.serve.settings import HostSettings
from merchantbench.session import Session
from merchantbench.surface import AgentSurface, StoreStatus

__all__ = ["AgentChannel", "tick_of", "tool_result"]


class AgentChannel:
    """The protocol state of one agent (`agent_id`), which plays `merchant` of the run's
    market through that merchant's surface."""

    def __init__(self, life: RunLifecycle, settings: HostSettings, agent_id: str) -> None:
        self.life = life
        self.settings = settings
        self.agent_id = agent_id
        self.merchant = settings.merchants[agent_id]
        self.session: Session = life.market.session(self.merchant)
        self.surface: AgentSurface = self.session.surface
        driver = life.drivers[self.merchant]
        assert isinstance(driver, ExternalDriver)
        self.driver = driver

    @property
    def protocol(self) -> ProtocolState:
        """What the protocol remembers of the agent (its driver's state: checkpointed)."""
        return self.driver.protocol

    @property
    def turns_per_window(self) -> int:
        return self.settings.turns_per_window

    @property
    def dead(self) -> bool:
        """A merchant of a market whose store closed (its deposit ran out): it is answered
        `agent_dead`. A store alone that closed keeps its window (its tools answer
        `store_closed`) until the run ends with it."""
        return self.life.layout.in_market and self.session.engine.state.closed

    def call(self, tool: str, args: Any, key: str | None, made_for: int | None = None) -> Answer:
        """One env call of the agent through its run's lifecycle (`made_for`: the window a
        write was made for, tools/window_bound.py)."""
        return self.life.call(tool, args, key, made_for, merchant=self.merchant)

    def tick(self) -> dict[str, int]:
        """The protocol's clock, from the store status: `step` is the open window's first hour
        since the start, `hour` the hour of the day."""
        return tick_of(self.surface.status())

    def packet(self) -> dict[str, Any]:
        """The open window's observation packet; the first one carries the brief."""
        state = self.protocol
        state.enter(self.surface.window)
        packet: dict[str, Any] = {
            "text": self.surface.observation(),
            "tick": self.tick(),
            "turn_count": state.turns,
        }
        if not state.brief_served:
            packet["brief"] = {
                "system_prompt": self.surface.brief(),
                "tool_schema_sha256": self.surface.tool_schema_sha256(),
            }
            state.brief_served = True
        return packet

    def check_turn_cap(self, env_calls: list[PlannedCall]) -> None:
        # Closing the window is control, not work: allowed past the cap so a window can end.
        only_end = [c.name for c in env_calls] == [END_OF_STEP]
        cap = self.turns_per_window
        if self.protocol.turns >= cap and not only_end:
            raise ProtocolError(
                429, "turn_cap_reached", f"{cap} turns used in this window: call end_of_step"
            )

    def check_call_ids(self, env_calls: list[PlannedCall]) -> list[tuple[PlannedCall, str]]:
        """Key every env call by agent, hour and call id; a call id seen this window with
        another call (a read too) is the protocol's 409, refused before anything of the batch
        runs. The key goes on to the tool layer, whose store alone answers a repeated write with
        its first outcome (docs/architecture.md, "Idempotency")."""
        state, hour = self.protocol, self.surface.hour
        keyed = []
        for call in env_calls:
            key = f"{self.agent_id}:{hour}:{call.call_id}"
            fingerprint = f"{call.name}:{canonical_arguments(call.arguments)}"
            if state.fingerprints.get(key, fingerprint) != fingerprint:
                raise ProtocolError(
                    409, "idempotency_conflict",
                    f"tool call id {call.call_id} was already used with another call",
                )  # fmt: skip
            keyed.append((call, key))
        return keyed

    def execute(
        self, plan: list[PlannedCall], keyed: list[tuple[PlannedCall, str]]
    ) -> tuple[list[dict[str, Any]], Answer | None]:
        """Run the batch in order; stops after a call that closed the window for the agent.
        Returns the results and that call's answer (None: the window is still open)."""
        keys = {id(call): key for call, key in keyed}
        state = self.protocol
        results = []
        for call in plan:
            if not call.env:
                self._record_framework(call)
                continue
            key = keys[id(call)]
            state.fingerprints[key] = f"{call.name}:{canonical_arguments(call.arguments)}"
            answer = self.call(call.name, call.arguments, key)
            results.append(tool_result(call, answer.result))
            if answer.window_closed:
                return results, answer
        return results, None

    def _record_framework(self, call: PlannedCall) -> None:
        # A resent history repeats its framework calls: record each call id once per window.
        key = f"framework:{call.call_id}"
        if key not in self.protocol.fingerprints:
            self.protocol.fingerprints[key] = call.name
            self.surface.record_framework_call(call.name, call.arguments, ok=True)


def tick_of(status: StoreStatus) -> dict[str, int]:
    """The artifact protocol's `tick` of a store status."""
    return {
        "step": status.hour,
        "day": status.day,
        "hour": status.hour_of_day,
        "window": status.window,
        "windows_total": status.windows_total,
    }


def tool_result(call: PlannedCall, result: dict[str, Any]) -> dict[str, Any]:
    return {
        "tool_call_id": call.call_id,
        "name": call.name,
        "tool_origin": call.origin,
        "content": json.dumps(result, ensure_ascii=False),
    }

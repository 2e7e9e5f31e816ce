"""The `external` driver: an agent outside our process that reaches its store over the HTTP
server. The run record names it like an agent (`agent.name` `external`, `driver` `external`);
what the protocol remembers between windows (registration, turns, idempotency fingerprints,
reported usage) is the driver's `ProtocolState`, which the server keeps and each checkpoint
saves as JSON, so a restarted server answers the protocol as before."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from merchantbench.agents.base import AgentOutcome, AgentSettings
from merchantbench.runs.driver import Driver

__all__ = [
    "EXTERNAL",
    "PROTOCOL",
    "ExternalDriver",
    "ExternalSettings",
    "ProtocolState",
    "add_usage",
]

EXTERNAL = "external"
PROTOCOL = "merchantbench-http/1"


def add_usage(totals: dict[str, float], usage: dict[str, Any]) -> None:
    """Add the numeric fields of a reported token usage to running totals (others are ignored:
    the counts are the agent's word, not ours, so we only keep what can be summed)."""
    for key, value in usage.items():
        if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
            totals[key] = totals.get(key, 0) + value


@dataclass
class ProtocolState:
    """What the protocol remembers about the agent; all of it goes into checkpoints (JSON)."""

    registration: dict[str, Any] | None = None
    brief_served: bool = False
    window: int = 0  # the window `turns` and `fingerprints` belong to
    turns: int = 0  # accepted /act turns in that window
    # The window's call-id ledger: `{agent}:{hour}:{tool_call_id}` → the call it named (tool and
    # canonical arguments). Not an outcome store: outcomes of keyed writes are remembered once,
    # by the tool layer (`tools/calling.py`), with the store's state.
    fingerprints: dict[str, str] = field(default_factory=dict)
    act_usage: dict[str, float] = field(default_factory=dict)
    auxiliary: dict[str, dict[str, Any]] = field(default_factory=dict)  # usage_id → record
    forced_windows: list[int] = field(default_factory=list)  # closed by the wall-clock limit

    def enter(self, window: int) -> None:
        """Start counting for `window` (turns and fingerprints are per window)."""
        if window != self.window:
            self.window, self.turns = window, 0
            self.fingerprints.clear()


class ExternalSettings(AgentSettings):
    """How the server knows the agent: its id in the protocol, and the protocol's version."""

    agent_id: str = "agent_0"
    protocol: str = PROTOCOL


class ExternalDriver(Driver[ExternalSettings]):
    """The driver of a run served over HTTP (see the module docstring)."""

    name = "external"
    acknowledges = True
    Settings = ExternalSettings

    def __init__(self, config: ExternalSettings | None = None) -> None:
        super().__init__(config)
        self.protocol = ProtocolState()

    @property
    def agent_id(self) -> str:
        return self.config.agent_id

    def outcome(self) -> AgentOutcome:
        """The token usage the agent reported (run.json `llm_usage`); it never stops early."""
        return AgentOutcome(usage=self.usage_summary())

    def usage_summary(self) -> dict[str, Any]:
        """Token usage as the agent reported it (per /act turn and delayed auxiliary calls)."""
        auxiliary: dict[str, float] = {}
        for record in self.protocol.auxiliary.values():
            add_usage(auxiliary, record["token_usage"])
        return {
            "reported_by": "agent",
            "act": dict(self.protocol.act_usage),
            "auxiliary": auxiliary,
            "auxiliary_records": len(self.protocol.auxiliary),
        }

    def state(self) -> dict[str, Any]:
        return asdict(self.protocol)

    def restore(self, state: dict[str, Any]) -> None:
        self.protocol = ProtocolState(**state)

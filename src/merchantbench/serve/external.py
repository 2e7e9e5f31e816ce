"""The `external` agent: an agent that lives outside our process and reaches its store over the
HTTP server. In the run record it is an agent like any other; what it keeps between windows is the
protocol state the server needs (registration, turns, idempotency fingerprints, reported usage),
and since agents are pickled into checkpoints, a restarted server gets that state back with the
session."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from merchantbench.agents.base import AgentOutcome, AgentSettings, BaseAgent
from merchantbench.surface import AgentSurface

__all__ = [
    "EXTERNAL",
    "PROTOCOL",
    "ExternalAgent",
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
    """What the protocol remembers about the agent; all of it goes into checkpoints."""

    registration: dict[str, Any] | None = None
    brief_served: bool = False
    window: int = 0  # the window `turns` and `fingerprints` belong to
    turns: int = 0  # accepted /act turns in that window
    fingerprints: dict[str, str] = field(default_factory=dict)  # idempotency key → call
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


class ExternalAgent(BaseAgent[ExternalSettings]):
    """Stands for an out-of-process agent in the run record; the server drives its session
    (`RunWriter.open_session(resume, agent=ExternalAgent(...))`), never the runner."""

    name = EXTERNAL
    Settings = ExternalSettings

    def __init__(self, config: ExternalSettings | None = None) -> None:
        super().__init__(config)
        self.state = ProtocolState()

    @property
    def agent_id(self) -> str:
        return self.config.agent_id

    def act(self, surface: AgentSurface) -> None:
        raise RuntimeError(
            "an external agent plays over HTTP: start it with `merchantbench serve` or "
            "`merchantbench run --agent external --serve`"
        )

    def outcome(self) -> AgentOutcome:
        """The token usage the agent reported (run.json `llm_usage`); it never stops early."""
        return AgentOutcome(usage=self.usage_summary())

    def usage_summary(self) -> dict[str, Any]:
        """Token usage as the agent reported it (per /act turn and delayed auxiliary calls)."""
        auxiliary: dict[str, float] = {}
        for record in self.state.auxiliary.values():
            add_usage(auxiliary, record["token_usage"])
        return {
            "reported_by": "agent",
            "act": dict(self.state.act_usage),
            "auxiliary": auxiliary,
            "auxiliary_records": len(self.state.auxiliary),
        }

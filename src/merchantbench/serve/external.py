"""The `external` agent: an agent that lives outside our process and reaches its store over the
HTTP server. In the run record it is an agent like any other; what it keeps between windows is the
protocol state the server needs (registration, turns, idempotency fingerprints, reported usage),
and since agents are pickled into checkpoints, a restarted server gets that state back with the
session."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from merchantbench.agents.base import register_agent
from merchantbench.session import Session

__all__ = ["EXTERNAL", "PROTOCOL", "ExternalAgent", "ProtocolState", "add_usage"]

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


class ExternalAgent:
    """Stands for an out-of-process agent in the run record; the server drives its session."""

    name = EXTERNAL

    def __init__(self, agent_id: str = "agent_0", protocol: str = PROTOCOL) -> None:
        self.agent_id = agent_id
        self.protocol_name = protocol
        self.state = ProtocolState()

    def settings(self) -> dict[str, Any]:
        return {"agent_id": self.agent_id, "protocol": self.protocol_name}

    def act(self, session: Session) -> None:
        raise RuntimeError(
            "an external agent plays over HTTP: start it with `merchantbench serve` or "
            "`merchantbench run --agent external --serve`"
        )

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


register_agent(EXTERNAL)(ExternalAgent)

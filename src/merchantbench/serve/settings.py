"""How the server hosts a run (recorded with it, `front_end`, so a restart keeps it), and the
answers of a run that is over and of a merchant whose store closed.

A served run is a store alone (one agent, `agent_id`, playing the store) or a market of several
merchants (`agents`, one agent id each, playing the merchant of that id); everything else is
hosted the same way. Only where the settings are kept differs: a store's in its run.json,
without `agents`; a market's in its arena.json, without `agent_id`."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from merchantbench.record.manifest import RunManifest
from merchantbench.serve.act import ProtocolError
from merchantbench.session import STORE

__all__ = [
    "FRONT_END",
    "HIDDEN_METRICS",
    "HostSettings",
    "agent_dead",
    "gone",
    "hosted_settings",
    "public_metrics",
    "summary_of",
]

FRONT_END = "http"  # `front_end.name` of the runs and markets this server hosts
HIDDEN_METRICS = ("seed",)  # summaries are agent-readable: the seed stays in the record
STORE_AGENT_FIELDS = ("registered", "forced_windows", "metrics")  # a store's summary's own


@dataclass
class HostSettings:
    """How the server hosts a run or a market; recorded with it so a restart keeps it.

    Attributes:
        agents: A market's merchants' agent ids (each plays the merchant of its id); None for
            a store alone, whose one agent is `agent_id`.
    """

    run_id: str
    agent_id: str = "agent_0"  # a store's agent (a market's are `agents`)
    label: str = ""
    turns_per_window: int = 100
    window_seconds: float | None = None  # wall-clock limit of a window; None = no limit
    paused: bool = False
    sealed: bool = False
    agents: list[str] | None = None

    @property
    def market(self) -> bool:
        """A market of merchants (arena.json), not a store alone (run.json)."""
        return self.agents is not None

    @property
    def merchants(self) -> dict[str, str]:
        """Each agent id and the merchant it plays (a store's agent: the store's one)."""
        if self.agents is None:
            return {self.agent_id: STORE}
        return {agent: agent for agent in self.agents}

    def to_json(self) -> dict[str, Any]:
        """As recorded: a store's without `agents`, a market's without `agent_id`."""
        saved = asdict(self)
        del saved["agent_id" if self.market else "agents"]
        return saved

    @classmethod
    def from_json(cls, saved: dict[str, Any]) -> HostSettings:
        return cls(**saved)


def gone(message: str = "the run is over: no window will open again") -> ProtocolError:
    return ProtocolError(410, "run_finished", message)


def agent_dead(merchant: str) -> ProtocolError:
    """The artifact's answer to a merchant of a market whose store closed (its deposit ran
    out)."""
    return ProtocolError(
        410, "agent_dead", f"agent {merchant} is dead (deposit exhausted): its store is closed"
    )


def public_metrics(metrics: dict[str, Any] | None) -> dict[str, Any] | None:
    """A merchant's metrics as a summary shows them (without the hidden ones)."""
    if metrics is None:
        return None
    return {k: v for k, v in metrics.items() if k not in HIDDEN_METRICS}


def summary_of(
    settings: HostSettings, head: dict[str, Any], agents: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """A run's summary: `head` (the run's own fields) and its agents' (`agents`, by agent id:
    those the reader may see). A store's names its agent and carries its fields beside the
    run's; a market's says so and lists its merchants under `agents`."""
    if settings.agents is None:
        own = agents[settings.agent_id]
        fields = {k: own[k] for k in STORE_AGENT_FIELDS if k in own}
        return {**head, "agent_id": settings.agent_id, **fields}
    return {**head, "market": True, "agents": agents}


def hosted_settings(meta: RunManifest) -> HostSettings | None:
    """The server's settings of a store it hosts; None for a run of another kind."""
    if meta.front_end is None or meta.front_end.name != FRONT_END:
        return None
    return HostSettings.from_json(meta.front_end.settings)

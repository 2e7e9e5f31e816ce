"""How the server hosts a run (recorded in its run.json, `front_end`), and the answer of a run
that is over."""

from __future__ import annotations

from dataclasses import dataclass

from merchantbench.record.manifest import RunManifest
from merchantbench.serve.act import ProtocolError

__all__ = ["FRONT_END", "HostSettings", "gone", "hosted_settings"]

FRONT_END = "http"  # run.json `front_end.name` of the runs this server hosts


@dataclass
class HostSettings:
    """How the server hosts a run; recorded in its run.json so a restart keeps it."""

    run_id: str
    agent_id: str = "agent_0"
    label: str = ""
    turns_per_window: int = 100
    window_seconds: float | None = None  # wall-clock limit of a window; None = no limit
    paused: bool = False
    sealed: bool = False


def gone(message: str = "the run is over: no window will open again") -> ProtocolError:
    return ProtocolError(410, "run_finished", message)


def hosted_settings(meta: RunManifest) -> HostSettings | None:
    """The server's settings of a run it hosts; None for a run of another kind."""
    if meta.front_end is None or meta.front_end.name != FRONT_END:
        return None
    return HostSettings(**meta.front_end.settings)

"""How the server hosts a run (saved beside its run record), and the answer of a run that is
over."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from merchantbench.serve.act import ProtocolError

__all__ = ["SERVE_FILE", "HostSettings", "gone", "read_settings"]

SERVE_FILE = "serve.json"  # the server's settings for a run, beside run.json


@dataclass
class HostSettings:
    """How the server hosts a run; saved in the run directory so a restart keeps it."""

    run_id: str
    agent_id: str = "agent_0"
    label: str = ""
    turns_per_window: int = 100
    window_seconds: float | None = None  # wall-clock limit of a window; None = no limit
    paused: bool = False
    sealed: bool = False


def gone(message: str = "the run is over: no window will open again") -> ProtocolError:
    return ProtocolError(410, "run_finished", message)


def read_settings(run_dir: Path) -> HostSettings:
    return HostSettings(**json.loads((run_dir / SERVE_FILE).read_text()))

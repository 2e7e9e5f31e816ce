"""Pieces every writer of a run record shares: the open trace file and the code's git commit.

`RunLifecycle` (one store, `runs/lifecycle.py`) and `ArenaLifecycle` (one record per merchant of
a market, `runs/arena.py`) both write traces with `TraceWriter` and stamp their manifests with
`git_commit()`.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any, TextIO

import merchantbench
from merchantbench.runs.kill_points import KillPoints
from merchantbench.runs.spec import RunError
from merchantbench.runs.transcript import json_line

__all__ = ["TraceWriter", "git_commit"]


def git_commit() -> str | None:
    """The commit of the checkout the package runs from, or None (no git, not a checkout)."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(merchantbench.__file__).parent,
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


class TraceWriter:
    """An open trace, a session's trace sink: strict JSON lines, appended, buffered until
    `sync` (flush and fsync, before a checkpoint that covers them)."""

    def __init__(self, path: Path, kill: KillPoints) -> None:
        self._file: TextIO | None = open(path, "a")  # noqa: SIM115 (closed in close)
        self._kill = kill

    def write(self, entry: dict[str, Any]) -> None:
        if self._file is None:
            raise RunError("the run record is closed; no more trace entries")
        # Strict JSON: the surface checked every agent string and number (no NaN, no surrogate).
        self._file.write(json_line(entry))
        self._kill.passed("trace")

    def flush(self) -> None:
        """Hand what was written to the OS (no fsync): a killed process loses none of it."""
        if self._file is not None:
            self._file.flush()

    def sync(self) -> None:
        if self._file is not None:
            self._file.flush()
            os.fsync(self._file.fileno())

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

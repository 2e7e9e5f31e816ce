"""Pieces every writer of a run record shares: the open trace file, the code's git commit and
the finishing of a store's record (its tables, the finished manifest, its metrics).

`RunLifecycle` (one store, `runs/lifecycle.py`) and `ArenaLifecycle` (one record per merchant of
a market, `runs/arena.py`) both write traces with `TraceWriter` and stamp their manifests with
`git_commit()`.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import merchantbench
from merchantbench.record.manifest import FinalAccounts, RunManifest
from merchantbench.record.tables import final_accounts, write_tables
from merchantbench.runs.kill_points import KillPoints
from merchantbench.runs.spec import RunError
from merchantbench.runs.transcript import json_line

if TYPE_CHECKING:
    from merchantbench.metrics import RunRecord
    from merchantbench.sim.engine import Engine

__all__ = ["TraceWriter", "finish_store_record", "git_commit"]


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


def finish_store_record(
    engine: Engine,
    windows: int,
    state_hash: str,
    meta: RunManifest,
    run_dir: Path,
    tables_written: Callable[[], None] = lambda: None,
) -> tuple[RunRecord, dict[str, Any]]:
    """Write a drained store's tables (then call `tables_written`: a kill point), mark `meta`
    finished, compute the metrics from the record and write `metrics.json`. The caller writes
    `run.json` after it, so that a kill before leaves a record `--resume` completes."""
    # Imported here: the metrics (pyarrow, numpy tables) are needed once, at the end.
    from merchantbench.metrics import load_run_record, metrics_of, write_metrics

    write_tables(engine, run_dir)
    tables_written()
    meta.finish(
        ended="closed" if engine.state.closed else "completed",
        windows=windows,
        closed=engine.state.closed,
        final_accounts=FinalAccounts(**final_accounts(engine)),
        state_hash=state_hash,
    )
    # The metrics read the finished manifest from memory: on disk it is not finished yet.
    record = dataclasses.replace(load_run_record(run_dir), run=meta)
    metrics = metrics_of(record)
    write_metrics(metrics, run_dir)
    return record, metrics

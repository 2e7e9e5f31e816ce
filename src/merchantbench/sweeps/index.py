"""The results index: one row per run of a sweep, configuration and metrics, in Parquet.

`SWEEP_DIR/index.parquet` is rewritten atomically whenever a run finishes, from what is on disk,
so it is always a consistent picture and DuckDB (or pandas, polars) can read it at any moment.
An arena has one row per merchant once it is done (`arena` true, `merchant` its id, `agent` its
agent, its own metrics; `run_dir` the arena's directory), and one row (`merchant` empty) before:

    duckdb -c "SELECT label, avg(final_net_assets) FROM 'SWEEP_DIR/index.parquet' GROUP BY 1"
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from merchantbench.metrics.table1 import TABLE1_KEYS
from merchantbench.record.arena import ArenaError, read_arena
from merchantbench.record.files import atomic_write_bytes
from merchantbench.record.manifest import ManifestError, read_manifest
from merchantbench.record.schema import METRICS_FILE, TRACE_FILE
from merchantbench.sweeps.plan import SweepRun
from merchantbench.sweeps.state import run_state

INDEX_FILE = "index.parquet"
EXTRA_METRICS = (
    "net_asset_change",
    "net_profit",
    "effective_window_rate",
    "framework_calls",
    "error_calls",
    "forced_end_of_step",
    "windows",
)
USAGE_KEYS = ("calls", "input_tokens", "cached_tokens", "output_tokens", "tokens", "cost")
TIMING_COLUMNS = ("wall_seconds",)  # differ between two sweeps of identical runs
FRAMEWORK_COUNTS = {
    "code_calls": ("execute_code",),
    "memory_writes": ("memory_write",),
    "skills_created": ("skill_create",),
    "skills_patched": ("skill_patch",),
    "skills_used": ("skill_use",),
}


def framework_counts(run_dir: Path) -> dict[str, int]:
    """Successful framework calls of a run's trace (the Hermes harness's code, memory, skills)."""
    counts = dict.fromkeys(FRAMEWORK_COUNTS, 0)
    tool_to_key = {tool: key for key, tools in FRAMEWORK_COUNTS.items() for tool in tools}
    with open(run_dir / TRACE_FILE, "rb") as trace:
        for line in trace:
            if b'"framework"' not in line:
                continue  # environment calls: skipped without parsing
            entry = json.loads(line)
            key = tool_to_key.get(entry.get("tool"))
            if key and entry.get("origin") == "framework" and entry.get("ok"):
                counts[key] += 1
    return counts


def finished_row(run_dir: Path) -> dict[str, Any]:
    """The metrics, usage and framework counts of a finished run, as its index row holds them."""
    metrics = json.loads((run_dir / METRICS_FILE).read_text())
    meta = read_manifest(run_dir)
    usage = meta.llm_usage or {}
    row: dict[str, Any] = {key: metrics.get(key) for key in (*TABLE1_KEYS, *EXTRA_METRICS)}
    row.update({f"llm_{key}": usage.get(key) for key in USAGE_KEYS})
    row["wall_seconds"] = usage.get("wall_seconds")
    row["state_hash"] = meta.state_hash
    row["ended"] = meta.ended
    row["stop_reason"] = meta.stop_reason
    if meta.seed_commitment is not None:  # a sealed run: its commitment, never its seed
        row["seed_commitment"] = meta.seed_commitment.sha256
    row.update(framework_counts(run_dir))
    return row


def index_row(run: SweepRun, sweep_dir: Path) -> dict[str, Any]:
    """The index row of one planned run, whatever its state."""
    state = run_state(run, sweep_dir)
    run_dir = run.run_dir(sweep_dir)
    row: dict[str, Any] = {
        "label": run.label, "agent": run.agent, "harness": run.harness,
        "model_entry": run.model_entry, "scenario": run.scenario.name,
        "seed": None if run.sealed else run.seed, "sealed": run.sealed,
        "identity": run.key, "status": state.status, "reason": state.reason,
        "run_dir": str(run_dir.relative_to(sweep_dir)),
    }  # fmt: skip
    if state.status == "done" and not run.is_arena:
        try:
            row.update(finished_row(run_dir))
        except (OSError, ValueError, ManifestError) as exc:
            row.update(status="failed", reason=f"unreadable record: {exc}")
    return row


def index_rows(run: SweepRun, sweep_dir: Path) -> list[dict[str, Any]]:
    """The index rows of one planned run: one, or one per merchant of a finished arena."""
    row = index_row(run, sweep_dir)
    if not run.is_arena:
        return [row]
    row.update(arena=True, merchant=None)
    if row["status"] != "done":
        return [row]
    arena_dir = run.run_dir(sweep_dir)
    try:
        arena = read_arena(arena_dir)
        rows = [
            {**row, "agent": entry.agent, "merchant": entry.id,
             **finished_row(arena.merchant_dir(arena_dir, entry.id))}
            for entry in arena.merchants
        ]  # fmt: skip
    except (OSError, ValueError, ManifestError, ArenaError) as exc:
        return [{**row, "status": "failed", "reason": f"unreadable record: {exc}"}]
    return rows


def _float_columns() -> list[str]:
    return [*TABLE1_KEYS, *EXTRA_METRICS, "llm_cost", "wall_seconds"]


def index_table(rows: Sequence[dict[str, Any]]) -> pa.Table:
    """Rows as an Arrow table with a fixed column order and types."""
    columns = list(dict.fromkeys(key for row in rows for key in row))
    floats = set(_float_columns())
    arrays = {}
    for column in columns:
        values = [row.get(column) for row in rows]
        kind = pa.float64() if column in floats else None
        arrays[column] = pa.array(values, type=kind)
    return pa.table(arrays)


def write_index(runs: Sequence[SweepRun], sweep_dir: Path) -> Path:
    """Rebuild `index.parquet` from disk (atomic replace) and return its path."""
    table = index_table([row for run in runs for row in index_rows(run, sweep_dir)])
    sink = io.BytesIO()
    pq.write_table(table, sink)
    path = sweep_dir / INDEX_FILE
    atomic_write_bytes(path, sink.getvalue())
    return path


def record_rows(sweep_dir: Path) -> list[dict[str, Any]]:
    """The rows `index.parquet` would hold, computed now from the plan and the run records
    (what every table reads: the index is a cache for other tools, never a source).

    Raises:
        SweepPlanError: `sweep.json` cannot be read.
    """
    from merchantbench.sweeps.plan import PLAN_FILE, read_plan

    if (sweep_dir / PLAN_FILE).is_file():
        return [row for run in read_plan(sweep_dir)[1] for row in index_rows(run, sweep_dir)]
    rows = []
    for plan in sorted(sweep_dir.rglob(PLAN_FILE)):  # a folder of sweeps: each one's rows
        inner = plan.parent
        if not plan.is_file() or plan.is_symlink():
            continue
        prefix = inner.relative_to(sweep_dir)
        for run in read_plan(inner)[1]:
            rows += [{**row, "run_dir": str(prefix / row["run_dir"])}
                     for row in index_rows(run, inner)]  # fmt: skip
    return rows


class SweepIndexError(ValueError):
    """`index.parquet` cannot be read; the message says so in one line."""


def read_index(sweep_dir: Path) -> list[dict[str, Any]]:
    """The rows of `index.parquet`.

    Raises:
        SweepIndexError: The file is damaged (running the sweep again rewrites it).
        OSError: It cannot be opened (missing: not a sweep directory, or not run yet).
    """
    path = sweep_dir / INDEX_FILE
    try:
        rows: list[dict[str, Any]] = pq.read_table(path).to_pylist()
    except pa.ArrowInvalid as exc:
        raise SweepIndexError(
            f"{path} cannot be read ({' '.join(str(exc).split())[:160]}); run the sweep again "
            "to rewrite it"
        ) from exc
    return rows

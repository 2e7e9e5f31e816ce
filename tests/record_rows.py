"""Writing hand-built run records from plain rows, with the contract's column types (tests only:
real records are written by `merchantbench.runs.record` from an engine)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from merchantbench.runs.schema import (
    OPTIONAL_COLUMNS,
    PARQUET_SCHEMAS,
    RUN_FILE,
    TRACE_FILE,
    arrow_table,
)


def _columns(name: str, rows: Sequence[Mapping[str, Any]]) -> dict[str, list[Any]]:
    optional = [k for k in OPTIONAL_COLUMNS.get(name, {}) if any(k in row for row in rows)]
    return {col: [row[col] for row in rows] for col in [*PARQUET_SCHEMAS[name], *optional]}


def write_run_record(
    run_dir: Path | str,
    run: Mapping[str, Any],
    trace: Sequence[Mapping[str, Any]],
    tables: Mapping[str, Sequence[Mapping[str, Any]]],
) -> Path:
    """Write `run.json`, `trace.jsonl` and the Parquet files (rows keyed `timeseries`, `orders`,
    `daily`, `listings`; every row holds every column of its file)."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / RUN_FILE).write_text(json.dumps(run, indent=2) + "\n", encoding="utf-8")
    lines = "".join(json.dumps(call, separators=(",", ":")) + "\n" for call in trace)
    (run_dir / TRACE_FILE).write_text(lines, encoding="utf-8")
    for name in PARQUET_SCHEMAS:
        rows = tables[name.removesuffix(".parquet")]
        pq.write_table(arrow_table(name, _columns(name, rows)), run_dir / name)
    return run_dir

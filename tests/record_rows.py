"""Writing hand-built run records from plain rows, with the contract's column types (tests only:
real records are written by `merchantbench.record.tables` from an engine)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from merchantbench.record.manifest import AgentRef, MarketRef, RunManifest
from merchantbench.record.schema import PARQUET_SCHEMAS, TRACE_FILE, arrow_table
from merchantbench.scenario import Scenario


def _columns(name: str, rows: Sequence[Mapping[str, Any]]) -> dict[str, list[Any]]:
    return {col: [row[col] for row in rows] for col in PARQUET_SCHEMAS[name]}


def fen(rmb: float) -> int:
    """A test's RMB figure as the record's integer fen."""
    return round(rmb * 100)


def run_manifest(scenario: Scenario | None = None, **fields: Any) -> RunManifest:
    """The `run.json` of a hand-built record: a run of `scenario` (default `paper`), seed 7, by
    `test-agent`; `fields` override any key (validated)."""
    start = RunManifest.start(
        scenario or Scenario(),
        seed=7,
        market=MarketRef(source="synthetic", n_products=10),
        agent=AgentRef(name="test-agent", settings={}),
        tool_schema_sha256="0" * 64,
        git_commit=None,
    )
    return RunManifest.model_validate(start.model_dump() | fields)


def write_run_record(
    run_dir: Path | str,
    run: RunManifest,
    trace: Sequence[Mapping[str, Any]],
    tables: Mapping[str, Sequence[Mapping[str, Any]]],
) -> Path:
    """Write `run.json`, `trace.jsonl` and the Parquet files (rows keyed `timeseries`, `orders`,
    `daily`, `listings`; every row holds every column of its file, money in fen)."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    run.write(run_dir)
    lines = "".join(json.dumps(call, separators=(",", ":")) + "\n" for call in trace)
    (run_dir / TRACE_FILE).write_text(lines, encoding="utf-8")
    for name in PARQUET_SCHEMAS:
        rows = tables[name.removesuffix(".parquet")]
        pq.write_table(arrow_table(name, _columns(name, rows)), run_dir / name)
    return run_dir

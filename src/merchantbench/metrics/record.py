"""A run record (docs/run-record.md) read into typed in-memory tables.

Every column named by the contract is required and is coerced to one numpy dtype: hours, counts
and money (integer fen) to int64, ratings to float64, flags to bool, names to object arrays of
str. `run.json` is read as a `RunManifest` of the current format.
Anything that makes a directory unreadable as a run record raises `RunRecordError` with a
one-line reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from merchantbench.record.files import json_value
from merchantbench.record.manifest import ManifestError, RunManifest, read_manifest
from merchantbench.record.schema import (
    PARQUET_SCHEMAS,
    RUN_FILE,
    TRACE_FILE,
    TRACE_REQUIRED,
    TRACE_SCHEMA,
)

_NUMPY_DTYPES = {"int": np.int64, "money": np.int64, "float": np.float64, "bool": np.bool_}


class RunRecordError(ValueError):
    """A directory that cannot be read as a run record; the message says why, on one line."""


@dataclass(frozen=True)
class Table:
    """One file of a run record as equally long numpy columns.

    Attributes:
        name: File name inside the run directory.
        columns: Column name to array.
    """

    name: str
    columns: Mapping[str, np.ndarray]

    def __getitem__(self, column: str) -> np.ndarray:
        return self.columns[column]

    def __contains__(self, column: object) -> bool:
        return column in self.columns

    def __len__(self) -> int:
        return len(next(iter(self.columns.values()))) if self.columns else 0

    def where(self, mask: np.ndarray) -> Table:
        """The rows where `mask` is true."""
        return Table(self.name, {key: values[mask] for key, values in self.columns.items()})


@dataclass(frozen=True)
class RunRecord:
    """Every file of one run directory, read.

    Attributes:
        path: The run directory.
        run: `run.json`, validated.
        trace: One row per tool call, in call order.
        timeseries: One row per simulated hour of the horizon.
        orders: One row per order.
        daily: One row per day.
        listings: One row per listing spell.
    """

    path: Path
    run: RunManifest
    trace: Table
    timeseries: Table
    orders: Table
    daily: Table
    listings: Table


def is_one_of(values: np.ndarray, names: Sequence[str]) -> np.ndarray:
    """Elementwise membership of a str column in `names` (a set lookup: `np.isin` sorts objects)."""
    wanted = frozenset(names)
    return np.fromiter((value in wanted for value in values), dtype=bool, count=len(values))


def _coerce(values: Sequence[Any] | np.ndarray, kind: str) -> np.ndarray:
    if kind == "str":
        return np.array(["" if v is None else str(v) for v in values], dtype=object)
    if kind == "object":
        array = np.empty(len(values), dtype=object)
        array[:] = list(values)
        return array
    return np.asarray(values, dtype=_NUMPY_DTYPES[kind]).reshape(-1)


def _read_parquet(run_dir: Path, name: str) -> Table:
    path = run_dir / name
    try:
        # One file, read whole: `ParquetFile` needs no `pyarrow.dataset` (0.1-0.3 s to import).
        with pq.ParquetFile(path) as parquet:
            arrow = parquet.read()
    except (OSError, pa.ArrowException) as exc:
        reason = " ".join(str(exc).split())
        raise RunRecordError(f"{path}: not a readable Parquet file ({reason})") from exc
    columns: dict[str, np.ndarray] = {}
    for column, kind in PARQUET_SCHEMAS[name].items():
        if column not in arrow.column_names:
            raise RunRecordError(f"{path}: column {column!r} is missing")
        columns[column] = _coerce(arrow.column(column).to_pylist(), kind)
    return Table(name, columns)


def _trace_row(line: str, number: int, path: Path) -> dict[str, Any]:
    try:
        row = json_value(line)
    except ValueError as exc:  # not JSON, or nested too deeply to read
        raise RunRecordError(f"{path}:{number}: not JSON ({getattr(exc, 'msg', exc)})") from exc
    if not isinstance(row, dict):
        raise RunRecordError(f"{path}:{number}: a trace line must be a JSON object")
    missing = [key for key in TRACE_REQUIRED if key not in row]
    if missing:
        raise RunRecordError(f"{path}:{number}: missing {', '.join(missing)}")
    return row


def _read_trace(run_dir: Path) -> Table:
    path = run_dir / TRACE_FILE
    rows: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if line.strip():
                rows.append(_trace_row(line, number, path))
    columns = {
        key: _coerce([row.get(key, False) for row in rows], kind)
        for key, kind in TRACE_SCHEMA.items()
        if key not in ("seq", "args", "error")
    }
    columns["seq"] = _coerce([row.get("seq", i) for i, row in enumerate(rows)], "int")
    columns["args"] = _coerce([row.get("args") or {} for row in rows], "object")
    columns["error"] = np.array([row.get("error") for row in rows], dtype=object)
    return Table(TRACE_FILE, columns)


def _read_run_json(run_dir: Path) -> RunManifest:
    if not run_dir.is_dir():
        raise RunRecordError(f"{run_dir} is not a directory")
    if not (run_dir / RUN_FILE).is_file():
        raise RunRecordError(f"{run_dir} is not a run record (no {RUN_FILE})")
    try:
        return read_manifest(run_dir)
    except ManifestError as exc:
        raise RunRecordError(str(exc)) from exc


def load_run_record(run_dir: Path | str) -> RunRecord:
    """Read a run directory.

    Args:
        run_dir: A directory written by `merchantbench run`.

    Returns:
        The run record with every table read and typed.

    Raises:
        RunRecordError: A file is missing or unreadable, a column is missing, or `run.json`
            is not of the current format.
    """
    run_dir = Path(run_dir)
    run = _read_run_json(run_dir)
    for name in (TRACE_FILE, *PARQUET_SCHEMAS):
        if not (run_dir / name).is_file():
            raise RunRecordError(f"{run_dir} is not a complete run record ({name} is missing)")
    tables = {
        name.removesuffix(".parquet"): _read_parquet(run_dir, name) for name in PARQUET_SCHEMAS
    }
    return RunRecord(path=run_dir, run=run, trace=_read_trace(run_dir), **tables)

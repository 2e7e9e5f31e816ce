"""Run records on disk, read for the dashboard (never written): which run directories a root
holds, their Table-1 metrics, progress of running ones, their charts (a window's trace and
transcript: web/windows.py).

A run directory is any directory with a `run.json`. A *sweep* is a directory whose run
directories sit deeper than one level (`SWEEP/runs/<config>/s<seed>/`); its runs are grouped by
configuration (the parent directory of each run) and by setting for the leaderboards
(record/comparable.py: runs of different scenarios, horizons, markets, tool schemas or code are
never pooled).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from merchantbench.metrics.table1 import TABLE1_KEYS
from merchantbench.money import rmb
from merchantbench.record.comparable import (
    counted,
    find_run_dirs,
    finished_runs,
    left_out_lines,
    pool_cost,
    pool_runs,
    provenance,
    provenance_lines,
    spend_efficiency,
)
from merchantbench.record.files import json_value
from merchantbench.record.safe_read import read_record_bytes
from merchantbench.record.schema import METRICS_FILE, ORDERS_FILE, RUN_FILE, TIMESERIES_FILE

MAX_DEPTH = 5  # how deep under the root run directories are looked for
MAX_RUNS = 5000


@dataclass(frozen=True)
class RunRow:
    """One run directory as the dashboard lists it."""

    path: str  # relative to the root, with '/'
    agent: str
    scenario: str
    status: str  # running, completed, closed, stopped, error, interrupted
    windows_done: int
    windows_total: int
    metrics: dict[str, Any] = field(default_factory=dict)

    @property
    def config(self) -> str:
        """The configuration a sweep ran this run under: its parent directory."""
        parent = self.path.rsplit("/", 1)[0] if "/" in self.path else ""
        return parent.rsplit("/", 1)[-1] if parent else self.agent


def read_json_or_empty(path: Path) -> dict[str, Any]:
    try:  # a link, FIFO or device in the file's place is refused (record/safe_read.py)
        value = json_value(read_record_bytes(path.parent, path.name))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def find_runs(root: Path) -> list[Path]:
    """Run directories under `root` (root itself included), sorted, bounded in depth and
    number."""
    return find_run_dirs(root, MAX_DEPTH, MAX_RUNS)


def relative_path(root: Path, run_dir: Path) -> str:
    """`run_dir` relative to `root`, with '/': as given, or resolved when one of them is relative
    and the other absolute (`--runs-dir runs` and a resolved run directory)."""
    try:
        return run_dir.relative_to(root).as_posix()
    except ValueError:
        return run_dir.resolve().relative_to(root.resolve()).as_posix()


def run_row(root: Path, run_dir: Path) -> RunRow:
    """The summary of one run directory."""
    meta = read_json_or_empty(run_dir / RUN_FILE)
    metrics = read_json_or_empty(run_dir / METRICS_FILE)
    scenario = meta.get("scenario_config", {})
    clock = scenario.get("clock", {}) if isinstance(scenario, dict) else {}
    total = int(clock.get("days", 0)) * 24 // max(int(clock.get("hours_per_window", 12)), 1)
    rel = relative_path(root, run_dir)
    return RunRow(
        path="." if rel == "." else rel,
        agent=str((meta.get("agent") or {}).get("name", "?")),
        scenario=f"{(meta.get('scenario') or {}).get('name', '?')} · {clock.get('days', '?')} days",
        status=str(meta.get("ended") or "running"),
        windows_done=int(meta.get("windows") or 0),
        windows_total=total,
        metrics={k: metrics[k] for k in TABLE1_KEYS if k in metrics},
    )


def list_runs(root: Path) -> list[RunRow]:
    return [run_row(root, d) for d in find_runs(root)]


def is_sweep(root: Path, runs: list[RunRow]) -> bool:
    """A directory whose runs sit in configuration folders (or that has a sweep index)."""
    return (root / "index.parquet").is_file() or any(r.path.count("/") >= 1 for r in runs)


COUNT_KEYS = frozenset({"orders", "tool_calls"})


def _mean(values: list[float], key: str) -> float | int | None:
    if not values:
        return None
    mean = float(np.mean(values))
    return int(mean) if key in COUNT_KEYS and mean.is_integer() else mean  # 452, not 452.000


def leaderboards(root: Path, left_out: list[str] | None = None) -> list[dict[str, Any]]:
    """One ranking per setting (record/comparable.py: scenario, days, market, tool schema, code;
    never pooled), each row one configuration identity: mean Table-1 metrics over its finished
    runs whose record verifies (`replay.evidence.check_run`; copies of a run counted once),
    what it pools, cost per run, best net assets first; the runs that do not verify are added
    to `left_out`, one line each with the first difference. Seeds are counted, never shown
    (the dashboard shows no seed)."""
    from merchantbench.replay.evidence import checker

    runs, dropped = counted(finished_runs(root, checker()))
    if left_out is not None:
        left_out += [line.replace(str(root), root.name, 1) for line in left_out_lines(dropped)]
    boards = []
    for setting, pools in pool_runs(runs).items():
        rows = []
        for pool in pools:
            means = {key: _mean([float(r.metrics[key]) for r in pool.runs
                                 if isinstance(r.metrics.get(key), int | float)], key)
                     for key in TABLE1_KEYS}  # fmt: skip
            cost, per_run = pool_cost(pool)
            assets = means.get("final_net_assets")
            efficiency = spend_efficiency(None if assets is None else float(assets), per_run)
            rows.append({"config": pool.label, "agent": pool.identity.agent,
                         "runs": len(pool.runs), "pools": pool.what(show_seeds=False), "cost": cost,
                         "efficiency": efficiency, **means})  # fmt: skip
        rows.sort(key=lambda row: -float(row["final_net_assets"] or 0.0))
        block = provenance_lines(provenance(setting, pools), show_seeds=False)
        boards.append({"setting": setting.label, "key": setting.key, "rows": rows,
                       "provenance": block})  # fmt: skip
    return boards


def inside(root: Path, rel: str) -> Path | None:
    """The run directory `rel` names under `root`, or None if it is not one (no escaping; a
    name the file system refuses, e.g. too long, is not one either)."""
    try:
        candidate = (root / rel).resolve()
        base = root.resolve()
        if candidate != base and base not in candidate.parents:
            return None
        return candidate if (candidate / RUN_FILE).is_file() else None
    except (OSError, ValueError):  # ValueError: a NUL in the name
        return None


def window_series(run_dir: Path, windows: int, hours: int) -> dict[str, list[float]]:
    """Net assets and rating at each window's opening, and orders placed so far, for charts."""
    series: dict[str, list[float]] = {"window": [], "net_assets": [], "rating": [], "orders": []}
    ts_file, orders_file = run_dir / TIMESERIES_FILE, run_dir / ORDERS_FILE
    if not ts_file.is_file():
        return series
    ts = pq.read_table(ts_file, columns=["t", "net_assets", "rating"]).to_pydict()
    placed = np.sort(
        np.asarray(pq.read_table(orders_file, columns=["placed_t"]).column(0).to_pylist())
        if orders_file.is_file() else np.zeros(0)
    )  # fmt: skip
    n = len(ts["t"])
    for w in range(min(windows, (n + hours - 1) // hours) if windows else n // hours):
        t = min(w * hours, n - 1)
        series["window"].append(w + 1)
        series["net_assets"].append(rmb(int(ts["net_assets"][t])))
        series["rating"].append(float(ts["rating"][t]))
        series["orders"].append(int(np.searchsorted(placed, (w + 1) * hours, side="left")))
    return series

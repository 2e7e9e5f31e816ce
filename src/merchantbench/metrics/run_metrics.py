"""All metrics of one run, as one JSON-ready mapping (written as `metrics.json`)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from merchantbench.metrics.coherence import coherence_metrics
from merchantbench.metrics.diagnosis import diagnose
from merchantbench.metrics.record import RunRecord, load_run_record
from merchantbench.metrics.run_info import run_info
from merchantbench.metrics.table1 import call_metrics, order_metrics, store_metrics
from merchantbench.metrics.windows import window_activity
from merchantbench.record.files import atomic_write_bytes
from merchantbench.record.schema import METRICS_FILE


def json_ready(value: Any) -> Any:
    """`value` with numpy scalars as Python numbers and NaN or infinity as `None`."""
    if isinstance(value, dict):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_ready(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def metrics_of(record: RunRecord) -> dict[str, Any]:
    """Table-1 metrics, window figures, coherence analyses and failure-mode detectors of a read
    run record.

    See docs/metrics.md for every key's definition.
    """
    info = run_info(record)
    activity = window_activity(record.trace, info.scheduled_windows, info.calendar)
    coherence = coherence_metrics(record, info, activity)
    metrics: dict[str, Any] = {
        "scenario": record.run.scenario.name,
        "agent": info.agent,
        "seed": info.seed,
        "state_hash": info.state_hash,
        **store_metrics(record, info),
        **order_metrics(record.orders),
        **call_metrics(record.trace, activity, info),
        "coherence": coherence,
        "diagnosis": diagnose(record, info, activity, coherence),
    }
    metrics["net_asset_change"] = round(metrics["final_net_assets"] - info.initial_net_assets, 2)
    return json_ready(metrics)


def compute_metrics(run_dir: Path | str) -> dict[str, Any]:
    """Read a run directory and compute its metrics.

    Raises:
        RunRecordError: The directory is not a readable run record.
    """
    return metrics_of(load_run_record(run_dir))


def write_metrics(metrics: dict[str, Any], out_dir: Path | str) -> Path:
    """Write `metrics.json` into `out_dir` (atomically; the one writer of that file, so a run and
    its report produce the same bytes) and return its path."""
    path = Path(out_dir) / METRICS_FILE
    text = json.dumps(metrics, indent=2, ensure_ascii=False) + "\n"
    atomic_write_bytes(path, text.encode("utf-8"))
    return path

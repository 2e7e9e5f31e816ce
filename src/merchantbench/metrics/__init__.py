"""Table-1 metrics and coherence analyses computed from a run record (docs/metrics.md)."""

from merchantbench.metrics.aggregate import (
    MetricSummary,
    PairedComparison,
    RunResult,
    aggregate_runs,
    paired_comparison,
)
from merchantbench.metrics.record import RunRecord, RunRecordError, load_run_record
from merchantbench.metrics.run_metrics import (
    compute_metrics,
    json_ready,
    metrics_of,
    write_metrics,
)
from merchantbench.metrics.table1 import TABLE1_KEYS

__all__ = [
    "TABLE1_KEYS",
    "MetricSummary",
    "PairedComparison",
    "RunRecord",
    "RunRecordError",
    "RunResult",
    "aggregate_runs",
    "compute_metrics",
    "json_ready",
    "load_run_record",
    "metrics_of",
    "paired_comparison",
    "write_metrics",
]

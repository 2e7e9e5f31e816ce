"""A sweep's counterfactual analysis aggregated by configuration: every finished run of the
sweep directory analysed (all takeovers in one executor), then per configuration and policy
the mean curve over its runs (seeds), the mean regret and each run's onset of damage."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from merchantbench.counterfactual.analysis import FORMAT, RunAnalysis
from merchantbench.counterfactual.parent import ForkError, Parent
from merchantbench.record.manifest import ManifestError, read_manifest
from merchantbench.record.schema import METRICS_FILE, RUN_FILE
from merchantbench.report.counterfactual import aggregate_runs
from merchantbench.sweeps.plan import RUNS_DIR


def sweep_runs(sweep_dir: Path) -> tuple[list[tuple[str, Path]], list[str]]:
    """(configuration label, run directory) of every finished run of a sweep, and a note for
    each run left out (unfinished or unreadable)."""
    root = sweep_dir / RUNS_DIR
    if not root.is_dir():
        raise ForkError(f"{sweep_dir} is not a sweep directory (no {RUNS_DIR}/)")
    found, left_out = [], []
    for run_dir in sorted(p.parent for p in root.glob(f"*/*/{RUN_FILE}")):
        label = run_dir.parent.name
        try:
            finished = read_manifest(run_dir).final_accounts is not None
        except ManifestError as exc:
            left_out.append(f"{run_dir}: {exc}")
            continue
        if finished and (run_dir / METRICS_FILE).is_file():
            found.append((label, run_dir))
        else:
            left_out.append(f"{run_dir}: not finished")
    if not found:
        raise ForkError(f"{sweep_dir} has no finished run to analyse")
    return found, left_out


def is_sweep(path: Path) -> bool:
    return (path / RUNS_DIR).is_dir() and not (path / RUN_FILE).is_file()


def aggregate(labelled: Sequence[tuple[str, RunAnalysis]], sweep_dir: Path) -> dict[str, Any]:
    """The sweep's `counterfactual_sweep.json` (module docstring;
    `report.counterfactual.aggregate_runs`, which the sweep report uses too)."""
    first: Parent = labelled[0][1].parent
    return {
        "format": FORMAT,
        "sweep": str(sweep_dir),
        "every_days": labelled[0][1].every_days,
        "initial_net_assets": first.manifest.initial_net_assets,
        "configurations": aggregate_runs([(label, a.to_json()) for label, a in labelled]),
    }

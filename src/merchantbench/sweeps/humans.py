"""Human rows in a sweep's report: finished playground runs beside the agents.

A human-baseline study (`merchantbench study create --dir STUDY`, docs/web.md) keeps one run
record per participant, played through the web playground by the `human` driver. The operator
points the report at it:

    merchantbench report SWEEP --humans STUDY          # one or more --humans folders

Every finished run record under each folder whose driver is `human` becomes a row of the report
as the sweep's own runs are (same columns, read the same way from `run.json` and
`metrics.json`). The participants of one setting pool into one configuration labelled
`Human (n=K)`, K the number of distinct runs it pools (the participant is who played, not a
configuration: `record.comparable.identity_of`). Runs of another setting (scenario, days,
market, tools, code) land in that setting's own table, never pooled with the sweep's; a
participant still playing, or a record that is not a human run, is listed and not counted.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from merchantbench.record.comparable import SET_ASIDE, Pool, find_run_dirs, read_finished
from merchantbench.record.manifest import ManifestError, read_manifest
from merchantbench.sweeps.index import finished_row

HUMAN_DRIVER = "human"
HUMAN_LABEL = "Human"


def is_human_pool(pool: Pool) -> bool:
    """A pool of playground runs (`human` driver)."""
    return pool.identity.agent.startswith(f"{HUMAN_DRIVER}:")


def human_label(pool: Pool) -> str:
    """`Human (n=K)`: K the distinct runs the pool holds."""
    return f"{HUMAN_LABEL} (n={len(pool.runs)})"


def human_rows(folders: Iterable[Path]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Index-shaped rows (sweeps/index.py) of the finished human runs under `folders`, with
    absolute `run_dir`s, and the records left out (unfinished or not a human run) with why.

    Raises:
        ValueError: a folder does not exist (the message names it).
    """
    rows, left_out = [], []
    for folder in folders:
        if not Path(folder).is_dir():
            raise ValueError(f"--humans {folder}: no such folder")
        for run_dir in find_run_dirs(Path(folder)):
            if SET_ASIDE.search(run_dir.name):
                continue
            row, why = _row(run_dir.resolve())
            if row is not None:
                rows.append(row)
            else:
                left_out.append({"run": str(run_dir), "status": "not counted", "reason": why})
    return rows, left_out


def _row(run_dir: Path) -> tuple[dict[str, Any] | None, str]:
    try:
        meta = read_manifest(run_dir)
    except ManifestError as exc:
        return None, f"unreadable: {exc}"
    if meta.driver != HUMAN_DRIVER:
        return None, f"not a human run (agent {meta.agent.name})"
    if read_finished(run_dir) is None:
        return None, "not finished (a participant still playing)"
    try:
        finished = finished_row(run_dir)
    except (OSError, ValueError, ManifestError) as exc:
        return None, f"unreadable: {exc}"
    participant = meta.agent.settings.get("participant")
    return {
        "label": HUMAN_LABEL, "agent": meta.agent.name, "harness": None, "model_entry": None,
        "scenario": meta.scenario.name, "seed": meta.seed, "sealed": meta.seed is None,
        "identity": f"human:{participant}", "status": "done", "reason": None,
        "run_dir": str(run_dir), **finished,
    }, ""  # fmt: skip


def humans_note(data: dict[str, Any]) -> str:
    """The report's sentence on its human rows (empty without `--humans`)."""
    humans = data.get("humans")
    if not humans:
        return ""
    n = humans["runs"]
    where = ", ".join(humans["folders"])
    return (f"\n\nHuman rows: {n} finished playground run{'s' if n != 1 else ''} (driver `human`) "
            f"from {where}, pooled per setting as `Human (n=K)`.")  # fmt: skip


def label_human_pools(pools: Sequence[Pool]) -> None:
    """Name each human pool `Human (n=K)` (after pooling, when K is known)."""
    for pool in pools:
        if is_human_pool(pool):
            pool.label = human_label(pool)

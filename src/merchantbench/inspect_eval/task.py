"""The Inspect task `merchantbench/merchantbench`: one sample per seed, scored by final net assets.

    inspect eval merchantbench/merchantbench --model PROVIDER/MODEL -T scenario=smoke -T seed=1

Task parameters (`-T name=value`): `scenario` (a preset: `paper`, `small`, `smoke`), `seed` (one
seed or a list, `-T seed=[1,2,3]`: one sample each), `overrides` (scenario `key=value`
overrides, as `merchantbench run --set`), `max_model_calls` (per window), `compaction`
(`none`, `auto`, `edit`, `trim`, `summary`) and `compaction_threshold`, `runs_dir` (where the
run records go; by default beside the Inspect log, in a directory named after it).

The score's value is the run's final net assets in RMB; its metadata holds the Table-1 metrics
of the run record's `metrics.json`, the run directory and the state hash.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.log._samples import sample_active
from inspect_ai.scorer import Score, Scorer, Target, mean, scorer, stderr
from inspect_ai.solver import TaskState

from merchantbench.inspect_eval.driver import InspectSettings
from merchantbench.inspect_eval.solver import COMPACTIONS, RESULT_KEY, play_store
from merchantbench.metrics.table1 import TABLE1_KEYS
from merchantbench.scenario import load_scenario

__all__ = ["merchantbench", "net_assets", "run_dir_for"]

DEFAULT_RUNS_DIR = Path("runs")


def _seeds(seed: int | str | list[int]) -> list[int]:
    if isinstance(seed, list):
        return [int(s) for s in seed]
    if isinstance(seed, str):
        return [int(s) for s in seed.split(",") if s.strip()]
    return [int(seed)]


def _log_base() -> Path:
    """The directory beside the running Inspect log, named after it (`logs/X.eval` gives
    `logs/X/`); `runs/` when the log is not a local file."""
    active = sample_active()
    location = active.log_location if active is not None else ""
    if not location or ("://" in location and not location.startswith("file://")):
        return DEFAULT_RUNS_DIR
    path = Path(location.removeprefix("file://"))
    return path.with_name(path.name.rsplit(".", 1)[0])


def run_dir_for(runs_dir: str | None) -> Any:
    """`(seed, epoch) -> Path`: a fresh run directory per sample and epoch."""

    def run_dir(seed: int, epoch: int) -> Path:
        base = Path(runs_dir) if runs_dir else _log_base()
        path, n = base / f"seed{seed}-epoch{epoch}", 1
        while path.exists():  # a retried sample gets its own directory
            n += 1
            path = base / f"seed{seed}-epoch{epoch}-{n}"
        return path

    return run_dir


@scorer(metrics=[mean(), stderr()])
def net_assets() -> Scorer:
    """Final net assets (RMB) of the sample's run; Table-1 metrics in the score metadata."""

    async def score(state: TaskState, target: Target) -> Score:
        result = state.store.get(RESULT_KEY)
        if result is None:
            return Score(value=0.0, explanation="the run did not finish: no run record metrics")
        metrics = result["metrics"]
        metadata = {key: metrics[key] for key in TABLE1_KEYS}
        metadata.update(
            run_dir=result["run_dir"],
            state_hash=metrics["state_hash"],
            net_asset_change=metrics["net_asset_change"],
        )
        return Score(
            value=float(metrics["final_net_assets"]),
            answer=result["run_dir"],
            explanation=f"final net assets ¥{metrics['final_net_assets']:,.2f}",
            metadata=metadata,
        )

    return score


@task
def merchantbench(
    scenario: str = "smoke",
    seed: int | str | list[int] = 1,
    overrides: list[str] | str | None = None,
    max_model_calls: int = 30,
    compaction: str = "none",
    compaction_threshold: float = 0.9,
    runs_dir: str | None = None,
) -> Task:
    """MerchantBench: run a drop-shipping store for the scenario's horizon (see module doc)."""
    if compaction != "none" and compaction not in COMPACTIONS:
        raise ValueError(f"compaction must be none or one of {', '.join(COMPACTIONS)}")
    sets = [overrides] if isinstance(overrides, str) else list(overrides or [])
    sc = load_scenario(scenario, overrides=sets)
    settings = InspectSettings(
        max_model_calls=max_model_calls,
        compaction=compaction,
        compaction_threshold=compaction_threshold,
    )
    samples = [
        Sample(
            input=f"Run the store: scenario {sc.name}, seed {s}.",
            id=s,
            metadata={"scenario": sc.name, "seed": s},
        )
        for s in _seeds(seed)
    ]
    return Task(
        dataset=MemoryDataset(samples, name=f"merchantbench-{sc.name}"),
        solver=play_store(sc, settings, run_dir_for(runs_dir)),
        scorer=net_assets(),
        name="merchantbench",
        metadata={"scenario": sc.name, "scenario_hash": sc.content_hash},
    )

"""Several runs at once: multi-seed summaries and paired comparisons of two agents.

A summary gives the mean, the sample standard deviation (ddof = 1) and the coefficient of
variation (std / |mean|) of each metric. A paired comparison matches the runs of two agents by
seed: with common random numbers both met the same customers, so per-seed differences are far
less noisy than the difference of two means.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from merchantbench.metrics.table1 import TABLE1_KEYS


@dataclass(frozen=True)
class RunResult:
    """One run's metrics with what identifies it in a comparison."""

    path: Path
    agent: str
    seed: int | None
    metrics: Mapping[str, Any]

    @classmethod
    def of(cls, path: Path, metrics: Mapping[str, Any]) -> RunResult:
        """Identify a run by the agent and seed its metrics carry."""
        return cls(
            path=path, agent=str(metrics["agent"]), seed=metrics.get("seed"), metrics=metrics
        )


@dataclass(frozen=True)
class MetricSummary:
    """One metric over several runs.

    Attributes:
        values: The runs' values, in input order.
        mean: Their mean.
        std: Sample standard deviation; `None` with fewer than two runs.
        cv: Coefficient of variation std / |mean|; `None` without std or with mean 0.
    """

    values: tuple[float, ...]
    mean: float
    std: float | None
    cv: float | None

    @property
    def n(self) -> int:
        """Number of runs."""
        return len(self.values)


def summarize(values: Sequence[float]) -> MetricSummary:
    """Mean, sample std and coefficient of variation of at least one value."""
    array = np.asarray(values, dtype=np.float64)
    mean = float(array.mean())
    std = float(array.std(ddof=1)) if len(array) > 1 else None
    cv = std / abs(mean) if std is not None and mean != 0 else None
    return MetricSummary(values=tuple(float(v) for v in array), mean=mean, std=std, cv=cv)


def aggregate_runs(
    metrics: Sequence[Mapping[str, Any]], keys: Sequence[str] = TABLE1_KEYS
) -> dict[str, MetricSummary]:
    """Summarise each metric of `keys` over runs; runs lacking a value are left out of it."""
    summaries = {}
    for key in keys:
        values = [float(m[key]) for m in metrics if m.get(key) is not None]
        if values:
            summaries[key] = summarize(values)
    return summaries


def group_by_agent(runs: Sequence[RunResult]) -> dict[str, list[RunResult]]:
    """Runs grouped by agent label, groups in order of first appearance."""
    groups: dict[str, list[RunResult]] = {}
    for run in runs:
        groups.setdefault(run.agent, []).append(run)
    return groups


@dataclass(frozen=True)
class PairedComparison:
    """Candidate minus baseline, seed by seed, for one metric.

    Attributes:
        seeds: Seeds both agents ran, ascending.
        differences: Candidate − baseline per seed.
        mean_difference: Mean of the differences.
        std_difference: Their sample std; `None` with one pair.
        relative_difference: Candidate mean / baseline mean − 1; `None` if the baseline mean is 0.
        p_value: Two-sided paired t-test; `None` with one pair or identical differences.
    """

    seeds: tuple[int, ...]
    differences: tuple[float, ...]
    mean_difference: float
    std_difference: float | None
    relative_difference: float | None
    p_value: float | None


def _by_seed(runs: Sequence[RunResult]) -> dict[int, RunResult]:
    table: dict[int, RunResult] = {}
    for run in runs:
        if run.seed is None:
            raise ValueError(f"{run.path}: run.json records no seed, runs cannot be paired")
        if run.seed in table:
            raise ValueError(f"seed {run.seed} appears twice for agent {run.agent!r}")
        table[run.seed] = run
    return table


def _paired_t_p_value(differences: np.ndarray) -> float | None:
    from scipy import stats  # imported late: scipy is slow to import

    std = float(differences.std(ddof=1)) if len(differences) > 1 else 0.0
    if std == 0.0:
        return None
    t = float(differences.mean()) / (std / math.sqrt(len(differences)))
    return float(2 * stats.t.sf(abs(t), df=len(differences) - 1))


def _compare(baseline: np.ndarray, candidate: np.ndarray, seeds: list[int]) -> PairedComparison:
    differences = candidate - baseline
    base_mean = float(baseline.mean())
    return PairedComparison(
        seeds=tuple(seeds),
        differences=tuple(float(d) for d in differences),
        mean_difference=float(differences.mean()),
        std_difference=float(differences.std(ddof=1)) if len(differences) > 1 else None,
        relative_difference=float(candidate.mean()) / base_mean - 1 if base_mean else None,
        p_value=_paired_t_p_value(differences),
    )


def paired_comparison(
    baseline: Sequence[RunResult],
    candidate: Sequence[RunResult],
    keys: Sequence[str] = TABLE1_KEYS,
) -> dict[str, PairedComparison]:
    """Compare two agents on the seeds both ran.

    Raises:
        ValueError: A run has no seed, a seed repeats within one agent, or no seed is shared.
    """
    base, cand = _by_seed(baseline), _by_seed(candidate)
    seeds = sorted(set(base) & set(cand))
    if not seeds:
        raise ValueError("the two agents share no seed; a paired comparison needs common seeds")
    comparisons = {}
    for key in keys:
        pairs = [(base[s].metrics.get(key), cand[s].metrics.get(key)) for s in seeds]
        if all(a is not None and b is not None for a, b in pairs):
            a, b = np.asarray(pairs, dtype=np.float64).T
            comparisons[key] = _compare(a, b, seeds)
    return comparisons

"""The numbers of a sweep's report, computed from its index and its runs' `metrics.json`.

Everything here is data (`sweep_analysis` returns plain JSON-ready dicts and lists); rendering
to Markdown, HTML and CSV is `merchantbench.sweeps.report`. Means are over a configuration's
finished runs; standard deviations are sample ones (ddof = 1).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from merchantbench.metrics.diagnosis import DETECTORS
from merchantbench.record.schema import METRICS_FILE
from merchantbench.report.paper import TABLE1_COLUMNS, load_paper_table
from merchantbench.sweeps.index import FRAMEWORK_COUNTS, read_index
from merchantbench.sweeps.leaderboard import group_rows
from merchantbench.sweeps.state import read_set_aside

BOOTSTRAP_SAMPLES = 10_000
BOOTSTRAP_SEED = 0  # a fixed stream: the same runs give the same interval
HUMAN = ("Baseline", "Human (n=3)")


def _mean(values: Sequence[float | None]) -> float | None:
    kept = [float(v) for v in values if v is not None]
    return float(np.mean(kept)) if kept else None


def _std(values: Sequence[float | None]) -> float | None:
    kept = [float(v) for v in values if v is not None]
    return float(np.std(kept, ddof=1)) if len(kept) > 1 else None


def _human_net_assets() -> float:
    for row in load_paper_table():
        if (row.framework, row.model) == HUMAN:
            value = row.values["final_net_assets_k"]
            assert value is not None
            return value * 1000.0
    raise LookupError("the paper's table has no human row")


def table1(groups: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """Per configuration: mean and std of every Table-1 metric (paper units), the CV of net
    assets and its share of the expert's and of the paper's human mean."""
    experts = [rows for rows in groups.values() if rows[0]["agent"] == "expert"]
    expert_mean = _mean([r["final_net_assets"] for r in experts[0]]) if experts else None
    human = _human_net_assets()
    out = []
    for label, rows in groups.items():
        row: dict[str, Any] = {"label": label, "runs": len(rows)}
        for column in TABLE1_COLUMNS:
            values = [None if r.get(column.metric) is None else r[column.metric] * column.scale
                      for r in rows]  # fmt: skip
            row[f"{column.paper_name}_mean"] = _mean(values)
            row[f"{column.paper_name}_std"] = _std(values)
        assets = [r["final_net_assets"] for r in rows]
        mean, std = _mean(assets), _std(assets)
        row["net_assets_cv"] = std / abs(mean) if std is not None and mean else None
        row["share_of_expert"] = mean / expert_mean if mean is not None and expert_mean else None
        row["share_of_human"] = None if mean is None else mean / human
        out.append(row)
    return out


def monthly_rates(metrics: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, Any]:
    """Figure 5: the mean monthly effective-window rate of each configuration."""
    months: list[str] = []
    rates = {}
    for label, runs in metrics.items():
        series = [m["monthly_effective_window_rate"] for m in runs]
        months = max(months, *(list(m["months"]) for m in runs), key=len)
        width = max(len(s) for s in series)
        rates[label] = [_mean([s[i] for s in series if i < len(s)]) for i in range(width)]
    return {"months": months, "rates": rates}


def bootstrap_ci(differences: Sequence[float]) -> tuple[float, float]:
    """95 % percentile bootstrap interval of the mean of paired differences."""
    values = np.asarray(differences, dtype=np.float64)
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    picks = rng.integers(0, len(values), size=(BOOTSTRAP_SAMPLES, len(values)))
    means = values[picks].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def paired(groups: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """Every pair of configurations on their shared seeds: mean difference of net assets
    (second minus first) with a bootstrap 95 % interval."""
    out = []
    for (a, rows_a), (b, rows_b) in combinations(groups.items(), 2):
        if rows_a[0]["scenario"] != rows_b[0]["scenario"]:
            continue
        base = {r["seed"]: r["final_net_assets"] for r in rows_a}
        other = {r["seed"]: r["final_net_assets"] for r in rows_b}
        seeds = sorted(set(base) & set(other))
        if not seeds:
            continue
        diffs = [other[s] - base[s] for s in seeds]
        low, high = bootstrap_ci(diffs)
        mean = float(np.mean(diffs))
        out.append({"baseline": a, "candidate": b, "seeds": seeds,
                    "mean_difference": mean, "ci_low": low, "ci_high": high})  # fmt: skip
    return out


def _quarters(runs: Sequence[Mapping[str, Any]]) -> list[float | None]:
    series = [[q["mean_cost"] for q in m["coherence"]["procurement_by_quarter"]] for m in runs]
    return [_mean([s[i] for s in series if i < len(s)]) for i in range(max(map(len, series)))]


def _shares(runs: Sequence[Mapping[str, Any]], key: str) -> list[float | None]:
    series = [[month[key] for month in m["coherence"]["call_mix_by_month"]] for m in runs]
    return [_mean([s[i] for s in series if i < len(s)]) for i in range(max(map(len, series)))]


def coherence(
    groups: Mapping[str, Sequence[Mapping[str, Any]]],
    metrics: Mapping[str, Sequence[Mapping[str, Any]]],
) -> list[dict[str, Any]]:
    """The coherence analyses of each configuration, averaged over its runs."""
    out = []
    for label, runs in metrics.items():
        idle = [m["coherence"]["idle"] for m in runs]
        react = [m["coherence"]["adverse_reaction"] for m in runs]
        drops = [m["coherence"]["rating_drop_repricing"] for m in runs]
        row: dict[str, Any] = {
            "label": label,
            "abandoned_runs": sum(i["abandonment_day"] is not None for i in idle),
            "abandonment_day": _mean([i["abandonment_day"] for i in idle]),
            "longest_idle_streak": _mean([i["longest_idle_streak"] for i in idle]),
            "sourcing_share_by_month": _shares(runs, "sourcing_share"),
            "supplier_handling_share_by_month": _shares(runs, "supplier_handling_share"),
            "procurement_cost_by_quarter": _quarters(runs),
            "adverse_listings": _mean([r["listings_with_adverse"] for r in react]),
            "reacted_rate": _mean([r["reacted_rate"] for r in react]),
            "median_hours_to_reaction": _mean([r["median_hours_to_reaction"] for r in react]),
            "rating_drop_days": _mean([d["drop_days"] for d in drops]),
            "repricing_ratio_after_drop": _mean([d["ratio_to_baseline"] for d in drops]),
        }
        for key in FRAMEWORK_COUNTS:
            row[key] = _mean([r[key] for r in groups[label]])
        out.append(row)
    return out


def diagnosis(metrics: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """Per configuration and failure-mode detector: runs flagged and the median onset day
    (runs whose metrics predate the detectors are not counted)."""
    out = []
    for label, runs in metrics.items():
        judged = [m["diagnosis"] for m in runs if "diagnosis" in m]
        row: dict[str, Any] = {"label": label, "runs": len(judged)}
        for name in DETECTORS:
            flags = [d[name] for d in judged if d[name]["flagged"]]
            days = [f["onset_day"] for f in flags if f["onset_day"] is not None]
            row[f"{name}_flagged"] = len(flags)
            row[f"{name}_median_onset_day"] = float(np.median(days)) if days else None
        out.append(row)
    return out


COST_KEYS = ("llm_tokens", "llm_cost", "llm_calls", "wall_seconds")


def costs(groups: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, Any]:
    """Tokens, money, model calls and wall time per run and per configuration."""
    per_run = [{"label": r["label"], "seed": r["seed"], **{k: r.get(k) for k in COST_KEYS}}
               for rows in groups.values() for r in rows]  # fmt: skip
    per_config = []
    for label, rows in groups.items():
        entry: dict[str, Any] = {"label": label, "runs": len(rows)}
        for key in COST_KEYS:
            values = [float(r[key]) for r in rows if r.get(key) is not None]
            entry[f"{key}_total"] = float(sum(values)) if values else None
            entry[f"{key}_mean"] = _mean(values)
        per_config.append(entry)
    return {"per_run": per_run, "per_configuration": per_config}


def sweep_analysis(sweep_dir: Path) -> dict[str, Any]:
    """Every number of the report of the sweep in `sweep_dir` (finished runs only)."""
    rows = read_index(sweep_dir)
    done = [r for r in rows if r["status"] == "done"]
    groups = group_rows(done)
    metrics = {
        label: [json.loads((sweep_dir / r["run_dir"] / METRICS_FILE).read_text()) for r in runs]
        for label, runs in groups.items()
    }
    paper = [{"framework": p.framework, "model": p.model, **p.values} for p in load_paper_table()]
    return {
        "runs_planned": len(rows),
        "runs_done": len(done),
        "not_done": [
            {"run": f"{r['label']}/s{r['seed']}", "status": r["status"], "reason": r["reason"]}
            for r in rows
            if r["status"] != "done"
        ],  # fmt: skip
        "set_aside": read_set_aside(sweep_dir),
        "table1": table1(groups),
        "net_assets_by_configuration": {
            label: [r["final_net_assets"] for r in runs] for label, runs in groups.items()
        },
        "paper_table1": paper,
        "figure5": monthly_rates(metrics),
        "paired": paired(groups),
        "coherence": coherence(groups, metrics),
        "diagnosis": diagnosis(metrics),
        "costs": costs(groups),
    }

"""The numbers of a sweep's report, computed from its run records (`index.record_rows`, never
the index file) and its runs' `metrics.json`, of the runs whose record verifies only
(`replay.evidence.check_run`: replayed, or found in the check cache by the hash of every file);
a run that does not is named in `not_done` with its first difference.

Everything here is data (`sweep_analysis` returns plain JSON-ready dicts and lists); rendering
to Markdown, HTML and CSV is `merchantbench.sweeps.report`. Finished runs are split by setting
(`record.comparable`: scenario, days, market, tool schema, code) into one `group` each, and every
number is computed within a group, never across. Means are over a configuration's finished runs;
standard deviations are sample ones (ddof = 1).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from itertools import combinations
from math import comb
from pathlib import Path
from typing import Any

import numpy as np

from merchantbench.metrics.diagnosis import DETECTORS
from merchantbench.record.comparable import (
    MIN_SEEDS_FOR_INTERVALS,
    Check,
    Pool,
    Setting,
    pool_runs,
    provenance,
    read_finished,
    spend_efficiency,
)
from merchantbench.record.schema import METRICS_FILE
from merchantbench.report.paper import TABLE1_COLUMNS, load_paper_table
from merchantbench.sweeps.humans import human_rows, label_human_pools
from merchantbench.sweeps.index import FRAMEWORK_COUNTS, record_rows
from merchantbench.sweeps.report_counterfactual import counterfactual_analysis
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


def table1(
    groups: Mapping[str, Sequence[Mapping[str, Any]]], paper_like: bool = True
) -> list[dict[str, Any]]:
    """Per configuration: mean and std of every Table-1 metric (paper units), the CV of net
    assets and its share of the expert's and (only in the paper's setting) of the paper's human
    mean."""
    experts = [rows for rows in groups.values() if rows[0]["agent"] == "expert"]
    expert_mean = _mean([r["final_net_assets"] for r in experts[0]]) if experts else None
    human = _human_net_assets() if paper_like else None
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
        row["share_of_human"] = None if mean is None or human is None else mean / human
        out.append(row)
    return out


def monthly_rates(metrics: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, Any]:
    """Figure 5: the mean monthly effective-window rate of each configuration, over the calendar
    months the horizon covers (a 30-day run covers one or two, not twelve)."""
    months: list[str] = []
    rates = {}
    for label, runs in metrics.items():
        series = [m["monthly_effective_window_rate"] for m in runs]
        months = max(months, *(list(m["months"]) for m in runs), key=len)
        width = max(len(s) for s in series)
        rates[label] = [_mean([s[i] for s in series if i < len(s)]) for i in range(width)]
    covered = [i for i in range(len(months)) if any(
        i < len(r) and r[i] is not None for r in rates.values())]  # fmt: skip
    width = covered[-1] + 1 if covered else 0
    return {"months": months[:width], "rates": {k: v[:width] for k, v in rates.items()}}


def bootstrap_ci(differences: Sequence[float]) -> tuple[float, float]:
    """95 % percentile bootstrap interval of the mean of paired differences."""
    values = np.asarray(differences, dtype=np.float64)
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    picks = rng.integers(0, len(values), size=(BOOTSTRAP_SAMPLES, len(values)))
    means = values[picks].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def _by_seed(rows: Sequence[Mapping[str, Any]]) -> dict[int, float]:
    """Final net assets per seed: the mean where several runs share a seed (the participants
    of a study played on one market); sealed runs (no seed) pair with nothing."""
    values: dict[int, list[float]] = {}
    for r in rows:
        if r["seed"] is not None:
            values.setdefault(r["seed"], []).append(r["final_net_assets"])
    return {seed: float(np.mean(v)) for seed, v in values.items()}


def paired(groups: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """Every pair of configurations on their shared seeds: mean difference of net assets
    (second minus first) with a bootstrap 95 % interval."""
    out = []
    for (a, rows_a), (b, rows_b) in combinations(groups.items(), 2):
        if rows_a[0]["scenario"] != rows_b[0]["scenario"]:
            continue
        base, other = _by_seed(rows_a), _by_seed(rows_b)
        seeds = sorted(set(base) & set(other))
        if not seeds:
            continue
        diffs = [other[s] - base[s] for s in seeds]
        low, high = bootstrap_ci(diffs)
        mean = float(np.mean(diffs))
        n = len(seeds)
        out.append({"baseline": a, "candidate": b, "seeds": seeds,
                    "mean_difference": mean, "ci_low": low, "ci_high": high,
                    "distinct_resamples": comb(2 * n - 1, n),
                    "few_seeds": n < MIN_SEEDS_FOR_INTERVALS})  # fmt: skip
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


def _cost_known(rows: Sequence[Mapping[str, Any]]) -> bool:
    """No run that called a model lacks its cost (a price not stated: unknown)."""
    return all(r.get("llm_cost") is not None for r in rows if r.get("llm_calls"))


def costs(groups: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, Any]:
    """Tokens, money, model calls and wall time per run and per configuration; a cost is None
    and `cost_known` false when a run's prices were not all stated, never a silent 0."""
    per_run = [{"label": r["label"], "seed": r["seed"], **{k: r.get(k) for k in COST_KEYS},
                "cost_known": _cost_known([r]),
                "net_assets_per_unit_spent": spend_efficiency(r.get("final_net_assets"),
                                                              r.get("llm_cost"))}
               for rows in groups.values() for r in rows]  # fmt: skip
    per_config = []
    for label, rows in groups.items():
        entry: dict[str, Any] = {
            "label": label,
            "runs": len(rows),
            "cost_known": _cost_known(rows),
            "model_runs": sum(bool(r.get("llm_calls")) for r in rows),
        }
        for key in COST_KEYS:
            values = [float(r[key]) for r in rows if r.get(key) is not None]
            entry[f"{key}_total"] = float(sum(values)) if values else None
            entry[f"{key}_mean"] = _mean(values)
        if not entry["cost_known"]:
            entry["llm_cost_total"] = entry["llm_cost_mean"] = None
        entry["net_assets_per_unit_spent"] = spend_efficiency(
            _mean([r.get("final_net_assets") for r in rows]), entry["llm_cost_mean"]
        )
        per_config.append(entry)
    return {"per_run": per_run, "per_configuration": per_config}


def _groups(
    sweep_dir: Path, done: Sequence[dict[str, Any]], check: Check
) -> tuple[dict[Setting, list[Pool]], dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """Finished runs that verify, pooled by setting and configuration identity (copies counted
    once), the row of each run directory, and the rows whose record cannot be read as finished
    or does not verify (`reason` says why)."""
    by_dir, runs, unreadable = {}, [], []
    for row in done:
        run = read_finished(sweep_dir / row["run_dir"], row["label"], check)
        if run is None:
            unreadable.append(row)
            continue
        if not run.check.ok:
            unreadable.append({**row, "check": f"{run.check.status}: {run.check.detail}"})
            continue
        by_dir[str(run.run_dir)] = row
        runs.append(run)
    tables = pool_runs(runs)
    for pools in tables.values():
        label_human_pools(pools)
    return tables, by_dir, unreadable


def group_analysis(sweep_dir: Path, setting: Setting, pools: Sequence[Pool],
                   rows_of: Mapping[str, dict[str, Any]]) -> dict[str, Any]:  # fmt: skip
    """Every number of one setting's tables."""
    groups = {pool.label: [rows_of[str(run.run_dir)] for run in pool.runs] for pool in pools}
    metrics = {
        label: [json.loads((sweep_dir / r["run_dir"] / METRICS_FILE).read_text()) for r in runs]
        for label, runs in groups.items()
    }
    return {
        "setting": setting.label,
        "provenance": provenance(setting, pools),
        "pools": {pool.label: pool.what() for pool in pools},
        "table1": table1(groups, setting.paper_like),
        "net_assets_by_configuration": {
            label: [r["final_net_assets"] for r in runs] for label, runs in groups.items()
        },
        "figure5": monthly_rates(metrics),
        "paired": paired(groups),
        "coherence": coherence(groups, metrics),
        "diagnosis": diagnosis(metrics),
        "counterfactual": counterfactual_analysis(sweep_dir, groups),
        "costs": costs(groups),
    }


def sweep_analysis(
    sweep_dir: Path, humans: Sequence[Path] = (), check: Check | None = None
) -> dict[str, Any]:
    """Every number of the report of the sweep in `sweep_dir` (finished runs that verify by
    `check`, by default `replay.evidence.checker()`), one group per setting; with the finished
    playground runs under `humans` as `Human (n=K)` rows (sweeps/humans.py)."""
    if check is None:
        from merchantbench.replay.evidence import checker

        check = checker()
    rows = record_rows(sweep_dir)
    arena_rows = [r for r in rows if r.get("arena")]
    rows = [r for r in rows if not r.get("arena")]
    done = [r for r in rows if r["status"] == "done"]
    people, people_left_out = human_rows(humans)
    tables, rows_of, unreadable = _groups(sweep_dir, done + people, check)
    paper = [{"framework": p.framework, "model": p.model, **p.values} for p in load_paper_table()]
    not_done = [{"run": f"{r['label']}/s{r['seed']}", "status": r["status"], "reason": r["reason"]}
                for r in rows if r["status"] != "done"]  # fmt: skip
    why = "its record cannot be read as a finished run"
    lost = [r for r in unreadable if not any(r["run_dir"] == p["run_dir"] for p in people)]
    not_done += [{"run": f"{r['label']}/s{r['seed']}",
                  "status": "left out" if r.get("check") else "unreadable",
                  "reason": f"{r['run_dir']}: {r['check']}" if r.get("check") else why}
                 for r in lost]  # fmt: skip
    arenas_done = [r for r in arena_rows if r["status"] == "done"]  # sweeps/arena_report.py
    not_done += [{"run": f"{r['label']}/s{r['seed']}", "status": r["status"], "reason": r["reason"]}
                 for r in arena_rows if r["status"] != "done"]  # fmt: skip
    counted = {"humans": {"folders": [str(h) for h in humans],
                          "runs": len(people) - (len(unreadable) - len(lost))}}  # fmt: skip
    return {
        "runs_planned": len(rows) + len({r["run_dir"] for r in arena_rows}),
        "runs_done": len(done) - len(lost) + len({r["run_dir"] for r in arenas_done}),
        "not_done": not_done + people_left_out,
        **(counted if humans else {}),
        "set_aside": read_set_aside(sweep_dir),
        "groups": [
            group_analysis(sweep_dir, setting, pools, rows_of) for setting, pools in tables.items()
        ],  # fmt: skip
        "paper_table1": paper,
    }

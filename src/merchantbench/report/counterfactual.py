"""The counterfactual takeovers of a run (`counterfactual.json`, written by `merchantbench
counterfactual`, docs/counterfactual.md) as a report section and a figure, and of a sweep
aggregated by configuration (`counterfactual_sweep.json`)."""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from merchantbench.report.table import markdown_table

if TYPE_CHECKING:
    from merchantbench.report.svg import Figure

COUNTERFACTUAL_FILE = "counterfactual.json"
COUNTERFACTUAL_FIGURE = "counterfactual.svg"
SWEEP_FILE = "counterfactual_sweep.json"
SWEEP_FIGURE = "counterfactual_sweep.svg"


def read_counterfactual(run_dir: Path, name: str = COUNTERFACTUAL_FILE) -> dict[str, Any] | None:
    """The analysis saved beside a run (or a sweep), or None when there is none or it cannot
    be read (a damaged file never breaks a report)."""
    path = run_dir / name
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    key = "curves" if name == COUNTERFACTUAL_FILE else "configurations"
    if not isinstance(data, dict) or data.get("format") != 1 or not data.get(key):
        return None
    return data


def _rmb(value: float | None) -> str | None:
    return None if value is None else f"{value:,.2f}"


def _signed(value: float | None) -> str | None:
    return None if value is None else f"{value:+,.2f}"


def _onset(day: int | None) -> str:
    return "none" if day is None else f"day {day}"


def _dating(onset: Mapping[str, Any] | None) -> str:
    """How an onset was dated: its grid period, the bracket and the bisection forks used."""
    if not onset or onset.get("period") is None:
        return "–"
    forks = [f["day"] for f in onset.get("bisection_forks", [])]
    lo, hi = onset["bracket"]
    used = f"; forks at day {', '.join(map(str, forks))}" if forks else ""
    # A run that was the policy's own store is dated where it left it (onset.py).
    period = "left the policy's store in day" if onset.get("departure") else "period day"
    return f"{period} {onset['period'][0]}–{onset['period'][1]}, within day {lo}–{hi}{used}"


def counterfactual_section(data: Mapping[str, Any]) -> str:
    """The report section of one run's takeover curves."""
    curves: Sequence[Mapping[str, Any]] = data["curves"]
    days = [p["day"] for p in curves[0]["points"]]
    headers = ["fork day"]
    for curve in curves:
        headers += [f"{curve['label']} takes over", "vs continuing", "damage"]
    rows = []
    for k, day in enumerate(days):
        row: list[Any] = [day]
        for curve in curves:
            row += [
                _rmb(curve["points"][k]["final_net_assets"]),
                _signed(curve["advantage"][k]["advantage"]),
                _rmb(curve["damage"][k]["damage"]),
            ]
        rows.append(row)
    summary = [
        [c["label"], _rmb(c["from_start"]), _signed(c["total_regret"]),
         _rmb(c.get("margin", data["margin"])), _onset(c["onset_day"]), _dating(c.get("onset"))]
        for c in curves
    ]  # fmt: skip
    dates = [p.get("dates", p["month"]) for p in curves[0]["regret_by_period"]]
    regret_rows = [
        [f"day {p['from_day']}–{'end' if p['to_day'] is None else p['to_day']}", dates[k]]
        + [_signed(c["regret_by_period"][k]["regret"]) for c in curves]
        for k, p in enumerate(curves[0]["regret_by_period"])
    ]
    return "\n\n".join([
        "## Counterfactual takeovers",
        f"Final net assets (RMB) if each policy had run the store from the fork day on, same "
        f"seed (docs/counterfactual.md). The run itself ended at "
        f"{_rmb(data['continuing'])} (\"continuing\"); forks every {data['every_days']} days. "
        "Damage: the policy from day 0 minus the policy from the fork day. Idle's column is "
        "the value of the store built by that day. Onset of damage: the first period whose "
        "damage (what the policy would have kept taking over at its start rather than its end, "
        "less the policy's natural drift on its own run) exceeds the run's own earlier rate by "
        "the margin (3 × the store's takeover noise), bisected with further forks; a run that "
        "was the policy's own store until it left it is dated where it left, when what it cost "
        "the policy by the end exceeds 3 × the noise of D a day after each later fork day.",
        markdown_table(headers, rows),
        markdown_table(["policy", "from day 0", "regret (from day 0 − continuing)",
                        "margin", "onset of damage", "dating"], summary),
        "Regret by period (what letting the agent run the period cost, valued by the policy):",
        markdown_table(["period", "dates", *[c["label"] for c in curves]], regret_rows),
    ])  # fmt: skip


def counterfactual_figure(data: Mapping[str, Any]) -> Figure:
    """The takeover curves of one run: final net assets by fork day, one line per policy,
    and the run's own end as a horizontal line."""
    from merchantbench.report.plots import takeover_figure

    lines = {
        c["label"]: ([p["day"] for p in c["points"]], [p["final_net_assets"] for p in c["points"]])
        for c in data["curves"]
    }
    title = f"takeovers of {data['agent']} (seed {data['seed']})"
    return takeover_figure(lines, data["continuing"], data["initial_net_assets"], title)


def plot_counterfactual(data: Mapping[str, Any], path: Path) -> Path:
    """`counterfactual_figure` written to `path`."""
    return counterfactual_figure(data).save(path)


def _mean(values: Sequence[float]) -> float:
    return round(statistics.fmean(values), 2)


def _curve_of(data: Mapping[str, Any], label: str) -> Mapping[str, Any] | None:
    return next((c for c in data["curves"] if c.get("label") == label), None)


def aggregate_runs(labelled: Sequence[tuple[str, Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """Runs' analyses (`counterfactual.json`, each with its configuration label) aggregated by
    configuration and policy: by fork day the mean, min and max takeover and the mean damage
    (over the runs that have that day: a store closed early has no later forks), the mean
    regret by period, the means from day 0 and of the total regret, and each run's onset.
    `value_built` is the idle policy's mean curve when it was run. Policies go by label, in
    the order the configuration's first run has them."""
    by_config: dict[str, list[Mapping[str, Any]]] = {}
    for label, data in labelled:
        by_config.setdefault(label, []).append(data)
    configurations = []
    for label, runs in by_config.items():
        curves = []
        for first in runs[0]["curves"]:
            mine = [c for c in (_curve_of(r, first["label"]) for r in runs) if c is not None]
            values: dict[int, list[float]] = {}
            damage: dict[int, list[float]] = {}
            regret: dict[int, list[float]] = {}
            months: dict[int, tuple[str, int | None, str]] = {}
            for c in mine:
                for point in c["points"]:
                    values.setdefault(point["day"], []).append(point["final_net_assets"])
                for row in c["damage"]:
                    damage.setdefault(row["day"], []).append(row["damage"])
                for row in c["regret_by_period"]:
                    regret.setdefault(row["from_day"], []).append(row["regret"])
                    months.setdefault(
                        row["from_day"],
                        (row["month"], row["to_day"], row.get("dates", row["month"])),
                    )
            curves.append({
                "label": first["label"],
                "policy": first["policy"],
                "points": [
                    {"day": day, "mean": _mean(v), "min": min(v), "max": max(v), "runs": len(v)}
                    for day, v in sorted(values.items())
                ],
                "damage_mean": [{"day": d, "damage": _mean(v)} for d, v in sorted(damage.items())],
                "regret_by_period_mean": [
                    {"from_day": d, "to_day": months[d][1], "month": months[d][0],
                     "dates": months[d][2],
                     "regret": _mean(v), "runs": len(v)}
                    for d, v in sorted(regret.items())
                ],
                "from_start_mean": _mean([c["from_start"] for c in mine]),
                "total_regret_mean": _mean([c["total_regret"] for c in mine]),
                "onset_days": [c["onset_day"] for c in mine],
            })  # fmt: skip
        idle = next((c for c in curves if c["policy"] == "idle"), None)
        configurations.append({
            "label": label,
            "runs": len(runs),
            "seeds": [r["seed"] for r in runs],
            "continuing_mean": _mean([r["continuing"] for r in runs]),
            "value_built": None if idle is None
            else [{"day": p["day"], "value": p["mean"]} for p in idle["points"]],
            "curves": curves,
        })  # fmt: skip
    return configurations


def _onsets(days: Sequence[int | None]) -> str:
    found = sorted(d for d in days if d is not None)
    median = "" if not found else f"; median day {statistics.median(found):g}"
    return f"{len(found)} of {len(days)} runs{median} ({', '.join(_onset(d) for d in days)})"


def sweep_section(data: Mapping[str, Any], level: int = 2) -> str:
    """The takeover curves of a sweep's runs by configuration (`aggregate_runs`): per
    configuration, by fork day the value built (idle) and each policy's mean takeover and
    mean damage; per policy the mean from day 0, the mean regret and each run's onset; the
    mean regret by period (month)."""
    head = "#" * level
    parts = [f"{head} Counterfactual takeovers by configuration",
             "Means over each configuration's runs (seeds) of the takeover curves in the runs' "
             "`counterfactual.json` (docs/counterfactual.md): the final net assets (RMB) had the "
             "policy run the store from the fork day on. Value built: the idle policy's curve; "
             "damage: the policy from day 0 minus the policy from the fork day; regret by period: "
             "what letting the agent run the period cost, valued by the policy."]  # fmt: skip
    for config in data["configurations"]:
        curves = config["curves"]
        days = sorted({p["day"] for c in curves for p in c["points"]})
        headers = ["fork day"]
        if config.get("value_built"):
            headers.append("value built (idle)")
        others = [c for c in curves if c["policy"] != "idle" or not config.get("value_built")]
        for c in others:
            headers += [f"{c['label']} takes over", f"{c['label']} damage"]
        rows = []
        for day in days:
            row: list[Any] = [day]
            if config.get("value_built"):
                row.append(_rmb(next((p["value"] for p in config["value_built"]
                                      if p["day"] == day), None)))  # fmt: skip
            for c in others:
                point = next((p for p in c["points"] if p["day"] == day), None)
                hurt = next((p["damage"] for p in c.get("damage_mean", []) if p["day"] == day),
                            None)  # fmt: skip
                row += [None if point is None else _rmb(point["mean"]), _rmb(hurt)]
            rows.append(row)
        summary = [
            [c["label"], _rmb(c["from_start_mean"]), _signed(c["total_regret_mean"]),
             _onsets(c["onset_days"])]
            for c in curves
        ]  # fmt: skip
        parts += [
            f"{head}# {config['label']} ({config['runs']} runs; continuing: mean "
            f"{_rmb(config['continuing_mean'])})",
            markdown_table(headers, rows),
            markdown_table(
                ["policy", "from day 0 (mean)", "regret (mean)", "onset of damage"], summary
            ),  # fmt: skip
        ]
        if all(c.get("regret_by_period_mean") for c in curves):
            periods = curves[0]["regret_by_period_mean"]
            regret_rows = [
                [f"day {p['from_day']}–{'end' if p['to_day'] is None else p['to_day']}",
                 p.get("dates", p["month"]),
                 *[next((_signed(r["regret"]) for r in c["regret_by_period_mean"]
                         if r["from_day"] == p["from_day"]), None) for c in curves]]
                for p in periods
            ]  # fmt: skip
            parts += [
                "Mean regret by period:",
                markdown_table(["period", "dates", *[c["label"] for c in curves]], regret_rows),
            ]
    return "\n\n".join(parts)


def sweep_figure(data: Mapping[str, Any]) -> Figure:
    """Mean takeover curves of each configuration and policy."""
    from merchantbench.report.plots import takeover_figure

    lines = {}
    for config in data["configurations"]:
        for c in config["curves"]:
            lines[f"{config['label']}: {c['label']}"] = (
                [p["day"] for p in c["points"]],
                [p["mean"] for p in c["points"]],
            )
    return takeover_figure(lines, None, data["initial_net_assets"], "mean takeover curves")


def plot_sweep(data: Mapping[str, Any], path: Path) -> Path:
    """`sweep_figure` written to `path`."""
    return sweep_figure(data).save(path)

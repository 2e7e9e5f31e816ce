"""The counterfactual takeovers of a run (`counterfactual.json`, written by `merchantbench
counterfactual`, docs/counterfactual.md) as a report section and a figure, and of a sweep
aggregated by configuration (`counterfactual_sweep.json`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from merchantbench.report.table import markdown_table

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
        [c["label"], _rmb(c["from_start"]), _signed(c["total_regret"]), _onset(c["onset_day"])]
        for c in curves
    ]
    months = [p["month"] for p in curves[0]["regret_by_period"]]
    regret_rows = [
        [f"day {p['from_day']}–{'end' if p['to_day'] is None else p['to_day']}", months[k]]
        + [_signed(c["regret_by_period"][k]["regret"]) for c in curves]
        for k, p in enumerate(curves[0]["regret_by_period"])
    ]
    return "\n\n".join([
        "## Counterfactual takeovers",
        f"Final net assets (RMB) if each policy had run the store from the fork day on, same "
        f"seed (docs/counterfactual.md). The run itself ended at "
        f"{_rmb(data['continuing'])} (\"continuing\"); forks every {data['every_days']} days; "
        f"onset margin {_rmb(data['margin'])} RMB. Damage: the policy from day 0 minus the "
        "policy from the fork day. Idle's column is the value of the store built by that day.",
        markdown_table(headers, rows),
        markdown_table(["policy", "from day 0", "regret (from day 0 − continuing)",
                        "onset of decay"], summary),
        "Regret by period (what letting the agent run the period cost, valued by the policy):",
        markdown_table(["period", "month", *[c["label"] for c in curves]], regret_rows),
    ])  # fmt: skip


def plot_counterfactual(data: Mapping[str, Any], path: Path) -> Path:
    """The takeover curves of one run: final net assets by fork day, one line per policy,
    and the run's own end as a horizontal line."""
    from merchantbench.report.plots import curve_figure

    lines = {
        c["label"]: ([p["day"] for p in c["points"]], [p["final_net_assets"] for p in c["points"]])
        for c in data["curves"]
    }
    title = f"takeovers of {data['agent']} (seed {data['seed']})"
    return curve_figure(lines, data["continuing"], data["initial_net_assets"], title, path)


def sweep_section(data: Mapping[str, Any]) -> str:
    """The sweep's takeover curves aggregated by configuration (means over seeds)."""
    parts = ["## Counterfactual takeovers by configuration"]
    for config in data["configurations"]:
        curves = config["curves"]
        days = [p["day"] for p in curves[0]["points"]]
        headers = ["fork day"] + [f"{c['label']} (mean)" for c in curves]
        rows = [
            [day, *[_rmb(c["points"][k]["mean"]) for c in curves]] for k, day in enumerate(days)
        ]
        onsets = [
            [c["label"], _rmb(c["from_start_mean"]), _signed(c["total_regret_mean"]),
             ", ".join(_onset(d) for d in c["onset_days"])]
            for c in curves
        ]  # fmt: skip
        parts += [
            f"### {config['label']} ({config['runs']} runs; continuing: mean "
            f"{_rmb(config['continuing_mean'])})",
            markdown_table(headers, rows),
            markdown_table(
                ["policy", "from day 0 (mean)", "regret (mean)", "onset per run"], onsets
            ),  # fmt: skip
        ]
    return "\n\n".join(parts)


def plot_sweep(data: Mapping[str, Any], path: Path) -> Path:
    """Mean takeover curves of each configuration and policy."""
    from merchantbench.report.plots import curve_figure

    lines = {}
    for config in data["configurations"]:
        for c in config["curves"]:
            lines[f"{config['label']}: {c['label']}"] = (
                [p["day"] for p in c["points"]],
                [p["mean"] for p in c["points"]],
            )
    return curve_figure(lines, None, data["initial_net_assets"], "mean takeover curves", path)

"""The counterfactual takeovers of a sweep's runs in its report: when runs of a setting have a
`counterfactual.json` (`merchantbench counterfactual RUN|SWEEP`, docs/counterfactual.md), the
report aggregates them by configuration (value built, damage, onset of decay, regret by
period) with a figure of the mean curves. Runs without one are counted, not guessed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from merchantbench.report.counterfactual import (
    aggregate_runs,
    read_counterfactual,
    sweep_figure,
    sweep_section,
)


def counterfactual_analysis(
    sweep_dir: Path, groups: Mapping[str, Sequence[Mapping[str, Any]]]
) -> dict[str, Any] | None:
    """The aggregate of the runs' analyses by configuration (`groups`: label → index rows),
    or None when no run of the setting has one. Runs analysed at other fork spacings are not
    pooled: the spacing most runs have is kept and the others are counted as left out."""
    found: list[tuple[str, dict[str, Any]]] = []
    for label, rows in groups.items():
        for row in rows:
            data = read_counterfactual(sweep_dir / row["run_dir"])
            if data is not None:
                found.append((label, data))
    if not found:
        return None
    spacings = [data.get("every_days") for _, data in found]
    every = max(set(spacings), key=lambda s: (spacings.count(s), -(s or 0)))
    kept = [(label, data) for label, data in found if data.get("every_days") == every]
    runs = sum(len(rows) for rows in groups.values())
    return {
        "every_days": every,
        "initial_net_assets": kept[0][1]["initial_net_assets"],
        "runs_analysed": len(kept),
        "runs": runs,
        "left_out": len(found) - len(kept),
        "configurations": aggregate_runs(kept),
    }


def counterfactual_report_section(data: Mapping[str, Any] | None, figure: str) -> str:
    """The report's section (empty when no run was analysed)."""
    if not data:
        return ""
    note = (f"{data['runs_analysed']} of {data['runs']} finished runs have a counterfactual "
            f"analysis (forks every {data['every_days']} days)")  # fmt: skip
    if data["left_out"]:
        note += f"; {data['left_out']} analysed at another spacing are left out"
    body = sweep_section(data, level=3)
    head, _, rest = body.partition("\n\n")
    return f"{head}\n\n{note}.\n\n![mean takeover curves]({figure})\n\n{rest}"


def plot_counterfactual_sweep(data: Mapping[str, Any], path: Path) -> Path:
    return sweep_figure(data).save(path)

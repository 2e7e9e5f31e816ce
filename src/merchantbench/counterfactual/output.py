"""What an analysis writes: beside a run, `counterfactual.json` and `counterfactual.svg` (and
the run's `report.md` again, with its takeover section, when it has one); beside a sweep,
`counterfactual_sweep.json`, `counterfactual_sweep.md` and `counterfactual_sweep.svg`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from merchantbench.counterfactual.analysis import RunAnalysis
from merchantbench.record.files import atomic_write_json
from merchantbench.report.counterfactual import (
    COUNTERFACTUAL_FIGURE,
    COUNTERFACTUAL_FILE,
    SWEEP_FIGURE,
    SWEEP_FILE,
    plot_counterfactual,
    plot_sweep,
    sweep_section,
)
from merchantbench.report.markdown import REPORT_FILE, write_report


def write_run(analysis: RunAnalysis, out: Path | None = None) -> list[Path]:
    """Write one run's analysis into `out` (default: the run directory); returns the files.
    A run report already there is written again so that it shows the takeovers."""
    target = out or analysis.parent.run_dir
    target.mkdir(parents=True, exist_ok=True)
    data = analysis.to_json()
    atomic_write_json(target / COUNTERFACTUAL_FILE, data)
    files = [
        target / COUNTERFACTUAL_FILE,
        plot_counterfactual(data, target / COUNTERFACTUAL_FIGURE),
    ]
    if out is None and (target / REPORT_FILE).is_file():
        files.append(write_report(target))
    return files


def write_sweep(data: dict[str, Any], sweep_dir: Path) -> list[Path]:
    """Write a sweep's aggregate (counterfactual/sweep.py) into `sweep_dir`."""
    atomic_write_json(sweep_dir / SWEEP_FILE, data)
    md = sweep_dir / SWEEP_FILE.replace(".json", ".md")
    text = sweep_section(data) + f"\n\n![counterfactual sweep]({SWEEP_FIGURE})\n"
    md.write_text(text, encoding="utf-8")
    return [sweep_dir / SWEEP_FILE, md, plot_sweep(data, sweep_dir / SWEEP_FIGURE)]

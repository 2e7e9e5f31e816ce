"""The sweep report's takeover section: runs with a counterfactual analysis are aggregated by
configuration (value built, damage, onset, regret by period, a figure), and their numbers are
the means of the runs' `counterfactual.json`; a sweep without analyses has no such section."""

from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path

import pytest

from merchantbench.counterfactual.analysis import analyse
from merchantbench.counterfactual.execute import InProcess
from merchantbench.counterfactual.output import write_run
from merchantbench.counterfactual.parent import Parent
from merchantbench.counterfactual.sweep import sweep_runs
from merchantbench.counterfactual.takeover import Policy
from merchantbench.sweeps.driver import run_sweep
from merchantbench.sweeps.execute import LocalExecutor
from merchantbench.sweeps.report import write_sweep_report
from merchantbench.sweeps.spec import load_sweep_file

SWEEP = """
name: takeovers
scenarios: [{name: smoke, set: ["clock.days=6"]}]
seeds: [1, 2]
agents: [rule-based, idle]
"""
SECTION = "### Counterfactual takeovers by configuration"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("sweep")
    (base / "sweep.yaml").write_text(SWEEP)
    outcome = run_sweep(load_sweep_file(base / "sweep.yaml"), base, base / "out", LocalExecutor(1))
    assert len(outcome.finished) == 4 and not outcome.failed
    return base / "out"


def _section(markdown: str) -> str:
    start = markdown.index(SECTION)
    return markdown[start : markdown.index("\n### ", start + len(SECTION))]


@pytest.fixture
def sweep(recorded: Path, tmp_path: Path) -> Path:
    """A copy of the recorded sweep, for one test to change."""
    return Path(shutil.copytree(recorded, tmp_path / "out"))


def test_a_sweep_without_analyses_has_no_takeover_section(sweep: Path) -> None:
    write_sweep_report(sweep)
    assert SECTION not in (sweep / "report" / "report.md").read_text()
    data = json.loads((sweep / "report" / "report.json").read_text())
    assert data["groups"][0]["counterfactual"] is None


def test_the_report_aggregates_the_runs_analyses(sweep: Path) -> None:
    found, _ = sweep_runs(sweep)
    policies = [Policy("idle"), Policy("rule-based")]
    parents = [Parent.read(run_dir) for _, run_dir in found]
    for analysis in analyse(parents, policies, 2, InProcess()):
        write_run(analysis)
    html_path = write_sweep_report(sweep)
    report = sweep / "report"
    data = json.loads((report / "report.json").read_text())["groups"][0]["counterfactual"]
    assert data["runs_analysed"] == 4 and data["every_days"] == 2
    runs = {label: [json.loads((d / "counterfactual.json").read_text()) for lab, d in found
                    if lab == label] for label in ("rule-based", "idle")}  # fmt: skip
    for config in data["configurations"]:
        mine = runs[config["label"]]
        assert config["runs"] == 2 and sorted(config["seeds"]) == [1, 2]
        for k, curve in enumerate(config["curves"]):
            assert curve["label"] == policies[k].label
            for i, point in enumerate(curve["points"]):
                values = [r["curves"][k]["points"][i]["final_net_assets"] for r in mine]
                assert point["mean"] == round(statistics.fmean(values), 2)
                assert (point["min"], point["max"]) == (min(values), max(values))
            damage = [[d["damage"] for d in r["curves"][k]["damage"]] for r in mine]
            assert [d["damage"] for d in curve["damage_mean"]] == [
                round(statistics.fmean(col), 2) for col in zip(*damage, strict=True)
            ]
            regret = [[p["regret"] for p in r["curves"][k]["regret_by_period"]] for r in mine]
            assert [p["regret"] for p in curve["regret_by_period_mean"]] == [
                round(statistics.fmean(col), 2) for col in zip(*regret, strict=True)
            ]
            assert curve["onset_days"] == [r["curves"][k]["onset_day"] for r in mine]
        idle = config["curves"][0]
        assert config["value_built"] == [{"day": p["day"], "value": p["mean"]}
                                         for p in idle["points"]]  # fmt: skip
    markdown = (report / "report.md").read_text()
    section = _section(markdown)
    assert "4 of 4 finished runs have a counterfactual analysis" in section
    assert "value built (idle)" in section and "Mean regret by period" in section
    assert "![mean takeover curves](counterfactual.svg)" in section
    rb = next(c for c in data["configurations"] if c["label"] == "rule-based")
    mean0 = rb["curves"][1]["points"][0]["mean"]
    assert f"{mean0:,.2f}" in section
    figure = (report / "counterfactual.svg").read_text()
    assert figure.count("<polyline") == 4  # 2 configurations × 2 policies
    assert "data:image/svg+xml;base64," in html_path.read_text()

    # A damaged analysis is left out, and the report still made.
    (found[0][1] / "counterfactual.json").write_text("{not json")
    write_sweep_report(sweep)
    data = json.loads((sweep / "report" / "report.json").read_text())["groups"][0]
    assert data["counterfactual"]["runs_analysed"] == 3
    assert "3 of 4 finished runs" in (sweep / "report" / "report.md").read_text()


def test_the_counterfactual_command_writes_the_sweep_report_again(sweep: Path) -> None:
    import subprocess
    import sys

    write_sweep_report(sweep)
    assert SECTION not in (sweep / "report" / "report.md").read_text()
    done = subprocess.run(
        [sys.executable, "-m", "merchantbench.cli", "counterfactual", str(sweep), "--policy",
         "idle", "--every", "3d", "--no-progress"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "4 of 4 finished runs" in _section((sweep / "report" / "report.md").read_text())

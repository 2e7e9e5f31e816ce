"""`merchantbench fork` and `merchantbench counterfactual` as a user runs them: what they write,
the progress bar on stderr, the report's section, a sweep's aggregate, and one-line errors."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from merchantbench.record.manifest import read_manifest
from merchantbench.runs.runner import run_agent
from merchantbench.runs.spec import RunSpec
from merchantbench.scenario import load_scenario


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "120", "TERM": "dumb"}
    return subprocess.run(
        [sys.executable, "-m", "merchantbench.cli", *args],
        capture_output=True, text=True, timeout=600, env=env,
    )  # fmt: skip


def one_line_error(result: subprocess.CompletedProcess[str], expected: str) -> None:
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1 and expected in lines[0], result.stderr


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sweep directory's layout (runs/<configuration>/s<seed>) with two runs of one
    configuration and one of another."""
    root = tmp_path_factory.mktemp("cli")
    (root / "sweep.json").write_text("{}")
    runs = (("rb", "rule-based", 1), ("rb", "rule-based", 2), ("ex", "expert", 1))
    for label, agent, seed in runs:
        run_agent(RunSpec(agent, load_scenario("smoke"), seed), root / "runs" / label / f"s{seed}")
    return root


def test_counterfactual_of_a_run_writes_json_figure_and_report(sweep, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(sweep / "runs" / "rb" / "s1", run_dir)
    assert cli("report", str(run_dir)).returncode == 0
    done = cli("counterfactual", str(run_dir), "--policy", "idle", "--policy", "rule-based",
               "--every", "3d", "--jobs", "2")  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert set(summary["policies"]) == {"idle", "rule-based"}
    data = json.loads((run_dir / "counterfactual.json").read_text())
    # The progress bar over every round: 4 idle takeovers and 3 rule-based ones (its day 0 is
    # this run), idle's takeovers of its own run at days 3, 6 and 9, then the bisection's forks
    # (two for idle: the run and idle's own run; one for rule-based, its own run).
    idle, rule_based = (c["onset"]["bisection_forks"] for c in data["curves"])
    total = 10 + 2 * len(idle) + len(rule_based)
    assert "counterfactual" in done.stderr and f"{total}/{total}" in done.stderr
    assert [p["day"] for p in data["curves"][0]["points"]] == [0, 3, 6, 9]
    assert (run_dir / "counterfactual.svg").stat().st_size > 1000
    report = (run_dir / "report.md").read_text()
    assert "## Counterfactual takeovers" in report and "counterfactual.svg" in report


def test_counterfactual_of_a_sweep_aggregates_by_configuration(sweep, tmp_path):
    out = tmp_path / "out"
    done = cli("counterfactual", str(sweep), "--policy", "idle", "--every", "7d", "--out",
               str(out), "--no-progress")  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads((out / "counterfactual_sweep.json").read_text())
    configs = {c["label"]: c for c in data["configurations"]}
    assert {k: v["runs"] for k, v in configs.items()} == {"rb": 2, "ex": 1}
    assert sorted(configs["rb"]["seeds"]) == [1, 2]
    assert (out / "counterfactual_sweep.md").read_text().count("###") == 2
    assert (out / "runs" / "rb" / "s2" / "counterfactual.json").is_file()
    assert not (sweep / "runs" / "rb" / "s2" / "counterfactual.json").exists()  # --out


def test_fork_writes_a_record_naming_its_parent(sweep, tmp_path):
    parent = sweep / "runs" / "rb" / "s1"
    done = cli("fork", str(parent), "--day", "3", "--agent", "expert", "--out",
               str(tmp_path / "fork"), "--no-progress")  # fmt: skip
    assert done.returncode == 0, done.stderr
    meta = read_manifest(tmp_path / "fork")
    assert meta.fork is not None and (meta.fork.window, meta.fork.day) == (6, 3)
    assert meta.agent.name == "expert" and meta.ended == "completed"
    assert json.loads(done.stdout)["final_net_assets"] == meta.final_accounts.net_assets  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["fork", "{run}", "--window", "99"], "outside"),
        (["fork", "{run}"], "--window W or --day D"),
        (["fork", "{run}", "--window", "2", "--agent", "nobody"], "unknown agent"),
        (["fork", "{tmp}", "--window", "2"], "not a run record"),
        (["counterfactual", "{run}", "--every", "0d"], "--every"),
        (["counterfactual", "{run}", "--policy", "idle", "--policy", "idle"], "twice"),
        (["counterfactual", "{run}", "--jobs", "0"], "--jobs"),
        (["counterfactual", "{run}", "--executor", "dask"], "executor"),
        (["counterfactual", "{tmp}"], "not a run record"),
    ],
)
def test_bad_input_is_one_line(sweep, tmp_path, args, expected):
    run = str(sweep / "runs" / "ex" / "s1")
    one_line_error(cli(*[a.format(run=run, tmp=tmp_path) for a in args]), expected)
    assert not (sweep / "runs" / "ex" / "s1" / "counterfactual.json").exists()

"""A sweep killed midway (SIGKILL of its process group) and resumed ends with the same index and
the same report numbers as an uninterrupted sweep; the report's numbers match the run records."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from merchantbench.metrics.diagnosis import DETECTORS
from merchantbench.sweeps.driver import run_sweep
from merchantbench.sweeps.execute import LocalExecutor
from merchantbench.sweeps.index import read_index
from merchantbench.sweeps.report import write_sweep_report
from merchantbench.sweeps.spec import load_sweep_file
from sweep_fixtures import comparable_rows, models_text, report_numbers, sweep_text

RUNS = 12  # (2 baselines + 2 models × 2 harnesses) × 2 seeds
KILL_WAIT_SECONDS = 300


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory, server) -> Path:
    base = tmp_path_factory.mktemp("whole")
    (base / "models.toml").write_text(models_text(server.base_url))
    (base / "sweep.yaml").write_text(sweep_text(server.base_url))
    sweep_dir = base / "out"
    outcome = run_sweep(load_sweep_file(base / "sweep.yaml"), base, sweep_dir, LocalExecutor(2))
    assert len(outcome.finished) == RUNS and not outcome.failed
    write_sweep_report(sweep_dir)
    return sweep_dir


def _done_and_live(sweep_dir: Path) -> tuple[int, int]:
    try:
        rows = read_index(sweep_dir)
    except (OSError, ValueError):
        return 0, 0
    done = sum(r["status"] == "done" for r in rows)
    live = len(list((sweep_dir / "progress").glob("*/s*.json"))) - done
    return done, live


def _kill_midway(sweep_file: Path, sweep_dir: Path) -> None:
    command = [sys.executable, "-m", "merchantbench.cli", "sweep", str(sweep_file), "--out",
               str(sweep_dir), "--jobs", "2", "--no-progress"]  # fmt: skip
    process = subprocess.Popen(command, start_new_session=True, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + KILL_WAIT_SECONDS
    try:
        while time.monotonic() < deadline and process.poll() is None:
            done, live = _done_and_live(sweep_dir)
            if done >= 2 and live >= 1:
                break
            time.sleep(0.05)
        assert process.poll() is None, "the sweep ended before it could be killed"
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def test_killed_and_resumed_sweep_equals_uninterrupted(sweep_file: Path, uninterrupted: Path):
    sweep_dir = sweep_file.parent / "out"
    _kill_midway(sweep_file, sweep_dir)
    statuses = [r["status"] for r in read_index(sweep_dir)]
    assert statuses.count("done") < RUNS  # it really was interrupted
    outcome = run_sweep(load_sweep_file(sweep_file), sweep_file.parent, sweep_dir, LocalExecutor(2))
    assert not outcome.failed
    assert outcome.skipped and len(outcome.skipped) + len(outcome.finished) == RUNS
    assert comparable_rows(read_index(sweep_dir)) == comparable_rows(read_index(uninterrupted))
    write_sweep_report(sweep_dir)
    assert report_numbers(sweep_dir) == report_numbers(uninterrupted)
    again = run_sweep(load_sweep_file(sweep_file), sweep_file.parent, sweep_dir, LocalExecutor(2))
    assert len(again.skipped) == RUNS and not again.finished  # nothing left to do


def _run_json(sweep_dir: Path, label: str, seed: int) -> dict:
    return json.loads((sweep_dir / "runs" / label / f"s{seed}" / "run.json").read_text())


def test_report_numbers_come_from_the_run_records(uninterrupted: Path):
    report = json.loads((uninterrupted / "report" / "report.json").read_text())
    assert len(report["groups"]) == 1  # one scenario, one horizon, one code: one setting
    data = report["groups"][0]
    table = {row["label"]: row for row in data["table1"]}
    for label in ("rule-based", "react-alpha", "hermes-beta"):
        assets = [_run_json(uninterrupted, label, s)["final_accounts"]["net_assets"]
                  for s in (1, 2)]  # fmt: skip
        assert table[label]["final_net_assets_k_mean"] == pytest.approx(np.mean(assets) / 1000)
        assert table[label]["final_net_assets_k_std"] == pytest.approx(
            np.std(assets, ddof=1) / 1000
        )
    pair = next(p for p in data["paired"] if (p["baseline"], p["candidate"]) ==
                ("rule-based", "expert"))  # fmt: skip
    diffs = [_run_json(uninterrupted, "expert", s)["final_accounts"]["net_assets"]
             - _run_json(uninterrupted, "rule-based", s)["final_accounts"]["net_assets"]
             for s in (1, 2)]  # fmt: skip
    assert pair["mean_difference"] == pytest.approx(np.mean(diffs))
    assert min(diffs) - 1e-9 <= pair["ci_low"] <= pair["ci_high"] <= max(diffs) + 1e-9
    cost = next(c for c in data["costs"]["per_configuration"] if c["label"] == "react-alpha")
    calls = [json.loads(line) for s in (1, 2) for line in
             (uninterrupted / "runs" / "react-alpha" / f"s{s}" / "model_calls.jsonl")
             .read_text().splitlines()]  # fmt: skip
    assert cost["llm_calls_total"] == len(calls)
    assert cost["llm_cost_total"] == pytest.approx(sum(c["cost"] for c in calls), rel=1e-4)
    assert cost["llm_tokens_total"] == sum(c["input_tokens"] + c["output_tokens"] for c in calls)
    diagnosis = next(d for d in data["diagnosis"] if d["label"] == "expert")
    runs = [json.loads((uninterrupted / "runs" / "expert" / f"s{s}" / "metrics.json").read_text())
            for s in (1, 2)]  # fmt: skip
    for name in DETECTORS:
        assert diagnosis[f"{name}_flagged"] == sum(m["diagnosis"][name]["flagged"] for m in runs)
    assert "## Failure modes" in (uninterrupted / "report" / "report.md").read_text()
    html = (uninterrupted / "report" / "report.html").read_text()
    assert html.count("data:image/png;base64,") == 2 and 'src="figure5.png"' not in html

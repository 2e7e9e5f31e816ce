"""`merchantbench run` end to end: records, no overwriting, determinism, kill -9 and resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from merchantbench.cli import app

RECORD_FILES = (
    "run.json", "trace.jsonl", "timeseries.parquet", "orders.parquet", "daily.parquet",
    "listings.parquet", "metrics.json",
)  # fmt: skip


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch):
    cache = tmp_path_factory.getbasetemp() / "market-cache"
    monkeypatch.setenv("MERCHANTBENCH_CACHE", str(cache))
    return cache


def run_cli(*args: str):
    return CliRunner().invoke(app, ["run", "--no-progress", *args])


def test_run_writes_a_complete_record(tmp_path):
    out = tmp_path / "run"
    result = run_cli("--agent", "rule-based", "--scenario", "smoke", "--out", str(out))
    assert result.exit_code == 0, result.output
    for name in RECORD_FILES:
        assert (out / name).is_file(), name
    meta = json.loads((out / "run.json").read_text())
    assert meta["ended"] == "completed" and meta["seed"] == 1
    assert meta["scenario"]["name"] == "smoke" and len(meta["tool_schema_sha256"]) == 64
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["windows"] == 28 and metrics["state_hash"] == meta["state_hash"]


def test_existing_directory_is_refused_and_kept(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    result = run_cli("--agent", "idle", "--scenario", "smoke", "--out", str(out))
    assert result.exit_code != 0
    assert "exists" in result.output and (out / "notes.txt").read_text() == "mine"


def test_unknown_agent_is_a_one_line_error(tmp_path):
    result = run_cli("--agent", "nobody", "--scenario", "smoke", "--out", str(tmp_path / "x"))
    assert result.exit_code == 2 and "unknown agent" in result.output


def test_idle_keeps_three_thousand(tmp_path):
    result = run_cli("--agent", "idle", "--scenario", "smoke", "--out", str(tmp_path / "r"))
    assert result.exit_code == 0, result.output
    metrics = json.loads((tmp_path / "r" / "metrics.json").read_text())
    assert metrics["final_net_assets"] == 3000.0 and metrics["orders"] == 0


def test_same_command_twice_gives_identical_metrics(tmp_path):
    for name in ("a", "b"):
        result = run_cli("--agent", "random", "--scenario", "smoke", "--out", str(tmp_path / name))
        assert result.exit_code == 0, result.output
    a = (tmp_path / "a" / "metrics.json").read_bytes()
    assert a == (tmp_path / "b" / "metrics.json").read_bytes()
    report = CliRunner().invoke(app, ["report", str(tmp_path / "a")])
    assert report.exit_code == 0, report.output
    assert (tmp_path / "a" / "metrics.json").read_bytes() == a  # the report rewrites the same bytes


def _command(out: Path) -> list[str]:
    return [
        sys.executable, "-m", "merchantbench.cli", "run", "--no-progress", "--agent",
        "rule-based", "--scenario", "small", "--days", "120", "--out", str(out),
    ]  # fmt: skip


@pytest.mark.slow
def test_kill_nine_then_resume_matches_uninterrupted_run(tmp_path):
    env = dict(os.environ)
    whole = subprocess.run(_command(tmp_path / "whole"), env=env, capture_output=True, text=True)
    assert whole.returncode == 0, whole.stderr
    out = tmp_path / "killed"
    proc = subprocess.Popen(_command(out), env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)  # fmt: skip
    checkpoint = out / "checkpoint" / "state.pkl"
    deadline = time.time() + 120
    while not checkpoint.exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (out / "metrics.json").exists(), "the run finished before it could be killed"
    resumed = subprocess.run([*_command(out), "--resume"], env=env, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert (out / "metrics.json").read_bytes() == (tmp_path / "whole" / "metrics.json").read_bytes()
    whole_trace = (tmp_path / "whole" / "trace.jsonl").read_text()
    assert (out / "trace.jsonl").read_text() == whole_trace


def _write_smoke_catalog(path: Path) -> None:
    from merchantbench.catalog.loader import write_catalog
    from merchantbench.catalog.synthetic import generate_market
    from merchantbench.scenario import load_scenario

    write_catalog(generate_market(load_scenario("smoke"), 1), path)


def test_run_on_a_real_catalog_directory(tmp_path):
    catalog = tmp_path / "catalog"
    _write_smoke_catalog(catalog)
    out = tmp_path / "run"
    args = ("--agent", "rule-based", "--scenario", "smoke", "--catalog", str(catalog))
    result = run_cli(*args, "--out", str(out))
    assert result.exit_code == 0, result.output
    meta = json.loads((out / "run.json").read_text())
    assert meta["market"]["source"] == "catalog" and meta["market"]["n_products"] == 200


def test_a_broken_catalog_is_a_one_line_error(tmp_path):
    import pyarrow.parquet as pq

    catalog = tmp_path / "catalog"
    _write_smoke_catalog(catalog)
    table = pq.read_table(catalog / "products.parquet")
    pq.write_table(table.drop_columns(["title"]), catalog / "products.parquet")
    args = ("--agent", "idle", "--scenario", "smoke", "--catalog", str(catalog))
    result = run_cli(*args, "--out", str(tmp_path / "run"))
    assert result.exit_code == 2
    assert "products" in result.output and "title" in result.output

"""`run.json` as a typed, versioned `RunManifest`: its lifecycle, and readers that refuse a
format they do not know with one line."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from merchantbench.cli import app
from merchantbench.metrics import RunRecordError, load_run_record
from merchantbench.record.manifest import (
    FORMAT,
    FinalAccounts,
    ManifestError,
    read_manifest,
)
from merchantbench.record.schema import RUN_FILE
from merchantbench.runs.runner import RunError, RunSpec, run_agent
from merchantbench.scenario import load_scenario
from record_rows import run_manifest, write_run_record

ACCOUNTS = FinalAccounts(balance=1.0, deposit=2.0, in_transit=0.0, receivable=0.5, net_assets=3.5)


def _with_format(run_dir, value) -> None:
    data = json.loads((run_dir / RUN_FILE).read_text())
    data["format"] = value
    (run_dir / RUN_FILE).write_text(json.dumps(data))


def _record(tmp_path):
    tables = {"timeseries": [], "orders": [], "daily": [], "listings": []}
    return write_run_record(tmp_path / "run", run_manifest(), [], tables)


def test_written_and_read_back_unchanged(tmp_path):
    manifest = run_manifest(load_scenario("smoke"))
    manifest.finish("closed", windows=3, closed=True, final_accounts=ACCOUNTS, state_hash="ab")
    manifest.write(tmp_path)
    data = json.loads((tmp_path / RUN_FILE).read_text())
    assert data["format"] == FORMAT == 1
    assert data["initial_net_assets"] == 3000.0 and data["scenario"]["name"] == "smoke"
    read = read_manifest(tmp_path)
    assert read == manifest
    assert read.scenario_model() == load_scenario("smoke")


def test_lifecycle_stopped_interrupted_and_error():
    manifest = run_manifest()
    assert manifest.ended is None and manifest.resumable
    manifest.fail(KeyboardInterrupt())
    assert (manifest.ended, manifest.error) == ("interrupted", "KeyboardInterrupt: ")
    manifest.fail(ValueError("boom"))
    assert manifest.ended == "error" and manifest.resumable
    manifest.record_agent({"calls": 4}, "budget: tokens")
    manifest.finish("completed", windows=2, closed=False, final_accounts=ACCOUNTS, state_hash="h")
    assert (manifest.ended, manifest.error, manifest.stop_reason) == (
        "stopped",
        None,
        "budget: tokens",
    )
    assert not manifest.resumable and manifest.llm_usage == {"calls": 4}
    manifest.record_agent(None, None)  # a resumed run's agent that did not stop
    assert manifest.stop_reason is None


def test_unknown_keys_and_wrong_types_are_refused():
    with pytest.raises(ValidationError):
        run_manifest(colour="blue")
    manifest = run_manifest()
    with pytest.raises(ValidationError):
        manifest.ended = "exploded"  # type: ignore[assignment]


@pytest.mark.parametrize(("value", "shown"), [(2, "format 2"), (None, "format none")])
def test_readers_refuse_another_format_in_one_line(tmp_path, value, shown):
    run_dir = _record(tmp_path)
    assert load_run_record(run_dir).run.format == FORMAT
    _with_format(run_dir, value)
    with pytest.raises(ManifestError, match=shown) as caught:
        read_manifest(run_dir)
    assert "\n" not in str(caught.value) and "reads format 1" in str(caught.value)
    with pytest.raises(RunRecordError, match=shown):
        load_run_record(run_dir)
    result = CliRunner().invoke(app, ["report", str(run_dir)])
    assert result.exit_code != 0
    assert result.output.strip().count("\n") == 0 and shown in result.output


def test_a_bad_key_names_where(tmp_path):
    run_dir = _record(tmp_path)
    data = json.loads((run_dir / RUN_FILE).read_text())
    data["seed"] = "one"
    (run_dir / RUN_FILE).write_text(json.dumps(data))
    with pytest.raises(ManifestError, match=r"run.json: seed: "):
        read_manifest(run_dir)


def test_resume_refuses_another_format(tmp_path, monkeypatch):
    monkeypatch.setenv("MERCHANTBENCH_CACHE", str(tmp_path / "cache"))
    run_dir = _record(tmp_path)
    _with_format(run_dir, 99)
    spec = RunSpec("idle", load_scenario("smoke"), 1)
    with pytest.raises(RunError, match="format 99 is not supported"):
        run_agent(spec, run_dir, resume=True)


def test_a_scenario_that_cannot_be_rebuilt_is_refused(tmp_path):
    run_dir = _record(tmp_path)
    data = json.loads((run_dir / RUN_FILE).read_text())
    data["scenario_config"]["clock"]["hours_per_window"] = 7
    (run_dir / RUN_FILE).write_text(json.dumps(data))
    with pytest.raises(ManifestError, match=r"run.json: scenario_config.clock: .*must divide 24"):
        read_manifest(run_dir)

"""`RunLifecycle` as the front ends use it: a run played by a driver from outside, `suspend`
(checkpoint, mark interrupted, close the trace) and a resume from it, `rewind`, a trace that
refuses entries once the record is closed, drivers refused by the runner, the driver's state
saved as JSON (never a pickled object), a run refused as it starts leaving no directory, and a
record whose bytes do not depend on when checkpoints were taken."""

from __future__ import annotations

import json

import pytest

from merchantbench.record.checkpoint import load_checkpoint
from merchantbench.record.manifest import read_manifest
from merchantbench.runs.lifecycle import CheckpointPolicy, RunLifecycle
from merchantbench.runs.runner import RunError, RunSpec, run_agent
from merchantbench.scenario import load_scenario
from merchantbench.serve.external import ExternalDriver
from merchantbench.serve.mcp_run import McpDriver

SCENARIO = load_scenario("smoke", overrides=["clock.days=2"])
RECORD_FILES = (
    "metrics.json", "trace.jsonl", "transcript.jsonl", "orders.parquet", "daily.parquet",
    "timeseries.parquet", "listings.parquet",
)  # fmt: skip


def open_mcp(tmp_path, resume: bool = False) -> RunLifecycle:
    spec = RunSpec("mcp", SCENARIO, 5, {"transport": "stdio"})
    driver = McpDriver.from_settings(spec.agent_settings)
    return RunLifecycle.open(spec, tmp_path / "run", resume=resume, driver=driver)


def test_a_suspended_run_resumes_where_it_stood_and_a_finished_trace_refuses(tmp_path) -> None:
    first = open_mcp(tmp_path)
    session = first.session
    session.surface.call("end_of_step")
    session.surface.call("query_balance")  # mid-window: the suspension keeps this call
    first.suspend()
    record = read_manifest(tmp_path / "run")
    assert record.ended == "interrupted" and record.resumable and record.windows == 1
    assert record.driver == "mcp" and record.agent.name == "mcp"
    checkpoint = load_checkpoint(tmp_path / "run")
    assert checkpoint is not None and checkpoint["agent"] is None  # no stand-in agent pickled
    with pytest.raises(RunError, match="the run record is closed"):
        session.surface.call("query_balance")
    first.close()  # idempotent
    first.suspend()  # and so is a second suspension: nothing is written

    again = open_mcp(tmp_path, resume=True)
    resumed = again.session
    assert resumed.surface.window == 1 and resumed.state_hash() == session.state_hash()
    lines = (tmp_path / "run" / "trace.jsonl").read_text().splitlines()
    assert len(lines) == resumed.memory.seq == 2
    while not again.finished:  # the call that closes the last window finishes the record
        answer = again.call("end_of_step")
        assert answer.window_closed and answer.hours_run and answer.result["ok"]
    metrics = again.metrics
    assert metrics is not None and metrics["windows"] == SCENARIO.clock.windows and again.finished
    assert again.store_metrics() is metrics  # finishing twice changes nothing
    assert read_manifest(tmp_path / "run").ended == "completed"
    with pytest.raises(RunError, match="the run record is closed"):
        resumed.surface.call("get_store_snapshot")


def test_rewind_reopens_a_finished_record(tmp_path) -> None:
    life = open_mcp(tmp_path)
    session = life.session
    blob, seq = session.snapshot(), session.memory.seq
    while not session.surface.over:
        session.surface.call("end_of_step")
    life.finish()
    life.rewind(blob)
    assert read_manifest(tmp_path / "run").ended is None and life.manifest.state_hash is None
    assert not life.finished
    assert len((tmp_path / "run" / "trace.jsonl").read_text().splitlines()) == seq
    assert session.surface.call("query_balance")["ok"]


@pytest.mark.parametrize("driver", ["mcp", "external", "human", "inspect"])
def test_the_runner_refuses_a_run_a_front_end_drives(tmp_path, driver) -> None:
    with pytest.raises(RunError, match=f"agent '{driver}' plays through"):
        run_agent(RunSpec(driver, SCENARIO, 1), tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_a_driver_s_protocol_state_is_saved_as_json_and_restored(tmp_path) -> None:
    spec = RunSpec("external", SCENARIO, 5, {"agent_id": "a1"})
    driver = ExternalDriver.from_settings(spec.agent_settings)
    life = RunLifecycle.open(spec, tmp_path / "run", driver=driver)
    driver.protocol.registration = {"model": "m"}
    driver.protocol.act_usage = {"input": 7.0}
    driver.protocol.fingerprints["a1:0:c1"] = "query_balance:{}"
    life.suspend()
    checkpoint = load_checkpoint(tmp_path / "run")
    assert checkpoint is not None and checkpoint["agent"] is None
    assert json.loads(checkpoint["driver"])["registration"] == {"model": "m"}

    fresh = ExternalDriver.from_settings(spec.agent_settings)
    again = RunLifecycle.open(spec, tmp_path / "run", resume=True, driver=fresh)
    assert fresh.protocol == driver.protocol and again.driver is fresh
    assert fresh.outcome().usage == driver.outcome().usage


def test_a_run_whose_agent_fails_before_any_call_leaves_no_directory(tmp_path) -> None:
    # compact_at_tokens below the fixed prompt: refused as the agent starts, at window 0.
    settings = {"model": "scripted", "base_url": "http://127.0.0.1:9/v1", "api_key_env": "HOME",
                "compact_at_tokens": 2000, "keep_tokens": 1000}  # fmt: skip
    spec = RunSpec("react", SCENARIO, 1, settings)
    for _ in range(2):  # the same command again is refused for the same reason, not "exists"
        with pytest.raises(ValueError, match="compact_at_tokens"):
            run_agent(spec, tmp_path / "run")
        assert not (tmp_path / "run").exists()


def test_a_run_that_recorded_calls_keeps_its_record_when_it_fails(tmp_path) -> None:
    def stop(session) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_agent(RunSpec("rule-based", SCENARIO, 1), tmp_path / "run", on_window=stop)
    assert read_manifest(tmp_path / "run").ended == "interrupted"


def test_the_record_does_not_depend_on_when_checkpoints_were_taken(tmp_path) -> None:
    spec = RunSpec("rule-based", SCENARIO, 7)
    policies = {
        "every": CheckpointPolicy(seconds=0),
        "never": CheckpointPolicy(seconds=1e9),
        "third": CheckpointPolicy(windows=3),
    }
    for name, policy in policies.items():
        run_agent(spec, tmp_path / name, checkpoints=policy)

    # ... and a run stopped mid-way, resumed from its checkpoint under another policy.
    def stop(session) -> None:
        if session.window == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_agent(
            spec, tmp_path / "resumed", checkpoints=CheckpointPolicy(seconds=0), on_window=stop
        )
    run_agent(spec, tmp_path / "resumed", resume=True, checkpoints=CheckpointPolicy(seconds=1e9))
    for name in [*policies, "resumed"]:
        for record in RECORD_FILES:
            assert (tmp_path / name / record).read_bytes() == (
                tmp_path / "every" / record
            ).read_bytes(), (name, record)

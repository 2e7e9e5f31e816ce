"""The `RunWriter` hooks of the front ends: a pre-built agent, `suspend` (checkpoint, mark
interrupted, close the trace) and a resume from it, `close`, a trace that refuses entries once
the record is closed, and agents a front end plays refused by the runner."""

from __future__ import annotations

import pytest

from merchantbench.agents.registry import make_agent
from merchantbench.record.checkpoint import load_checkpoint
from merchantbench.record.manifest import read_manifest
from merchantbench.runs.runner import RunError, RunSpec, RunWriter, run_agent
from merchantbench.scenario import load_scenario

SCENARIO = load_scenario("smoke", overrides=["clock.days=2"])


def writer(tmp_path, agent: str = "mcp") -> RunWriter:
    return RunWriter(RunSpec(agent, SCENARIO, 5, {"transport": "stdio"}), tmp_path / "run")


def test_a_suspended_run_resumes_where_it_stood_and_a_finished_trace_refuses(tmp_path) -> None:
    first = writer(tmp_path)
    session, agent, meta = first.open_session(False, agent=make_agent("mcp", {}))
    session.surface.call("end_of_step")
    session.surface.call("query_balance")  # mid-window: the suspension keeps this call
    first.suspend(session, agent, meta)
    record = read_manifest(tmp_path / "run")
    assert record.ended == "interrupted" and record.resumable and record.windows == 1
    assert load_checkpoint(tmp_path / "run") is not None
    with pytest.raises(RunError, match="the run record is closed"):
        session.surface.call("query_balance")
    first.close()  # idempotent

    again = writer(tmp_path)
    resumed, agent2, meta2 = again.open_session(True, agent=make_agent("mcp", {}))
    assert resumed.surface.window == 1 and resumed.state_hash() == session.state_hash()
    lines = (tmp_path / "run" / "trace.jsonl").read_text().splitlines()
    assert len(lines) == resumed.memory.seq == 2
    while not resumed.surface.over:
        resumed.surface.call("end_of_step")
    metrics = again.finish(resumed, agent2, meta2)
    assert metrics["windows"] == SCENARIO.clock.windows
    assert read_manifest(tmp_path / "run").ended == "completed"
    with pytest.raises(RunError, match="the run record is closed"):
        resumed.surface.call("get_store_snapshot")


def test_rewind_reopens_a_finished_record(tmp_path) -> None:
    w = writer(tmp_path)
    session, agent, meta = w.open_session(False, agent=make_agent("mcp", {}))
    blob, seq = session.snapshot(), session.memory.seq
    while not session.surface.over:
        session.surface.call("end_of_step")
    w.finish(session, agent, meta)
    session.restore(blob)
    w.rewind(session, meta)
    assert read_manifest(tmp_path / "run").ended is None and meta.state_hash is None
    assert len((tmp_path / "run" / "trace.jsonl").read_text().splitlines()) == seq
    assert session.surface.call("query_balance")["ok"]


@pytest.mark.parametrize("agent", ["mcp", "external"])
def test_the_runner_refuses_an_agent_a_front_end_plays(tmp_path, agent) -> None:
    with pytest.raises(RunError, match=f"agent '{agent}' plays through"):
        run_agent(RunSpec(agent, SCENARIO, 1), tmp_path / "run")

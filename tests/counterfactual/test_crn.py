"""Common random numbers hold for forks (issue 21): a takeover at day 0 is the taking-over
agent's own run, byte for byte; a fork continued by the run's own agent reproduces the run from
the fork window on; a takeover without a record ends where the fork record does."""

from __future__ import annotations

import filecmp
import json
import shutil
from pathlib import Path

import pytest

from merchantbench.counterfactual.fork import fork_run, fork_spec
from merchantbench.counterfactual.parent import ForkError, Parent
from merchantbench.counterfactual.takeover import Policy, TakeoverTask, run_takeover
from merchantbench.record.manifest import read_manifest
from merchantbench.replay import restore
from merchantbench.runs.runner import run_agent
from merchantbench.runs.spec import RunSpec
from merchantbench.scenario import load_scenario

SEED = 5
RECORD_FILES = (
    "trace.jsonl", "transcript.jsonl", "orders.parquet", "daily.parquet", "timeseries.parquet",
    "listings.parquet", "metrics.json",
)  # fmt: skip


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Whole `smoke` runs of each baseline under one seed."""
    root = tmp_path_factory.mktemp("crn")
    for agent in ("idle", "rule-based", "expert"):
        run_agent(RunSpec(agent, load_scenario("smoke"), SEED), root / agent)
    return root


def same_record(a: Path, b: Path) -> list[str]:
    """The record files that differ between two run directories."""
    return [f for f in RECORD_FILES if not filecmp.cmp(a / f, b / f, shallow=False)]


@pytest.mark.parametrize("parent", ["rule-based", "expert"])
@pytest.mark.parametrize("policy", ["idle", "expert"])
def test_a_takeover_at_day_0_is_the_policys_own_run(runs, tmp_path, parent, policy):
    source = Parent.read(runs / parent)
    fork_run(source, 0, fork_spec(source, policy, None), tmp_path / "fork")
    assert same_record(runs / policy, tmp_path / "fork") == []
    ref = read_manifest(tmp_path / "fork").fork
    assert ref is not None and (ref.window, ref.day, ref.parent_agent) == (0, 0, parent)
    assert ref.parent == str(runs / parent) and ref.fresh_agent == (policy != parent)


@pytest.mark.parametrize("agent", ["rule-based", "expert"])
@pytest.mark.parametrize("window", [1, 10, 27])
def test_a_fork_continued_by_its_own_agent_reproduces_the_run(runs, tmp_path, agent, window):
    source = Parent.read(runs / agent)
    fork_run(source, window, fork_spec(source, None, None), tmp_path / "fork")
    assert same_record(runs / agent, tmp_path / "fork") == []
    meta = read_manifest(tmp_path / "fork")
    assert meta.fork is not None and not meta.fork.fresh_agent and meta.fork.window == window
    assert meta.state_hash == read_manifest(runs / agent).state_hash
    assert "fork" not in json.loads((runs / agent / "run.json").read_text())


def test_the_fork_record_begins_with_the_parents_prefix(runs, tmp_path):
    source = Parent.read(runs / "rule-based")
    fork_run(source, 9, fork_spec(source, "expert", None), tmp_path / "fork")
    mine = (tmp_path / "fork" / "trace.jsonl").read_text().splitlines()
    theirs = (runs / "rule-based" / "trace.jsonl").read_text().splitlines()
    prefix = [line for line in theirs if json.loads(line)["window"] < 9]
    assert mine[: len(prefix)] == prefix
    assert mine[len(prefix)] != theirs[len(prefix)]  # the expert adopts the store: other calls
    assert json.loads(mine[len(prefix)])["window"] == 9


@pytest.mark.parametrize(("policy", "window"), [("expert", 9), ("rule-based", 14), ("idle", 4)])
def test_a_takeover_without_record_ends_where_the_fork_record_does(runs, tmp_path, policy, window):
    source = Parent.read(runs / "rule-based")
    metrics = fork_run(source, window, fork_spec(source, policy, None), tmp_path / "fork")
    session = restore(source.run_dir, window)
    task = TakeoverTask(
        str(source.run_dir), window, window // 2, Policy(policy), source.scenario, SEED, None,
        session.snapshot(),
    )  # fmt: skip
    assert run_takeover(task).final_net_assets == metrics["final_net_assets"]


def test_a_killed_fork_resumes_to_the_same_record(runs, tmp_path):
    """A fork checkpoints as it starts: resumed before any other checkpoint, it goes on from
    the fork window (not window 0) and, for a fresh agent, hands the store over again."""
    from merchantbench.runs.lifecycle import ForkStart, RunLifecycle
    from merchantbench.runs.runner import run_agent as resume

    source = Parent.read(runs / "rule-based")
    spec = fork_spec(source, "expert", None)
    fork_run(source, 9, spec, tmp_path / "whole")
    session = restore(source.run_dir, 9)
    ref = read_manifest(tmp_path / "whole").fork
    assert ref is not None
    life = RunLifecycle.open(
        spec, tmp_path / "killed", fork=ForkStart(session.snapshot(), source.run_dir, ref)
    )
    life.close()  # killed after the store was taken over, before a window closed
    resume(spec, tmp_path / "killed", resume=True)
    assert same_record(tmp_path / "whole", tmp_path / "killed") == []


def test_an_agent_that_called_a_model_is_not_rebuilt(runs, tmp_path):
    shutil.copytree(runs / "rule-based", tmp_path / "llm")
    (tmp_path / "llm" / "model_calls.jsonl").write_text("")
    source = Parent.read(tmp_path / "llm")
    with pytest.raises(ForkError, match="called a model"):
        fork_run(source, 4, fork_spec(source, None, None), tmp_path / "fork")
    assert not (tmp_path / "fork").exists()
    fork_run(source, 4, fork_spec(source, None, None), tmp_path / "fresh", fresh_agent=True)
    assert read_manifest(tmp_path / "fresh").fork.fresh_agent  # type: ignore[union-attr]


def test_forks_outside_the_record_are_refused(runs, tmp_path):
    source = Parent.read(runs / "idle")
    for window in (-1, 28, 10_000):
        with pytest.raises(ForkError, match="outside"):
            fork_run(source, window, fork_spec(source, "expert", None), tmp_path / "f")
    with pytest.raises(ForkError, match="not a run record"):
        Parent.read(tmp_path)
    with pytest.raises(ForkError, match="seed"):
        Parent.read(runs / "idle", seed=SEED + 1)


def test_a_fork_record_verifies_as_any_record(runs, tmp_path):
    from merchantbench.replay import verify_record

    source = Parent.read(runs / "rule-based")
    fork_run(source, 9, fork_spec(source, "expert", None), tmp_path / "fork")
    report = verify_record(tmp_path / "fork")
    assert report.ok, report.first_divergence

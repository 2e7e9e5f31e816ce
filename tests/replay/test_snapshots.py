"""`snapshots` and `restore`: one replay pass hands out, at each requested window's opening,
an independent session in the state the original run had there."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from merchantbench.replay import ReplayError, restore, snapshot_blobs, snapshots
from merchantbench.replay.replayer import Replayer
from merchantbench.replay.source import RecordSource
from merchantbench.runs.runner import RunSpec, run_agent
from merchantbench.scenario import load_scenario
from merchantbench.session import Session

SMOKE = load_scenario("smoke")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> tuple[Path, dict[int, str]]:
    """A rule-based smoke run and the state hash it had as each window opened."""
    out = tmp_path_factory.mktemp("snap") / "run"
    hashes = {0: Session.open(SMOKE, 3).state_hash()}

    def opened(session: Session) -> None:
        if not session.over:
            hashes[session.window] = session.state_hash()

    run_agent(RunSpec("rule-based", SMOKE, seed=3), out, on_window=opened)
    return out, hashes


def test_each_snapshot_has_the_original_state_at_its_window(recorded) -> None:
    run_dir, hashes = recorded
    wanted = [27, 0, 5, 13, 5]
    got = [(window, session.state_hash()) for window, session in snapshots(run_dir, wanted)]
    assert [w for w, _ in got] == [0, 5, 13, 27]
    assert got == [(w, hashes[w]) for w in (0, 5, 13, 27)]
    trace = [json.loads(line) for line in (run_dir / "trace.jsonl").read_text().splitlines()]
    first_of_13 = next(e["seq"] for e in trace if e["window"] == 13)
    session = restore(run_dir, 13)
    assert session.window == 13 and session.memory.seq == first_of_13 - 1
    assert session.state_hash() == hashes[13]


def test_snapshots_are_independent_copies(recorded) -> None:
    run_dir, hashes = recorded
    taken = list(snapshots(run_dir, [3, 4]))
    (_, third), (_, fourth) = taken
    third.call("end_of_step", {})
    third.call("end_of_step", {})  # the copy of window 3 runs on, on its own
    assert third.window == 5 and fourth.window == 4 and fourth.state_hash() == hashes[4]
    assert third.trace[-1]["seq"] == third.memory.seq  # its trace continues the record's


def test_later_windows_cost_one_pass_not_one_each(recorded, monkeypatch) -> None:
    run_dir, _ = recorded
    steps = []
    step = Replayer._step
    monkeypatch.setattr(Replayer, "_step", lambda self, line: steps.append(1) or step(self, line))
    assert len(list(snapshots(run_dir, range(28)))) == 28
    trace = [json.loads(line) for line in (run_dir / "trace.jsonl").read_text().splitlines()]
    assert len(steps) == sum(e["window"] < 27 for e in trace)  # each call replayed once


def test_windows_past_the_record_or_not_windows_are_refused(recorded) -> None:
    run_dir, _ = recorded
    with pytest.raises(ReplayError, match="past the record"):
        list(snapshots(run_dir, [3, 28]))
    with pytest.raises(ReplayError, match="not a window index"):
        restore(run_dir, -1)


def test_a_record_still_under_way_gives_its_windows(recorded, tmp_path) -> None:
    run_dir, hashes = recorded
    live = Path(shutil.copytree(run_dir, tmp_path / "live"))
    trace = (live / "trace.jsonl").read_text().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(trace) if json.loads(line)["window"] == 9)
    (live / "trace.jsonl").write_text("".join(trace[:cut]))
    meta = json.loads((live / "run.json").read_text())
    meta["ended"] = "interrupted"
    (live / "run.json").write_text(json.dumps(meta))
    assert [(w, s.state_hash()) for w, s in snapshots(live, [2, 9])] == [
        (2, hashes[2]),
        (9, hashes[9]),
    ]
    with pytest.raises(ReplayError, match="past the record"):
        restore(live, 10)


@pytest.mark.parametrize("agent", ["rule-based", "expert", "fail-no-risk-response"])
def test_a_fast_replay_gives_the_same_sessions(tmp_path, agent) -> None:
    """`fast`: reads counted, not made, and no transcript: the same snapshot, byte for byte,
    at every window."""
    run_agent(RunSpec(agent, SMOKE, seed=5), tmp_path / "run")
    windows = list(range(28))
    full = list(snapshot_blobs(tmp_path / "run", windows))
    assert list(snapshot_blobs(tmp_path / "run", windows, fast=True)) == full
    assert [(w, s.snapshot()) for w, s in snapshots(tmp_path / "run", windows, fast=True)] == full


def test_a_fast_replay_makes_no_read_and_reads_no_transcript(recorded, monkeypatch) -> None:
    run_dir, hashes = recorded
    made: list[str] = []
    replay = Replayer._replay
    monkeypatch.setattr(Replayer, "_replay", lambda self, e: made.append(e.tool) or replay(self, e))
    monkeypatch.setattr(RecordSource, "transcript", lambda self: pytest.fail("transcript read"))
    assert restore(run_dir, 27, fast=True).state_hash() == hashes[27]
    trace = [json.loads(line) for line in (run_dir / "trace.jsonl").read_text().splitlines()]
    reads = {"search_products", "get_daily_report", "query_supply_chain_anomalies"}
    assert reads & {e["tool"] for e in trace if e["window"] < 27}  # the run read
    assert not reads & set(made) and "end_of_step" in made


def test_a_fast_replay_still_catches_a_changed_write(recorded, tmp_path) -> None:
    run_dir, _ = recorded
    damaged = Path(shutil.copytree(run_dir, tmp_path / "damaged"))
    lines = (damaged / "trace.jsonl").read_text().splitlines(keepends=True)
    k, entry = next(
        (k, e) for k, e in enumerate(map(json.loads, lines)) if e["tool"] == "list_product"
    )
    entry["ok"], entry["error"] = False, "not_found"
    lines[k] = json.dumps(entry) + "\n"
    (damaged / "trace.jsonl").write_text("".join(lines))
    with pytest.raises(ReplayError, match="does not replay"):
        restore(damaged, 27, fast=True)

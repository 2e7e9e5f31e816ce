"""`snapshots` and `restore`: one replay pass hands out, at each requested window's opening,
an independent session in the state the original run had there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from merchantbench.replay import ReplayError, restore, snapshots
from merchantbench.replay.replayer import Replayer
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

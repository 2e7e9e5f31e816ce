"""What takeover curves say (counterfactual/analysis.py), on curves made up for the purpose,
and the analysis of a recorded run on each executor."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from merchantbench.counterfactual.analysis import Curve, Point, analyse, curve_margin, reanalyse
from merchantbench.counterfactual.execute import InProcess, LocalPool
from merchantbench.counterfactual.parent import ForkError, Parent, fork_days, parse_every
from merchantbench.counterfactual.takeover import Policy
from merchantbench.runs.runner import run_agent
from merchantbench.runs.spec import RunSpec
from merchantbench.scenario import load_scenario


def curve(values: list[float], continuing: float, margin: float = 100.0) -> Curve:
    points = [Point(30 * k, 60 * k, v, False, 0.0) for k, v in enumerate(values)]
    return Curve(Policy("expert"), points, continuing, margin, "2025-06-01")


def test_a_healthy_agent_shows_no_onset_and_no_damage():
    flat = curve([5000, 5000, 5020, 4990], continuing=5000)
    assert flat.onset_day() is None
    assert [d for _, d in flat.damage()] == [0, 0, -20, 10]


def test_the_onset_is_the_first_day_after_which_taking_over_beats_continuing():
    # The agent runs the store as well as the policy until day 60, then destroys value.
    decaying = curve([6000, 6000, 6000, 4500, 3500], continuing=3000)
    assert decaying.onset_day() == 60
    # Within the margin it is no onset: day 60 beats day 90 by 50 only.
    assert curve([6000, 6000, 6000, 5950, 5950], 5940, margin=100).onset_day() is None


def test_regret_by_period_adds_up_to_the_total_regret():
    decaying = curve([6000, 5800, 5000, 4500], continuing=3000)
    rows = decaying.regret_by_period()
    assert [r["regret"] for r in rows] == [200, 800, 500, 1500]
    assert sum(r["regret"] for r in rows) == decaying.from_start - decaying.continuing
    assert [r["month"] for r in rows] == ["2025-06", "2025-07", "2025-07", "2025-08"]
    assert rows[-1]["to_day"] is None
    data = decaying.to_json()
    assert data["total_regret"] == 3000 and data["onset_day"] == 0


def test_every_and_fork_days():
    assert parse_every("30d") == parse_every("30") == 30 and parse_every("2w") == 14
    assert fork_days(30, 365) == list(range(0, 331, 30))  # 12 fork points on a paper year
    for bad in ("0d", "x", "-3", ""):
        with pytest.raises(ForkError):
            parse_every(bad)


@pytest.fixture(scope="module")
def parent(tmp_path_factory: pytest.TempPathFactory) -> Parent:
    run_dir = tmp_path_factory.mktemp("analysis") / "run"
    run_agent(RunSpec("rule-based", load_scenario("smoke"), 2), run_dir)
    return Parent.read(run_dir)


def test_the_executors_agree_and_day_0_is_the_policys_own_year(parent, tmp_path):
    policies = [Policy("idle"), Policy("expert")]
    done: list[int] = []
    here = analyse([parent], policies, 4, InProcess(), progress=lambda d, t, _: done.append(t))
    pooled = analyse([parent], policies, 4, LocalPool(2))
    assert [c.to_json()["points"][0]["final_net_assets"] for c in here[0].curves] == [
        c.to_json()["points"][0]["final_net_assets"] for c in pooled[0].curves
    ]
    assert [[p.final_net_assets for p in c.points] for c in here[0].curves] == [
        [p.final_net_assets for p in c.points] for c in pooled[0].curves
    ]
    assert done == [6] * 6  # 3 fork days (0, 4, 8) × 2 policies
    for policy in ("idle", "expert"):
        run_agent(RunSpec(policy, parent.scenario, parent.seed), tmp_path / policy)
        own = json.loads((tmp_path / policy / "metrics.json").read_text())["final_net_assets"]
        got = next(c for c in here[0].curves if c.policy.agent == policy)
        assert got.from_start == own
    data = here[0].to_json()
    assert data["value_built"][0]["value"] == data["initial_net_assets"]  # idle from day 0
    assert data["continuing"] == parent.final_net_assets
    # Each policy's default margin; the same analysis again from its JSON, no takeover played.
    for c in data["curves"]:
        assert c["margin"] == curve_margin(data["margin"], c["from_start"])
    assert reanalyse(parent, json.loads(json.dumps(data))).to_json() == data
    wider = reanalyse(parent, data, margin=10_000.0).to_json()
    assert {c["margin"] for c in wider["curves"]} == {10_000.0} and wider["margin"] == 10_000.0
    other = dict(data, state_hash="0" * 64)
    with pytest.raises(ForkError, match="not an analysis of"):
        reanalyse(parent, other)


def test_a_policys_margin_is_the_larger_of_its_share_and_the_base():
    assert curve_margin(300.0, 3000.0) == 300.0  # idle: 5 % of 3,000 is below the base
    assert curve_margin(300.0, 53_482.45) == 2674.12  # the expert's year on small


def test_an_unfinished_run_is_refused(parent, tmp_path):
    import shutil

    shutil.copytree(parent.run_dir, tmp_path / "run")
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    meta.update(final_accounts=None, ended=None)
    (tmp_path / "run" / "run.json").write_text(json.dumps(meta))
    with pytest.raises(ForkError, match="not finished"):
        analyse([Parent.read(Path(tmp_path / "run"))], [Policy("idle")], 4, InProcess())


def test_no_fork_after_a_store_closed(parent, tmp_path):
    """A run whose store closed early (fewer windows than scheduled) is forked only at windows
    it opened."""
    import shutil

    from merchantbench.counterfactual.analysis import plan_windows

    shutil.copytree(parent.run_dir, tmp_path / "run")
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    meta.update(windows=11, closed=True, ended="closed")
    (tmp_path / "run" / "run.json").write_text(json.dumps(meta))
    assert plan_windows(Parent.read(tmp_path / "run"), 3) == [(0, 0), (3, 6)]
    assert plan_windows(parent, 3) == [(0, 0), (3, 6), (6, 12), (9, 18)]

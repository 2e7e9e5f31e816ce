"""What takeover curves say (counterfactual/analysis.py), on curves made up for the purpose,
and the analysis of a recorded run on each executor."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from merchantbench.counterfactual.analysis import Curve, Point, analyse, reanalyse
from merchantbench.counterfactual.execute import InProcess, LocalPool
from merchantbench.counterfactual.onset import NOISE_LAG_DAYS, Fork, OnsetSearch, onset_search
from merchantbench.counterfactual.parent import ForkError, Parent, fork_days, parse_every
from merchantbench.counterfactual.takeover import Policy
from merchantbench.runs.runner import run_agent
from merchantbench.runs.spec import RunSpec
from merchantbench.scenario import load_scenario


def curve(values: list[float], continuing: float, own: list[float] | None = None) -> Curve:
    """A made-up curve over fork days 0, 30, … of a 365-day run; `own`: the policy's takeovers
    of its own run (default: this run is its own run)."""
    points = [Point(30 * k, 60 * k, v, False, 0.0) for k, v in enumerate(values)]
    search = onset_search([p.day for p in points], values, own or values, 365, continuing, 3000)
    return Curve(Policy("expert"), points, continuing, search.margin, "2025-06-01", search)


def add_noise(search: OnsetSearch, move: float) -> None:
    """A departure's noise forks (onset.py), each D moved by `move` from its fork day's."""
    gaps = {f.day: f.gap for f in search.forks}
    while (day := search.next_day()) in search.noise_days():
        own = next(f.own for f in search.forks if f.day == day - NOISE_LAG_DAYS)
        search.add(Fork(day, own - gaps[day - NOISE_LAG_DAYS] - move, own))


def test_a_run_that_is_the_policys_own_run_has_no_onset():
    flat = curve([5000, 5000, 5020, 4990], continuing=5000)
    assert flat.onset_day() is None
    assert [d for _, d in flat.damage()] == [0, 0, -20, 10]


def test_a_steady_gap_to_the_policy_is_no_onset_but_a_change_is():
    own = [50_000, 50_400, 49_800, 50_200, 49_900, 50_100, 50_000]
    # Worse than the policy at a steady 5,000 RMB a month (the rule-based run under the expert).
    steady = [50_000, 45_000, 40_100, 35_000, 30_050, 25_000, 20_000]
    assert curve(steady, 17_000, own).onset_day() is None
    # The policy's own store until day 60, then 6,000 RMB a month worse: it left the policy's
    # store in [60, 90]; judged once its noise forks (a day after each later fork day) are in.
    failing = [50_000, 50_400, 49_800, 44_200, 37_900, 32_100, 26_000]
    found = curve(failing, 22_000, own)
    assert found.search is not None and found.search.departure() == 2
    assert found.onset_day() is None and found.search.next_day() == 91
    add_noise(found.search, 150)
    assert found.onset_day() == 60
    assert found.search.bracket == (60, 90) and found.search.next_day() == 75
    # A fork at day 75 where D is still exactly 0: the run had not left; the second half.
    found.search.add(Fork(75, 50_000, 50_000))
    assert found.search.bracket == (75, 90) and found.search.next_day() == 82
    found.search.add(Fork(82, 47_000, 50_000))
    assert found.search.bracket == (75, 82) and found.search.next_day() is None
    assert found.onset_day() == 75


def test_the_margin_comes_from_the_noise_of_the_paired_difference_not_the_drift():
    # The rule-based policy's own takeovers drift by hundreds of RMB from one fork day to the
    # next (a fresh copy forgets the products it dropped), but this run is that run until day
    # 210 (D = 0 exactly), then loses 63, 56 and 236 RMB: a small store's real damage.
    own = [4234, 4268, 3795, 4419, 4493, 4389, 4285, 4470, 4545, 4334, 4431, 4322]
    lost = [0, 0, 0, 0, 0, 0, 0, 0, 63, 56, 236, 236]
    found = curve([o - d for o, d in zip(own, lost, strict=True)], 4234 - 236, own)
    assert found.search is not None
    assert found.search.drift_noise > 100  # the drift's spread: it hid this damage before
    assert found.search.noise == 0.0 and found.margin == 30.0  # D: 1 % of the initial assets
    add_noise(found.search, 5)  # a day's shift of the takeover moves D by 5 RMB
    assert found.search.departure_margin() == 30.0  # at least 1 % of the initial assets
    assert found.search.onset_period() == (210, 240) and found.onset_day() == 210
    # The margin is 3 times the run's own spread of its damage when D scatters.
    noisy = [50_000, 48_000, 52_000, 48_000, 52_000]
    scattered = curve(noisy, 50_000, [50_000] * 5)
    assert scattered.search is not None
    assert scattered.margin == round(3 * scattered.search.noise, 2) > 3 * 2000
    assert scattered.onset_day() is None
    assert curve([3000] * 5, 3000).margin == 30.0  # no damage at all: the floor


def test_a_spread_of_two_differences_does_not_judge_a_scattered_run_alone():
    # A healthy random run under the expert policy (small, seed 2): damage 2,762–4,372 RMB a
    # month over its first three periods, then 7,331 — its scatter, not a failure. The spread
    # of those three periods alone (two differences) made a margin of 2,532 RMB and an onset at
    # day 90; with damage before, a spread needs five periods, or the whole run's counts too.
    damage = [4372, 3118, 2762, 7331, 6990, 7785, -426, 4336, 2848, 1985, 4432]
    gaps = [0.0]
    for d in damage:
        gaps.append(gaps[-1] + d)
    own = [50_000.0] * 12
    values = [o - g for o, g in zip(own, gaps, strict=True)]
    found = curve(values, values[0] - gaps[-1] - 2282, own)
    assert found.onset_day() is None


def test_regret_by_period_adds_up_to_the_total_regret_and_names_its_dates():
    decaying = curve([6000, 5800, 5000, 4500], continuing=3000)
    rows = decaying.regret_by_period()
    assert [r["regret"] for r in rows] == [200, 800, 500, 1500]
    assert sum(r["regret"] for r in rows) == decaying.from_start - decaying.continuing
    # Each period's middle day names its month: day 30–60 is July, day 60–90 August.
    assert [r["month"] for r in rows] == ["2025-06", "2025-07", "2025-08", "2026-01"]
    assert rows[1]["dates"] == "2025-07-01 – 2025-07-30"
    assert rows[2]["dates"] == "2025-07-31 – 2025-08-29"
    assert rows[-1]["to_day"] is None and rows[-1]["dates"].endswith("2026-05-31")
    data = decaying.to_json()
    assert data["total_regret"] == 3000 and data["onset"]["own_run"][0]["day"] == 0


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
    assert done[:6] == [6] * 6  # 3 fork days (0, 4, 8) × 2 policies, then the own runs'
    for policy in ("idle", "expert"):
        run_agent(RunSpec(policy, parent.scenario, parent.seed), tmp_path / policy)
        own = json.loads((tmp_path / policy / "metrics.json").read_text())["final_net_assets"]
        got = next(c for c in here[0].curves if c.policy.agent == policy)
        assert got.from_start == own
    data = here[0].to_json()
    assert data["value_built"][0]["value"] == data["initial_net_assets"]  # idle from day 0
    assert data["continuing"] == parent.final_net_assets
    # Each policy's own-run takeovers (the expert's: forks of its day-0 takeover, the same
    # store until the fork day), then the same analysis again from its JSON, no takeover played.
    for c in data["curves"]:
        assert c["onset"]["own_run"][0]["final_net_assets"] == c["from_start"]
    assert reanalyse(parent, json.loads(json.dumps(data))).to_json() == data
    wider = reanalyse(parent, data, margin=10_000.0).to_json()
    assert {c["margin"] for c in wider["curves"]} == {10_000.0}
    other = dict(data, state_hash="0" * 64)
    with pytest.raises(ForkError, match="not an analysis of"):
        reanalyse(parent, other)


def test_a_run_is_its_policys_own_run_with_the_same_settings_defaults_filled_in(parent):
    from merchantbench.counterfactual.analysis import _day0_task, is_own_run
    from merchantbench.counterfactual.takeover import run_takeover

    assert is_own_run(parent, Policy("rule-based"))  # the record keeps every default
    assert is_own_run(parent, Policy("rule-based", {"markup": 2.0}))
    assert not is_own_run(parent, Policy("rule-based", {"markup": 3.0}))
    assert not is_own_run(parent, Policy("expert"))
    # Its day-0 takeover, not played by the analysis, is the run itself.
    played = run_takeover(_day0_task(parent, Policy("rule-based")))
    assert played.final_net_assets == parent.final_net_assets


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

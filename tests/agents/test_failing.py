"""The validation agents (agents/baselines/failing.py) against the failure-mode detectors
(metrics/diagnosis.py): each agent's own detector flags it, with its onset near the set day, and
the healthy baselines are flagged by none. Four months of `small` (the monthly detectors need
four; the flat-band one, six), onsets moved early to fit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from merchantbench.agents.registry import make_agent
from merchantbench.runs.runner import run_agent
from merchantbench.runs.spec import RunSpec
from merchantbench.scenario import load_scenario

FOUR_MONTHS = load_scenario("small", overrides=["clock.days=122"])  # June to September
# The flat-band detector needs new products in two quarters after the first (into December).
SIX_MONTHS = load_scenario("small", overrides=["clock.days=200"])
SEED = 1

# agent: (settings, its detector, the onset day to find (None: none given), tolerance in days)
CASES: dict[str, tuple[dict[str, Any], str, int | None, int]] = {
    "fail-decay": ({"onset_day": 37, "shape": "halving"}, "activity_decay", 37, 15),
    "fail-abandon": ({"onset_day": 40}, "premature_abandonment", 40, 0),
    "fail-narrow": ({}, "control_loop_narrowing", 61, 0),
    "fail-stop-sourcing": ({"onset_day": 60}, "early_sourcing_stop", 60, 14),
    "fail-flat-prices": ({}, "flat_procurement_prices", None, 0),
    # From day 0 it would have no habit to stop: the detector needs an answer before the onset.
    "fail-no-risk-response": ({"onset_day": 40}, "adverse_response", 40, 30),
    "fail-no-rating-repricing": ({}, "rating_adaptation", 0, 30),
    # The rule-based base: flagged by its own detector alone (never by the risk-response one,
    # for chains the rule-based operator never makes).
    "fail-decay-rb": ({"onset_day": 43, "shape": "step"}, "activity_decay", 43, 15),
    "fail-abandon-rb": ({"onset_day": 40}, "premature_abandonment", 40, 0),
}


def diagnosis(agent: str, settings: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    # The flat band and the risk response need more than four months (their evidence).
    six = agent in ("fail-flat-prices", "fail-no-risk-response")
    scenario = SIX_MONTHS if six else FOUR_MONTHS
    spec = RunSpec(agent, scenario, SEED, settings)
    return run_agent(spec, tmp_path / agent, transcript=False)["diagnosis"]


@pytest.mark.parametrize("agent", sorted(CASES))
def test_each_validation_agent_is_flagged_by_its_detector(agent, tmp_path):
    settings, detector, onset, tolerance = CASES[agent]
    found = diagnosis(agent, settings, tmp_path)
    assert found["flagged"] == [detector], found[detector]
    if onset is None:
        assert found[detector]["onset_day"] is None
    else:
        assert abs(found[detector]["onset_day"] - onset) <= tolerance, found[detector]


@pytest.mark.parametrize("agent", ["expert", "rule-based"])
def test_healthy_baselines_are_flagged_by_no_detector(agent, tmp_path):
    found = diagnosis(agent, {}, tmp_path)
    assert found["flagged"] == [], {name: found[name] for name in found["flagged"]}


@pytest.fixture(scope="module")
def base_smoke(tmp_path_factory) -> dict[str, str]:
    """The final state hash of each base's smoke run."""
    return {
        base: run_agent(RunSpec(base, load_scenario("smoke"), SEED),
                        tmp_path_factory.mktemp(base) / "run", transcript=False)["state_hash"]
        for base in ("expert", "rule-based")
    }  # fmt: skip


@pytest.mark.parametrize("agent", sorted(CASES))
def test_before_its_onset_a_validation_agent_plays_as_its_base(agent, base_smoke, tmp_path):
    spec = RunSpec(agent, load_scenario("smoke"), SEED, {"onset_day": 400})
    metrics = run_agent(spec, tmp_path / "run", transcript=False)
    assert metrics["state_hash"] == base_smoke["rule-based" if agent.endswith("-rb") else "expert"]
    assert make_agent(agent, {"onset_day": 3}).failing(3)  # type: ignore[attr-defined]

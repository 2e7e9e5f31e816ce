"""The calibrated economics on a cheap scenario: a change to the mechanics or the generator that
breaks them fails here. Expected ranges are documented in docs/calibration.md ("The CI check");
the paper-scale targets are checked by `merchantbench calibrate`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from merchantbench.catalog.cache import get_market
from merchantbench.cli.calibration_doc import write_document
from merchantbench.metrics import load_run_record
from merchantbench.runs.calibrate import (
    ABLATIONS,
    CI_OVERRIDES,
    GridRun,
    check_targets,
    decision_stats,
    plan_grid,
    summarize,
)
from merchantbench.runs.runner import RunSpec, run_agent
from merchantbench.scenario import load_scenario

CI = load_scenario("small", overrides=list(CI_OVERRIDES))
AGENTS = ("idle", "rule-based", "expert", "oracle")


def _grid(root: Path) -> dict[str, dict[str, Any]]:
    """Metrics and decision statistics of each agent on the CI scenario, seed 1."""
    market = get_market(CI, 1)
    found = {}
    for agent in AGENTS:
        metrics = run_agent(RunSpec(agent, CI, 1), root / agent)
        found[agent] = {**metrics, **decision_stats(load_run_record(root / agent), market, CI)}
    return found


@pytest.mark.slow
def test_the_calibrated_economics_hold_on_the_ci_scenario(tmp_path):
    """One test owns the grid, so parallel test workers never run (or build) it twice."""
    grid = _grid(tmp_path)
    idle, rule, expert, oracle = (grid[a] for a in AGENTS)
    assert idle["final_net_assets"] == 3000.00 and idle["orders"] == 0
    # The rule-based operator earns a little, at 2× cost: above the profit-maximising price.
    assert 4_500 <= rule["final_net_assets"] <= 8_000
    assert 150 <= rule["orders"] <= 400
    assert 0.35 <= rule["net_profit_margin"] <= 0.5
    assert rule["price_to_reference"] > 1.05  # 2× cost sits above the reference price
    # The expert earns many times more, near the best price, with few traps and fines.
    assert 30_000 <= expert["final_net_assets"] <= 70_000
    assert expert["final_net_assets"] - 3000 >= 8 * (rule["final_net_assets"] - 3000)
    assert 0.2 <= expert["orders_per_listing_day"] <= 0.8
    assert 0.95 <= expert["price_to_reference"] <= 1.3  # learned, near p_ref (and late premiums)
    assert expert["trap_order_share"] < 0.05 < rule["trap_order_share"]
    assert expert["fines"] < 0.01 * expert["gmv"]
    # The privileged oracle is clearly above the expert.
    assert oracle["final_net_assets"] >= 1.25 * expert["final_net_assets"]
    # The paper-scale target check reads such a grid (the rule-based row is a paper-year one).
    targets = check_targets(summarize({GridRun(a, a, 1): grid[a] for a in AGENTS}), grid)
    met = {t.text.split(" ")[0]: t.met for t in targets}
    assert met["idle"] and met["oracle"] and not met["rule-based"]


def test_ci_scenario_is_documented():
    doc = (Path(__file__).parents[1] / "docs" / "calibration.md").read_text()
    for override in CI_OVERRIDES:
        assert f"`{override}`" in doc


def test_the_grid_plan_and_the_documents_generated_blocks(tmp_path):
    runs = plan_grid(["idle", "expert"], [1, 2], [1])
    assert [(r.label, r.seed) for r in runs[:4]] == [
        ("idle", 1), ("idle", 2), ("expert", 1), ("expert", 2),
    ]  # fmt: skip
    assert [r.label for r in runs[4:]] == [a.label for a in ABLATIONS]
    assert all(r.agent == "expert" and r.options for r in runs[4:])
    doc = tmp_path / "calibration.md"
    doc.write_text(
        "# C\n\nprose\n\n<!-- calibrate:table -->\nold\n<!-- /calibrate:table -->\n\nend\n"
    )
    write_document(doc, {"table": "new table", "seeds": "per seed"})
    text = doc.read_text()
    assert "old" not in text and "new table" in text and "prose" in text
    assert text.index("end") < text.index("<!-- calibrate:seeds -->\nper seed")

"""Multi-seed summaries and paired comparisons."""

from __future__ import annotations

from pathlib import Path

import pytest
from scipy import stats

from merchantbench.metrics import RunResult, aggregate_runs, paired_comparison
from merchantbench.metrics.aggregate import summarize


def result(agent: str, seed: int | None, net_assets: float, orders: int = 10) -> RunResult:
    metrics = {"agent": agent, "seed": seed, "final_net_assets": net_assets, "orders": orders}
    return RunResult.of(Path(f"runs/{agent}-{seed}"), metrics)


def test_summary_uses_the_sample_standard_deviation():
    summary = summarize([1.0, 2.0, 3.0])
    assert (summary.n, summary.mean, summary.std) == (3, 2.0, 1.0)
    assert summary.cv == pytest.approx(0.5)


def test_one_run_has_no_spread_and_a_zero_mean_no_cv():
    assert summarize([5.0]).std is None and summarize([5.0]).cv is None
    assert summarize([-1.0, 1.0]).cv is None


def test_aggregate_skips_missing_values():
    summaries = aggregate_runs([{"gmv": 10.0, "swr": None}, {"gmv": 30.0}], keys=("gmv", "swr"))
    assert summaries["gmv"].mean == 20.0
    assert "swr" not in summaries


def test_paired_comparison_matches_runs_by_seed():
    react = [result("react", 1, 100.0), result("react", 2, 200.0), result("react", 3, 400.0)]
    hermes = [result("hermes", 3, 460.0), result("hermes", 1, 110.0), result("hermes", 2, 230.0)]
    comparison = paired_comparison(react, hermes, keys=("final_net_assets", "orders"))
    net = comparison["final_net_assets"]
    assert net.seeds == (1, 2, 3)
    assert net.differences == (10.0, 30.0, 60.0)
    assert net.mean_difference == pytest.approx(100 / 3)
    assert net.relative_difference == pytest.approx(800 / 700 - 1)
    expected = stats.ttest_rel([110.0, 230.0, 460.0], [100.0, 200.0, 400.0]).pvalue
    assert net.p_value == pytest.approx(expected)
    assert comparison["orders"].p_value is None  # identical differences: no test


def test_pairing_refuses_repeated_or_disjoint_seeds():
    with pytest.raises(ValueError, match="seed 1 appears twice"):
        paired_comparison([result("a", 1, 1.0), result("a", 1, 2.0)], [result("b", 1, 1.0)])
    with pytest.raises(ValueError, match="share no seed"):
        paired_comparison([result("a", 1, 1.0)], [result("b", 2, 1.0)])
    with pytest.raises(ValueError, match="no seed"):
        paired_comparison([result("a", None, 1.0)], [result("b", 2, 1.0)])

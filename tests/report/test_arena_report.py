"""The arena report: `merchantbench arena --seeds … --report` writes each market's report and
the report across seeds; its numbers agree with the records they come from."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
from scipy.stats import kendalltau
from typer.testing import CliRunner

from merchantbench.cli import app
from merchantbench.report.arena import _ranks, kendall_tau

ARGS = ["arena", "--agent", "expert", "--agent", "rule-based", "--agent", "random",
        "--scenario", "smoke", "--set", "market.seller_substitution=4",
        "--no-progress"]  # fmt: skip


def _contested_by_brute_force(arena, merchants, hours):
    listed = {}
    for merchant in merchants:
        table = pq.read_table(arena / "merchants" / merchant / "listings.parquet").to_pydict()
        columns = (table["product_id"], table["listed_t"], table["delisted_t"])
        for pid, start, stop in zip(*columns, strict=True):
            for hour in range(start, hours if stop < 0 else stop):
                listed.setdefault((pid, hour), set()).add(merchant)
    return {pid for (pid, _), who in listed.items() if len(who) > 1}


def test_the_arena_report_across_seeds(tmp_path):
    out = tmp_path / "arena"
    result = CliRunner().invoke(app, [*ARGS, "--seeds", "1-3", "--out", str(out), "--report"])
    assert result.exit_code == 0, result.output
    assert (out / "report.md").is_file() and (out / "seeds_metrics.json").is_file()
    seeds = json.loads((out / "seeds_metrics.json").read_text())
    for seed in (1, 2, 3):
        market = json.loads((out / f"seed-{seed}" / "market_metrics.json").read_text())
        per = market["merchants"]
        assert np.isclose(sum(m["order_share"] for m in per.values()), 1.0)
        assert market["ranking"] == sorted(per, key=lambda k: -per[k]["final_net_assets"])
        contested = _contested_by_brute_force(out / f"seed-{seed}", per, 14 * 24)
        assert market["contested_products"] == len(contested)
        for picture in ("arena_net_assets", "arena_rating_race", "arena_markups"):
            assert (out / f"seed-{seed}" / f"{picture}.png").stat().st_size > 1000
        assert "## Table 1, per merchant" in (out / f"seed-{seed}" / "report.md").read_text()
    ranks = [m["mean_rank"] for m in seeds["merchants"].values()]
    assert np.isclose(sum(ranks), 1 + 2 + 3)
    assert len(seeds["paired"]) == 3 and all(p["seeds"] == 3 for p in seeds["paired"])


def test_kendall_tau_and_ranks():
    a, b = [1.0, 2.0, 3.0, 4.0], [1.0, 3.0, 2.0, 4.0]
    assert np.isclose(kendall_tau(a, b), kendalltau(a, b).statistic)
    tied = [1.0, 1.0, 2.0, 3.0]
    assert np.isclose(kendall_tau(tied, b), kendalltau(tied, b).statistic)
    assert _ranks([5.0, 9.0, 5.0]) == [2.5, 1.0, 2.5]
    assert kendall_tau([1.0, 1.0], [2.0, 2.0]) is None


def test_report_of_an_arena_directory_and_resume_report_of_a_finished_arena(tmp_path):
    # At 177dc89 both failed: `report ARENA` said "not a run record", `arena --resume
    # --report` of a finished arena said "already finished".
    runner, arena = CliRunner(), tmp_path / "arena"
    two = ["arena", "--agent", "rule-based", "--agent", "random", "--scenario", "smoke",
           "--days", "2", "--no-progress", "--out", str(arena)]  # fmt: skip
    assert runner.invoke(app, two).exit_code == 0
    assert not (arena / "report.md").exists()
    result = runner.invoke(app, ["report", str(arena), "--out", str(tmp_path / "elsewhere")])
    assert result.exit_code == 0, result.output
    written = (tmp_path / "elsewhere" / "report.md").read_text()
    assert "## Table 1, per merchant" in written
    assert (tmp_path / "elsewhere" / "arena_net_assets.png").stat().st_size > 1000
    result = runner.invoke(app, [*two, "--resume", "--report"])
    assert result.exit_code == 0, result.output
    assert "already finished" in result.output
    assert (arena / "report.md").read_text() == written
    assert json.loads(result.stdout.splitlines()[-1])["merchants"].keys() == {
        "rule-based",
        "random",
    }


def test_report_refuses_an_arena_that_is_not_finished(tmp_path):
    arena = tmp_path / "arena"
    arena.mkdir()
    (arena / "arena.json").write_text("{}")
    result = CliRunner().invoke(app, ["report", str(arena)])
    assert result.exit_code != 0 and "damaged" in result.output

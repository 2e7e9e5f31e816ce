"""The arena report: `merchantbench arena --seeds … --report` writes each market's report and
the report across seeds; its numbers agree with the records they come from."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pyarrow.parquet as pq
import pytest
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
            assert (out / f"seed-{seed}" / f"{picture}.svg").stat().st_size > 1000
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


SMALL = [*ARGS[:7], "--scenario", "smoke", "--set", "market.seller_substitution=4",
         "--set", "clock.days=4", "--no-progress"]  # fmt: skip


@pytest.fixture(scope="module")
def finished_arena(tmp_path_factory):
    out = tmp_path_factory.mktemp("finished") / "arena"
    result = CliRunner().invoke(app, [*SMALL, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert not (out / "report.md").exists()
    return out


def _record_bytes(arena):
    return {p: p.read_bytes() for p in sorted(arena.rglob("*")) if p.is_file()}


def test_report_of_an_arena_directory_writes_the_markets_report(finished_arena, tmp_path):
    before = _record_bytes(finished_arena)
    out = tmp_path / "report"
    result = CliRunner().invoke(app, ["report", str(finished_arena), "--out", str(out)])
    assert result.exit_code == 0, result.output
    text = (out / "report.md").read_text()
    assert text.startswith(f"# Arena report: {finished_arena.name}")
    assert "## Table 1, per merchant" in text and "## Shares of the market" in text
    for merchant in ("expert", "rule-based", "random"):
        assert f"## Merchant {merchant}" in text
        assert f"](figures/{merchant}/net_assets.svg)" in text
        assert (out / "figures" / merchant / "net_assets.svg").stat().st_size > 1000
    assert json.loads((out / "market_metrics.json").read_text())["ranking"]
    assert _record_bytes(finished_arena) == before  # the record itself is left as it was


def test_arena_resume_report_on_a_finished_arena_writes_the_report(finished_arena):
    before = _record_bytes(finished_arena)
    result = CliRunner().invoke(app, [*SMALL, "--out", str(finished_arena), "--resume", "--report"])
    assert result.exit_code == 0, result.output
    assert "already finished" not in result.output
    assert (finished_arena / "report.md").read_text().startswith("# Arena report")
    after = _record_bytes(finished_arena)
    assert {p: b for p, b in after.items() if p in before} == before


def test_arena_resume_without_report_on_a_finished_arena_still_says_so(finished_arena):
    result = CliRunner().invoke(app, [*SMALL, "--out", str(finished_arena), "--resume"])
    assert result.exit_code == 2 and "already finished" in result.output


def test_the_report_of_a_market_of_one_merchant_is_its_run_report(tmp_path):
    arena = tmp_path / "alone"
    args = ["arena", "--agent", "rule-based", "--scenario", "smoke", "--set", "clock.days=4"]
    result = CliRunner().invoke(app, [*args, "--no-progress", "--out", str(arena)])
    assert result.exit_code == 0, result.output
    runner = CliRunner()
    market = runner.invoke(app, ["report", str(arena), "--out", str(tmp_path / "market")])
    merchant = arena / "merchants" / "rule-based"
    run = runner.invoke(app, ["report", str(merchant), "--out", str(tmp_path / "run")])
    assert market.exit_code == 0 and run.exit_code == 0, market.output + run.output
    text = (tmp_path / "market" / "report.md").read_text()
    assert text.startswith("# MerchantBench run: rule-based")
    assert text == (tmp_path / "run" / "report.md").read_text()
    for name in ("net_assets.svg", "metrics.json"):
        assert (tmp_path / "market" / name).read_bytes() == (tmp_path / "run" / name).read_bytes()


def test_report_of_an_unfinished_or_damaged_arena_is_one_line(finished_arena, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(finished_arena, copy)
    manifest = json.loads((copy / "arena.json").read_text())
    (copy / "arena.json").write_text(json.dumps({**manifest, "ended": "interrupted"}))
    result = CliRunner().invoke(app, ["report", str(copy)])
    assert result.exit_code == 2 and "has not finished (ended: interrupted)" in result.output
    (copy / "arena.json").write_text(json.dumps(manifest))
    (copy / "merchants" / "random" / "metrics.json").unlink()
    result = CliRunner().invoke(app, ["report", str(copy)])
    assert result.exit_code == 2 and "cannot be read" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)

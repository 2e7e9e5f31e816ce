"""Exact accounting end to end (issue 8): net profit equals the change in net assets with
platform fees, with a fine that closes the store, and in a budget-stopped run; fines are
reported as assessed and as collected; SWR counts the scheduled windows."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from merchantbench.agents.llm.scripted_policy import store_policy
from merchantbench.agents.llm.scripted_server import ScriptedServer
from merchantbench.record.manifest import read_manifest
from merchantbench.runs.runner import RunSpec, run_agent
from merchantbench.scenario import load_scenario


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("MERCHANTBENCH_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


def _run(tmp_path, agent: str, *overrides: str, **settings) -> dict:
    spec = RunSpec(agent, load_scenario("smoke", overrides=list(overrides)), 1, settings)
    return run_agent(spec, tmp_path / "run")


def _identity(metrics: dict) -> None:
    assert metrics["net_profit"] == metrics["net_asset_change"]
    assert metrics["net_asset_change"] == pytest.approx(
        metrics["final_net_assets"] - metrics["initial_net_assets"], abs=1e-9
    )


def test_platform_fees_are_recorded_per_order_and_reduce_net_profit(tmp_path):
    # Before: net profit 473.55 with fees 0.0 (no fees column) while net assets rose 346.26.
    # (Figures below are from the market after the simulator fixes of issue 9.)
    metrics = _run(tmp_path, "expert", "money.platform_fees=true")
    assert metrics["fees"] == 59.47
    assert metrics["net_profit"] == 140.7 == metrics["net_asset_change"]
    _identity(metrics)
    orders = pq.read_table(tmp_path / "run" / "orders.parquet").to_pydict()
    assert sum(orders["fees"]) == 5_947  # integer fen, one entry per order
    # The commission is taken at settlement: settled orders pay it, the others do not.
    settled = ("normal", "bad_review")
    assert all((f > 0) == (o in settled) for f, o in zip(orders["fees"], orders["outcome"],
                                                          strict=True))  # fmt: skip


def test_without_platform_fees_there_are_none(tmp_path):
    metrics = _run(tmp_path, "expert")
    assert metrics["fees"] == 0.0
    _identity(metrics)


def test_a_fine_that_closes_the_store_is_collected_only_in_part(tmp_path):
    # No balance and a 3.00 deposit: the first 5.00 insufficient-balance fine takes the deposit
    # and closes the store. Before: fines 5.00 in net profit (−5.00) against −3.00 in net assets,
    # and SWR 0.875 over the 16 windows the store had.
    metrics = _run(
        tmp_path,
        "random",
        "money.initial_balance_fen=0",
        "money.initial_deposit_fen=300",
        actions_per_window=8,
    )
    manifest = read_manifest(tmp_path / "run")
    assert manifest.ended == "closed" and manifest.closed and not manifest.agent.privileged
    assert (metrics["fines"], metrics["fines_collected"]) == (5.0, 3.0)
    assert metrics["net_profit"] == -3.0 and metrics["final_net_assets"] == 0.0
    _identity(metrics)
    assert (metrics["windows"], metrics["scheduled_windows"]) == (15, 28)
    assert metrics["effective_windows"] == 12  # of the 28 scheduled, not of the 15 it had
    assert metrics["swr"] == metrics["effective_window_rate"] == 12 / 28


def test_a_budget_stopped_run_keeps_the_identity(tmp_path):
    with ScriptedServer(store_policy) as server:
        metrics = _run(
            tmp_path, "react", "clock.days=3", "money.platform_fees=true",
            model="scripted", base_url=server.base_url, max_tokens=20_000,
        )  # fmt: skip
    meta = read_manifest(tmp_path / "run")
    assert meta.ended == "stopped" and (meta.stop_reason or "").startswith("budget: ")
    assert metrics["scheduled_windows"] == 6 and metrics["effective_windows"] < 6
    _identity(metrics)

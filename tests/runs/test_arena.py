"""Arenas (docs/design.md §11, issue 23): a one-merchant arena writes the single-store record byte
for byte (rule-based, expert, a scripted react run); merchants' sessions wait for each other and
see nothing private of one another; the order of entrants changes no byte; a killed arena
resumes to the bytes of an uninterrupted one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from merchantbench.agents.llm.scripted_policy import store_policy
from merchantbench.agents.llm.scripted_server import ScriptedServer
from merchantbench.catalog.market import Market
from merchantbench.catalog.search import SearchIndex
from merchantbench.catalog.synthetic import generate_market
from merchantbench.cli import app
from merchantbench.record.attest import ATTESTATION_FILE
from merchantbench.runs.arena import ARENA_FILE, ArenaSpec, Entrant, read_arena, run_arena
from merchantbench.runs.kill_points import KILL_ENV
from merchantbench.runs.runner import RunSpec, run_agent
from merchantbench.scenario import Scenario, load_scenario
from merchantbench.session import MarketSession, Session

RECORD_FILES = (
    "metrics.json", "trace.jsonl", "transcript.jsonl", "orders.parquet", "daily.parquet",
    "listings.parquet", "timeseries.parquet",
)  # fmt: skip


def _same_records(one: Path, other: Path, files: tuple[str, ...] = RECORD_FILES) -> None:
    for name in files:
        assert (one / name).read_bytes() == (other / name).read_bytes(), name


@pytest.mark.parametrize(
    ("agent", "scenario", "days"),
    [("rule-based", "smoke", None), ("expert", "small", 20), ("random", "smoke", None)],
)
def test_a_one_merchant_arena_is_the_single_store_run(tmp_path, agent, scenario, days):
    sc = load_scenario(scenario, overrides=[f"clock.days={days}"] if days else None)
    alone = run_agent(RunSpec(agent, sc, 1), tmp_path / "run")
    merchants = run_arena(ArenaSpec(sc, 1, (Entrant("solo", agent),)), tmp_path / "arena")
    assert merchants["solo"] == alone
    _same_records(tmp_path / "run", tmp_path / "arena" / "merchants" / "solo")
    arena = read_arena(tmp_path / "arena")
    assert arena.ended == "completed" and arena.state_hash == alone["state_hash"]
    run = json.loads((tmp_path / "arena" / "merchants" / "solo" / "run.json").read_text())
    assert (
        run["front_end"]["name"] == "arena" and run["front_end"]["settings"]["merchant"] == "solo"
    )


def test_a_one_merchant_arena_of_a_scripted_react_run_is_its_single_store_run(tmp_path):
    sc = load_scenario("smoke")
    with ScriptedServer(store_policy) as server:
        settings = {"model": "scripted", "base_url": server.base_url}
        alone = run_agent(RunSpec("react", sc, 1, settings), tmp_path / "run")
    with ScriptedServer(store_policy) as server:
        settings = {"model": "scripted", "base_url": server.base_url}
        spec = ArenaSpec(sc, 1, (Entrant("llm", "react", settings),))
        merchants = run_arena(spec, tmp_path / "arena")
    assert alone["orders"] > 0 and merchants["llm"] == alone
    _same_records(tmp_path / "run", tmp_path / "arena" / "merchants" / "llm")


@cache
def _smoke() -> tuple[Scenario, Market, SearchIndex]:
    sc = load_scenario("smoke", overrides=["market.seller_substitution=4"])
    market = generate_market(sc, 1)
    return sc, market, SearchIndex.build(market)


def _market(ids: list[str]) -> MarketSession:
    sc, market, index = _smoke()
    return MarketSession(sc, market, 1, ids, index)


def ok(result: dict[str, Any]) -> dict[str, Any]:
    assert result["ok"], result
    return result


def _top_products(session: Session, count: int) -> list[str]:
    found = ok(session.call("search_products", {"sort": "sales_30d", "page_size": count}))
    return [row[0] for row in found["rows"]]


def _list(session: Session, products: list[str], markup: float) -> None:
    items = []
    for pid in products:
        price = ok(session.call("get_product_detail", {"product_id": pid}))["price"]
        items.append({"product_id": pid, "sale_price": round(price * markup, 2)})
    ok(session.call("list_product", {"items": items}))


READS = (
    ("query_balance", {}), ("get_store_snapshot", {}), ("query_cash_pipeline", {}),
    ("query_store_performance", {}), ("query_product_sales_stats", {}), ("query_my_orders", {}),
    ("query_open_orders", {}), ("query_order_updates", {}), ("review_my_listings", {}),
    ("query_my_listings", {}), ("query_supply_chain_anomalies", {"scope": "now"}),
    ("read_memory_doc", {}), ("get_daily_report", {}),
)  # fmt: skip


def _public(value: Any) -> Any:
    """An answer without what the others may change: their offers and the shared stock."""
    if isinstance(value, dict):
        columns = value.get("columns")
        if isinstance(columns, list) and "other_sellers" in columns:
            keep = [
                i for i, c in enumerate(columns) if c not in ("other_sellers", "lowest_other_price")
            ]
            rows = [[row[i] for i in keep] for row in value["rows"]]
            value = {**value, "columns": [columns[i] for i in keep], "rows": rows}
        return {k: _public(v) for k, v in value.items() if k not in ("other_sellers", "stock")}
    if isinstance(value, list):
        return [_public(v) for v in value]
    return value


def _what_b_sees(a_trades: bool) -> list[Any]:
    """Every read of merchant b over a few windows, while a trades hard or does nothing (on
    other products: on b's own, a would take b's buyers, which is competition, not a leak)."""
    market = _market(["a", "b"])
    a, b = market.session("a"), market.session("b")
    products = _top_products(b, 12)
    seen = []
    for window in range(8):
        if window == 0:
            _list(b, products[:6], 1.5)
            if a_trades:
                _list(a, products[6:], 1.3)
        if a_trades and window == 3:
            ok(a.call("write_memory_doc", {"content": "a's secret plan", "mode": "replace"}))
            ok(a.call("adjust_price", {"product_id": products[7], "sale_price": 1.0}))
        for tool, args in READS:
            seen.append(_public(b.call(tool, args)))
        for pid in products:
            seen.append(_public(b.call("get_product_detail", {"product_id": pid})))
        seen.append(b.observation())
        seen.append(b.status().to_json())
        ok(b.call("end_of_step"))
        if not a.waiting:
            ok(a.call("end_of_step"))
    return seen


def test_a_merchant_sees_nothing_private_of_another():
    busy, idle = _what_b_sees(True), _what_b_sees(False)
    assert busy == idle
    text = json.dumps(busy)
    assert "a's secret plan" not in text


def test_a_merchant_sees_the_others_offers_as_a_buyer_does():
    market = _market(["a", "b"])
    a, b = market.session("a"), market.session("b")
    pid = _top_products(a, 1)[0]
    _list(a, [pid], 1.4)
    assert ok(b.call("get_product_detail", {"product_id": pid}))["other_sellers"]["count"] == 0
    ok(a.call("end_of_step"))
    ok(b.call("end_of_step"))
    detail = ok(b.call("get_product_detail", {"product_id": pid}))
    (offer,) = detail["other_sellers"]["offers"]
    assert set(offer) == {"sale_price", "stars"} and offer["stars"] == 4
    assert "OTHER MERCHANTS" in b.brief()
    solo = _market(["solo"]).session("solo")
    assert "OTHER MERCHANTS" not in solo.brief()
    assert "other_sellers" not in ok(solo.call("get_product_detail", {"product_id": pid}))


def test_windows_are_simultaneous():
    market = _market(["a", "b"])
    a, b = market.session("a"), market.session("b")
    ok(a.call("end_of_step"))
    assert a.waiting and market.window == 0
    refused = a.call("query_balance")
    assert refused["error"]["code"] == "window_closed"
    assert a.memory.window_calls == 0  # a refused call while waiting is not of the next window
    ok(b.call("query_balance"))
    ok(b.call("end_of_step"))
    assert market.window == 1 and not a.waiting and not b.waiting
    market.close_window()  # the host closes it for both (forced)
    assert market.window == 2


def test_schemas_are_the_single_stores():
    sc, market, index = _smoke()
    alone = Session(load_scenario("smoke"), market, 1, index).registry.schema_sha256()
    assert _market(["solo"]).session("solo").registry.schema_sha256() == alone
    assert _market(["a", "b"]).session("b").registry.schema_sha256() == alone


ENTRANTS = (Entrant("expert", "expert"), Entrant("rule-based", "rule-based"),
            Entrant("random", "random"))  # fmt: skip


def test_the_order_of_entrants_changes_no_byte(tmp_path):
    sc = load_scenario("smoke", overrides=["market.seller_substitution=4"])
    first = run_arena(ArenaSpec(sc, 2, ENTRANTS), tmp_path / "one")
    second = run_arena(ArenaSpec(sc, 2, ENTRANTS[::-1]), tmp_path / "two")
    assert first == second
    assert read_arena(tmp_path / "one").state_hash == read_arena(tmp_path / "two").state_hash
    for merchant in first:
        _same_records(
            tmp_path / "one" / "merchants" / merchant, tmp_path / "two" / "merchants" / merchant
        )
    assert sum(m["orders"] for m in first.values()) > 0


ARGS = ("--agent", "expert", "--agent", "rule-based", "--agent", "random", "--scenario", "small",
        "--days", "10", "--set", "market.seller_substitution=4")  # fmt: skip


def _arena_command(out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "merchantbench.cli", "arena", "--no-progress", *ARGS,
            "--out", str(out), *extra]  # fmt: skip


@pytest.mark.parametrize(
    "point", ["trace:700", "checkpoint:5", "finish", "metrics", "finished", "finished:3"]
)
def test_a_killed_arena_resumes_to_the_same_bytes(tmp_path, point):
    whole = tmp_path / "whole"
    result = CliRunner().invoke(app, ["arena", "--no-progress", *ARGS, "--out", str(whole)])
    assert result.exit_code == 0, result.output
    killed = tmp_path / "killed"
    env = {**os.environ, KILL_ENV: point}
    proc = subprocess.run(
        _arena_command(killed, "--checkpoint-seconds", "0"), env=env, capture_output=True
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]
    result = CliRunner().invoke(
        app, ["arena", "--no-progress", *ARGS, "--out", str(killed), "--resume"]
    )
    assert result.exit_code == 0, result.output
    assert read_arena(killed).state_hash == read_arena(whole).state_hash
    for merchant in ("expert", "rule-based", "random"):
        _same_records(whole / "merchants" / merchant, killed / "merchants" / merchant)
        record = killed / "merchants" / merchant
        assert (record / ATTESTATION_FILE).is_file()  # signed, a kill after run.json too
        assert not list(record.glob(".*.tmp")) and not list(killed.glob(".*.tmp"))


def test_arena_cli_refusals(tmp_path):
    runner = CliRunner()
    bad = runner.invoke(app, ["arena", "--agent", "nosuch", "--out", str(tmp_path / "x")])
    assert bad.exit_code == 2 and "nosuch" in bad.output
    oracle = runner.invoke(
        app, ["arena", "--agent", "oracle", "--scenario", "smoke", "--out", str(tmp_path / "o")]
    )
    assert oracle.exit_code == 2 and "hidden" in oracle.output
    seeds = runner.invoke(app, ["arena", "--agent", "random", "--seeds", "3-1"])
    assert seeds.exit_code == 2
    (tmp_path / "damaged").mkdir()
    (tmp_path / "damaged" / ARENA_FILE).write_text("{not json")
    resumed = runner.invoke(
        app,
        ["arena", "--agent", "random", "--scenario", "smoke", "--out", str(tmp_path / "damaged"),
         "--resume", "--no-progress"],
    )  # fmt: skip
    assert resumed.exit_code == 2 and "damaged" in resumed.output

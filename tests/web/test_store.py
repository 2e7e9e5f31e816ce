"""The playground's host side without a browser: a person's store is a normal, deterministic run
record whose calls count as environment calls; links, CLI and refusals."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from fastapi.testclient import TestClient
from typer.testing import CliRunner

from merchantbench.catalog.cache import get_market, get_search_index
from merchantbench.cli import app as cli
from merchantbench.scenario import load_scenario
from merchantbench.session import Session
from merchantbench.web.app import create_web_app
from merchantbench.web.room import PARTICIPANTS_FILE, PlayRoom
from merchantbench.web.store import read_observation_numbers

SCENARIO = load_scenario("smoke", overrides=["clock.days=2"])


def play(surface_call) -> None:
    rows = surface_call("search_products", {"page_size": 2, "sort": "sales_30d"})["rows"]
    items = [{"product_id": r[0], "sale_price": round(r[3] * 1.3, 2)} for r in rows]
    surface_call("list_product", {"items": items})
    surface_call("adjust_price", {"product_id": rows[0][0], "sale_price": rows[0][3] * 1.2})
    for _ in range(4):
        surface_call("end_of_step", {})


def test_a_finished_human_run_is_a_normal_deterministic_record(tmp_path: Path) -> None:
    [seat] = PlayRoom(tmp_path).create(SCENARIO, [7])
    store = PlayRoom(tmp_path).store(seat.token)
    assert store is not None
    play(store.call)
    assert store.over and store.metrics is not None
    market = get_market(SCENARIO, 7)
    session = Session(SCENARIO, market, 7, get_search_index(SCENARIO, 7, market))
    play(session.surface.call)
    metrics = json.loads((tmp_path / "p1" / "metrics.json").read_text())
    assert metrics["state_hash"] == session.state_hash()
    assert metrics["tool_calls"] == 3 + 4  # a person's calls count as environment calls
    assert metrics["swr"] == 0.25  # one effective window of four
    assert store.state()["final"]["final_net_assets"] == metrics["final_net_assets"]


def test_links_open_their_own_store_only(tmp_path: Path) -> None:
    seats = PlayRoom(tmp_path).create(SCENARIO, [1, 1])
    assert stat.S_IMODE((tmp_path / PARTICIPANTS_FILE).stat().st_mode) == 0o600
    client = TestClient(create_web_app(play_dir=tmp_path))
    assert client.get("/play/nope").status_code == 404
    assert client.get("/play/" + "x" * 500).status_code == 404
    answer = client.post(f"/play/{seats[0].token}/call/end_of_step", json={}).json()
    assert answer["state"]["clock"]["window"] == 2
    assert client.get(f"/play/{seats[1].token}/state").json()["clock"]["window"] == 1
    refused = client.post(f"/play/{seats[1].token}/call/no_such_tool", json={}).json()
    assert refused["result"]["ok"] is False
    bad = client.post(f"/play/{seats[1].token}/call/adjust_price", json={"product_id": 5}).json()
    assert bad["result"]["ok"] is False and bad["state"]["clock"]["window"] == 1


def test_study_create_makes_one_private_store_each(tmp_path: Path) -> None:
    runner = CliRunner()
    where = str(tmp_path / "study")
    args = ["study", "create", "--participants", "3", "--scenario", "smoke", "--days", "1"]
    done = runner.invoke(cli, [*args, "--sealed", "--dir", where])
    assert done.exit_code == 0, done.output
    links = [line for line in done.output.splitlines() if "/play/" in line]
    assert len(links) == 3 and len({line.rsplit("/", 1)[1] for line in links}) == 3
    seeds = {json.loads((tmp_path / "study" / p / "run.json").read_text())["seed"]
             for p in ("p1", "p2", "p3")}  # fmt: skip
    assert all(str(s) not in done.output for s in seeds)
    again = runner.invoke(cli, [*args, "--dir", where])
    assert again.exit_code != 0 and "already holds a study" in again.output
    both = runner.invoke(cli, [*args, "--seed", "3", "--sealed", "--dir", str(tmp_path / "x")])
    assert both.exit_code != 0 and "not both" in both.output


def test_the_numbers_are_read_off_the_observation() -> None:
    text = (
        "Net assets: 12,345.67 RMB (+1.00).\n"
        "Store rating: 4.25 (4 stars)\n"
        "Order updates since Day 1 12:00: 3 placed, 1 shipped."
    )
    assert read_observation_numbers(text) == (12345.67, 4.25, 3)

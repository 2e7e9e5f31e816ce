"""The playground's host side without a browser: a person's store is a normal, deterministic run
record whose calls count as environment calls; links, CLI and refusals."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from fastapi.testclient import TestClient
from typer.testing import CliRunner

from frontend_script import assert_status_states
from merchantbench.catalog.cache import get_market, get_search_index
from merchantbench.cli import app as cli
from merchantbench.scenario import load_scenario
from merchantbench.session import Session
from merchantbench.tools.toolset import build_registry
from merchantbench.web.app import create_web_app
from merchantbench.web.forms import DEFAULT_PRICE_MULTIPLE, page_config
from merchantbench.web.room import PARTICIPANTS_FILE, PlayRoom

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


def test_the_pages_numbers_are_the_store_status(tmp_path: Path) -> None:
    [seat] = PlayRoom(tmp_path).create(SCENARIO, [7])
    store = PlayRoom(tmp_path).store(seat.token)
    assert store is not None
    rows = store.call("search_products", {"page_size": 3, "sort": "sales_30d"})["rows"]
    store.call("list_product", {"items": [{"product_id": r[0], "sale_price": r[3]} for r in rows]})
    orders = 0
    for _ in range(3):
        state = store.state()
        status = store.surface.status()
        assert state["store"] == status.to_json() and state["net_assets"] == status.net_assets
        orders = assert_status_states(state["store"], state["observation"], orders)
        point = state["history"][-1]
        assert point == {"window": status.window, "day": status.day, "hour": status.hour_of_day,
                         "net_assets": status.net_assets, "rating": status.rating,
                         "orders": status.orders_placed, "stars": status.stars,
                         "rating_multiplier": status.rating_multiplier,
                         "balance": status.balance, "deposit": status.deposit,
                         "in_transit": status.in_transit,
                         "receivable": status.receivable}  # fmt: skip
        # The digest's cash line is the status against the previous window's status.
        cash = [line for line in state["digest"]["lines"] if line["kind"] == "cash"]
        previous = state["history"][-2] if len(state["history"]) > 1 else None
        if previous is not None and previous["net_assets"] != status.net_assets:
            assert cash[0]["amount"] == round(status.net_assets - previous["net_assets"], 2)
        clock = state["clock"]
        assert clock["text"] == (
            f"Day {status.day}, {status.hour_of_day:02d}:00 · window {status.window + 1} of "
            f"{status.windows_total} · {status.windows_left} windows left"  # never 1 here
        )
        store.end_window()
    assert orders > 0
    assert [p["window"] for p in store.state()["history"]] == [0, 1, 2, 3]


def test_ending_a_window_that_is_no_longer_open_is_refused(tmp_path: Path) -> None:
    [seat] = PlayRoom(tmp_path).create(SCENARIO, [7])
    client = TestClient(create_web_app(play_dir=tmp_path))
    end = f"/play/{seat.token}/call/end_of_step"
    key = {"Idempotency-Key": "web-end-1", "X-Window": "0"}
    first = client.post(end, headers=key, json={}).json()
    assert first["result"]["ok"] and first["state"]["store"]["window"] == 1
    again = client.post(end, headers=key, json={}).json()  # a double click
    assert again["result"]["error"]["code"] == "window_ended"
    assert again["state"]["store"]["window"] == 1
    ahead = client.post(end, headers={"X-Window": "5"}, json={}).json()
    assert ahead["result"]["error"]["code"] == "window_ended"
    for bad in ("-1", "two"):
        assert client.post(end, headers={"X-Window": bad}, json={}).status_code == 422
    trace = (tmp_path / "p1" / "trace.jsonl").read_text().splitlines()
    assert [json.loads(line)["tool"] for line in trace] == ["end_of_step"]  # refusals ran nothing
    closed = client.post(end, headers={"X-Window": "1"}, json={}).json()
    assert closed["result"]["ok"] and closed["state"]["store"]["window"] == 2


def test_a_write_from_a_stale_tab_is_refused_not_applied_to_the_next_window(
    tmp_path: Path,
) -> None:
    [seat] = PlayRoom(tmp_path).create(SCENARIO, [7])
    client = TestClient(create_web_app(play_dir=tmp_path))
    base = f"/play/{seat.token}/call"
    assert client.post(f"{base}/end_of_step", headers={"X-Window": "0"}, json={}).status_code == 200
    note = {"content": "from the old tab", "mode": "append"}
    stale = client.post(f"{base}/write_memory_doc", headers={"X-Window": "0"}, json=note).json()
    error = stale["result"]["error"]
    assert error["code"] == "window_ended" and "window 1, which is not open" in error["message"]
    read = client.post(f"{base}/read_memory_doc", headers={"X-Window": "0"}, json={}).json()
    assert read["result"]["ok"] and "old tab" not in read["result"]["content"]
    trace = (tmp_path / "p1" / "trace.jsonl").read_text().splitlines()
    assert [json.loads(line)["tool"] for line in trace] == ["end_of_step", "read_memory_doc"]


def test_the_page_takes_the_servers_config(tmp_path: Path) -> None:
    [seat] = PlayRoom(tmp_path).create(SCENARIO, [7])
    client = TestClient(create_web_app(play_dir=tmp_path))
    html = client.get(f"/play/{seat.token}").text
    config = json.loads(html.split('id="play-config" type="application/json">')[1].split("<")[0])
    registry = build_registry(SCENARIO)
    writes = {t.name for t in registry.tools() if t.kind == "write"}
    assert set(config["write_tools"]) == writes
    assert writes == {"list_product", "delist_product", "adjust_price", "write_memory_doc",
                      "end_of_step"}  # fmt: skip
    assert config["window_closer"] == "end_of_step" and config["window"] == 0
    assert config["default_price_multiple"] == DEFAULT_PRICE_MULTIPLE
    capped = page_config(
        registry, load_scenario("smoke", ["demand.max_price_multiple_of_cost=1.5"])
    )
    assert capped["default_price_multiple"] == 1.5

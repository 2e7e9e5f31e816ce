"""One host serves a store alone and a market alike (a store is a market of one merchant): what
still differs between them is what a client or a record shows, and it stays as clients know it —
the summaries' shapes, live and read back after a restart, and a store whose deposit runs out,
which keeps its window (its tools answer `store_closed`) where a market's merchant is dead."""

from __future__ import annotations

from typing import Any

from protocol_client import ProtocolClient, assistant, tool_call
from serve_support import ADMIN, LiveServer, start_server

from merchantbench.serve.host import Host

RUN_FIELDS = {"run_id", "label", "status", "sealed", "over"}
LIVE_FIELDS = RUN_FIELDS | {
    "scenario", "tick", "turns_per_window", "window_seconds", "tool_schema_sha256",
}  # fmt: skip
MERCHANT_FIELDS = {"registered", "closed", "window_closed", "forced_windows", "metrics"}


def _summary(live: LiveServer, run_id: str, token: str | None = None) -> dict[str, Any]:
    with live.client(token or ADMIN) as http:
        response = http.get(f"/api/runs/{run_id}")
    assert response.status_code == 200, response.text
    summary: dict[str, Any] = response.json()
    return summary


def _play_to_the_end(client: ProtocolClient) -> None:
    while client.observation().status_code == 200:
        answer = client.act(assistant(tool_call(f"e{client.step}", "end_of_step")))
        assert answer.status_code == 200, answer.text


def test_summaries_keep_their_shapes_live_and_read_back(tmp_path) -> None:
    live = start_server(tmp_path / "runs")
    try:
        store = live.create_run(days=1, agent_id="solo")
        market = live.create_run(days=1, agents=["alice", "bob"])
        assert set(store) == LIVE_FIELDS | {"agent_id", "registered", "forced_windows",
                                            "metrics", "agent_token", "env"}  # fmt: skip
        assert set(market) == LIVE_FIELDS | {"market", "agents", "agent_tokens", "envs"}
        assert all(set(m) == MERCHANT_FIELDS for m in market["agents"].values())
        bob = _summary(live, market["run_id"], market["agent_tokens"]["bob"])
        assert list(bob["agents"]) == ["bob"]
        solo = ProtocolClient(live.base_url, store["run_id"], "solo", store["agent_token"])
        _play_to_the_end(solo)
        merchants = [
            ProtocolClient(live.base_url, market["run_id"], a, market["agent_tokens"][a])
            for a in ("alice", "bob")
        ]
        while all(m.observation().status_code == 200 for m in merchants):
            for merchant in merchants:  # the second's end_of_step runs the window's hours
                answer = merchant.act(assistant(tool_call(f"e{merchant.step}", "end_of_step")))
                assert answer.status_code == 200, answer.text
        finished = _summary(live, store["run_id"])
        assert finished["over"] and finished["metrics"]["final_net_assets"] > 0
        assert _summary(live, market["run_id"])["over"]
    finally:
        live.stop()
    again = start_server(tmp_path / "runs")  # finished runs are read back, served read-only
    try:
        assert not any(isinstance(h, Host) for h in again.registry.hosts.values())
        read_store = _summary(again, store["run_id"])
        assert set(read_store) == RUN_FIELDS | {"agent_id", "metrics"}
        assert read_store["agent_id"] == "solo" and "seed" not in read_store["metrics"]
        read_market = _summary(again, market["run_id"])
        assert set(read_market) == RUN_FIELDS | {"market", "agents"}
        assert {a: set(m) for a, m in read_market["agents"].items()} == {
            "alice": {"metrics"}, "bob": {"metrics"},
        }  # fmt: skip
        bob = _summary(again, market["run_id"], market["agent_tokens"]["bob"])
        assert list(bob["agents"]) == ["bob"]
    finally:
        again.stop()


def test_a_store_whose_deposit_runs_out_ends_its_run(tmp_path) -> None:
    """Unlike a market's merchant (410 `agent_dead`, tests/serve/test_market.py), a store alone
    whose deposit runs out ends its run: it closes during the window's hours, is drained as the
    window ends, and is then answered as any finished run (410 `run_finished`)."""
    live = start_server(tmp_path / "runs")
    try:
        created = live.create_run(days=3)
        host = live.registry.hosts[created["run_id"]]
        assert isinstance(host, Host)
        client = ProtocolClient(live.base_url, created["run_id"], "agent_0",
                                created["agent_token"])  # fmt: skip
        assert client.observation().status_code == 200
        found = client.call("search_products", {"sort": "sales_30d", "page_size": 20})
        ids, prices = (found["columns"].index(c) for c in ("product_id", "price"))
        items = [
            {"product_id": row[ids], "sale_price": round(row[prices] * 1.3, 2)}
            for row in found["rows"]
        ]
        assert client.call("list_product", {"items": items})["ok"]
        accounts = host.session.engine.state.ledger.accounts
        accounts.balance, accounts.deposit = 0, 1  # the next order's fine closes the store
        while True:
            done = client.act(assistant(tool_call(f"e{client.step}", "end_of_step"))).json()
            if done["over"]:
                break
            assert client.observation().status_code == 200
        assert host.session.engine.state.closed and done["hook_released"]
        gone = client.observation()
        assert gone.status_code == 410 and gone.json()["error"] == "run_finished"
        assert _summary(live, created["run_id"])["status"] == "finished"
    finally:
        live.stop()

"""Records of runs played from outside verify: a sealed HTTP run played over a real socket by
the protocol client (keyed retries through the JSON API included), and a run of `merchantbench
mcp` played over stdio by the official MCP client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcp import Client
from mcp_play import Transcript, play, run_client
from protocol_client import ProtocolClient, assistant, tool_call
from script import play_window
from test_mcp_stdio import SEED, server

from frontend_script import action_script
from merchantbench.replay import verify_record


def keyed_calls(client: ProtocolClient, run_id: str) -> None:
    """A listing through the JSON API with an Idempotency-Key header, retried, and the same
    key reused for another call (refused); then the product is delisted (the sealed market is
    new each time: the script may list the same product)."""
    found = client.call("search_products", {"sort": "price_asc", "page_size": 2})
    item = {"product_id": found["rows"][0][0], "sale_price": round(found["rows"][0][3] * 2, 2)}

    def post(tool: str, args: dict[str, Any]) -> dict[str, Any]:
        url = f"/api/runs/{run_id}/tools/{tool}"
        response = client.http.post(url, json=args, headers={"Idempotency-Key": "k-1"})
        assert response.status_code == 200, response.text
        answer: dict[str, Any] = response.json()
        return answer

    first = post("list_product", {"items": [item]})
    assert first["ok"] and post("list_product", {"items": [item]}) == first
    delist = {"product_ids": [item["product_id"]]}
    assert post("delist_product", delist)["ok"] is False  # the key of another call: refused
    assert client.call("delist_product", delist)["ok"]  # free for the script's own listings


def test_a_served_http_run_verifies(live) -> None:
    run = live.create_run(sealed=True, label="verify")
    client = ProtocolClient(live.base_url, run["run_id"], run["agent_id"], run["agent_token"])
    try:
        assert client.register(model="scripted").status_code == 200
        while (response := client.observation()).status_code != 410:
            window = response.json()["tick"]["window"]
            if window == 0:
                keyed_calls(client, run["run_id"])
            play_window(lambda name, args: client.call(name, args), window)
            end = client.act(assistant(tool_call("end", "end_of_step")))
            assert end.status_code == 200, end.text
    finally:
        client.close()
    run_dir = live.registry.runs_dir / run["run_id"]
    trace = [json.loads(line) for line in (run_dir / "trace.jsonl").read_text().splitlines()]
    # The listing once (its retry is answered from the log), the refused delist once.
    assert sum(e.get("idempotency_key") == "k-1" for e in trace) == 2
    report = verify_record(run_dir)  # sealed: the harness holds the seed beside the record
    assert report.ok and report.sealed and report.windows == 28, report.summary()


def test_an_mcp_run_verifies(tmp_path: Path) -> None:
    out = tmp_path / "mcp"

    async def body(client: Client) -> list[dict[str, Any]]:
        return await play(client, action_script(SEED), Transcript())

    results = run_client(server(out), body)
    assert any(not r["ok"] for r in results)  # the script's refused calls are in the record
    report = verify_record(out)
    assert report.ok and report.answers_checked, report.summary()

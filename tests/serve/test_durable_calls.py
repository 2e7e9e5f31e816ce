"""Exactly once and window-bound writes (runs/journal.py, tools/window_bound.py): a call retried
with the same id and arguments is answered from the log (no second trace line, no second count);
a write made for a window that has ended is refused, not applied to the next one."""

from __future__ import annotations

import json

from protocol_client import ProtocolClient, assistant, tool_call
from serve_support import LiveServer

from merchantbench.tools.window_bound import WINDOW_ENDED


def _trace(live: LiveServer, run_id: str) -> list[dict]:
    live.registry.hosts[run_id].life.flush()
    path = live.registry.runs_dir / run_id / "trace.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_retried_act_leaves_one_trace_line_and_one_count(live: LiveServer) -> None:
    run = live.create_run(seed=2)
    client = ProtocolClient(live.base_url, run["run_id"], "agent_0", run["agent_token"])
    client.observation()
    found = client.call("search_products", {"page_size": 2})
    product = found["rows"][0][found["columns"].index("product_id")]
    batch = assistant(tool_call("L1", "list_product", {"items": [
        {"product_id": product, "sale_price": 99.0}]}))  # fmt: skip
    first = client.act(batch).json()
    again = client.act(batch).json()  # the answer was lost: the agent sends it again
    assert again["tool_results"] == first["tool_results"]
    lines = [e for e in _trace(live, run["run_id"]) if e["tool"] == "list_product"]
    assert len(lines) == 1
    status = live.registry.hosts[run["run_id"]].surface.status()
    assert (
        status.calls_left_in_window
        == live.registry.hosts[run["run_id"]].session.scenario.clock.calls_per_window - 2
    )


def test_a_stale_tab_write_is_refused_with_window_ended(live: LiveServer) -> None:
    run = live.create_run(seed=2)
    with live.client(run["agent_token"]) as http:
        base = f"/api/runs/{run['run_id']}"
        assert http.post(f"{base}/end-window", headers={"X-Window": "0"}).status_code == 200
        # A second tab still shows window 0 and lists a product there.
        stale = http.post(
            f"{base}/tools/write_memory_doc",
            json={"content": "from window 0", "mode": "append"},
            headers={"X-Window": "0"},
        )
        assert stale.status_code == 409
        error = stale.json()["error"]
        assert error["code"] == WINDOW_ENDED and error["window"] == 0
        assert error["open_window"] == 1 and "has ended" in error["message"]
        doc = http.post(f"{base}/tools/read_memory_doc", headers={"X-Window": "0"}).json()
        assert doc["ok"] and "from window 0" not in doc["content"]  # a read is never refused
        fresh = http.post(
            f"{base}/tools/write_memory_doc",
            json={"content": "now", "mode": "append"},
            headers={"X-Window": "1"},
        )
        assert fresh.status_code == 200 and fresh.json()["ok"]
    tools = [e["tool"] for e in _trace(live, run["run_id"])]
    assert tools == ["end_of_step", "read_memory_doc", "write_memory_doc"]

"""The MCP adapter with the SDK's client in process (no transport): idempotency keys in `_meta`,
refusals as tool errors, unknown prompts and resources as protocol errors, and a run that ends
mid-conversation."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import Client, MCPError
from mcp_play import run_client

from frontend_script import assert_status_states
from merchantbench.mcp_surface import (
    IDEMPOTENCY_META_KEY,
    OBSERVATION_URI,
    STORE_URI,
    build_mcp_server,
)
from merchantbench.runs.runner import RunSpec
from merchantbench.scenario import load_scenario
from merchantbench.serve.mcp_run import MCP_AGENT, HostedRun


def with_client(tmp_path: Any, body: Any, *overrides: str) -> tuple[Any, HostedRun]:
    spec = RunSpec(MCP_AGENT, load_scenario("smoke", overrides=list(overrides)), 3)
    run = HostedRun(spec, tmp_path / "run")
    return run_client(build_mcp_server(run), body, timeout=60), run


def test_an_idempotency_key_in_meta_makes_a_retry_act_once(tmp_path) -> None:
    note = {"content": "bought pens\n", "mode": "append"}

    async def body(client: Client) -> list[Any]:
        meta = {IDEMPOTENCY_META_KEY: "note-1"}
        first = await client.call_tool("write_memory_doc", note, meta=meta)  # type: ignore[arg-type]
        retry = await client.call_tool("write_memory_doc", note, meta=meta)  # type: ignore[arg-type]
        bad = await client.call_tool("write_memory_doc", note, meta={IDEMPOTENCY_META_KEY: 7})  # type: ignore[arg-type,dict-item]
        doc = await client.call_tool("read_memory_doc", {})
        return [first.structured_content, retry.structured_content, bad, doc.structured_content]

    (first, retry, bad, doc), _ = with_client(tmp_path, body)
    assert first == retry and doc["content"] == "bought pens\n"
    assert bad.is_error and bad.structured_content["error"]["code"] == "invalid_argument"


def test_refusals_are_tool_errors_and_unknown_names_protocol_errors(tmp_path) -> None:
    async def body(client: Client) -> list[Any]:
        refused = [
            await client.call_tool("adjust_price", {"product_id": "NOPE", "sale_price": 2}),
            await client.call_tool("search_products", {"page_size": "many"}),
            await client.call_tool("no_such_tool", {}),
        ]
        for attempt in (client.get_prompt("nope"), client.read_resource("merchantbench://x")):
            with pytest.raises(MCPError):
                await attempt
        return refused

    refused, run = with_client(tmp_path, body)
    codes = [json.loads(r.content[0].text)["error"]["code"] for r in refused]
    assert all(r.is_error for r in refused)
    assert codes == ["unknown_product", "invalid_argument", "unknown_tool"]
    assert run.surface.window == 0 and not run.finished


def test_the_last_end_of_step_brings_the_summary_and_then_calls_are_refused(tmp_path) -> None:
    async def body(client: Client) -> list[Any]:
        answers = [(await client.call_tool("end_of_step", {})).structured_content for _ in range(2)]
        answers.append((await client.call_tool("query_balance", {})).structured_content)
        return answers

    (last, after, query), run = with_client(tmp_path, body, "clock.days=1")
    assert last["run_over"] is False and last["observation"].startswith("Day 1 12:00")
    assert after["run_over"] is True and after["summary"]["ended"] == "completed"
    assert after["summary"]["windows_played"] == 2 and after["summary"]["orders"] == 0
    assert after["summary"]["final_net_assets"] == 3000.0
    assert query["error"]["code"] == "run_over" and run.finished
    assert json.loads((tmp_path / "run" / "run.json").read_text())["ended"] == "completed"


def test_the_store_resource_states_each_windows_observation(tmp_path) -> None:
    async def body(client: Client) -> list[tuple[str, str]]:
        found = await client.call_tool("search_products", {"sort": "sales_30d", "page_size": 3})
        rows = found.structured_content["rows"]
        items = [{"product_id": r[0], "sale_price": round(r[3] * 1.5, 2)} for r in rows]
        await client.call_tool("list_product", {"items": items})
        seen = []
        for _ in range(6):
            store = (await client.read_resource(STORE_URI)).contents[0]
            text = (await client.read_resource(OBSERVATION_URI)).contents[0].text
            seen.append((store.mime_type, store.text, text))
            await client.call_tool("end_of_step", {})
        return seen

    seen, run = with_client(tmp_path, body)
    orders = 0
    for mime_type, store, text in seen:
        assert mime_type == "application/json"
        orders = assert_status_states(json.loads(store), text, orders)
    assert orders > 0 and json.loads(seen[-1][1])["window"] == 5
    assert run.surface.window == 6  # reading resources cost no call and closed nothing

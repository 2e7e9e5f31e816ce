"""The MCP server mounted on the `serve` app: `/runs/{run}/mcp`, streamable HTTP over a real
socket, driven by the official `mcp` client with the run's agent token; the run is the same run
the JSON API serves, and another run's token (or none) is refused before any MCP session."""

from __future__ import annotations

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from merchantbench.check.served import LiveServe
from merchantbench.mcp_surface import RULES_URI
from merchantbench.scenario import load_scenario
from timeouts import REQUEST_SECONDS

SEED = 271828


@pytest.fixture(scope="module")
def serve():
    live = LiveServe()
    yield live
    live.stop()


def play_two_windows(url: str, token: str) -> tuple[list, str, list]:
    async def main() -> tuple[list, str, list]:
        headers = {"Authorization": f"Bearer {token}"}
        with anyio.fail_after(60):
            async with (
                httpx2.AsyncClient(headers=headers) as http,
                Client(streamable_http_client(url, http_client=http)) as client,
            ):
                tools = [t.name for t in (await client.list_tools()).tools]
                rules = (await client.read_resource(RULES_URI)).contents[0].text
                results = []
                for tool in ("query_balance", "end_of_step", "get_store_snapshot", "end_of_step"):
                    results.append((await client.call_tool(tool, {})).structured_content)
                return tools, rules, results

    return anyio.run(main)


def test_a_run_played_over_mcp_on_the_serve_app(serve) -> None:
    scenario = load_scenario("smoke")
    host, tokens = serve.create(scenario, SEED)
    token = tokens[host.settings.agent_id]
    _, others = serve.create(scenario, SEED + 1)
    other_token = others["agent_0"]
    url = f"{serve.base_url}/runs/{host.run_id}/mcp"
    tools, rules, results = play_two_windows(url, token)
    assert tools == [s["function"]["name"] for s in host.surface.tool_schemas()]
    assert rules == host.surface.brief()
    assert all(r["ok"] for r in results)
    assert results[1]["run_over"] is False and results[1]["observation"].startswith("Day 1")
    assert results[2]["calls_left_in_window"] < scenario.clock.calls_per_window
    # The same run as the JSON API's: two windows closed.
    api = httpx.get(f"{serve.base_url}/api/runs/{host.run_id}",
                    headers={"Authorization": f"Bearer {token}"},
                    timeout=REQUEST_SECONDS).json()  # fmt: skip
    assert api["tick"]["window"] == 2 == host.surface.window
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    foreign = httpx.post(url, json=body, headers={"Authorization": f"Bearer {other_token}"},
                         timeout=REQUEST_SECONDS)  # fmt: skip
    anonymous = httpx.post(url, json=body, timeout=REQUEST_SECONDS)
    elsewhere = httpx.post(f"{serve.base_url}/runs/{host.run_id}/nope", json=body,
                           headers={"Authorization": f"Bearer {token}"},
                           timeout=REQUEST_SECONDS)  # fmt: skip
    assert (foreign.status_code, anonymous.status_code, elsewhere.status_code) == (403, 401, 404)
    assert host.surface.window == 2  # the refused requests changed nothing

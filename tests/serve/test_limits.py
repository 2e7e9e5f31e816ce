"""What one client may cost the server (issue 19, items 3 and 5): tool arguments nested past
any tool's input are refused with 400 before they are decoded (a 500 before); request bodies
and a registration's `extra` over the limits get 413 and are not kept; idle MCP sessions
expire and free their memory; one run holds at most so many MCP sessions."""

from __future__ import annotations

import gc
import json
import time
import weakref
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from protocol_client import ProtocolClient, assistant
from serve_support import LiveServer, start_server

from merchantbench.cli.serve import LIMIT_HELP
from merchantbench.limits import MIB, ServerLimits
from merchantbench.serve.host import Host
from merchantbench.serve.mcp_mount import MCP_PATH, McpMounts, mcp_extension
from timeouts import REQUEST_SECONDS

LIMITS = ServerLimits(
    max_body_bytes=256 * 1024,
    max_extra_bytes=4096,
    mcp_idle_seconds=600,
    mcp_sessions_per_run=3,
)
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "limits-test", "version": "1", "padding": "x" * 50_000},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


@pytest.fixture
def limited(tmp_path) -> Iterator[LiveServer]:
    server = start_server(tmp_path / "runs", limits=LIMITS, extensions=[mcp_extension()])
    yield server
    server.stop()


def agent(server: LiveServer) -> tuple[ProtocolClient, dict[str, Any]]:
    run = server.create_run(label="limits")
    return ProtocolClient(server.base_url, run["run_id"], "agent_0", run["agent_token"]), run


def nested_call(depth: int, call_id: str = "deep") -> dict[str, Any]:
    arguments = "[" * depth + "]" * depth
    function = {"name": "read_memory_doc", "arguments": arguments}
    return {"id": call_id, "type": "function", "function": function}


def test_deeply_nested_arguments_get_400_and_change_nothing(limited: LiveServer) -> None:
    client, run = agent(limited)
    client.observation()
    host = limited.registry.hosts[run["run_id"]]
    assert isinstance(host, Host)
    before = host.session.state_hash()
    for depth in (40, 990, 50_000):  # 990: the old code's json.loads hit its recursion limit
        response = client.act(assistant(nested_call(depth)))
        assert response.status_code == 400, response.text[:200]
        assert response.json()["error"] == "invalid_argument"
    # Arguments sent as a decoded JSON value (not text) nested as deep: also 400.
    value: Any = []
    for _ in range(900):
        value = [value]
    call = {"id": "v", "type": "function",
            "function": {"name": "read_memory_doc", "arguments": value}}  # fmt: skip
    response = client.act(assistant(call))
    assert response.status_code == 400 and response.json()["error"] == "invalid_argument"
    # A call of the agent's own framework (recorded in the trace, not run) is bounded too.
    framework = {**nested_call(990, "own"), "tool_origin": "agent_framework"}
    response = client.act(assistant(framework))
    assert response.status_code == 400 and response.json()["error"] == "invalid_argument"
    assert host.session.state_hash() == before and host.only.protocol.turns == 0
    # Shallow arguments still work, and a malformed (not deep) string is the tool's refusal.
    ok = client.act(assistant(nested_call(3, "shallow")))
    assert ok.status_code == 200
    assert json.loads(ok.json()["tool_results"][0]["content"])["ok"] is False


def test_bodies_over_the_limit_get_413_before_any_route(limited: LiveServer) -> None:
    client, run = agent(limited)
    big = {"messages": [{"role": "user", "content": "x" * (LIMITS.max_body_bytes + 1)}]}
    response = client.http.post(f"{client.agent}/act", json=big)
    assert response.status_code == 413 and response.json()["error"] == "too_large"

    def chunks() -> Iterator[bytes]:  # no Content-Length: read only until past the limit
        yield b'{"messages": [{"role": "user", "content": "'
        for _ in range(LIMITS.max_body_bytes // 1024 + 2):
            yield b"y" * 1024
        yield b'"}]}'

    headers = {"Content-Type": "application/json"}
    chunked = client.http.post(f"{client.agent}/act", content=chunks(), headers=headers)
    assert chunked.status_code == 413
    with limited.client() as admin:  # the operator's routes are bounded too
        body = b'{"scenario": "smoke", "label": "' + b"z" * LIMITS.max_body_bytes + b'"}'
        assert admin.post("/api/runs", content=body, headers=headers).status_code == 413
    host = limited.registry.hosts[run["run_id"]]
    assert isinstance(host, Host) and host.only.protocol.turns == 0
    assert client.observation().status_code == 200  # the server goes on


def test_an_oversized_extra_gets_413_and_is_not_recorded(limited: LiveServer) -> None:
    client, run = agent(limited)
    response = client.register(extra={"notes": "n" * LIMITS.max_extra_bytes})
    assert response.status_code == 413, response.text[:200]
    assert response.json()["limit"] == LIMITS.max_extra_bytes
    run_json = json.loads((limited.registry.runs_dir / run["run_id"] / "run.json").read_text())
    assert "n" * 100 not in json.dumps(run_json)
    body = {"agent_id": "agent_0", "extra": {"notes": "short", "bad": "\ud800"}}
    escaped = json.dumps(body)  # a lone surrogate, as JSON escapes carry it
    headers = {"Content-Type": "application/json"}
    answer = client.http.post(f"{client.run}/agent/register", content=escaped, headers=headers)
    assert answer.status_code == 200, answer.text[:200]


def open_session(server: LiveServer, run: dict[str, Any]) -> httpx.Response:
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {run['agent_token']}"}
    url = f"{server.base_url}/runs/{run['run_id']}/mcp"
    return httpx.post(url, json=INITIALIZE, headers=headers, timeout=REQUEST_SECONDS)


def mounts_of(server: LiveServer) -> McpMounts:
    app = server.server.config.app
    mounted = [r.app for r in app.routes if isinstance(getattr(r, "app", None), McpMounts)]
    assert len(mounted) == 1
    return mounted[0]


def wait_until(condition: Any, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.05)


def test_a_run_holds_at_most_so_many_mcp_sessions(limited: LiveServer) -> None:
    _, run = agent(limited)
    _, other = agent(limited)
    opened = [open_session(limited, run) for _ in range(LIMITS.mcp_sessions_per_run)]
    assert all(r.status_code == 200 and r.headers.get("mcp-session-id") for r in opened)
    endpoint = mounts_of(limited).endpoints[run["run_id"] + MCP_PATH]
    assert endpoint.live_sessions == LIMITS.mcp_sessions_per_run
    refused = open_session(limited, run)
    assert refused.status_code == 429 and refused.json()["error"] == "too_many_mcp_sessions"
    assert "DELETE" in refused.json()["message"]
    assert open_session(limited, other).status_code == 200  # another run has its own room
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {run['agent_token']}",
               "mcp-session-id": opened[0].headers["mcp-session-id"]}  # fmt: skip
    url = f"{limited.base_url}/runs/{run['run_id']}/mcp"
    ended = httpx.delete(url, headers=headers, timeout=REQUEST_SECONDS)  # the client ends one
    assert ended.status_code == 200
    assert open_session(limited, run).status_code == 200  # room again


def test_idle_mcp_sessions_expire_and_their_memory_is_freed(tmp_path) -> None:
    limits = ServerLimits(mcp_idle_seconds=1.0, mcp_sessions_per_run=5)
    server = start_server(tmp_path / "runs", limits=limits, extensions=[mcp_extension()])
    try:
        _, run = agent(server)
        mounts = mounts_of(server)
        sessions, transports = [], []
        for _ in range(limits.mcp_sessions_per_run):
            session = open_session(server, run).headers["mcp-session-id"]
            manager = mounts.endpoints[run["run_id"] + MCP_PATH].server.session_manager
            transport = manager._server_instances.get(session)
            if transport is not None:  # None only if it expired already (a stalled machine)
                transports.append(weakref.ref(transport))
            sessions.append(session)
            del transport
        assert transports, "no session was seen open"
        endpoint = mounts.endpoints[run["run_id"] + MCP_PATH]
        # Nobody uses them: they expire, are forgotten, and their memory is freed.
        wait_until(lambda: endpoint.live_sessions == 0)
        gc.collect()
        wait_until(lambda: all(ref() is None for ref in transports))
        headers = {**MCP_HEADERS, "Authorization": f"Bearer {run['agent_token']}"}
        url = f"{server.base_url}/runs/{run['run_id']}/mcp"
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        for session in sessions:  # an expired session is unknown: the client starts anew
            expired = httpx.post(url, json=ping, headers={**headers, "mcp-session-id": session},
                                 timeout=REQUEST_SECONDS)  # fmt: skip
            assert expired.status_code == 404
        assert open_session(server, run).status_code == 200
    finally:
        server.stop()


def test_the_command_line_help_states_the_defaults() -> None:
    defaults = ServerLimits()
    assert f"[default: {defaults.max_body_bytes // MIB} MiB]" in LIMIT_HELP["body"]
    assert f"[default: {defaults.max_extra_bytes // 1024} KiB]" in LIMIT_HELP["extra"]
    assert f"[default: {defaults.mcp_idle_seconds:g}]" in LIMIT_HELP["idle"]
    assert f"[default: {defaults.mcp_sessions_per_run}]" in LIMIT_HELP["sessions"]


def test_the_limits_refuse_nonsense() -> None:
    with pytest.raises(ValueError):
        ServerLimits(max_body_bytes=0)
    with pytest.raises(ValueError):
        ServerLimits(mcp_sessions_per_run=0)

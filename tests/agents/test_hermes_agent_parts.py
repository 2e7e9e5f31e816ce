"""The Hermes driver's parts that need no Hermes: settings, the gateway over a Unix socket
(our MCP server over `WindowRun`), and the sandbox's forwarder."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx
import pytest
from pydantic import ValidationError

from merchantbench.agents.hermes_agent.driver import HOME_TOOLSETS, HermesAgentSettings
from merchantbench.agents.hermes_agent.gateway import MCP_PATH, Gateway, closed_answer
from merchantbench.agents.hermes_agent.process import FORWARDER
from merchantbench.agents.llm.models import resolve_model
from merchantbench.catalog.cache import get_market
from merchantbench.scenario import load_scenario
from merchantbench.session import Session
from timeouts import REQUEST_SECONDS

ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def test_sandboxed_toolsets_need_confinement():
    assert "terminal" in HermesAgentSettings().toolsets  # on by default, confined
    with pytest.raises(ValidationError, match="run commands on the host"):
        HermesAgentSettings(confine=False)
    assert HermesAgentSettings(confine=False, toolsets=HOME_TOOLSETS).toolsets == HOME_TOOLSETS
    with pytest.raises(ValidationError, match="can reach outside"):
        HermesAgentSettings(toolsets=("memory", "web"))


def _rpc(method: str, params: dict, n: int) -> dict:
    return {"jsonrpc": "2.0", "id": n, "method": method, "params": params}


async def _mcp_over_unix(socket_path: Path, token: str) -> list[dict]:
    """Initialize an MCP session over the socket, then call end_of_step twice."""
    transport = httpx.AsyncHTTPTransport(uds=str(socket_path))
    async with httpx.AsyncClient(
        transport=transport, base_url="http://127.0.0.1:9", timeout=REQUEST_SECONDS
    ) as client:
        refused = await client.post(MCP_PATH, json=_rpc("tools/list", {}, 0), headers=ACCEPT)
        assert refused.status_code == 401  # no token, no MCP
        headers = {**ACCEPT, "authorization": f"Bearer {token}"}
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}}
        hello["clientInfo"] = {"name": "test", "version": "0"}
        started = await client.post(MCP_PATH, json=_rpc("initialize", hello, 1), headers=headers)
        headers["mcp-session-id"] = started.headers["mcp-session-id"]
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await client.post(MCP_PATH, json=note, headers=headers)
        results = []
        for n in (2, 3):
            call = _rpc("tools/call", {"name": "end_of_step", "arguments": {}}, n)
            answer = await client.post(MCP_PATH, json=call, headers=headers)
            results.append(answer.json()["result"])
        return results


def test_gateway_serves_our_mcp_server_over_a_unix_socket(monkeypatch):
    monkeypatch.setenv("MB_TEST_PARTS_KEY", "sk-parts")
    scenario = load_scenario("smoke", overrides=["clock.days=1"])
    session = Session(scenario, get_market(scenario, 1), 1)
    model = resolve_model("scripted", "http://127.0.0.1:9/v1", "MB_TEST_PARTS_KEY")
    with tempfile.TemporaryDirectory(prefix="mb-test-") as directory:
        socket_path = Path(directory) / "gateway.sock"
        gateway = Gateway(session.surface, model, 10, socket_path)

        async def play() -> list[dict]:
            await gateway.start()
            try:
                gateway.run.begin(session.surface)
                return await _mcp_over_unix(socket_path, gateway.token)
            finally:
                await gateway.stop()

        closed, after = asyncio.run(play())
        assert not socket_path.exists()  # removed when the gateway stops
    assert not closed["isError"] and closed["structuredContent"]["ok"]
    assert closed["structuredContent"]["window_closed"] is True
    # A call after the close runs nothing and says so, as a plain result, not an MCP error
    # (Hermes counts error results toward its circuit breaker).
    assert not after["isError"]
    assert after["structuredContent"] == {**closed_answer(), "ok": True, "ran": False}
    assert session.surface.window == 1  # the late call played nothing


_ECHO_CHILD = """
import socket, sys
with socket.create_connection(("127.0.0.1", int(sys.argv[1])), 5) as s:
    s.sendall(b"ping " * 20000)
    s.shutdown(socket.SHUT_WR)
    got = b"".join(iter(lambda: s.recv(65536), b""))
print(len(got), got[:5].decode())
"""


async def _echo_server(path: Path) -> asyncio.AbstractServer:
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write((await reader.read()).upper())  # reads until the client's half-close
        await writer.drain()
        writer.close()

    return await asyncio.start_unix_server(echo, str(path))


def test_forwarder_pipes_loopback_to_the_unix_socket_and_returns_the_child_code(tmp_path):
    socket_path = tmp_path / "s.sock"

    async def main() -> tuple[int, bytes]:
        server = await _echo_server(socket_path)
        with socket.create_server(("127.0.0.1", 0)) as probe:
            port = str(probe.getsockname()[1])  # free now; the forwarder binds it next
        child = [sys.executable, "-c", _ECHO_CHILD + "sys.exit(3)", port]
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-I", str(FORWARDER), str(socket_path), port, "--", *child,
            stdout=subprocess.PIPE,
        )  # fmt: skip
        out, _ = await asyncio.wait_for(proc.communicate(), 30)
        server.close()
        assert proc.returncode is not None
        return proc.returncode, out

    code, out = asyncio.run(main())
    assert code == 3  # the child's exit code, passed on
    assert out.decode().split() == [str(len("ping ") * 20000), "PING"]


def test_forwarder_refuses_a_bad_command_line():
    done = subprocess.run(
        [sys.executable, "-I", str(FORWARDER), "only-a-socket"], capture_output=True, text=True
    )
    assert done.returncode != 0 and "usage" in done.stderr and done.stdout == ""

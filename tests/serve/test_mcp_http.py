"""One run's MCP endpoint over streamable HTTP, served by uvicorn on 127.0.0.1 and driven by the
official `mcp` SDK client: on its own, and mounted under a run's path inside a host app whose
lifespan starts it (how the HTTP server mounts one endpoint per run)."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
import httpx2
import pytest
import uvicorn
from mcp import Client
from mcp_play import (
    Transcript,
    assert_matches_surface,
    assert_same_as_in_process,
    play,
    read_everything,
    run_client,
)
from starlette.applications import Starlette
from starlette.routing import Mount

from frontend_script import SCENARIO, action_script, play_in_process, scan
from merchantbench.mcp_surface import McpHttpEndpoint
from merchantbench.runs.runner import RunSpec
from merchantbench.scenario import load_scenario
from merchantbench.serve.mcp_run import MCP_AGENT, HostedRun
from timeouts import START_SECONDS, STOP_SECONDS

SEED = 918273645


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """Serve `app` with uvicorn on a free loopback port; yield its base URL."""
    sock = socket.socket()
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # else ~40 ms a request
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        for _ in range(500):  # bounded: 5 s
            if server.started:
                break
            threading.Event().wait(0.01)
        assert server.started
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def hosted_run(tmp_path: Any) -> HostedRun:
    spec = RunSpec(
        agent=MCP_AGENT,
        scenario=load_scenario(SCENARIO),
        seed=SEED,
        agent_settings={"transport": "streamable-http"},
    )
    return HostedRun(spec, tmp_path / "run")


@pytest.fixture(scope="module")
def reference():
    script = action_script(SEED)
    return script, play_in_process(SEED, script)


def test_a_whole_run_over_streamable_http(tmp_path, reference) -> None:
    script, in_process = reference
    run = hosted_run(tmp_path)
    transcript = Transcript()

    async def body(client: Client) -> tuple[dict, list[dict]]:
        seen = await read_everything(client, transcript)
        return seen, await play(client, script, transcript)

    with serving(McpHttpEndpoint(run).app) as url:
        seen, results = run_client(f"{url}/mcp", body)
    assert_matches_surface(seen, in_process)
    assert_same_as_in_process(results, in_process)
    assert run.finished and run.state_hash == in_process.session.state_hash()
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert (
        meta["ended"] == "completed" and meta["agent"]["settings"]["transport"] == "streamable-http"
    )
    for response in transcript.responses:
        scan(response, [str(SEED), str(tmp_path), "/tmp"])


def test_an_endpoint_mounted_per_run_in_a_host_app(tmp_path, reference) -> None:
    script, in_process = reference
    endpoint = McpHttpEndpoint(hosted_run(tmp_path))

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tg:
            await tg.start(endpoint.serve)  # a mount does not run the sub-app's lifespan
            yield
            endpoint.stop()

    host = Starlette(routes=[Mount("/runs/r1", app=endpoint.app)], lifespan=lifespan)
    with serving(host) as url:
        results = run_client(f"{url}/runs/r1/mcp", lambda c: play(c, script[:3], Transcript()))
        legacy = run_client(
            f"{url}/runs/r1/mcp", lambda c: play(c, script[3:4], Transcript()), mode="legacy"
        )
        foreign = httpx2.post(f"{url}/runs/r1/mcp", headers={"Host": "evil.example"}, json={})
    assert_same_as_in_process(results + legacy, _first_windows(in_process, script, 4))
    assert foreign.status_code in (403, 421)  # DNS rebinding protection on loopback


def _first_windows(in_process: Any, script: list, windows: int) -> Any:
    """The in-process reference cut to its first `windows` windows."""
    calls = sum(len(w) for w in script[:windows])
    return type(in_process)(
        in_process.results[:calls], in_process.observations[:windows], in_process.session
    )


def test_the_command_serves_http_on_loopback_and_a_stop_leaves_a_resumable_record(
    tmp_path, reference
) -> None:
    script, in_process = reference
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    out = tmp_path / "run"
    command = [sys.executable, "-m", "merchantbench.cli", "mcp", "--scenario", SCENARIO]
    command += ["--seed", str(SEED), "--out", str(out), "--http-port", str(port)]
    server = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_port(port)
        results = run_client(
            f"http://127.0.0.1:{port}/mcp", lambda c: play(c, script[:2], Transcript())
        )
    finally:
        server.send_signal(signal.SIGINT)
        _, stderr = server.communicate(timeout=STOP_SECONDS)
    assert results[-1]["observation"] == in_process.observations[1]
    assert f"http://127.0.0.1:{port}/mcp" in stderr and "(interrupted)" in stderr
    meta = json.loads((out / "run.json").read_text())
    assert (
        meta["ended"] == "interrupted"
        and meta["agent"]["settings"]["transport"] == "streamable-http"
    )
    assert (out / "checkpoint" / "state.pkl").is_file()


def _wait_for_port(port: int) -> None:
    deadline = time.monotonic() + START_SECONDS  # the first start may build the market
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        threading.Event().wait(0.1)
    raise AssertionError(f"nothing listens on 127.0.0.1:{port}")

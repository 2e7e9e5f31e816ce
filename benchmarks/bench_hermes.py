"""Timing of the real Hermes Agent driver (`--agent hermes-agent`), for docs/performance.md.

- `env`: first use, Hermes' environment made in a fresh directory (`--cold`: with an empty uv
  cache too, so everything comes from the package index).
- `hop`: one MCP `tools/call` (`query_balance`) to the driver's gateway, straight over
  127.0.0.1 and over its Unix socket through the sandbox's forwarder (the extra hop every
  request of a confined Hermes takes); p50 of `--calls` calls.
- `run`: `smoke` runs of 1 and 7 days (2 and 14 windows) with a zero-latency scripted model
  (search, end_of_step: 2 model calls a window; the driver ends Hermes' turn at its
  end_of_step, so the script's closing reply is never asked for); the per-window time is the
  slope between them, the rest (process start and stop) the intercept. `--unconfined`: the
  same without bubblewrap (and so with Hermes' home toolsets only), for comparison.

    uv run python benchmarks/bench_hermes.py env|hop|run [--cold] [--calls 300] [--unconfined]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from merchantbench.agents.hermes_agent.driver import HOME_TOOLSETS
from merchantbench.agents.hermes_agent.env import ensure_env
from merchantbench.agents.hermes_agent.gateway import MCP_PATH, Gateway, WindowRun
from merchantbench.agents.hermes_agent.process import FORWARDER
from merchantbench.agents.llm.models import resolve_model
from merchantbench.agents.llm.scripted_server import ScriptedServer
from merchantbench.catalog.cache import get_market
from merchantbench.runs.runner import RunSpec, run_agent
from merchantbench.scenario import load_scenario
from merchantbench.session import Session

MCP = "mcp__merchantbench__"
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
KEY_ENV = "MB_BENCH_HERMES_KEY"
WINDOW_CALLS = 90


def bench_env(cold: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="mb-bench-hermes-") as directory:
        os.environ["MERCHANTBENCH_HERMES_DIR"] = str(Path(directory) / "hermes")
        if cold:
            os.environ["UV_CACHE_DIR"] = str(Path(directory) / "uv-cache")
        started = time.perf_counter()
        env = ensure_env()
        print(f"first use ({'empty' if cold else 'warm'} uv cache): {env.setup_seconds:.1f} s")
        print(f"  (wall {time.perf_counter() - started:.1f} s)")
        started = time.perf_counter()
        ensure_env()
        print(f"reuse: {(time.perf_counter() - started) * 1000:.2f} ms")


async def _calls(client: httpx.AsyncClient, run: WindowRun, token: str, calls: int) -> list[float]:
    headers = {**ACCEPT, "authorization": f"Bearer {token}"}
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "b"}}
    hello["clientInfo"]["version"] = "0"
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}
    started = await client.post(MCP_PATH, json=init, headers=headers)
    headers["mcp-session-id"] = started.headers["mcp-session-id"]
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    await client.post(MCP_PATH, json=note, headers=headers)
    samples = []
    for n in range(calls):
        if n and n % WINDOW_CALLS == 0:  # a window allows 100 calls: close it, untimed
            await _call(client, headers, "end_of_step", -n)
            run.begin(run.surface)
        t0 = time.perf_counter()
        await _call(client, headers, "query_balance", n + 1)
        samples.append(time.perf_counter() - t0)
    return samples


async def _call(client: httpx.AsyncClient, headers: dict[str, str], tool: str, n: int) -> None:
    params = {"name": tool, "arguments": {}}
    call = {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params}
    answer = await client.post(MCP_PATH, json=call, headers=headers)
    result = answer.json()["result"]["structuredContent"]
    assert result["ok"], result


async def _hop(unix: bool, calls: int) -> list[float]:
    scenario = load_scenario("smoke")
    session = Session(scenario, get_market(scenario, 1), 1)
    model = resolve_model("scripted", "http://127.0.0.1:9/v1", KEY_ENV)
    with tempfile.TemporaryDirectory(prefix="mb-bench-") as directory:
        path = Path(directory) / "gateway.sock" if unix else None
        gateway = Gateway(session.surface, model, 10, path)
        await gateway.start()
        gateway.run.begin(session.surface)
        forwarder = None
        try:
            port = gateway.port if path is None else _free_port()
            if path is not None:
                forwarder = await _forwarder(path, port)
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
                return await _calls(client, gateway.run, gateway.token, calls)
        finally:
            if forwarder is not None and forwarder.stdin is not None:
                forwarder.stdin.close()  # the child ends, then the forwarder
                await asyncio.wait_for(forwarder.wait(), 10)
            await gateway.stop()


def _free_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        return int(probe.getsockname()[1])


async def _forwarder(path: Path, port: int) -> asyncio.subprocess.Process:
    # The child (the worker's place) waits for the end of its stdin, as the worker does.
    idle = [sys.executable, "-c", "import sys; sys.stdin.read()"]
    argv = [sys.executable, "-I", str(FORWARDER), str(path), str(port), "--", *idle]
    proc = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.DEVNULL
    )
    for _ in range(500):  # until it listens
        try:
            socket.create_connection(("127.0.0.1", port), 1).close()
            return proc
        except OSError:
            await asyncio.sleep(0.01)
    raise RuntimeError("the forwarder did not start")


def bench_hop(calls: int) -> None:
    os.environ.setdefault(KEY_ENV, "sk-bench")
    for unix, label in ((False, "127.0.0.1 direct"), (True, "Unix socket + forwarder")):
        cpu = time.process_time()
        samples = asyncio.run(_hop(unix, calls))
        p50 = statistics.median(samples) * 1000
        spent = time.process_time() - cpu
        print(f"{label}: p50 {p50:.2f} ms over {calls} calls (our process's CPU {spent:.1f} s)")


def _policy(request: dict[str, Any]) -> dict[str, Any]:
    messages = request["messages"]
    start = max(i for i, m in enumerate(messages) if m["role"] == "user")
    done = len([m for m in messages[start:] if m["role"] == "tool"])
    steps = [
        {"name": MCP + "search_products", "arguments": {"query": "bag"}},
        {"name": MCP + "end_of_step", "arguments": {}},
    ]
    if done < len(steps):
        return {"content": None, "tool_calls": [steps[done]]}
    return {"content": "done", "tool_calls": []}


def _timed_run(days: int, unconfined: bool) -> tuple[float, int, int]:
    scenario = load_scenario("smoke", overrides=[f"clock.days={days}"])
    with (
        tempfile.TemporaryDirectory(prefix="mb-bench-run-") as directory,
        ScriptedServer(_policy) as server,
    ):
        settings: dict[str, Any] = {"model": "scripted", "base_url": server.base_url}
        settings["api_key_env"] = KEY_ENV
        if unconfined:
            settings |= {"confine": False, "toolsets": list(HOME_TOOLSETS)}
        spec = RunSpec("hermes-agent", scenario, 1, settings)
        started = time.perf_counter()
        metrics = run_agent(spec, Path(directory) / "run")
        return time.perf_counter() - started, int(metrics["windows"]), len(server.requests)


def bench_run(unconfined: bool) -> None:
    os.environ.setdefault(KEY_ENV, "sk-bench")
    ensure_env()
    print("unconfined, home toolsets only" if unconfined else "confined, default toolsets")
    short, long = _timed_run(1, unconfined), _timed_run(7, unconfined)
    (t_short, w_short, r_short), (t_long, w_long, r_long) = short, long
    per_window = (t_long - t_short) / (w_long - w_short)
    print(f"{w_short} windows: {t_short:.1f} s ({r_short} model calls)")
    print(f"{w_long} windows: {t_long:.1f} s ({r_long} model calls)")
    print(f"per window: {per_window:.2f} s; fixed part: {t_short - w_short * per_window:.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=("env", "hop", "run"))
    parser.add_argument("--cold", action="store_true", help="env: an empty uv cache too")
    parser.add_argument("--calls", type=int, default=300, help="hop: calls per path")
    parser.add_argument("--unconfined", action="store_true", help="run: without bubblewrap")
    args = parser.parse_args()
    now = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"load average {os.getloadavg()[0]:.1f}, {now}")
    if args.part == "env":
        bench_env(args.cold)
    elif args.part == "hop":
        bench_hop(args.calls)
    else:
        bench_run(args.unconfined)


if __name__ == "__main__":
    main()

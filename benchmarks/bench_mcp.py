"""Per-tool-call overhead of the MCP front end over the in-process call.

The same cheap tool (`query_balance`) is called in process through the agent surface, then by
the official `mcp` SDK client: in the same process over memory streams (the adapter and the
SDK without a transport), over stdio (`merchantbench mcp` in a subprocess) and over streamable
HTTP (uvicorn on 127.0.0.1); the overhead is the difference of the p50 latencies. The CPU time
per call (client and server together) is printed beside them: on a loaded machine latency
includes waiting for a CPU, the CPU time does not.
Goal: at most 3 ms p50 on loopback. Run with:

    uv run python benchmarks/bench_mcp.py [--calls 500]

and record the printed figures, with the machine, in docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import uvicorn
from mcp import Client, StdioServerParameters

from merchantbench.catalog.cache import get_market, get_search_index
from merchantbench.mcp_surface import McpHttpEndpoint, build_mcp_server
from merchantbench.runs.runner import RunSpec
from merchantbench.scenario import load_scenario
from merchantbench.serve.mcp_run import MCP_AGENT, HostedRun
from merchantbench.session import Session

SCENARIO, SEED = "smoke", 1
ROOMY = ["clock.calls_per_window=1000000"]  # one window holds every measured call
TOOL = "query_balance"


def summary(samples: list[float]) -> tuple[float, float]:
    """p50 and p99, in milliseconds."""
    ordered = sorted(samples)
    return statistics.median(ordered) * 1e3, ordered[int(0.99 * (len(ordered) - 1))] * 1e3


def in_process(calls: int) -> list[float]:
    scenario = load_scenario(SCENARIO, overrides=ROOMY)
    market = get_market(scenario, SEED)
    surface = Session(scenario, market, SEED, get_search_index(scenario, SEED, market)).surface
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        surface.call(TOOL, {})
        samples.append(time.perf_counter() - start)
    return samples


CPU_SECONDS: dict[str, float] = {}  # CPU time of this process in the last timed loop


async def timed(call: Callable[[], Awaitable[Any]], calls: int) -> list[float]:
    for _ in range(warm_up(calls)):
        await call()
    samples = []
    cpu = time.process_time()
    for _ in range(calls):
        start = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - start)
    CPU_SECONDS["last"] = time.process_time() - cpu
    return samples


def warm_up(calls: int) -> int:
    return min(calls // 10, 50)


def sdk_in_process(calls: int, out: Path) -> list[float]:
    """The SDK's client and server in one process over memory streams (JSON-RPC framing and
    validation, no transport): what our adapter and the SDK cost without pipes or sockets."""
    spec = RunSpec(MCP_AGENT, load_scenario(SCENARIO, overrides=ROOMY), SEED)
    server = build_mcp_server(HostedRun(spec, out))

    async def main() -> list[float]:
        async with Client(server, mode="legacy") as client:
            return await timed(lambda: client.call_tool(TOOL, {}), calls)

    return anyio.run(main)


def over_stdio(calls: int, out: Path) -> list[float]:
    """Calls to a `merchantbench mcp` subprocess. The server's CPU per call is the difference
    of its CPU time in a run of `calls` calls and in a run of none, recorded beside ours."""

    def served(n: int, run_dir: Path) -> tuple[list[float], float]:
        args = ["-m", "merchantbench.cli", "mcp", "-s", SCENARIO, "--seed", str(SEED)]
        args += ["--out", str(run_dir), *[f"--set={o}" for o in ROOMY]]
        params = StdioServerParameters(command=sys.executable, args=args, env=dict(os.environ))

        async def main() -> list[float]:
            async with Client(params) as client:
                return await timed(lambda: client.call_tool(TOOL, {}), n)

        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        samples = anyio.run(main)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return samples, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)

    _, idle_server = served(0, out.with_name(out.name + "-idle"))
    samples, server = served(calls, out)
    client = CPU_SECONDS["last"]
    per_call = (server - idle_server) / (calls + warm_up(calls))
    CPU_SECONDS["last"] = client + per_call * calls
    return samples


def over_http(calls: int, out: Path) -> list[float]:
    spec = RunSpec(MCP_AGENT, load_scenario(SCENARIO, overrides=ROOMY), SEED)
    endpoint = McpHttpEndpoint(HostedRun(spec, out))
    sock = socket.socket()
    # Accepted sockets inherit this; without it, Nagle and delayed ACKs add ~40 ms per call
    # on a socket handed to uvicorn (uvicorn sets it only on sockets it binds itself).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(endpoint.app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"

    async def main() -> list[float]:
        async with Client(url) as client:
            return await timed(lambda: client.call_tool(TOOL, {}), calls)

    try:
        return anyio.run(main)
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    calls = parser.parse_args().calls
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, load {load}, "
          f"Python {platform.python_version()}; {calls} calls of {TOOL}")  # fmt: skip
    base, _ = summary(in_process(calls))
    print(f"in process        p50 {base:7.3f} ms")
    with tempfile.TemporaryDirectory() as tmp:
        transports = (
            ("SDK in process", sdk_in_process),
            ("stdio", over_stdio),
            ("streamable HTTP", over_http),
        )
        for name, measure in transports:
            p50, p99 = summary(measure(calls, Path(tmp) / name.replace(" ", "-")))
            cpu = CPU_SECONDS["last"] / calls * 1e3
            print(f"{name:<17} p50 {p50:7.3f} ms  p99 {p99:7.3f} ms  overhead p50 "
                  f"{p50 - base:7.3f} ms  CPU per call {cpu:6.3f} ms")  # fmt: skip


if __name__ == "__main__":
    main()

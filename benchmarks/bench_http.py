"""HTTP front end: per-tool-call overhead over the in-process call, on loopback.

The server runs in its own process (`merchantbench serve`), so the client and the server do not
share an interpreter. Each tool is timed `--calls` times: in process through the agent surface,
then through the JSON API (`POST /api/runs/{run}/tools/{tool}`) and through the protocol's `/act`
(one tool call per turn), with a keep-alive httpx client. The overhead is the difference of
medians (p50); with `--repeat`, each path counts its fastest pass
(a shared machine's load only ever adds time).

    uv run python benchmarks/bench_http.py [--scenario small] [--calls 400] [--repeat 3]

Results are recorded in docs/performance.md ("## HTTP front end").
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import httpx

from merchantbench.catalog.cache import get_market, get_search_index
from merchantbench.scenario import load_scenario
from merchantbench.session import Session

ADMIN = "bench-admin-token"
PER_WINDOW = 80  # below the smoke scenario's 100 calls (and turns) per window
TOOLS = {
    "query_balance": {},
    "get_store_snapshot": {},
    "search_products": {"query": "storage box", "page_size": 20},
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _server(port: int) -> subprocess.Popen[bytes]:
    env = dict(os.environ, MERCHANTBENCH_ADMIN_TOKEN=ADMIN)
    runs = f"/tmp/bench-http-runs-{os.getpid()}"
    command = [sys.executable, "-m", "merchantbench.cli", "serve", "--port", str(port),
               "--runs-dir", runs]  # fmt: skip
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
    for _ in range(600):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/health").status_code == 200:
                return process
        except httpx.TransportError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit("the server did not start")


def _timed(fn: Callable[[], Any], n: int, end_window: Callable[[], Any]) -> list[float]:
    """`n` timed calls of `fn`; the window is closed (untimed) every `PER_WINDOW` calls, so no
    call meets the per-window caps."""
    for _ in range(10):  # warm up
        fn()
    end_window()
    out = []
    for i in range(n):
        if i and i % PER_WINDOW == 0:
            end_window()
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    end_window()
    return out


def _p(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100)[q - 1] if len(values) > 1 else values[0]


def _in_app(scenario: str, seed: int, calls: int) -> dict[str, float]:
    """p50 of `POST /act` through the app in this process (ASGI, no socket): the adapter's own
    cost (FastAPI, validation, protocol, JSON), without the loopback round trip."""
    import asyncio
    import tempfile
    from pathlib import Path

    from merchantbench.serve import ServeConfig, create_app

    async def measure() -> dict[str, float]:
        app = create_app(ServeConfig(Path(tempfile.mkdtemp()), ADMIN))
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://app") as client:
            admin = {"Authorization": f"Bearer {ADMIN}"}
            create = {"scenario": scenario, "seed": seed}
            body = (await client.post("/api/runs", headers=admin, json=create)).json()
            client.headers["Authorization"] = f"Bearer {body['agent_token']}"
            act = f"/runs/{body['run_id']}/agents/{body['agent_id']}/act"
            out, counter = {}, [0]
            for tool, args in TOOLS.items():
                times = []
                for i in range(calls):
                    if i % PER_WINDOW == 0:
                        await client.post(f"/api/runs/{body['run_id']}/end-window")
                    start = time.perf_counter()
                    response = await client.post(act, json=_act_body(tool, args, counter))
                    times.append((time.perf_counter() - start) * 1000)
                    assert response.status_code == 200, response.text
                out[tool] = statistics.median(times)
            return out

    return asyncio.run(measure())


def _act_body(tool: str, args: dict[str, Any], n: list[int]) -> dict[str, Any]:
    n[0] += 1
    call = {"id": f"c{n[0]}", "type": "function",
            "function": {"name": tool, "arguments": json.dumps(args)}}  # fmt: skip
    return {"messages": [{"role": "assistant", "content": None, "tool_calls": [call]}]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="small")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=3)
    a = parser.parse_args()
    scenario = load_scenario(a.scenario)
    market = get_market(scenario, a.seed)
    surface = Session(scenario, market, a.seed, get_search_index(scenario, a.seed, market)).surface
    port = _free_port()
    process = _server(port)
    try:
        http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60)
        admin = {"Authorization": f"Bearer {ADMIN}"}
        run = http.post("/api/runs", headers=admin, json={"scenario": a.scenario, "seed": a.seed})
        body = run.json()
        http.headers["Authorization"] = f"Bearer {body['agent_token']}"
        rid, counter = body["run_id"], [0]
        act = f"/runs/{rid}/agents/{body['agent_id']}/act"

        def end_local() -> None:
            assert surface.call("end_of_step")["ok"]

        def end_served() -> None:
            assert http.post(f"/api/runs/{rid}/end-window").status_code == 200

        def ok(response: httpx.Response) -> None:
            assert response.status_code == 200, response.text

        passes: dict[str, list[tuple[list[float], list[float], list[float]]]] = {}
        for _ in range(a.repeat):
            for tool, args in TOOLS.items():
                local = _timed(lambda t=tool, g=args: surface.call(t, g)["ok"], a.calls, end_local)
                api = _timed(
                    lambda t=tool, g=args: ok(http.post(f"/api/runs/{rid}/tools/{t}", json=g)),
                    a.calls, end_served,
                )  # fmt: skip
                proto = _timed(
                    lambda t=tool, g=args: ok(http.post(act, json=_act_body(t, g, counter))),
                    a.calls, end_served,
                )  # fmt: skip
                passes.setdefault(tool, []).append((local, api, proto))
        floor = min(
            (_timed(lambda: ok(http.get("/api/health")), a.calls, lambda: None)
             for _ in range(a.repeat)),
            key=statistics.median,
        )  # fmt: skip
    finally:
        process.terminate()
        process.wait(timeout=30)
    in_app = _in_app(a.scenario, a.seed, a.calls)
    print(f"{a.calls} calls per tool and path, fastest of {a.repeat} passes; ms")
    print(f"HTTP floor (GET /api/health, no run): p50 {statistics.median(floor):.3f} ms")
    print(
        "| tool | in-process p50 | JSON API p50 / p90 | overhead | /act p50 / p90 | overhead "
        "| /act in the app, no socket |"
    )
    print("|---|---|---|---|---|---|---|")
    for tool, runs in passes.items():
        base = min(statistics.median(local) for local, _, _ in runs)
        api = min((r[1] for r in runs), key=statistics.median)
        proto = min((r[2] for r in runs), key=statistics.median)
        print(
            f"| {tool} | {base:.3f} | {statistics.median(api):.3f} / {_p(api, 90):.3f} | "
            f"{statistics.median(api) - base:.3f} | {statistics.median(proto):.3f} / "
            f"{_p(proto, 90):.3f} | {statistics.median(proto) - base:.3f} | {in_app[tool]:.3f} |"
        )


if __name__ == "__main__":
    main()

"""The ReAct harness's own cost, and many LLM runs sharing one event loop.

A zero-latency scripted server (`merchantbench scripted-server --policy store`, in its own
process so it does not compete for this one's GIL) plays the `smoke` scenario. Measured:

1. Harness overhead per window, excluding model latency: the agent's time in its windows minus
   the time spent inside model calls (HTTP round trips through the official client), split into
   environment time (the session, timed around `Session.call` and `Session.observation`) and
   the harness proper (prompts, conversation, parsing, records). Client set-up (once per run)
   is reported apart.
2. 32 concurrent smoke runs in one process, one event loop, no threads per run: wall time, and
   the speed-up over running them one after another (estimated from one run), with a
   zero-latency server (CPU-bound: the client, the server and the simulation share the
   machine) and with a server that waits `--latency` seconds per answer, as a model does.

Run with:

    uv run python benchmarks/bench_harness.py [--runs 32] [--days 14] [--latency 0.25]

and record the printed figures, with the machine, in docs/llm.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from merchantbench.agents.llm.client import ModelClient
from merchantbench.catalog.cache import get_market
from merchantbench.record.schema import RUN_FILE
from merchantbench.runs.runner import RunSpec, run_agent_async
from merchantbench.scenario import load_scenario
from merchantbench.session import Session


@contextmanager
def scripted_server(latency: float = 0.0) -> Iterator[str]:
    """A `store`-policy server in a child process; yields its base URL."""
    command = [sys.executable, "-c", "from merchantbench.cli import main; main()"]
    args = ["scripted-server", "--policy", "store", "--port", "0", "--latency", str(latency)]
    child = subprocess.Popen(command + args, stderr=subprocess.PIPE, text=True)
    try:
        line = child.stderr.readline()
        yield line.split(" at ")[1].split()[0]
    finally:
        child.terminate()
        child.communicate(timeout=10)


@contextmanager
def timed(owner: type, method: str) -> Iterator[list[float]]:
    """Seconds spent in each call of `owner.method` while the block runs."""
    spent: list[float] = []
    original = getattr(owner, method)

    def wrapper(self, *args, **kwargs):
        began = time.perf_counter()
        try:
            return original(self, *args, **kwargs)
        finally:
            spent.append(time.perf_counter() - began)

    setattr(owner, method, wrapper)
    try:
        yield spent
    finally:
        setattr(owner, method, original)


def spec(base_url: str, days: int) -> RunSpec:
    scenario = load_scenario("smoke", overrides=[f"clock.days={days}"])
    return RunSpec("react", scenario, 1, {"model": "scripted", "base_url": base_url})


def usage_of(run_dir: Path) -> dict:
    return json.loads((run_dir / RUN_FILE).read_text())["llm_usage"]


def overhead(base_url: str, days: int, root: Path) -> None:
    """Print the per-window split of one run at zero model latency."""
    run_dir = root / "single"
    with (
        timed(Session, "call") as tool_seconds,
        timed(Session, "observation") as observation_seconds,
        timed(ModelClient, "__init__") as setup,
    ):
        began = time.perf_counter()
        metrics = asyncio.run(run_agent_async(spec(base_url, days), run_dir))
        wall = time.perf_counter() - began
    usage = usage_of(run_dir)
    windows, calls = metrics["windows"], usage["calls"]
    own = usage["wall_seconds"] - usage["latency_s"] - sum(setup)
    tools = sum(tool_seconds) + sum(observation_seconds)
    print(f"one run: {windows} windows, {calls} model calls, wall {wall:.2f} s")
    print(f"  model round trip (client + local server): {ms(usage['latency_s'] / calls)} ms/call")
    print(f"  client set-up, once per run: {ms(sum(setup))} ms")
    print(f"  environment (tools, observation): {ms(tools / windows)} ms/window")
    print(
        f"  harness proper (prompts, conversation, parsing, records): "
        f"{ms((own - tools) / windows)} ms/window"
    )
    print(f"  harness overhead excluding model latency: {ms(own / windows)} ms/window")


def ms(seconds: float) -> str:
    return f"{1000 * seconds:.2f}"


async def concurrent(base_url: str, days: int, runs: int, root: Path) -> tuple[float, int]:
    """Wall seconds and model calls of `runs` runs sharing this event loop."""
    dirs = [root / f"run-{i:02d}" for i in range(runs)]
    began = time.perf_counter()
    await asyncio.gather(*(run_agent_async(spec(base_url, days), d) for d in dirs))
    return time.perf_counter() - began, sum(usage_of(d)["calls"] for d in dirs)


def sweep(latency: float, days: int, runs: int, root: Path) -> None:
    """One run, then `runs` concurrent ones, against a server with this latency."""
    with scripted_server(latency) as base_url:
        began = time.perf_counter()
        asyncio.run(run_agent_async(spec(base_url, days), root / f"alone-{latency}"))
        alone = time.perf_counter() - began
        wall, calls = asyncio.run(concurrent(base_url, days, runs, root / f"many-{latency}"))
    print(f"model latency {latency:g} s: one run {alone:.1f} s; {runs} concurrent runs "
          f"{wall:.1f} s ({calls} calls), {alone * runs / wall:.1f}x faster than one after "
          f"another")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=32)
    parser.add_argument("--days", type=int, default=14)
    parser.add_argument("--latency", type=float, default=0.25, help="seconds per model answer")
    options = parser.parse_args()
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}")  # fmt: skip
    get_market(load_scenario("smoke"), 1)  # build or map the catalog before timing anything
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        with scripted_server() as base_url:
            asyncio.run(run_agent_async(spec(base_url, 1), root / "warm-up"))
            overhead(base_url, options.days, root)
        for latency in (0.0, options.latency):
            sweep(latency, options.days, options.runs, root)


if __name__ == "__main__":
    main()

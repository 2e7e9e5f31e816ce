"""Per-call overhead of `ToolRegistry.call` on trivial tools.

What is measured is the framework alone: decoding, validation, idempotency bookkeeping and the
answer envelope, around tool bodies that do nothing. Run with:

    uv run python benchmarks/bench_tool_overhead.py [--calls 20000]

and record the printed figures, with the machine, in docs/performance.md.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import Field

from merchantbench.tools import IdempotencyRecord, ToolRegistry, tool


@dataclass
class Counter:
    idempotency_store: dict[str, IdempotencyRecord] = field(default_factory=dict)
    value: int = 0


@tool(kind="read", group="cash")
def peek(
    ctx: Counter,
    page: Annotated[int, Field(ge=1, le=100)] = 1,
    sort: Literal["asc", "desc"] = "asc",
) -> dict[str, Any]:
    """Show the counter.

    Args:
        page: Page number.
        sort: Order.
    """
    return {"value": ctx.value, "page": page}


@tool(kind="write", group="control")
def bump(ctx: Counter, by: Annotated[int, Field(ge=1, le=10)] = 1) -> dict[str, Any]:
    """Increase the counter.

    Args:
        by: How much.
    """
    ctx.value += by
    return {"value": ctx.value}


def percentiles(run: Callable[[int], object], calls: int) -> tuple[float, float, float]:
    """p50, p99 and mean of one call, in microseconds, after a warm-up."""
    for i in range(min(calls // 10, 2000)):
        run(i)
    samples = []
    clock = time.perf_counter_ns
    for i in range(calls):
        start = clock()
        run(i)
        samples.append(clock() - start)
    samples.sort()
    p50 = samples[len(samples) // 2] / 1000
    p99 = samples[int(len(samples) * 0.99)] / 1000
    return p50, p99, statistics.fmean(samples) / 1000


def scenarios(registry: ToolRegistry, ctx: Counter) -> dict[str, Callable[[int], object]]:
    return {
        "direct function call (baseline)": lambda i: peek.fn(ctx, page=2),
        "read, dict args": lambda i: registry.call(ctx, "peek", {"page": 2}),
        "read, no args": lambda i: registry.call(ctx, "peek", None),
        "read, raw JSON args": lambda i: registry.call(ctx, "peek", '{"page": 2, "sort": "desc"}'),
        "read, invalid argument": lambda i: registry.call(ctx, "peek", {"page": 0}),
        "write, no key": lambda i: registry.call(ctx, "bump", {"by": 1}),
        "write, new key": lambda i: registry.call(ctx, "bump", {"by": 1}, f"k{i}"),
        "write, replayed key": lambda i: registry.call(ctx, "bump", {"by": 1}, "k0"),
    }


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            names = [line.split(":", 1)[1].strip() for line in cpuinfo if "model name" in line]
    except OSError:
        names = []
    return names[0] if names else platform.processor() or platform.machine()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000)
    calls = parser.parse_args().calls
    registry = ToolRegistry([peek, bump])
    print(f"python {platform.python_version()}, {platform.platform()}, {_cpu_name()}")
    print(f"{calls} calls per case; microseconds per call")
    print(f"{'case':36} {'p50':>8} {'p99':>8} {'mean':>8}")
    for name, run in scenarios(registry, Counter()).items():
        p50, p99, mean = percentiles(run, calls)
        print(f"{name:36} {p50:8.2f} {p99:8.2f} {mean:8.2f}")


if __name__ == "__main__":
    main()

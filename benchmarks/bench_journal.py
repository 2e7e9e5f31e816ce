"""What acknowledging each call durably costs a run played from outside (runs/journal.py).

A run of the `mcp` driver (`HostedRun`, the host of `merchantbench mcp`) plays the same calls
twice in this process: with the journal on (each answer waits for `RunLifecycle.acknowledge`:
the transcript and the trace synced, a journal line appended and synced) and with it off (the
driver's `acknowledges` set to False for the measurement: syncs at checkpoints only, as before
issue 32). Printed: CPU seconds and wall seconds per call of each, and their ratios. On a loaded
machine wall time includes waiting for a CPU and for the disk; the CPU ratio is the figure to
quote. The runs in process (`merchantbench run`, sweeps) never journal: their cost is measured
by timing the main job and the LLM grid before and after (docs/performance.md).

    uv run python benchmarks/bench_journal.py [--scenario smoke] [--days 28] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

from merchantbench.runs.spec import RunSpec
from merchantbench.scenario import load_scenario
from merchantbench.serve.mcp_run import MCP_AGENT, HostedRun, McpDriver


def _play(run_dir: Path, scenario: str, days: int) -> tuple[float, float, int]:
    """CPU seconds, wall seconds and calls of one run: a balance read, a search, a note and
    the window's end in every window (keys on every call, as a remote client sends them)."""
    spec = RunSpec(MCP_AGENT, load_scenario(scenario, overrides=[f"clock.days={days}"]), seed=1)
    hosted = HostedRun(spec, run_dir)
    calls = 0
    cpu, wall = time.process_time(), time.perf_counter()
    while not hosted.finished:
        window = hosted.surface.window
        for n, (tool, args) in enumerate(
            [
                ("query_balance", {}),
                ("search_products", {"page_size": 3}),
                ("write_memory_doc", {"content": f"w{window}\n", "mode": "append"}),
                ("end_of_step", {}),
            ]
        ):
            hosted.call(tool, args, f"w{window}c{n}")
            calls += 1
    return time.process_time() - cpu, time.perf_counter() - wall, calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="smoke")
    parser.add_argument("--days", type=int, default=14)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    figures: dict[str, list[tuple[float, float, int]]] = {"on": [], "off": []}
    with tempfile.TemporaryDirectory() as tmp:
        _play(Path(tmp) / "warm", args.scenario, args.days)  # the market cache, imports
        for round_ in range(args.rounds):
            for mode in ("on", "off"):  # paired: the machine's speed drifts
                McpDriver.acknowledges = mode == "on"
                figures[mode].append(_play(Path(tmp) / f"{mode}{round_}", args.scenario, args.days))
    McpDriver.acknowledges = True
    per_call = {
        mode: {
            "cpu_ms": sorted(1000 * c / n for c, _, n in runs)[len(runs) // 2],
            "wall_ms": sorted(1000 * w / n for _, w, n in runs)[len(runs) // 2],
        }
        for mode, runs in figures.items()
    }
    ratios = [on[0] / off[0] for on, off in zip(figures["on"], figures["off"], strict=True)]
    print(
        json.dumps(
            {
                "machine": f"{platform.machine()} {platform.system()} {platform.release()}",
                "scenario": args.scenario,
                "days": args.days,
                "calls_per_run": figures["on"][0][2],
                "per_call": per_call,
                "cpu_ratio_on_off_median": sorted(ratios)[len(ratios) // 2],
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()

"""Speed of `merchantbench verify` against the run it checks (issue 20 item 1: a paper-year
record verifies in at most twice the environment time of the run itself).

For each run: the run in process (`run_agent`, record and transcript written, market and index
cached), timed whole and for its environment part alone — the time inside `Session.call` (tool
bodies, window closes, the engine's hours, observations, trace and transcript lines) plus
`RunLifecycle.finish` (tables and metrics) — then `verify_record` on its record. Each time is
wall (`perf_counter`) and CPU of the main thread (`thread_time`: the scripted model server of a
react run runs in another thread and is not counted). On a shared machine only the CPU times
compare between runs; the ratio is verify / environment.

    uv run python benchmarks/bench_verify.py [--scenario paper] [--days N] [--repeat 2]
        [--react-days 30]        # also a scripted react run of N days (0: none)

Results are recorded in docs/performance.md ("## Verify").
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from merchantbench.agents.llm.scripted_policy import POLICIES
from merchantbench.agents.llm.scripted_server import ScriptedServer
from merchantbench.replay import verify_record
from merchantbench.runs.lifecycle import RunLifecycle
from merchantbench.runs.runner import RunSpec, run_agent
from merchantbench.scenario import Scenario, load_scenario
from merchantbench.session import Session


class Clock:
    """Wall and thread-CPU seconds spent inside the wrapped methods (outermost calls only)."""

    def __init__(self) -> None:
        self.wall = self.cpu = 0.0
        self._depth = 0

    def wrap(self, method: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            self._depth += 1
            wall, cpu = time.perf_counter(), time.thread_time()
            try:
                return method(*args, **kwargs)
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self.wall += time.perf_counter() - wall
                    self.cpu += time.thread_time() - cpu

        return timed


@contextmanager
def environment_clock() -> Iterator[Clock]:
    clock = Clock()
    saved = Session.call, RunLifecycle.finish
    Session.call = clock.wrap(Session.call)  # type: ignore[method-assign]
    RunLifecycle.finish = clock.wrap(RunLifecycle.finish)  # type: ignore[method-assign]
    try:
        yield clock
    finally:
        Session.call, RunLifecycle.finish = saved  # type: ignore[method-assign]


def measure(label: str, spec: RunSpec, out: Path) -> dict[str, Any]:
    with environment_clock() as env:
        wall, cpu = time.perf_counter(), time.thread_time()
        run_agent(spec, out)
        run_wall, run_cpu = time.perf_counter() - wall, time.thread_time() - cpu
    wall, cpu = time.perf_counter(), time.thread_time()
    report = verify_record(out)
    verify_wall, verify_cpu = time.perf_counter() - wall, time.thread_time() - cpu
    assert report.ok, report.summary()
    return {
        "label": label, "calls": report.calls, "windows": report.windows,
        "run": (run_wall, run_cpu), "env": (env.wall, env.cpu),
        "verify": (verify_wall, verify_cpu),
    }  # fmt: skip


def show(row: dict[str, Any]) -> None:
    (rw, rc), (ew, ec), (vw, vc) = row["run"], row["env"], row["verify"]
    print(
        f"{row['label']}: {row['calls']} calls, {row['windows']} windows | run {rw:.2f} s wall "
        f"/ {rc:.2f} s CPU | environment {ew:.2f} / {ec:.2f} | verify {vw:.2f} / {vc:.2f} | "
        f"verify/environment {vw / ew:.2f} wall, {vc / ec:.2f} CPU",
        flush=True,
    )


def scenario_of(name: str, days: int | None) -> Scenario:
    return load_scenario(name, overrides=[f"clock.days={days}"] if days else None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="paper")
    parser.add_argument("--days", type=int, default=None)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--react-days", type=int, default=30)
    args = parser.parse_args()
    scenario = scenario_of(args.scenario, args.days)
    Session.open(scenario, args.seed)  # market and index built or loaded before any timing
    print(f"load average {os.getloadavg()[0]:.1f}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-verify-") as tmp:
        for n in range(args.repeat):
            spec = RunSpec("rule-based", scenario, args.seed)
            show(measure(f"rule-based {args.scenario}", spec, Path(tmp) / f"rule-{n}"))
        if args.react_days:
            react = scenario_of(args.scenario, args.react_days)
            for n in range(args.repeat):
                with ScriptedServer(POLICIES["store"]) as server:
                    settings = {"model": "scripted", "base_url": server.base_url}
                    spec = RunSpec("react", react, args.seed, settings)
                    label = f"react (scripted) {args.scenario} {args.react_days} days"
                    show(measure(label, spec, Path(tmp) / f"react-{n}"))
    print(f"load average {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()

"""Speed of a counterfactual analysis (issue 21; docs/counterfactual.md, docs/performance.md).

A paper year of a parent agent is recorded first (not timed). Then, each timed as wall and CPU
seconds (`time.process_time` counts this process only, so CPU figures are given for the
in-process executor, `--jobs 1`):

- one in-process year of the takeover policy as `merchantbench run` makes it (`run_agent`,
  record and transcript written) and without a record (the agent playing a session);
- reaching the fork days: one fast replay pass of the parent's record with a snapshot at each
  fork window (`merchantbench.replay.snapshot_blobs(..., fast=True)`, as the analysis does);
- the analysis: `analyse` with the policy at every `--every` days (12 fork points at 30 days:
  day 0, 30, …, 330; the forks' remaining days add up to about 6.5 years), then, unless the
  parent is the policy's own run, the policy's takeovers of its own run at the same days,
  and the bisection of an onset period to 7 days (docs/counterfactual.md). The parent's own
  year is not played again when it is the policy's own run (its day-0 takeover is the run),
  nor any takeover of a store already played (a validation agent's store before its failure
  is the policy's own: counterfactual/rounds.py); the bisection plays the policy's own run on
  from its store and agent kept at the fork windows. It prints the takeovers the analysis
  filed and those it played, and the days they played.

Goal: the analysis, with bisection, costs at most 8× one in-process year of the policy; with
the rule-based policy at most 15 s on the project's 2-core machine. `--parent-setting
onset_day=97` with `--parent fail-abandon-rb` times an analysis that finds an onset and bisects.

    uv run python benchmarks/bench_counterfactual.py [--policy rule-based] [--parent rule-based]
        [--every 30] [--jobs 1] [--seed 1] [--scenario paper]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from merchantbench.agents.registry import make_agent
from merchantbench.catalog.cache import get_market, get_search_index
from merchantbench.counterfactual.analysis import analyse, plan_windows
from merchantbench.counterfactual.execute import TakeoverExecutor, executor_of
from merchantbench.counterfactual.parent import Parent
from merchantbench.counterfactual.takeover import Policy, Takeover, TakeoverTask
from merchantbench.replay import snapshot_blobs
from merchantbench.runs.runner import play_windows, run_agent
from merchantbench.runs.spec import RunSpec
from merchantbench.scenario import load_scenario
from merchantbench.session import Session


def timed(work: Callable[[], Any]) -> tuple[float, float, Any]:
    """(wall seconds, CPU seconds of this process, the result) of `work()`."""
    start, cpu = time.perf_counter(), time.process_time()
    result = work()
    return time.perf_counter() - start, time.process_time() - cpu, result


@dataclass
class Counted:
    """An executor that notes every takeover it plays."""

    executor: TakeoverExecutor
    played: list[TakeoverTask]

    def run(self, tasks: Iterable[TakeoverTask]) -> Iterator[tuple[TakeoverTask, Takeover]]:
        for task, result in self.executor.run(tasks):
            self.played.append(task)
            yield task, result


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="paper")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--parent", default="rule-based", help="the agent of the analysed run")
    parser.add_argument(
        "--parent-setting",
        action="append",
        default=[],
        help="KEY=VALUE setting of the parent agent (integers as integers)",
    )
    parser.add_argument("--policy", default="rule-based", help="the takeover policy")
    parser.add_argument("--every", type=int, default=30, help="days between fork points")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (1: in process)")
    parser.add_argument("--no-recorded-year", action="store_true",
                        help="skip the year with a record (long for the expert)")  # fmt: skip
    args = parser.parse_args()
    scenario = load_scenario(args.scenario)
    get_search_index(scenario, args.seed, get_market(scenario, args.seed))
    with tempfile.TemporaryDirectory(prefix="bench-counterfactual-") as tmp:
        root = Path(tmp)
        settings = {
            k: int(v) if v.lstrip("-").isdigit() else v
            for k, v in (item.split("=", 1) for item in args.parent_setting)
        }
        run_agent(RunSpec(args.parent, scenario, args.seed, settings), root / "parent")
        parent = Parent.read(root / "parent")
        windows = [w for _, w in plan_windows(parent, args.every)]

        def bare_year() -> float:
            session = Session.open(scenario, args.seed)
            asyncio.run(play_windows(make_agent(args.policy), session))
            return session.status().net_assets

        bare_year()  # warm-up: views, caches and imports of a first year in a process
        recorded = (
            (float("nan"), float("nan"), None)
            if args.no_recorded_year
            else timed(lambda: run_agent(RunSpec(args.policy, scenario, args.seed), root / "y"))
        )
        bare = timed(bare_year)
        replay = timed(lambda: [w for w, _ in snapshot_blobs(parent.run_dir, windows, fast=True)])
        played: list[TakeoverTask] = []
        filed: list[TakeoverTask] = []
        executor = Counted(executor_of("local", args.jobs), played)
        analysis = timed(
            lambda: analyse(
                [parent], [Policy(args.policy)], args.every, executor,
                progress=lambda done, total, task: filed.append(task),
            )
        )  # fmt: skip
    curve = analysis[2][0].curves[0]
    print(load_average())
    print(f"{args.scenario}, seed {args.seed}: parent {args.parent}, policy {args.policy}, "
          f"{len(windows)} fork points every {args.every} days, jobs {args.jobs}")  # fmt: skip
    print(f"one year of {args.policy}, record written : {recorded[0]:6.2f} s wall "
          f"{recorded[1]:6.2f} s CPU")  # fmt: skip
    print(f"one year of {args.policy}, no record      : {bare[0]:6.2f} s wall {bare[1]:6.2f} s CPU")
    print(f"fast replay, {len(windows)} snapshots        : {replay[0]:6.2f} s wall "
          f"{replay[1]:6.2f} s CPU")  # fmt: skip
    print(f"counterfactual analysis              : {analysis[0]:6.2f} s wall "
          f"{analysis[1]:6.2f} s CPU (CPU of this process only)")  # fmt: skip
    print(
        f"analysis / year with record: {analysis[0] / recorded[0]:.2f}x wall"
        + (f", {analysis[1] / recorded[1]:.2f}x CPU" if args.jobs == 1 else "")
    )
    print(
        f"analysis / year without record: {analysis[0] / bare[0]:.2f}x wall"
        + (f", {analysis[1] / bare[1]:.2f}x CPU" if args.jobs == 1 else "")
    )
    days = parent.scenario.clock.days
    print(f"takeovers: {len(filed)} filed ({sum(days - t.day for t in filed):,} days), "
          f"{len(played)} played ({sum(days - t.day for t in played):,} days)")  # fmt: skip
    takeovers = sum(p.seconds for p in curve.points)
    onset = curve.search.to_json() if curve.search is not None else {}
    print(f"takeovers' own wall seconds: {takeovers:.2f} s; "
          f"curve: {[round(p.final_net_assets) for p in curve.points]}")  # fmt: skip
    print(f"onset: {curve.onset_day()} (period {onset.get('period')}, bracket "
          f"{onset.get('bracket')}); bisection forks at days "
          f"{[f['day'] for f in onset.get('bisection_forks', [])]}")  # fmt: skip


if __name__ == "__main__":
    main()

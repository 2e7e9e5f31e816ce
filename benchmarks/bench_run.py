"""Speed of a whole run and of single tool calls, through the session as an agent sees it.

- a 365-day rule-based run on `paper` with the market and search index already cached (goal
  ≤ 1 s of CPU time on the project's 2-core machine), without the run-record writing: wall time
  and CPU time (`time.process_time`), each the best of `--repeat`, and the load average, since
  on a shared machine only the CPU time is comparable between runs;
- per-call latency (p50, p99) of read tools through `Session.call` on the paper market, mid-year,
  with the rule-based agent's listings in place (goal: p50 ≤ 100 µs for reads).

    uv run python benchmarks/bench_run.py [--scenario paper] [--seed 1]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from merchantbench.agents.baselines.rule_based import RuleBasedAgent
from merchantbench.catalog.cache import get_market, get_search_index
from merchantbench.scenario import load_scenario
from merchantbench.session import Session

READS: tuple[tuple[str, dict], ...] = (
    ("query_balance", {}),
    ("get_store_snapshot", {}),
    ("query_my_listings", {}),
    ("review_my_listings", {}),
    ("query_open_orders", {}),
    ("query_supply_chain_anomalies", {"scope": "now"}),
    ("get_product_detail", {}),  # product filled in from the listings
    ("search_products", {"query": "storage box", "sort": "sales_30d"}),
)


def timed_run(scenario, market, index, seed: int) -> tuple[float, float, Session]:
    """One whole rule-based run: (wall seconds, CPU seconds, the finished session)."""
    session = Session(scenario, market, seed, index)
    agent = RuleBasedAgent()
    start, cpu_start = time.perf_counter(), time.process_time()
    while not session.over:
        window = session.window
        agent.act(session.surface)
        if not session.over and session.window == window:
            session.force_end_of_step()
    return time.perf_counter() - start, time.process_time() - cpu_start, session


def load_average() -> str:
    """The 1/5/15-minute load averages and the CPU count, for the record beside a timing."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def call_latency(scenario, market, index, seed: int, days: int = 180, repeat: int = 300) -> None:
    session = Session(scenario, market, seed, index)
    agent = RuleBasedAgent()
    while session.window < days * 2:
        agent.act(session.surface)
    listed = session.call("query_my_listings", {})["rows"]
    product = listed[0][0] if listed else str(market.product_ids[0])
    print(f"per-call latency on day {days + 1}, {len(listed)} listings (µs):")
    for name, args in READS:
        args = {"product_id": product} if name == "get_product_detail" else args
        samples = []
        for _ in range(repeat):
            start = time.perf_counter_ns()
            result = session.call(name, args)
            samples.append((time.perf_counter_ns() - start) / 1000)
        assert result["ok"], result
        p50, p99 = np.percentile(samples, [50, 99])
        print(f"  {name:30s} p50 {p50:8.1f}   p99 {p99:8.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scenario", default="paper")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    scenario = load_scenario(args.scenario)
    market = get_market(scenario, args.seed)
    index = get_search_index(scenario, args.seed, market)
    timed_run(scenario, market, index, args.seed)  # warm the per-market memos once
    print(f"before: {load_average()}")
    runs = [timed_run(scenario, market, index, args.seed) for _ in range(args.repeat)]
    wall, cpu = min(r[0] for r in runs), min(r[1] for r in runs)
    print(
        f"365-day rule-based run, best of {args.repeat} after a warm-up: "
        f"CPU {cpu:.2f} s, wall {wall:.2f} s"
    )
    print(f"after: {load_average()}")
    uncapped = load_scenario(args.scenario, ["clock.calls_per_window=1000000"])
    call_latency(uncapped, market, index, args.seed)


if __name__ == "__main__":
    main()

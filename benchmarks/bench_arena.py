"""Speed and memory of a market with several merchants (docs/design.md §11) against its single
stores.

Plays an M-merchant market of baselines in process (the market and search index cached, no
run record written, as `bench_run.py` times a single store), then each of its agents alone in
a single store on the same scenario and seed, and prints CPU and wall seconds of each, the
market's CPU time over the sum of its stores' (goal: an 8-merchant year within 8× one store's
time, that is a ratio near 1 or below against the sum of eight stores), and the peak resident
memory of the process after each part.

    uv run python benchmarks/bench_arena.py [--scenario arena] [--days 365] [--seed 1]
        [--agents expert,expert,expert,rule-based,rule-based,rule-based,random,random]
"""

from __future__ import annotations

import argparse
import os
import resource
import time

from merchantbench.agents.registry import make_agent
from merchantbench.catalog.cache import get_market, get_search_index
from merchantbench.runs.arena import merchant_ids
from merchantbench.scenario import load_scenario
from merchantbench.session import MarketSession, Session

EIGHT = "expert,expert,expert,rule-based,rule-based,rule-based,random,random"


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def play_market(scenario, market, index, seed: int, agents: list[str]) -> tuple[float, float]:
    """One whole market: (wall seconds, CPU seconds)."""
    ids = merchant_ids(agents)
    place = MarketSession(scenario, market, seed, ids, index)
    players = {m: make_agent(a, {}) for m, a in zip(ids, agents, strict=True)}
    start, cpu = time.perf_counter(), time.process_time()
    while not place.over:
        window = place.window
        for merchant in place.trading():
            players[merchant].act(place.session(merchant).surface)
        if place.window == window and not place.over:
            place.close_window()
    return time.perf_counter() - start, time.process_time() - cpu


def play_store(scenario, market, index, seed: int, agent: str) -> tuple[float, float]:
    session = Session(scenario, market, seed, index)
    player = make_agent(agent, {})
    start, cpu = time.perf_counter(), time.process_time()
    while not session.over:
        window = session.window
        player.act(session.surface)
        if not session.over and session.window == window:
            session.force_end_of_step()
    return time.perf_counter() - start, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="arena")
    parser.add_argument("--days", type=int, default=None)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--agents", default=EIGHT)
    args = parser.parse_args()
    overrides = [f"clock.days={args.days}"] if args.days else []
    scenario = load_scenario(args.scenario, overrides=overrides)
    market = get_market(scenario, args.seed)
    index = get_search_index(scenario, args.seed, market)
    agents = args.agents.split(",")
    load = os.getloadavg()[0]
    print(f"scenario {scenario.name}, {scenario.clock.days} days, seed {args.seed}, "
          f"{len(agents)} merchants: {', '.join(agents)}; load {load:.1f}")  # fmt: skip
    print(f"market and index loaded: peak RSS {_peak_mib():.0f} MiB")
    # Warm the per-market caches (event logs, demand terms) that every run after the first
    # finds built, so the market is not charged for them and the stores spared.
    warm = load_scenario(args.scenario, overrides=["clock.days=1"])
    play_store(warm, market, index, args.seed, "rule-based")
    wall, cpu = play_market(scenario, market, index, args.seed, agents)
    print(f"market of {len(agents)}: wall {wall:.1f} s, CPU {cpu:.1f} s, "
          f"peak RSS {_peak_mib():.0f} MiB")  # fmt: skip
    alone: dict[str, tuple[float, float]] = {}
    for agent in dict.fromkeys(agents):
        alone[agent] = play_store(scenario, market, index, args.seed, agent)
        print(f"{agent} alone: wall {alone[agent][0]:.1f} s, CPU {alone[agent][1]:.1f} s")
    total = sum(alone[agent][1] for agent in agents)
    heaviest = max(cpu for _, cpu in alone.values())
    print(f"sum of the {len(agents)} single stores: CPU {total:.1f} s; market / sum = "
          f"{cpu / total:.2f}; market / (8 × the heaviest store) = {cpu / (8 * heaviest):.2f}; "
          f"load {os.getloadavg()[0]:.1f}")  # fmt: skip


if __name__ == "__main__":
    main()

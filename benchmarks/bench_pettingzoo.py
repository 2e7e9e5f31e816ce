"""CPU time of the PettingZoo env (`merchantbench.pettingzoo`) against the Gymnasium env on the
same work: a whole market (`small` by default) whose merchants close every window at once.

One merchant is the Gymnasium env's run (same state hash); M merchants do M times the calls and
M stores' hours. The two are measured alternately, `--rounds` times each, in CPU seconds
(`time.process_time`, so the figure holds under load). Run with:

    uv run python benchmarks/bench_pettingzoo.py [--scenario small] [--merchants 4] [--rounds 3]

and record the printed figures, with the machine and load, in docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import time

from merchantbench.gym import MerchantBenchEnv
from merchantbench.pettingzoo import MerchantBenchParallelEnv


def gym_year(scenario: str) -> tuple[float, int]:
    env = MerchantBenchEnv(scenario)
    env.reset(seed=1)
    end = {"tool": env.tool_names.index("end_of_step"), "args": ""}
    start, steps, done = time.process_time(), 0, False
    while not done:
        done = env.step(end)[2]
        steps += 1
    return time.process_time() - start, steps


def market_year(scenario: str, merchants: int) -> tuple[float, int]:
    env = MerchantBenchParallelEnv(scenario, merchants=merchants)
    env.reset(seed=1)
    end = {"tool": env.tool_names.index("end_of_step"), "args": ""}
    start, steps = time.process_time(), 0
    while env.agents:
        env.step({m: end for m in env.agents})
        steps += 1
    return time.process_time() - start, steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--merchants", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scenario", default="small")
    args = parser.parse_args()
    market_year(args.scenario, args.merchants)  # build the cached market first
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"load {load}; {args.scenario}, windows closed at once, CPU seconds, best of {args.rounds}"
    )
    results: dict[str, list[float]] = {"gym": [], "pz1": [], "pzM": []}
    for _ in range(args.rounds):
        results["gym"].append(gym_year(args.scenario)[0])
        results["pz1"].append(market_year(args.scenario, 1)[0])
        results["pzM"].append(market_year(args.scenario, args.merchants)[0])
    gym, one, many = (min(results[k]) for k in ("gym", "pz1", "pzM"))
    print(f"Gymnasium env, 1 store:       {gym:.3f} s")
    print(f"PettingZoo env, 1 merchant:   {one:.3f} s ({one / gym:.2f}x the Gymnasium env)")
    ratio = many / one
    print(f"PettingZoo env, {args.merchants} merchants:  {many:.3f} s ({ratio:.2f}x one merchant)")


if __name__ == "__main__":
    main()

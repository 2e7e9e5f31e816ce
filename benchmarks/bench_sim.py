"""Speed of the simulation core: a 365-day run of the `paper` scenario with 50 fixed listings and
no agent (goal ≤ 1 s on the project's 2-core machine), and the market's warm load.

    uv run python benchmarks/bench_sim.py [--scenario paper] [--seed 1] [--repeat 3]
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np

from merchantbench.catalog.cache import get_market
from merchantbench.scenario import load_scenario
from merchantbench.sim.engine import Engine


def fifty_listings(engine: Engine) -> list[tuple[int, int]]:
    """The 50 products with the most market sales in the last 30 days that are on sale now,
    priced at 1.8× their procurement price: a fixed, plausible portfolio."""
    market = engine.market
    sales = market.sales_30d(0).astype(np.int64)
    chosen: list[tuple[int, int]] = []
    for product in np.argsort(-sales, kind="stable"):
        state = engine.suppliers.state(int(product), 0)
        if state.available and market.launch_day[product] <= 0:
            chosen.append((int(product), round(state.price_fen * 1.8)))
        if len(chosen) == 50:
            break
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scenario", default="paper")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    scenario = load_scenario(args.scenario)
    get_market(scenario, args.seed)  # build once if needed; the load below is warm
    start = time.perf_counter()
    market = get_market(scenario, args.seed)
    print(f"warm market load: {time.perf_counter() - start:.3f} s")
    times = []
    for _ in range(args.repeat):
        engine = Engine(scenario, market, args.seed)
        engine.list_products(fifty_listings(engine))
        start = time.perf_counter()
        engine.run_idle()
        times.append(time.perf_counter() - start)
    a = engine.state.ledger.accounts
    print(
        f"365-day simulation, 50 fixed listings: best {min(times):.3f} s, "
        f"median {sorted(times)[len(times) // 2]:.3f} s over {args.repeat} runs; "
        f"{len(engine.state.orders)} orders, final net assets {a.net_assets / 100:,.2f} RMB"
    )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory: {peak:,.0f} MiB")


if __name__ == "__main__":
    main()

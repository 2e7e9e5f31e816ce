"""Market build benchmark: paper-scale generation into a fresh cache (cold), then loading (warm).

Each phase runs in its own Python process so that peak memory (max RSS) is that phase's alone and
the warm load really comes from disk and the page cache, as a new run would see it.

    uv run python benchmarks/bench_catalog.py [--scenario paper] [--seed 1] [--repeat 2]

Results are recorded in docs/performance.md ("## Market build").
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

_PHASE = """
import json, resource, sys, time
started = time.perf_counter()
from merchantbench.catalog.cache import get_market
from merchantbench.scenario import PRESETS
imported = time.perf_counter()
market = get_market(PRESETS[sys.argv[1]], int(sys.argv[2]))
done = time.perf_counter()
print(json.dumps({
    "seconds": done - imported,
    "import_seconds": imported - started,
    "max_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "n_products": market.n_products,
}))
"""


def _phase(scenario: str, seed: int, cache_dir: str) -> dict[str, float]:
    env = dict(os.environ, MERCHANTBENCH_CACHE=cache_dir)
    out = subprocess.run(
        [sys.executable, "-c", _PHASE, scenario, str(seed)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _cache_size_mib(path: str) -> float:
    total = 0
    for folder, _, files in os.walk(path):
        total += sum(os.path.getsize(os.path.join(folder, f)) for f in files)
    return total / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="paper")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=2, help="cold builds (each in a new cache)")
    args = parser.parse_args()
    print(f"scenario {args.scenario}, seed {args.seed}, {os.cpu_count()} CPUs")
    for attempt in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="mb-bench-") as cache_dir:
            wall = time.perf_counter()
            cold = _phase(args.scenario, args.seed, cache_dir)
            wall = time.perf_counter() - wall
            warm = _phase(args.scenario, args.seed, cache_dir)
            print(
                f"run {attempt + 1}: cold build+save {cold['seconds']:.2f} s "
                f"(process {wall:.2f} s, imports {cold['import_seconds']:.2f} s), "
                f"peak RSS {cold['max_rss_mib']:.0f} MiB | warm load {warm['seconds']:.3f} s "
                f"(imports {warm['import_seconds']:.2f} s), RSS {warm['max_rss_mib']:.0f} MiB | "
                f"cache {_cache_size_mib(cache_dir):.0f} MiB"
            )


if __name__ == "__main__":
    main()

"""Start-up time of the `execute_code` sandbox, for docs/performance.md.

The median wall time of `--runs` snippets (`1 + 1`, and `import numpy`) in the bubblewrap
sandbox as the harness runs it: with its cgroup where this machine can make one, and without
(the same sandbox otherwise, system-call filter included), to show what the whole-sandbox
bounds cost per snippet.

    uv run python benchmarks/bench_sandbox.py [--runs 30]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time

from merchantbench.agents.llm import sandbox
from merchantbench.agents.llm.sandbox import CodeRunner
from merchantbench.agents.llm.sandbox_cgroup import cgroup_support

SNIPPETS = {"1 + 1": "1 + 1", "import numpy": "import numpy\nnumpy.__version__"}


async def _median(code: str, runs: int) -> float:
    runner = CodeRunner()
    await runner.run(code)  # the runtime tree and the page cache, once
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        execution = await runner.run(code)
        times.append(time.perf_counter() - started)
        if execution.error_code is not None:
            raise SystemExit(f"the snippet failed: {execution.error_message}")
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30, help="snippets per measurement")
    args = parser.parse_args()
    now = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"load average {os.getloadavg()[0]:.1f}, {now}; cgroup: {cgroup_support()[1]}")
    support = cgroup_support()
    modes = (
        {"cgroup": support, "no cgroup": (None, "off")} if support[0] else {"no cgroup": support}
    )
    for label, code in SNIPPETS.items():
        for mode, chosen in modes.items():
            sandbox.cgroup_support = lambda chosen=chosen: chosen  # type: ignore[misc]
            seconds = asyncio.run(_median(code, args.runs))
            print(f"{label:>14}  {mode:>9}  median {seconds:.3f} s")


if __name__ == "__main__":
    main()

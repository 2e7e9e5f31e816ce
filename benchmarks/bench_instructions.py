"""Instructions executed by one warm 365-day rule-based run on `paper`, counted by callgrind.

CPU time on a shared machine moves by tens of percent between back-to-back runs; the number of
instructions does not (about ±1 % between runs, from hash seeds and allocation). It is not time
(cache misses are not counted), so use it beside `bench_run.py`'s CPU time, for comparing two
versions of the code, not as a speed of its own. Needs valgrind (`apt-get install valgrind`).

    uv run python benchmarks/bench_instructions.py [--scenario paper] [--seed 1]

The script runs itself under `valgrind --tool=callgrind --instr-atstart=no`, warms the market,
index and memos with one run, switches counting on (`callgrind_control -i on`) for a second run
only, and prints that run's total.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

_INSIDE = "MERCHANTBENCH_UNDER_CALLGRIND"


def counted_run(scenario_name: str, seed: int) -> None:
    """Inside valgrind: a warm-up run, then one run with counting on."""
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_run import timed_run
    from merchantbench.catalog.cache import get_market, get_search_index
    from merchantbench.scenario import load_scenario

    scenario = load_scenario(scenario_name)
    market = get_market(scenario, seed)
    index = get_search_index(scenario, seed, market)
    timed_run(scenario, market, index, seed)
    pid = str(os.getpid())
    subprocess.run(["callgrind_control", "-i", "on", pid], check=True, capture_output=True)
    timed_run(scenario, market, index, seed)
    subprocess.run(["callgrind_control", "-i", "off", pid], check=True, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="paper")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if os.environ.get(_INSIDE):
        counted_run(args.scenario, args.seed)
        return
    missing = [tool for tool in ("valgrind", "callgrind_control") if shutil.which(tool) is None]
    if missing:
        sys.exit(f"bench_instructions: {', '.join(missing)} not found (apt-get install valgrind)")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        command = [
            "valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
            sys.executable, __file__, "--scenario", args.scenario, "--seed", str(args.seed),
        ]  # fmt: skip
        env = {**os.environ, _INSIDE: "1", "PYTHONHASHSEED": "0"}
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        if done.returncode != 0 or not out.exists():
            sys.exit(f"bench_instructions: valgrind failed: {done.stderr.strip()[-300:]}")
        summary = out.read_text(errors="replace")
    found = re.search(r"^totals:\s*(\d+)", summary, re.MULTILINE)
    if found is None:
        sys.exit("bench_instructions: no totals line in callgrind's output")
    total = int(found.group(1))
    print(
        f"365-day rule-based run on {args.scenario} seed {args.seed}, warm: "
        f"{total:,} instructions ({total / 1e9:.2f} G)"
    )


if __name__ == "__main__":
    main()

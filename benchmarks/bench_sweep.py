"""Sweep benchmark: a grid of LLM runs in one process against the scripted server answering after
`--latency` seconds, like a model, against one such run alone.

The paper's shape is 16 configurations (8 models × react/hermes) × 3 seeds = 48 runs on `paper`,
the first 60 days:

    uv run python benchmarks/bench_sweep.py --scenario paper --days 60 --latency 1.0

A smaller shape for a loaded machine (the one recorded in docs/performance.md when the full one
could not be run):

    uv run python benchmarks/bench_sweep.py --scenario smoke --days 5 --latency 1.0

Prints JSON: wall time of the single run and of the grid, their ratio (goal ≤ 1.3), the process's
peak memory (goal ≤ 4 GiB) and the harness's CPU seconds per model call (process CPU time of the
grid divided by its model calls; the scripted server's threads are included, so this is an upper
bound).
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from pathlib import Path

from merchantbench.agents.llm.scripted_policy import store_policy
from merchantbench.agents.llm.scripted_server import ScriptedServer
from merchantbench.sweeps.driver import run_sweep
from merchantbench.sweeps.execute import LocalExecutor
from merchantbench.sweeps.index import read_index
from merchantbench.sweeps.spec import parse_sweep_text


def _sweep(root: Path, url: str, args: argparse.Namespace, models: int, seeds: int) -> float:
    entries = "".join(
        f'[m{i}]\nbase_url = "{url}"\nmodel = "scripted-{i}"\nprice_input = 1.0\n\n'
        for i in range(models)
    )
    (root / "models.toml").write_text(entries)
    text = (
        f'scenarios: [{{name: {args.scenario}, set: ["clock.days={args.days}"]}}]\n'
        f"models_file: models.toml\nmodels: [{', '.join(f'm{i}' for i in range(models))}]\n"
        f"harnesses: [{args.harnesses}]\nseeds: [{', '.join(str(s + 1) for s in range(seeds))}]\n"
        "max_concurrency: 64\n"
    )
    spec = parse_sweep_text(text, ".yaml")
    started = time.perf_counter()
    outcome = run_sweep(spec, root, root / "out", LocalExecutor(1))
    wall = time.perf_counter() - started
    assert not outcome.failed, outcome.failed
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="paper")
    parser.add_argument("--days", type=int, default=60)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--models", type=int, default=8)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--harnesses", default="react, hermes")
    args = parser.parse_args()
    with ScriptedServer(store_policy, latency=args.latency, keep_requests=False) as server, \
            tempfile.TemporaryDirectory() as tmp:  # fmt: skip
        single_root, grid_root = Path(tmp) / "one", Path(tmp) / "grid"
        single_root.mkdir()
        grid_root.mkdir()
        single_args = argparse.Namespace(**{**vars(args), "harnesses": "react"})
        single = _sweep(single_root, server.base_url, single_args, 1, 1)
        cpu_before = time.process_time()
        grid = _sweep(grid_root, server.base_url, args, args.models, args.seeds)
        cpu = time.process_time() - cpu_before
        rows = read_index(grid_root / "out")
        calls = sum(r["llm_calls"] or 0 for r in rows)
    print(json.dumps({
        "shape": f"{args.models * len(args.harnesses.split(','))} configurations × {args.seeds} "
                 f"seeds on {args.scenario}, {args.days} days, latency {args.latency} s",
        "runs": len(rows), "model_calls": calls,
        "single_run_seconds": round(single, 1), "grid_seconds": round(grid, 1),
        "ratio": round(grid / single, 2),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "cpu_ms_per_model_call": round(1000 * cpu / max(calls, 1), 2),
    }, indent=2, ensure_ascii=False))  # fmt: skip


if __name__ == "__main__":
    main()

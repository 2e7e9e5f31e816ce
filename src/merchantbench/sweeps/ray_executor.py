"""The Ray executor (`merchantbench sweep --executor ray [--address ADDR]`; extra `ray`).

Each CPU run is one Ray task (one CPU). LLM runs are split into groups, one task per group, and
each group's task serves all its runs from one event loop, so a worker waits on many model calls
at once; the sweep's and each models-file entry's `max_concurrency` are divided evenly among the
groups. Workers build markets through the on-disk cache (`merchantbench.catalog.cache`), which
is shared by every worker of a machine: a market is built once per node.

Runs write their records, progress files and the index into the sweep directory, which must be
on a filesystem every node mounts at the same path (NFS, a cluster filesystem; one machine
trivially). The budget gate reads that directory too, so it works on every worker. An agent of
your own is found the same way: a file target by its absolute path, a module target on the
`sys.path` entry the driver found it on, which each task puts on the worker's `sys.path`.
"""

from __future__ import annotations

import asyncio
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# Workers run this interpreter, not `uv run` (which would drop the `ray` extra); read when
# Ray is imported.
os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")

import ray  # noqa: E402

from merchantbench.agents.load import add_import_roots, import_root
from merchantbench.sweeps.budget import Result, RunGate
from merchantbench.sweeps.execute import Todo, entry_caps
from merchantbench.sweeps.plan import SweepRun
from merchantbench.sweeps.worker import execute_group, execute_one


def _one_task(roots: list[str], *args: Any) -> Result:
    add_import_roots(roots)
    return execute_one(*args)


def _group_task(roots: list[str], *args: Any) -> list[Result]:
    add_import_roots(roots)
    return execute_group(*args)


_one = ray.remote(num_cpus=1)(_one_task)
_group = ray.remote(num_cpus=1)(_group_task)


def import_roots(runs: Sequence[SweepRun]) -> list[str]:
    """Where the driver found the modules of the sweep's own agents (module targets)."""
    found = (import_root(name) for name in sorted({a for run in runs for a in run.agents}))
    return sorted({root for root in found if root is not None})


def _groups(llm: Sequence[Todo], workers: int) -> list[list[Todo]]:
    """LLM runs dealt round-robin into at most `workers` groups."""
    count = max(1, min(len(llm), workers))
    return [list(llm[i::count]) for i in range(count)] if llm else []


class RayExecutor:
    """Runs a sweep's runs as Ray tasks on the cluster at `address` (or a local one)."""

    def __init__(self, address: str | None = None) -> None:
        self.address = address

    def _connect(self) -> int:
        if not ray.is_initialized():
            if self.address is None:  # a local cluster on a loaded machine starts slowly
                os.environ.setdefault("RAY_raylet_start_wait_time_s", "300")
                os.environ.setdefault("RAY_agent_register_timeout_ms", "300000")
                os.environ.setdefault("RAY_worker_register_timeout_seconds", "600")
            ray.init(address=self.address, include_dashboard=False, log_to_driver=False)
        return max(1, int(ray.cluster_resources().get("CPU", 1)))

    async def execute(
        self, todo: Sequence[Todo], sweep_dir: Path, max_concurrency: int, gate: RunGate
    ) -> list[tuple[SweepRun, Result]]:
        cpus = self._connect()
        plan, budget, where = gate.runs, gate.spending.budget, str(sweep_dir)
        roots = import_roots(plan)
        pending: dict[Any, list[SweepRun]] = {}
        for item in (t for t in todo if not t.run.is_llm):
            task = _one.remote(roots, item.run, where, item.resume, plan, budget)
            pending[task] = [item.run]
        groups = _groups([t for t in todo if t.run.is_llm], cpus)
        for group in groups:
            caps = {k: max(1, v // len(groups)) for k, v in entry_caps(group).items()}
            cap = max(1, math.ceil(max_concurrency / len(groups)))
            pairs = [(t.run, t.resume) for t in group]
            task = _group.remote(roots, pairs, where, caps, cap, plan, budget)
            pending[task] = [t.run for t in group]
        for runs in pending.values():
            for run in runs:
                if gate.on_event:
                    gate.on_event("start", run)
        return await asyncio.to_thread(self._collect, pending, gate)

    @staticmethod
    def _collect(
        pending: dict[Any, list[SweepRun]], gate: RunGate
    ) -> list[tuple[SweepRun, Result]]:
        results: list[tuple[SweepRun, Result]] = []
        waiting = list(pending)
        while waiting:
            ready, waiting = ray.wait(waiting, num_returns=1)
            answer = ray.get(ready[0])
            runs = pending[ready[0]]
            answers: list[Result] = answer if isinstance(answer, list) else [answer]
            for run, result in zip(runs, answers, strict=True):
                results.append((run, result))
                if gate.on_event:
                    gate.on_event("end", run)
        return results

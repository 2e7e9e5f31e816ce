"""Where takeovers run: in this process, in a local process pool (`runs/pool.py`, whose
workers end with this process), or as Ray tasks (extra `ray`; `--executor ray [--address]`).

Every executor takes the tasks as an iterator and yields each task with its result as it
completes; the analysis hands it one round of tasks at a time (counterfactual/rounds.py).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import Protocol

from merchantbench.counterfactual.takeover import Takeover, TakeoverTask, run_takeover
from merchantbench.runs.pool import worker_pool

Done = tuple[TakeoverTask, Takeover]


class TakeoverExecutor(Protocol):
    def run(self, tasks: Iterable[TakeoverTask]) -> Iterator[Done]: ...


class InProcess:
    """One takeover after another, in this process."""

    def run(self, tasks: Iterable[TakeoverTask]) -> Iterator[Done]:
        for task in tasks:
            yield task, run_takeover(task)


class LocalPool:
    """`jobs` worker processes (at most `jobs` takeovers in flight; the replay waits while
    they are busy, so no more snapshots are held than there are workers to take them)."""

    def __init__(self, jobs: int) -> None:
        self.jobs = max(1, jobs)

    def run(self, tasks: Iterable[TakeoverTask]) -> Iterator[Done]:
        with worker_pool(self.jobs) as pool:
            running: dict[Future[Takeover], TakeoverTask] = {}
            for task in tasks:
                running[pool.submit(run_takeover, task)] = task
                while len(running) >= 2 * self.jobs:
                    yield from self._collect(running)
            while running:
                yield from self._collect(running)

    @staticmethod
    def _collect(running: dict[Future[Takeover], TakeoverTask]) -> Iterator[Done]:
        done, _ = wait(list(running), return_when=FIRST_COMPLETED)
        for future in done:
            yield running.pop(future), future.result()


class RayTasks:
    """Each takeover a Ray task of one CPU on the cluster at `address` (or a local one).
    Workers read markets from the on-disk cache, as the sweep's Ray executor does."""

    def __init__(self, address: str | None = None) -> None:
        self.address = address

    def run(self, tasks: Iterable[TakeoverTask]) -> Iterator[Done]:
        # Workers run this interpreter, not `uv run` (which would drop the `ray` extra).
        os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
        import ray

        if not ray.is_initialized():
            ray.init(address=self.address, include_dashboard=False, log_to_driver=False)
        remote = ray.remote(num_cpus=1)(run_takeover)
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        running: dict[object, TakeoverTask] = {}

        def collect() -> Iterator[Done]:
            ready, _ = ray.wait(list(running), num_returns=1)
            for ref in ready:
                yield running.pop(ref), ray.get(ref)

        for task in tasks:
            running[remote.remote(task)] = task
            while len(running) >= 2 * cpus:
                yield from collect()
        while running:
            yield from collect()


def executor_of(name: str, jobs: int, address: str | None = None) -> TakeoverExecutor:
    """The executor `local` (`jobs` processes; 1: this process) or `ray`."""
    if name == "ray":
        return RayTasks(address)
    return LocalPool(jobs) if jobs > 1 else InProcess()

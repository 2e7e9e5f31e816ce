"""Run a sweep's plan: skip finished runs, resume killed ones, start new ones within budget.

The local executor (the default) runs CPU agents in `jobs` worker processes (which end with the
driver: `merchantbench.runs.pool`) and every LLM run in the driver's own event loop, under the
sweep's `max_concurrency` and each models-file entry's `max_concurrency`, so dozens of model
runs wait on their endpoints together without a thread or process each. The Ray executor
(`merchantbench.sweeps.ray_executor`) takes the same `Todo`s.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from merchantbench.catalog.cache import get_market
from merchantbench.runs.aside import clear_for_start, move_aside
from merchantbench.runs.identity import write_identity
from merchantbench.runs.pool import worker_pool
from merchantbench.sweeps.budget import Result, RunGate
from merchantbench.sweeps.plan import SweepRun
from merchantbench.sweeps.state import FAILURE_FILE, note_set_aside, progress_path, run_state
from merchantbench.sweeps.worker import execute_group_async, execute_run


@dataclass(frozen=True)
class Todo:
    """A run to execute and whether it resumes from a checkpoint."""

    run: SweepRun
    resume: bool


@dataclass
class SweepOutcome:
    """What one invocation of a sweep did, by run name."""

    skipped: list[str] = field(default_factory=list)  # finished before
    finished: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # reason
    not_retried: dict[str, str] = field(default_factory=dict)  # failed before; no --retry-failed
    damaged: dict[str, str] = field(default_factory=dict)  # unreadable; kept as it is
    set_aside: dict[str, tuple[Path, str]] = field(default_factory=dict)  # where to, and why
    not_started: list[str] = field(default_factory=list)  # the budget was spent
    budget_reason: str | None = None

    def add(self, run: SweepRun, result: Result) -> None:
        ending, reason = result
        if ending == "finished":
            self.finished.append(run.name)
        elif ending == "failed":
            self.failed[run.name] = reason or "unknown"
        else:
            self.not_started.append(run.name)
            self.budget_reason = reason


SetAsideHook = Callable[[str, Path, str], None]  # run name, where its record went, why


def prepare(
    runs: Sequence[SweepRun],
    sweep_dir: Path,
    retry_failed: bool,
    out: SweepOutcome,
    on_set_aside: SetAsideHook | None = None,
) -> list[Todo]:
    """Classify every run and get its directory ready; return the runs to execute.

    No record is ever deleted: one of another identity, or one that cannot be read (retried on
    request only), is moved aside (`merchantbench.runs.aside`) and listed in `out.set_aside`.
    """
    todo = []
    for run in runs:
        state, run_dir = run_state(run, sweep_dir), run.run_dir(sweep_dir)
        if state.status == "done":
            out.skipped.append(run.name)
            continue
        if state.status in ("failed", "damaged") and not retry_failed:
            kept = out.damaged if state.status == "damaged" else out.not_retried
            kept[run.name] = state.reason or "unknown"
            continue
        aside: Path | None = None
        if state.status in ("stale", "damaged"):
            aside = move_aside(run_dir, "stale" if state.status == "stale" else "damaged")
        resume = state.status in ("killed", "failed") and (run_dir / run.record_file).is_file()
        if not resume:
            aside = clear_for_start(run_dir) or aside
            write_identity(run_dir, run.identity())
        if aside is not None:
            reason = "another identity" if state.status == "stale" else state.reason
            out.set_aside[run.name] = (aside, reason or "not a run record")
            note_set_aside(sweep_dir, run, aside, out.set_aside[run.name][1])
            if on_set_aside is not None:
                on_set_aside(run.name, aside, out.set_aside[run.name][1])
        (run_dir / FAILURE_FILE).unlink(missing_ok=True)
        progress_path(run, sweep_dir).unlink(missing_ok=True)
        todo.append(Todo(run, resume))
    return todo


def entry_caps(todo: Sequence[Todo]) -> dict[str, int]:
    """Each models-file entry's `max_concurrency`, where it sets one."""
    return {
        t.run.model_entry: t.run.max_concurrency
        for t in todo
        if t.run.model_entry and t.run.max_concurrency
    }


def warm_markets(todo: Sequence[Todo]) -> None:
    """Build each needed market once (cached on disk per machine) before runs share it."""
    first: dict[tuple[str, int], SweepRun] = {}
    for t in todo:
        if not t.run.sealed:  # a sealed run's market is its own, built when it starts
            first.setdefault((t.run.scenario.content_hash, t.run.seed), t.run)
    for run in first.values():
        get_market(run.scenario, run.seed)


class Executor(Protocol):
    async def execute(
        self, todo: Sequence[Todo], sweep_dir: Path, max_concurrency: int, gate: RunGate
    ) -> list[tuple[SweepRun, Result]]: ...


class LocalExecutor:
    """CPU runs in `jobs` worker processes, LLM runs in this event loop."""

    def __init__(self, jobs: int = 1) -> None:
        self.jobs = max(jobs, 1)

    async def execute(
        self, todo: Sequence[Todo], sweep_dir: Path, max_concurrency: int, gate: RunGate
    ) -> list[tuple[SweepRun, Result]]:
        cpu = [t for t in todo if not t.run.is_llm]
        llm = [t for t in todo if t.run.is_llm]
        loop = asyncio.get_running_loop()
        slots = asyncio.Semaphore(self.jobs)
        with worker_pool(self.jobs) as pool:  # workers end with this process

            async def cpu_run(item: Todo) -> tuple[SweepRun, Result]:
                async with slots:
                    spent = gate.may_start(item.run)
                    if spent is not None:
                        return item.run, ("not_started", spent)
                    error = await loop.run_in_executor(
                        pool, execute_run, item.run, str(sweep_dir), item.resume
                    )
                    gate.ended(item.run)
                    return item.run, ("finished", None) if error is None else ("failed", error)

            pairs = [(t.run, t.resume) for t in llm]
            cpu_results, llm_results = await asyncio.gather(
                asyncio.gather(*(cpu_run(t) for t in cpu)),
                execute_group_async(pairs, sweep_dir, entry_caps(llm), max_concurrency, gate),
            )
        return [*cpu_results, *zip([t.run for t in llm], llm_results, strict=True)]

"""One run of a sweep, wherever it executes (the driver's event loop, a process, a Ray worker).

A run holds an exclusive lock on `SWEEP_DIR/locks/<label>/s<seed>.lock` while it writes its
directory, so a run left going by a killed driver (a worker process, a Ray task) and its
resumption never write the same record at once. A failure never escapes: it is recorded (in
run.json by the runner, or in failure.json when the run could not start) and returned as text.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from merchantbench.runs.runner import run_agent_async
from merchantbench.sweeps.arena_cells import execute_arena_async
from merchantbench.sweeps.budget import Result, RunGate
from merchantbench.sweeps.plan import SweepRun
from merchantbench.sweeps.spec import Budget
from merchantbench.sweeps.state import ProgressWriter, progress_path, record_failure

LOCKS_DIR = "locks"
LOCK_WAIT_SECONDS = 300.0
LOCK_POLL_SECONDS = 0.2


class RunBusy(Exception):
    """Another process still writes this run."""


@contextmanager
def _locked(path: Path, wait: float) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise RunBusy(f"{path} is held by another process") from None
                time.sleep(LOCK_POLL_SECONDS)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def lock_path(run: SweepRun, sweep_dir: Path) -> Path:
    return sweep_dir / LOCKS_DIR / run.label / f"{run.slot}.lock"


async def execute_run_async(run: SweepRun, sweep_dir: Path, resume: bool) -> str | None:
    """Run (or resume) one run in this event loop; the failure's reason, or `None`."""
    run_dir = run.run_dir(sweep_dir)
    try:
        # An LLM run waits for the lock without blocking the loop's other runs.
        deadline = time.monotonic() + LOCK_WAIT_SECONDS
        while True:
            try:
                with _locked(lock_path(run, sweep_dir), 0.0):
                    if run.is_arena:
                        progress = progress_path(run, sweep_dir)
                        await execute_arena_async(run, run_dir, resume, progress)
                    else:
                        hook = ProgressWriter(run_dir, progress_path(run, sweep_dir))
                        await run_agent_async(
                            run.spec(run_dir), run_dir, resume, hook, transcript=run.transcript
                        )
                return None
            except RunBusy:
                if time.monotonic() >= deadline:
                    raise
                await asyncio.sleep(LOCK_POLL_SECONDS)
    except Exception as exc:  # a failed run is reported, the sweep goes on
        reason = f"{type(exc).__name__}: {' '.join(str(exc).split())}"
        record_failure(run_dir, reason, run.record_file)
        return reason


def execute_run(run: SweepRun, sweep_dir: str, resume: bool) -> str | None:
    """Run one run to its end in this process (a pool worker); the failure's reason or `None`."""
    return asyncio.run(execute_run_async(run, Path(sweep_dir), resume))


async def gated_run(run: SweepRun, sweep_dir: Path, resume: bool, gate: RunGate) -> Result:
    """One run if the budget allows it; the index is rewritten when it ends."""
    spent = gate.may_start(run)
    if spent is not None:
        return ("not_started", spent)
    error = await execute_run_async(run, sweep_dir, resume)
    gate.ended(run)
    return ("finished", None) if error is None else ("failed", error)


async def execute_group_async(
    runs: Sequence[tuple[SweepRun, bool]],
    sweep_dir: Path,
    caps: dict[str, int],
    total_cap: int,
    gate: RunGate,
) -> list[Result]:
    """Many LLM runs in one event loop, under per-endpoint and total concurrency caps."""
    total = asyncio.Semaphore(total_cap)
    endpoint = {key: asyncio.Semaphore(cap) for key, cap in caps.items()}

    async def one(run: SweepRun, resume: bool) -> Result:
        gate_of_entry = endpoint.get(run.model_entry or "")
        async with total:
            if gate_of_entry is None:
                return await gated_run(run, sweep_dir, resume, gate)
            async with gate_of_entry:
                return await gated_run(run, sweep_dir, resume, gate)

    return list(await asyncio.gather(*(one(run, resume) for run, resume in runs)))


def execute_group(
    runs: list[tuple[SweepRun, bool]],
    sweep_dir: str,
    caps: dict[str, int],
    total_cap: int,
    plan: list[SweepRun],
    budget: Budget,
) -> list[Result]:
    """`execute_group_async` in a fresh event loop (a Ray worker's), with its own file-based
    gate over the shared sweep directory."""
    gate = RunGate(plan, Path(sweep_dir), budget)
    return asyncio.run(execute_group_async(runs, Path(sweep_dir), caps, total_cap, gate))


def execute_one(
    run: SweepRun, sweep_dir: str, resume: bool, plan: list[SweepRun], budget: Budget
) -> Result:
    """One gated run in this process (a pool worker or a Ray task)."""
    gate = RunGate(plan, Path(sweep_dir), budget)
    return asyncio.run(gated_run(run, Path(sweep_dir), resume, gate))

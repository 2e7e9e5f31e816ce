"""`run_sweep`: plan, prepare, execute and index a sweep (the body of `merchantbench sweep`)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from rich.console import Console

from merchantbench.sweeps.budget import OnEvent, Result, RunGate, Spending
from merchantbench.sweeps.display import SweepDisplay, show
from merchantbench.sweeps.execute import (
    Executor,
    SetAsideHook,
    SweepOutcome,
    Todo,
    prepare,
    warm_markets,
)
from merchantbench.sweeps.index import write_index
from merchantbench.sweeps.plan import SweepRun, plan_sweep, write_plan
from merchantbench.sweeps.spec import SweepFile


def run_sweep(
    sweep: SweepFile,
    base: Path,
    sweep_dir: Path,
    executor: Executor,
    retry_failed: bool = False,
    console: Console | None = None,
    on_set_aside: SetAsideHook | None = None,
) -> SweepOutcome:
    """Run every run of `sweep` not finished yet into `sweep_dir`; return what happened.

    Args:
        sweep: The parsed sweep file.
        base: Directory relative paths of the sweep file are read from.
        sweep_dir: The sweep's directory (created).
        executor: `LocalExecutor` or `RayExecutor`.
        retry_failed: Run again (resuming where possible) runs that failed before.
        console: Where to show live progress; `None` shows none.
        on_set_aside: Told of each record moved aside (never deleted) before runs start.

    Raises:
        SweepPlanError: The sweep cannot be planned (one-line reason).
    """
    runs = plan_sweep(sweep, base)
    sweep_dir.mkdir(parents=True, exist_ok=True)
    write_plan(sweep_dir, sweep, runs)
    outcome = SweepOutcome()
    todo = prepare(runs, sweep_dir, retry_failed, outcome, on_set_aside)
    write_index(runs, sweep_dir)
    warm_markets(todo)
    display = None
    if console is not None:
        display = SweepDisplay(len(runs), len(outcome.skipped), sweep_dir,
                               Spending(sweep_dir, sweep.budget))  # fmt: skip
    events: OnEvent | None = display.on_event if display else None
    gate = RunGate(runs, sweep_dir, sweep.budget, events)
    results = asyncio.run(_execute(executor, todo, sweep_dir, sweep, gate, display, console))
    for run, result in results:
        outcome.add(run, result)
    write_index(runs, sweep_dir)
    return outcome


async def _execute(
    executor: Executor,
    todo: list[Todo],
    sweep_dir: Path,
    sweep: SweepFile,
    gate: RunGate,
    display: SweepDisplay | None,
    console: Console | None,
) -> list[tuple[SweepRun, Result]]:
    """Execute the runs, refreshing the display (if any) meanwhile."""
    work = asyncio.ensure_future(executor.execute(todo, sweep_dir, sweep.max_concurrency, gate))
    if display is not None and console is not None:
        await show(display, console, work)
    return await work


__all__ = ["SweepRun", "run_sweep"]

"""Drive one in-process agent through a whole run, window by window, on a `RunLifecycle`
(runs/lifecycle.py: the record, its checkpoints and its resumption)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from merchantbench.agents.base import BaseAgent
from merchantbench.runs.lifecycle import CheckpointPolicy, RunLifecycle
from merchantbench.runs.spec import RunError, RunSpec, default_run_dir
from merchantbench.session import Session

__all__ = [
    "CheckpointPolicy",
    "ProgressHook",
    "RunError",
    "RunSpec",
    "default_run_dir",
    "play_lifecycle",
    "play_windows",
    "run_agent",
    "run_agent_async",
]

ProgressHook = Callable[[Session], None]


async def play_windows(
    agent: BaseAgent,
    session: Session,
    on_window: ProgressHook | None = None,
    between: Callable[[], object] | None = None,
) -> None:
    """Let `agent` play `session` (a session without a record: a counterfactual takeover)
    window by window until the run is over: a window the agent leaves open is closed for it
    (recorded as forced). After each window `on_window(session)`, then, unless the run is
    over, `between()`. A run with a record is played by its lifecycle (`play_window`)."""
    while not session.over:
        window = session.window
        await agent.act_async(session.surface)
        if not session.over and session.window == window:
            session.force_end_of_step()
        if on_window is not None:
            on_window(session)
        if not session.over and between is not None:  # the last window: finished by the host
            between()


def run_agent(
    spec: RunSpec,
    run_dir: Path,
    resume: bool = False,
    on_window: ProgressHook | None = None,
    checkpoints: CheckpointPolicy | None = None,
    allow_code_change: bool = False,
    transcript: bool = True,
    report: bool = False,
) -> dict[str, Any]:
    """Run (or resume) a whole run and return its metrics (blocking)."""
    return asyncio.run(
        run_agent_async(
            spec, run_dir, resume, on_window, checkpoints, allow_code_change, transcript, report
        )
    )


async def run_agent_async(
    spec: RunSpec,
    run_dir: Path,
    resume: bool = False,
    on_window: ProgressHook | None = None,
    checkpoints: CheckpointPolicy | None = None,
    allow_code_change: bool = False,
    transcript: bool = True,
    report: bool = False,
) -> dict[str, Any]:
    """Run (or resume) a whole run and return its metrics. Agents are awaited window by window
    (`act_async`), so many LLM runs can share one event loop. `checkpoints`,
    `allow_code_change` and `transcript`: see `RunLifecycle.open`; `report`: write the report
    into the run directory once it finished (`RunLifecycle.write_report`)."""
    life = RunLifecycle.open(
        spec, run_dir, resume=resume, checkpoints=checkpoints,
        allow_code_change=allow_code_change, transcript=transcript,
    )  # fmt: skip
    return await play_lifecycle(life, on_window, report)


async def play_lifecycle(
    life: RunLifecycle, on_window: ProgressHook | None = None, report: bool = False
) -> dict[str, Any]:
    """Play an opened lifecycle's in-process agent to the end of the run and finish the record
    (the last window is finished once the agent is closed); returns the metrics. `report`:
    write the run's report too (`RunLifecycle.write_report`)."""
    session = life.session
    hook = None if on_window is None else lambda _market: on_window(session)
    await life.play(hook)
    if report:
        life.write_report()
    assert life.metrics is not None
    return life.metrics

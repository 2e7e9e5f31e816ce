"""`fork_run`: a fork of a run record, continued by an agent under the same seed.

A fork is a normal run record (docs/run-record.md) whose `run.json` has a `fork` key naming its
parent and fork window. Its trace (and transcript, if the parent has one) holds the parent's
entries up to the opening of the fork window, then the continuation's. The session at the fork
window comes from one replay of the parent's trace (`merchantbench.replay`). The continuing
agent is either

- another policy (or the same one with other settings), built fresh and handed the store with
  `BaseAgent.take_over`; or
- the parent's own agent with its own settings: its memory is rebuilt by playing it again from
  window 0 in lock-step with the parent's trace up to the fork window (every trace entry must
  be the parent's, byte for byte, and the state hash at the fork window the replay's), so the
  fork reproduces the parent's record from the fork window on. An agent that called a model
  cannot be rebuilt this way: continue such a run with another agent.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from merchantbench.agents.base import BaseAgent
from merchantbench.agents.registry import agent_entry, make_agent
from merchantbench.counterfactual.parent import ForkError, Parent
from merchantbench.record.manifest import ForkRef
from merchantbench.record.schema import TRACE_FILE
from merchantbench.replay import ReplayError, restore
from merchantbench.runs.lifecycle import CheckpointPolicy, ForkStart, RunLifecycle
from merchantbench.runs.runner import ProgressHook, play_lifecycle
from merchantbench.runs.spec import RunSpec
from merchantbench.session import Session

__all__ = ["ForkError", "continues_itself", "fork_run", "fork_spec", "rebuild_agent"]


class _Diverged(Exception):
    pass


def _trace_lines(path: Path) -> Iterator[bytes]:
    with open(path, "rb") as trace:
        yield from trace


def rebuild_agent(parent: Parent, window: int, state_hash: str) -> BaseAgent:
    """The parent's agent as it stood at the opening of `window`: built from its recorded
    settings and played from window 0 on a session of its own, every trace entry checked
    against the parent's, and the state hash at `window` against the replay's (`state_hash`).

    Raises:
        ForkError: the agent calls a model, or does not play its run again identically.
    """
    if parent.plays_a_model:
        raise ForkError(
            f"{parent.agent!r} called a model: its memory cannot be rebuilt by playing it "
            "again; continue the run with another agent (--agent)"
        )
    lines = _trace_lines(parent.run_dir / TRACE_FILE)

    def check(entry: dict[str, Any]) -> None:
        mine = json.dumps(entry, separators=(",", ":"), allow_nan=False).encode() + b"\n"
        if next(lines, None) != mine:
            raise _Diverged(entry["seq"])

    session = Session.open(parent.scenario, parent.seed, parent.catalog, trace_sink=check)
    hidden = session.market if agent_entry(parent.agent).privileged else None
    agent = make_agent(parent.agent, parent.agent_settings, hidden_market=hidden)

    async def rehearse() -> None:
        while session.window < window and not session.over:
            before = session.window
            await agent.act_async(session.surface)
            if not session.over and session.window == before:
                session.force_end_of_step()

    try:
        asyncio.run(rehearse())
    except _Diverged as diverged:
        raise ForkError(
            f"{parent.agent!r} does not play {parent.run_dir} again identically (trace entry "
            f"{diverged.args[0]} differs): its memory cannot be rebuilt; continue the run "
            "with another agent (--agent)"
        ) from None
    if session.window != window or session.state_hash() != state_hash:
        raise ForkError(
            f"{parent.agent!r} played {parent.run_dir} again to a state other than the "
            f"replay's at window {window}"
        )
    return agent


def fork_spec(parent: Parent, agent: str | None, settings: dict[str, Any] | None) -> RunSpec:
    """The spec of a fork continued by `agent` (default: the parent's) with `settings`
    (default: the parent's own when the agent is the parent's, else the agent's defaults)."""
    name = agent or parent.agent
    if settings is None:
        settings = parent.agent_settings if name == parent.agent else {}
    return RunSpec(name, parent.scenario, parent.seed, settings, parent.catalog)


def continues_itself(parent: Parent, spec: RunSpec) -> bool:
    """Whether the fork's agent is the parent's own, with its own settings."""
    return spec.agent == parent.agent and spec.agent_settings == parent.agent_settings


def fork_run(
    parent: Parent,
    window: int,
    spec: RunSpec,
    out: Path,
    *,
    fresh_agent: bool = False,
    on_window: ProgressHook | None = None,
    checkpoints: CheckpointPolicy | None = None,
    transcript: bool = True,
) -> dict[str, Any]:
    """Fork `parent` at the opening of `window`, continue it with `spec`'s agent to the end of
    the run and return the fork's metrics. The parent's own agent is rebuilt (module
    docstring) unless `fresh_agent`; any other starts fresh and takes the store over.

    Raises:
        ForkError: the window is outside the record, the replay fails, or the agent cannot be
            rebuilt.
        RunError: the fork's run cannot start (e.g. `out` is not empty).
    """
    parent.check_window(window)
    try:
        session = restore(parent.run_dir, window, seed=parent.seed, fast=True)
    except ReplayError as exc:
        raise ForkError(f"cannot restore {parent.run_dir} at window {window}: {exc}") from None
    rebuilt = None
    if continues_itself(parent, spec) and not fresh_agent:
        rebuilt = rebuild_agent(parent, window, session.state_hash())
    ref = ForkRef(
        parent=str(parent.run_dir),
        parent_state_hash=parent.manifest.state_hash,
        parent_agent=parent.agent,
        window=window,
        day=session.status().day - 1,
        fresh_agent=rebuilt is None,
    )
    start = ForkStart(session.snapshot(), parent.run_dir, ref, rebuilt)
    life = RunLifecycle.open(spec, out, checkpoints=checkpoints, transcript=transcript, fork=start)
    return asyncio.run(play_lifecycle(life, on_window))

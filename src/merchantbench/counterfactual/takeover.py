"""One takeover without a record: the final net assets if a policy had run the store from a
window on. The unit of work of a counterfactual analysis (`TakeoverTask` → `Takeover`).

It is exactly the continuation of a fork (counterfactual/fork.py) by a fresh agent, without
writing a record: the same restored session, the same `take_over`, the same window loop
(`play_windows`), so its final net assets are those of the fork record's `run.json`
(tests/counterfactual/test_crn.py checks it).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from merchantbench.agents.registry import agent_entry, make_agent
from merchantbench.record.tables import final_accounts
from merchantbench.runs.runner import play_windows
from merchantbench.scenario import Scenario
from merchantbench.session import Session


@dataclass(frozen=True)
class Policy:
    """A takeover policy: an agent (built-in name or your own target) and its settings."""

    agent: str
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        if not self.settings:
            return self.agent
        shown = ",".join(f"{k}={v}" for k, v in sorted(self.settings.items()))
        return f"{self.agent}[{shown}]"


@dataclass(frozen=True)
class TakeoverTask:
    """Hand the store of `run` at the opening of `window` to `policy` and play it to the end of
    the run. The store is `session`, a `Session.snapshot()` at the opening of `window` (what
    the replay pass makes once per fork window, and what another process is sent)."""

    run: str  # the parent's run directory, as the analysis names it
    window: int
    day: int
    policy: Policy
    scenario: Scenario
    seed: int = field(repr=False)
    catalog: Path | None
    session: bytes = field(repr=False)
    keep: tuple[int, ...] = ()  # windows at whose opening the session is kept (`Takeover.kept`)
    handover: int | None = None  # the policy plays its own run until this window, then a
    # fresh copy of it takes over (the policy's natural drift at that window, onset.py)


@dataclass(frozen=True)
class Takeover:
    """What a takeover came to: net assets after draining (RMB), whether the store was
    closed, and the wall seconds it took."""

    final_net_assets: float
    closed: bool
    seconds: float
    kept: dict[int, bytes] = field(default_factory=dict, repr=False)


def _discard(entry: dict[str, Any]) -> None:
    """No record: the trace entries of a takeover are dropped."""


# The market and search index of the last takeover in this process, kept alive between tasks
# (the cache holds them only while a session does): a worker loads a market once, not per task.
_warm: list[object] = []


def _session_of(task: TakeoverTask) -> Session:
    session = Session.open(task.scenario, task.seed, task.catalog, trace_sink=_discard)
    session.restore(task.session)
    _warm[:] = [session.market, session.search_index]
    return session


def run_takeover(task: TakeoverTask) -> Takeover:
    """Play one takeover (module docstring); with `handover`, the policy first plays its own
    run to that window (no `take_over`: it built the store), then a fresh copy takes over."""
    started = time.perf_counter()
    session = _session_of(task)
    hidden = session.market if agent_entry(task.policy.agent).privileged else None
    kept: dict[int, bytes] = {}

    def keep(played: Session) -> None:
        if played.window in task.keep and not played.over:
            kept[played.window] = played.snapshot()

    async def play() -> None:
        if task.handover is not None:
            own = make_agent(task.policy.agent, task.policy.settings, hidden_market=hidden)
            try:
                own.take_over(session.surface)
                while not session.over and session.window < task.handover:
                    window = session.window
                    await own.act_async(session.surface)
                    if not session.over and session.window == window:
                        session.force_end_of_step()
            finally:
                await own.aclose()
        agent = make_agent(task.policy.agent, task.policy.settings, hidden_market=hidden)
        try:
            agent.take_over(session.surface)
            await play_windows(agent, session, keep if task.keep else None)
        finally:
            await agent.aclose()

    asyncio.run(play())
    accounts = final_accounts(session.engine)
    seconds = time.perf_counter() - started
    return Takeover(accounts["net_assets"], bool(session.engine.state.closed), seconds, kept)

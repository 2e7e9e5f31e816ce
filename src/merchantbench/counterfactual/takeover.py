"""One takeover without a record: the final net assets if a policy had run the store from a
window on. The unit of work of a counterfactual analysis (`TakeoverTask` → `Takeover`).

It is exactly the continuation of a fork (counterfactual/fork.py) by a fresh agent, without
writing a record: the same restored session, the same `take_over`, the same window loop
(`play_windows`), so its final net assets are those of the fork record's `run.json`
(tests/counterfactual/test_crn.py checks it).

A takeover can keep its store **and its agent** at the opening of some windows (`Kept`: the
session's snapshot and the agent pickled, as a checkpoint pickles it): the policy's own run
(its day-0 takeover) is kept at the fork windows, and `play_on` continues it from there to any
later window (a bisection day) instead of playing it again from day 0.
"""

from __future__ import annotations

import asyncio
import pickle
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from merchantbench.agents.base import BaseAgent
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
    keep: tuple[int, ...] = ()  # windows at whose opening store and agent are kept (`Kept`)


@dataclass(frozen=True)
class Kept:
    """A takeover's store and agent at the opening of a window: the session's snapshot and the
    agent pickled between windows (the checkpoint contract of agents/base.py; None when the
    agent does not pickle: then its play is continued from day 0)."""

    session: bytes = field(repr=False)
    agent: bytes | None = field(repr=False)


@dataclass(frozen=True)
class Takeover:
    """What a takeover came to: net assets after draining (RMB), whether the store was
    closed, and the wall seconds it took."""

    final_net_assets: float
    closed: bool
    seconds: float
    kept: dict[int, Kept] = field(default_factory=dict, repr=False)


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


def _pickled(agent: BaseAgent) -> bytes | None:
    try:
        return pickle.dumps(agent, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 — an agent that holds what does not pickle: not kept
        return None


def _agent_of(task: TakeoverTask, session: Session, blob: bytes | None) -> BaseAgent:
    """A fresh agent of the task's policy (handed the store: `take_over`), or the one `blob`
    pickled (it built the store: no `take_over`; a privileged one is handed the market)."""
    privileged = agent_entry(task.policy.agent).privileged
    if blob is None:
        hidden = session.market if privileged else None
        agent = make_agent(task.policy.agent, task.policy.settings, hidden_market=hidden)
        agent.take_over(session.surface)
        return agent
    agent = pickle.loads(blob)  # noqa: S301 — pickled by this analysis, in this run
    if privileged:
        agent.attach_hidden_market(session.market)
    return agent


def _played(task: TakeoverTask, play: Callable[[Session], Coroutine[Any, Any, None]]) -> Session:
    session = _session_of(task)
    asyncio.run(play(session))
    return session


def run_takeover(task: TakeoverTask) -> Takeover:
    """Play one takeover (module docstring), keeping store and agent at `task.keep`."""
    started = time.perf_counter()
    kept: dict[int, Kept] = {}

    async def play(session: Session) -> None:
        agent = _agent_of(task, session, None)

        def keep(played: Session) -> None:
            if played.window in task.keep and not played.over:
                kept[played.window] = Kept(played.snapshot(), _pickled(agent))

        try:
            await play_windows(agent, session, keep if task.keep else None)
        finally:
            await agent.aclose()

    session = _played(task, play)
    accounts = final_accounts(session.engine)
    seconds = time.perf_counter() - started
    return Takeover(accounts["net_assets"], bool(session.engine.state.closed), seconds, kept)


def play_on(task: TakeoverTask, kept: Kept | None, until: int) -> Kept | None:
    """Continue a takeover's own play from `kept` (store and agent at the opening of
    `task.window`; None: the task's session with a fresh agent handed it, as the takeover
    starts) to the opening of window `until`, and keep it there; None when the run ends
    before. The agent plays as in the takeover (`play_windows`' loop), so the store at `until`
    is the one the takeover reached (tests/counterfactual/test_shared_takeovers.py checks it
    against the play from day 0)."""
    state: list[Kept] = []
    restored = task if kept is None else replace(task, session=kept.session)

    async def play(session: Session) -> None:
        agent = _agent_of(task, session, None if kept is None else kept.agent)
        try:
            while not session.over and session.window < until:
                window = session.window
                await agent.act_async(session.surface)
                if not session.over and session.window == window:
                    session.force_end_of_step()
            if not session.over:
                state.append(Kept(session.snapshot(), _pickled(agent)))
        finally:
            await agent.aclose()

    _played(restored, play)
    return state[0] if state else None

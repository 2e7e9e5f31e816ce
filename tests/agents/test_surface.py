"""Every built-in agent, driven by the real runner, touches nothing but the agent surface."""

from __future__ import annotations

from typing import Any

import pytest

from merchantbench.agents.llm.scripted_policy import store_policy
from merchantbench.agents.llm.scripted_server import ScriptedServer
from merchantbench.agents.registry import agent_names
from merchantbench.runs.runner import CheckpointPolicy, RunSpec, run_agent
from merchantbench.scenario import load_scenario
from merchantbench.session import Session
from merchantbench.surface import SURFACE_MEMBERS, AgentSurface

SHORT = load_scenario("smoke", overrides=["clock.days=3"])
USED: dict[str, set[str]] = {}


class StrictSurface:
    """Passes the surface's members through and fails the run on anything else."""

    def __init__(self, real: AgentSurface, agent: str) -> None:
        object.__setattr__(self, "_real", real)
        object.__setattr__(self, "_agent", agent)

    def __getattribute__(self, name: str) -> Any:
        agent = object.__getattribute__(self, "_agent")
        if name not in SURFACE_MEMBERS:
            raise AssertionError(f"agent {agent!r} reached surface.{name}")
        USED.setdefault(agent, set()).add(name)
        return getattr(object.__getattribute__(self, "_real"), name)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AssertionError(f"an agent set surface.{name}")


# hermes-agent plays through MCP from its own process (tests/agents/test_hermes_agent.py).
@pytest.mark.parametrize("agent", [a for a in agent_names() if a != "hermes-agent"])
def test_each_agent_uses_the_surface_alone(agent, tmp_path, monkeypatch):
    def strict(session: Session) -> StrictSurface:
        return StrictSurface(AgentSurface(session), agent)

    monkeypatch.setattr(Session, "surface", property(strict))
    USED.pop(agent, None)
    settings: dict[str, Any] = {}
    with ScriptedServer(store_policy) as server:
        if agent in ("react", "hermes"):
            settings = {"model": "scripted", "base_url": server.base_url}
        # Checkpoints every 2 windows: an agent holding the surface would fail to pickle.
        metrics = run_agent(
            RunSpec(agent, SHORT, 1, settings),
            tmp_path / "run",
            checkpoints=CheckpointPolicy(windows=2),
        )
    assert metrics["windows"] == SHORT.clock.windows
    assert "call" in USED[agent]  # it did act, through the surface


def test_the_surface_offers_exactly_its_members():
    public = {name for name in dir(AgentSurface) if not name.startswith("_")}
    assert public == SURFACE_MEMBERS

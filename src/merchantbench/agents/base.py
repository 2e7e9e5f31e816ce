"""What an in-process agent is, and the table of built-in agents by name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from merchantbench.session import Session


class Agent(Protocol):
    """An agent acts in one window at a time through the session, and should close the window
    with `end_of_step`; if it does not, the runner closes it and records that it did. Agents
    are pickled into checkpoints, so they hold no session, file or socket between windows."""

    name: str

    def settings(self) -> dict[str, Any]:
        """What the run record should say about this agent's configuration."""
        ...

    def act(self, session: Session) -> None:
        """Make this window's calls. (An agent may instead define `async def act_async(session)`,
        which the runner awaits; the LLM harnesses do, so runs can share an event loop.)"""
        ...


AgentFactory = Callable[..., Agent]
_FACTORIES: dict[str, AgentFactory] = {}


def register_agent(name: str) -> Callable[[AgentFactory], AgentFactory]:
    def decorate(factory: AgentFactory) -> AgentFactory:
        _FACTORIES[name] = factory
        return factory

    return decorate


def agent_names() -> list[str]:
    _load_builtins()
    return sorted(_FACTORIES)


def make_agent(name: str, **settings: Any) -> Agent:
    """Build a registered agent; `KeyError` names the known ones."""
    _load_builtins()
    if name not in _FACTORIES:
        raise KeyError(f"unknown agent {name!r}; choose from {', '.join(sorted(_FACTORIES))}")
    return _FACTORIES[name](**settings)


def _load_builtins() -> None:
    # Importing these packages registers their agents (baselines; LLM harnesses).
    from merchantbench.agents import baselines, llm  # noqa: F401

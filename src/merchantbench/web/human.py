"""The person at the playground, as an agent of the registry: runs record it as `human`.

A person acts through the web pages, not through `act`: the playground (merchantbench.web.store)
opens the session with this agent and passes each click to the run's agent surface.
"""

from __future__ import annotations

from merchantbench.agents.base import AgentSettings, BaseAgent
from merchantbench.surface import AgentSurface

HUMAN_ORIGIN = "human"  # the trace origin of a person's environment calls


class HumanSettings(AgentSettings):
    """Which participant of a study plays (free text, never a secret)."""

    participant: str = ""


class HumanAgent(BaseAgent[HumanSettings]):
    """A participant of the human baseline; driven by the web playground."""

    name = "human"
    Settings = HumanSettings

    def act(self, surface: AgentSurface) -> None:
        raise RuntimeError(
            "the human agent is played in a browser: start it with `merchantbench play`"
        )

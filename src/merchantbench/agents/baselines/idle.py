"""`idle`: ends every window at once. Its net assets never move from the starting 3,000 RMB."""

from __future__ import annotations

from merchantbench.agents.base import AgentSettings, BaseAgent
from merchantbench.surface import AgentSurface


class IdleAgent(BaseAgent[AgentSettings]):
    name = "idle"

    def act(self, surface: AgentSurface) -> None:
        surface.call("end_of_step", {})

"""`idle`: ends every window at once. Its net assets never move from the starting 3,000 RMB."""

from __future__ import annotations

from typing import Any

from merchantbench.agents.base import register_agent
from merchantbench.session import Session


@register_agent("idle")
class IdleAgent:
    name = "idle"

    def settings(self) -> dict[str, Any]:
        return {}

    def act(self, session: Session) -> None:
        session.call("end_of_step", {})

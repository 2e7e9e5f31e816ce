"""The person at the playground: the driver of a run played in a browser, recorded as `human`.

A person acts through the web pages: the playground (merchantbench.web.store) opens the run
with this driver and passes each click to the run's agent surface.
"""

from __future__ import annotations

from merchantbench.agents.base import AgentSettings
from merchantbench.runs.driver import Driver

HUMAN_ORIGIN = "human"  # the trace origin of a person's environment calls


class HumanSettings(AgentSettings):
    """Which participant of a study plays (free text, never a secret)."""

    participant: str = ""


class HumanDriver(Driver[HumanSettings]):
    """A participant of the human baseline, at the web playground."""

    name = "human"
    Settings = HumanSettings
    acknowledges = True

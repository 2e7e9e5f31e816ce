"""The agent contract: what an agent is, what it may implement, and what it reports.

An agent plays one window at a time through an `AgentSurface` (merchantbench.surface) and
nothing else. Its lifecycle, as the runner (and every front end that hosts a built-in agent)
drives it:

1. It is built once from its frozen settings model: `Agent(settings)`; a privileged agent (the
   oracle) is also handed the hidden market, explicitly, by its factory (`make_agent`).
2. For every window until `surface.over`: `await agent.act_async(surface)`. The default
   `act_async` calls the blocking `act(surface)`; an agent that talks to a network (the LLM
   harnesses) overrides `act_async` instead, so many runs can share one event loop. An agent
   should end its window with `end_of_step`; if it does not, the host closes the window and
   the trace records the close as forced.
3. Between windows the host may checkpoint it by pickling: an agent holds no surface, file or
   socket between windows (drop clients in `__getstate__`).
4. What it reports: `settings()` (its configuration, for the run record), `outcome()` (token
   usage and why it stopped early, if it did), `drain_model_calls()` and `model_calls_seq`
   (an LLM agent's log of model calls, appended to `model_calls.jsonl`).
5. At the end (or on error) `await agent.aclose()` releases what it opened.
6. Handed a store it did not build (a fork taken over at some window), it is first told so by
   `take_over(surface)`; by default that does nothing.

`BaseAgent` implements every part but `act` with a neutral default, so a new agent is:

    class Settings(AgentSettings):
        markup: float = 2.0

    class MyAgent(BaseAgent[Settings]):
        name = "mine"
        Settings = Settings

        def act(self, surface: AgentSurface) -> None:
            surface.call("end_of_step", {})
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from merchantbench.surface import AgentSurface


class AgentSettings(BaseModel):
    """Base of every agent's settings: frozen, unknown keys refused, types checked."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=False)


@dataclass(frozen=True)
class AgentOutcome:
    """What an agent reports about its run besides its calls.

    Attributes:
        usage: Model usage totals (LLM agents), written to run.json as `llm_usage`.
        stop_reason: Why the agent stopped acting before the end (e.g. a spent budget).
    """

    usage: dict[str, Any] | None = None
    stop_reason: str | None = None


SettingsT = TypeVar("SettingsT", bound=AgentSettings)


class Player(Generic[SettingsT]):
    """Whoever plays a run, as its record sees it: an agent in this process, or the driver of a
    run played from outside (`runs/driver.py`). Its settings go to `run.json`; it reports its
    outcome and model calls (none by default).

    Subclasses set `Settings` (the class of their settings, also the type parameter), and read
    their configuration from `self.config`.
    """

    Settings: ClassVar[type[AgentSettings]] = AgentSettings

    def __init__(self, config: SettingsT | None = None) -> None:
        self.config: SettingsT = config if config is not None else self.Settings()  # type: ignore[assignment]

    def settings(self) -> dict[str, Any]:
        """The configuration as the run record states it."""
        return self.config.model_dump(mode="json")

    def outcome(self) -> AgentOutcome:
        """Usage and early-stop reason; none for a player without a model."""
        return AgentOutcome()

    @property
    def model_calls_seq(self) -> int:
        """Model calls made so far (`model_calls.jsonl` lines past it are dropped on resume)."""
        return 0

    def drain_model_calls(self) -> list[dict[str, Any]]:
        """Model-call records not yet written to the run directory."""
        return []


class BaseAgent(Player[SettingsT]):
    """An agent with neutral defaults for everything but `act` (see the module docstring).

    Subclasses set `name` and `Settings` (the class of their settings, also the type
    parameter), and read their configuration from `self.config`.
    """

    name: ClassVar[str] = ""
    privileged: ClassVar[bool] = False
    # Keys of `settings()` that report where a run keeps things, not how it is configured
    # (e.g. a private home directory); a resume does not pin them.
    runtime_settings: ClassVar[frozenset[str]] = frozenset()

    def act(self, surface: AgentSurface) -> None:
        """Make this window's calls (blocking form)."""
        raise NotImplementedError(f"{type(self).__name__} implements neither act nor act_async")

    async def act_async(self, surface: AgentSurface) -> None:
        """Make this window's calls; by default, the blocking `act`."""
        self.act(surface)

    def take_over(self, surface: AgentSurface) -> None:
        """The agent is handed a store it did not build (a fork, docs/counterfactual.md), at
        the opening of a window, before its first `act`. An agent whose beliefs must cover the
        store's listings reads them here. Called again when the fork resumes: do nothing once
        done. Default: nothing (the agent reads the store as it plays)."""

    async def aclose(self) -> None:
        """Release clients and processes; called once when the run ends or fails."""

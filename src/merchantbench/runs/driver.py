"""The driver of a run played from outside this process: a person at the playground (`human`),
an agent over HTTP (`external`), the model of an MCP client (`mcp`) or of Inspect AI (`inspect`),
or a policy stepping the Gymnasium environment (`gym`).

A driver is not an agent: the runner never asks it to act. The front end that serves the run
hands its `Driver` to `RunLifecycle.open` and makes the calls itself; the run record names the
driver (`run.json`: `driver`, and `agent` with the driver's name and settings). What a driver
reports is what an agent reports (`outcome`, model calls); what its protocol must remember
across a restart is `state()`, plain JSON saved with each checkpoint (never a pickled object).
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Self

from merchantbench.agents.base import Player, SettingsT
from merchantbench.record.manifest import DriverName

# How each driver's runs are played (the runner refuses them with this).
PLAYED_BY: dict[DriverName, str] = {
    "human": "`merchantbench play` or `merchantbench study create`",
    "external": "`merchantbench serve` or `run --agent external --serve`",
    "mcp": "`merchantbench mcp` or the MCP endpoint of `merchantbench serve`",
    "inspect": "`inspect eval merchantbench/merchantbench`",
    "gym": "Gymnasium: `MerchantBenchEnv(record_dir=...)` (docs/gym.md)",
}


class Driver(Player[SettingsT]):
    """A run's driver (see the module docstring); subclasses set `name` and `Settings` (also
    the type parameter). What it reports (settings, outcome, model calls) is a `Player`'s.

    Args:
        config: The driver's settings (recorded in run.json, never a secret).
    """

    name: ClassVar[DriverName]
    # Its host answers someone outside this process: each answered request is made durable
    # first (`RunLifecycle.acknowledge`, runs/journal.py) and a resume replays up to it.
    acknowledges: ClassVar[bool] = False

    @classmethod
    def from_settings(cls, settings: dict[str, Any]) -> Self:
        """A driver of `settings` as the run's spec gives them (validated by `Settings`)."""
        return cls(cls.Settings.model_validate(settings))  # type: ignore[arg-type]

    def state(self) -> dict[str, Any] | None:
        """What the protocol must remember across a restart, as JSON (None: nothing)."""
        return None

    def restore(self, state: dict[str, Any]) -> None:
        """Take back `state()` as a checkpoint saved it."""


def encode_state(driver: Driver[Any]) -> str | None:
    """The driver's state as the checkpoint keeps it: JSON text, or None. Non-finite numbers
    are kept (as Python's JSON writes them): the state holds what clients sent."""
    state = driver.state()
    return None if state is None else json.dumps(state, sort_keys=True)

"""The Gymnasium adapter: `MerchantBench-v0` played with `reset` and `step` only.

Agent side: `reset(seed=…)` gives the brief and the tool schemas in its `info`; each call is
one `step({"tool": index, "args": JSON text})`, the idempotency key sent among the arguments
(the schema of every state-changing tool declares `idempotency_key`; a read takes none and
ignores one); the result is `info["result"]`, the observation `obs["text"]`, the clock
`info["window"]`, `info["hour"]` and `terminated`. Host side: the env's session
(`env.unwrapped.session`), as a training loop that owns the env would read it.
"""

from __future__ import annotations

import json
from typing import Any

from merchantbench.check.adapter import LedgerReport
from merchantbench.check.python_adapter import PythonRun
from merchantbench.scenario import Scenario

__all__ = ["GymAdapter", "GymRun"]


class GymRun:
    """One episode of `MerchantBench-v0` (see the module docstring)."""

    def __init__(self, scenario: Scenario, seed: int) -> None:
        from merchantbench.gym import MerchantBenchEnv

        self.env = MerchantBenchEnv(scenario)
        obs, info = self.env.reset(seed=seed)
        self._brief: str = info["brief"]
        self._schemas: list[dict[str, Any]] = info["tool_schemas"]
        self._keyed = {
            s["function"]["name"]
            for s in self._schemas
            if "idempotency_key" in s["function"]["parameters"].get("properties", {})
        }
        self._index = {name: i for i, name in enumerate(self.env.tool_names)}
        self._observe(obs, info, False)

    def _observe(self, obs: dict[str, Any], info: dict[str, Any], terminated: bool) -> None:
        self._text: str = obs["text"]
        self._window, self._hour, self._over = info["window"], info["hour"], terminated

    # --- agent side ---------------------------------------------------------------------------
    def brief(self) -> str:
        return self._brief

    def tool_schemas(self) -> list[dict[str, Any]]:
        return self._schemas

    def observation(self) -> str:
        return self._text

    def call(
        self, tool: str, args: dict[str, Any] | None, idempotency_key: str | None
    ) -> dict[str, Any]:
        sent = dict(args or {})
        if idempotency_key is not None and tool in self._keyed:
            sent["idempotency_key"] = idempotency_key
        action = {"tool": self._index.get(tool, tool), "args": json.dumps(sent)}
        obs, _, terminated, _, info = self.env.step(action)
        self._observe(obs, info, terminated)
        result: dict[str, Any] = info["result"]
        return result

    @property
    def window(self) -> int:
        return int(self._window)

    @property
    def hour(self) -> int:
        return int(self._hour)

    @property
    def over(self) -> bool:
        return bool(self._over)

    # --- host side ------------------------------------------------------------------------------
    def _host(self) -> PythonRun:
        return PythonRun(self.env.session)

    def state_hash(self) -> str:
        return self._host().state_hash()

    def snapshot(self) -> bytes:
        return self._host().snapshot()

    def restore(self, blob: bytes) -> None:
        """Restore the session; the agent side's view is read again from it (no step)."""
        self.env.restore(blob)
        surface = self.env.session.surface
        self._text, self._window, self._hour = surface.observation(), surface.window, surface.hour
        self._over = surface.over

    def ledger(self) -> LedgerReport:
        return self._host().ledger()

    def close(self) -> None:
        self.env.close()


class GymAdapter:
    """`merchantbench check --adapter gym`."""

    name = "gym"

    def open(self, scenario: Scenario, seed: int) -> GymRun:
        return GymRun(scenario, seed)

"""A session: one store run as an agent sees it. The only door to the engine.

Contract:

- A session opens at window 0. `brief()` is the system brief; `observation()` the current
  window's observation.
- `call(tool, args)` runs one environment tool and returns its JSON-able result. Bad input never
  raises: it comes back as `{"ok": false, "error": {...}}` and changes nothing.
- `end_of_step` (a tool like any other) closes the window: the engine simulates its hours and the
  next window opens, or the run drains and `over` becomes true. Past the per-window call cap,
  tools answer `limit` and only `end_of_step` is accepted. A harness that gives up on a window
  calls `force_end_of_step()`, which the trace records as forced.
- Every call goes into `trace` (window, hour, tool, arguments, ok or error code, origin).
  Framework tools of an agent (memory, plans, code) are recorded with `record_framework_call`
  and do not count as environment calls.
- `snapshot()` / `restore()` cover the engine and everything the session keeps.

Every front end (Python agents, HTTP, MCP, Gymnasium, the web playground) is a thin adapter over
this class.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from merchantbench.catalog.market import CatalogView, Market
from merchantbench.catalog.search import SearchIndex
from merchantbench.catalog.view import catalog_view_at
from merchantbench.scenario import Scenario
from merchantbench.sim.engine import Engine
from merchantbench.sim.suppliers import stock_levels
from merchantbench.surface import AgentSurface
from merchantbench.tools.errors import failure
from merchantbench.tools.observation import build_observation, system_brief
from merchantbench.tools.toolset import END_OF_STEP, build_registry


@dataclass
class SessionMemory:
    """What the session keeps besides the engine; all of it is snapshotted."""

    memory_doc: str = ""
    idempotency_store: dict[str, Any] = field(default_factory=dict)
    window_calls: int = 0
    previous_window_t: int = -1
    seq: int = 0  # trace entries emitted so far
    windows_closed: int = 0


class Session:
    def __init__(
        self,
        scenario: Scenario,
        market: Market,
        seed: int,
        search_index: SearchIndex | None = None,
        trace_sink: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        """`trace_sink` receives each trace entry; without one they collect in `trace`."""
        self.scenario = scenario
        self.market = market
        self.seed = seed
        self.engine = Engine(scenario, market, seed)
        self.search_index = search_index or SearchIndex.build(market)
        self.registry = build_registry(scenario)
        self.memory = SessionMemory()
        self.trace: list[dict[str, Any]] = []
        self._sink = trace_sink or self.trace.append
        self._view: CatalogView | None = None
        self._end_requested = False
        self._surface: AgentSurface | None = None

    # --- what tools read ------------------------------------------------------------------------
    @property
    def memory_doc(self) -> str:
        return self.memory.memory_doc

    @memory_doc.setter
    def memory_doc(self, text: str) -> None:
        self.memory.memory_doc = text

    @property
    def idempotency_store(self) -> dict[str, Any]:
        return self.memory.idempotency_store

    @property
    def previous_window_t(self) -> int:
        return self.memory.previous_window_t

    @property
    def window_calls(self) -> int:
        return self.memory.window_calls

    def catalog_view(self) -> CatalogView:
        """The catalog at the current hour, with this store's purchases in the stock."""
        t = self.engine.t
        if self._view is None or self._view.hour != t:
            # The engine keeps (level, hour of last purchase); the view wants units now.
            units = stock_levels(self.market, self.engine.state.stock, t)
            self._view = catalog_view_at(self.market, t, units)
        return self._view

    def request_end_of_step(self) -> None:
        self._end_requested = True

    # --- what agents use (through `surface`) ------------------------------------------------------
    @property
    def surface(self) -> AgentSurface:
        """The narrow object an agent is given: brief, observation, tools, call, clock."""
        if self._surface is None:
            self._surface = AgentSurface(self)
        return self._surface

    @property
    def over(self) -> bool:
        return self.engine.state.drained

    @property
    def window(self) -> int:
        return self.engine.window

    def brief(self) -> str:
        return system_brief(self)

    def observation(self) -> str:
        return build_observation(self)

    def tool_schemas(self) -> list[dict[str, Any]]:
        return self.registry.schema_list()

    def call(
        self,
        tool: str,
        args: dict[str, Any] | str | None = None,
        idempotency_key: str | None = None,
        *,
        forced: bool = False,
    ) -> dict[str, Any]:
        """Run one environment tool for the agent; never raises for bad input."""
        if self.over:
            result = failure("run_over", "the run has ended; no more calls")
        elif self._over_cap(tool):
            cap = self.scenario.clock.calls_per_window
            result = failure("limit", f"{cap} calls used in this window: call end_of_step")
        else:
            if not self.registry.ends_window(tool):
                self.memory.window_calls += 1
            result = self.registry.call(self, tool, args, idempotency_key=idempotency_key)
        self._record(tool, args, result, origin="env", forced=forced)
        if self._end_requested:
            self._end_requested = False
            self._close_window()
        return result

    def force_end_of_step(self) -> dict[str, Any]:
        """Close the window on the agent's behalf (it stopped, failed or ran out of calls)."""
        return self.call(END_OF_STEP, {}, forced=True)

    def record_framework_call(self, tool: str, args: Any, ok: bool, error: str | None) -> None:
        result = {"ok": ok, "error": {"code": error}} if not ok else {"ok": True}
        self._record(tool, args, result, origin="framework", forced=False)

    def _over_cap(self, tool: str) -> bool:
        return not self.registry.ends_window(tool) and self.memory.window_calls >= (
            self.scenario.clock.calls_per_window
        )

    def _record(self, tool: str, args: Any, result: dict[str, Any], origin: str, forced: bool):
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                args = {"_raw": args}
        error = None if result.get("ok") else (result.get("error") or {}).get("code")
        self.memory.seq += 1
        self._sink(
            {
                "seq": self.memory.seq,
                "window": self.engine.window,
                "t": self.engine.t,
                "tool": tool,
                "args": args if args is not None else {},
                "ok": bool(result.get("ok")),
                "error": error,
                "origin": origin,
                "forced": forced,
            }
        )

    def _close_window(self) -> None:
        self.memory.previous_window_t = self.engine.t
        self.memory.window_calls = 0
        self.memory.windows_closed += 1
        self.engine.advance()
        if self.engine.done:
            self.engine.finish()

    # --- persistence ------------------------------------------------------------------------------
    def snapshot(self) -> bytes:
        """Engine and session memory. The trace is not included: `memory.seq` says how many
        entries had been emitted, so a resumed run drops any written after the snapshot."""
        return pickle.dumps(
            {"engine": self.engine.snapshot(), "memory": self.memory},
            protocol=pickle.HIGHEST_PROTOCOL,
        )

    def restore(self, blob: bytes) -> None:
        saved = pickle.loads(blob)
        self.engine.restore(saved["engine"])
        self.memory = saved["memory"]
        self._view = None
        self._end_requested = False

    def state_hash(self) -> str:
        return self.engine.state_hash()

"""The agent surface: everything an agent sees of a store run, and nothing more.

Every agent — the built-in baselines, the LLM harnesses, and every front end (HTTP, MCP,
Gymnasium, the web playground) — holds an `AgentSurface` and only that:

- `brief()`: the system brief (platform rules, limits, tools), fixed for the run;
- `observation()`: the open window's observation text;
- `status()`: the store's public numbers as a typed `StoreStatus` (clock, accounts, net assets,
  rating and stars, listings, open orders, orders placed, calls left), the very numbers the
  observation text states (it is rendered from them); `status().to_json()` is its JSON form;
- `tool_schemas()` and `tool_schema_sha256()`: the environment tools as OpenAI function tools,
  rendered for the run's scenario, and their hash;
- `call(tool, args, idempotency_key)`: one environment tool call; bad input never raises, it
  answers `{"ok": false, "error": {...}}` and changes nothing; `end_of_step` closes the window;
- `window`, `hour`, `windows_total`, `over`: the public clock (open window, its first hour, the
  scheduled number of windows, whether the run has ended);
- `waiting`, `window_done(window)`: in a market of several merchants (docs/arena.md), a
  merchant's `end_of_step` closes the window for it alone and it waits for the others; a
  harness's window is done when the run ended, the window moved on or the store waits;
- `record_framework_call(tool, args, ok, error)`: how a harness records its own tools (memory,
  plans, code) in the trace; they do not count as environment calls;
- `force_end_of_step()`: a harness giving up on the window (its model stopped or failed)
  closes it; the trace records the close as forced, not as the agent's own `end_of_step`.

The engine, the market (hidden fields included), snapshots and the run record stay on the host
side (`merchantbench.session.Session`, the runner, the front-end servers). A surface holds no
reference an agent is meant to follow to them; in-process Python agents are trusted to keep to
the surface (a proxy test enforces it for the built-in ones), while out-of-process front ends
enforce it by construction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from merchantbench.tools.status import StoreStatus

if TYPE_CHECKING:
    from merchantbench.session import Session

__all__ = ["SURFACE_MEMBERS", "AgentSurface", "StoreStatus"]

# The whole agent-facing API, by name. The proxy test and adapters use this list.
SURFACE_MEMBERS = frozenset(
    {
        "brief",
        "observation",
        "status",
        "tool_schemas",
        "tool_schema_sha256",
        "call",
        "window",
        "hour",
        "windows_total",
        "over",
        "waiting",
        "window_done",
        "record_framework_call",
        "force_end_of_step",
    }
)


class AgentSurface:
    """The agent's view of one store run (see the module docstring for the contract)."""

    __slots__ = ("__host",)

    def __init__(self, host: Session) -> None:
        self.__host = host

    def brief(self) -> str:
        """The system brief: platform rules, the run's limits and the tools."""
        return self.__host.brief()

    def observation(self) -> str:
        """The open window's observation (what changed, orders, cash, alerts)."""
        return self.__host.observation()

    def status(self) -> StoreStatus:
        """The store's public numbers now: clock, accounts, net assets, rating, listings,
        orders, calls left (see `merchantbench.tools.status.StoreStatus`). Costs no call."""
        return self.__host.status()

    def tool_schemas(self) -> list[dict[str, Any]]:
        """The environment tools as OpenAI function tools, rendered for this scenario."""
        return self.__host.tool_schemas()

    def tool_schema_sha256(self) -> str:
        """SHA-256 of `tool_schemas()`, to pin the tool contract a run was played with."""
        return self.__host.registry.schema_sha256()

    def call(
        self,
        tool: str,
        args: dict[str, Any] | str | None = None,
        idempotency_key: str | None = None,
        window: int | None = None,
    ) -> dict[str, Any]:
        """Run one environment tool; never raises for bad input.

        Args:
            tool: The tool's name (see `tool_schemas()`).
            args: Its arguments, as a dict or a JSON object string.
            idempotency_key: Optional key: a state-changing call repeated with the same key and
                arguments returns the first outcome without acting again.
            window: Optional: the window (0-based) this call was decided in. A write for a
                window that has ended is refused (`window_ended`) and changes nothing.

        Returns:
            The tool's JSON-able result; `{"ok": false, "error": {"code", "message"}}` on refusal.
        """
        return self.__host.call(tool, args, idempotency_key, window=window)

    @property
    def window(self) -> int:
        """Index of the open window (0-based)."""
        return self.__host.window

    @property
    def hour(self) -> int:
        """The open window's first hour since the start of the run (0-based)."""
        return self.__host.engine.t

    @property
    def windows_total(self) -> int:
        """The scheduled number of windows of the run."""
        return self.__host.scenario.clock.windows

    @property
    def over(self) -> bool:
        """True once the run has ended (horizon reached or store closed)."""
        return self.__host.over

    @property
    def waiting(self) -> bool:
        """True while this store has closed the open window and waits for the other merchants
        of its market to close it (any call answers `window_closed`); a store alone never waits.
        A harness's window is over when `over`, `waiting`, or `window` moved on."""
        return self.__host.waiting

    def window_done(self, window: int) -> bool:
        """Whether window `window` is over for this store: the run ended, the window moved on,
        or the store closed it and waits for the other merchants of its market."""
        return self.__host.over or self.__host.waiting or self.__host.window != window

    def record_framework_call(
        self, tool: str, args: Any, ok: bool, error: str | None = None
    ) -> None:
        """Record a call of the agent's own framework tool (not an environment call)."""
        self.__host.record_framework_call(tool, args, ok, error)

    def force_end_of_step(self) -> dict[str, Any]:
        """Close the open window on the agent's behalf; recorded as forced."""
        return self.__host.force_end_of_step()

    def __repr__(self) -> str:
        return f"AgentSurface(window={self.window}, over={self.over})"

"""The set of tools an agent is offered, in declaration order, and the one way to call them.

A registry holds every declared tool and the names of the optional tools switched on. Core tools
are always on; an optional tool is offered (in schemas) and callable only once enabled, so that
a scenario decides, through one set of names, which optional tools its agents see:

    registry = ToolRegistry([search, set_price, forecast])   # forecast is optional
    scenario_tools = registry.enable({"forecast"})            # a new registry; the old one is kept
    scenario_tools.call(session, "forecast", '{"days": 7}')

`render(scenario)` gives the same registry with every tool stating the scenario's limits (see
`merchantbench.tools.render`). A framework registry (an agent harness's own tools) is built the
same way and called with `call_async`, since some of its tools are `async def`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from types import ModuleType
from typing import Any

from merchantbench.tools.calling import run, run_async
from merchantbench.tools.declare import (
    Tool,
    ToolContext,
    ToolGroup,
    ToolKind,
    ToolRole,
    tool,
)
from merchantbench.tools.describe import ToolDescription, describe_tool
from merchantbench.tools.errors import unknown_tool


class ToolRegistry:
    """Tools in declaration order, their schemas, their descriptions, and `call`.

    Args:
        tools: Declared tools, in the order the model should see them.
        enabled: Names of the optional tools to switch on.

    Raises:
        ValueError: Two tools share a name, two tools end the window, or `enabled` names a tool
            that does not exist.
    """

    def __init__(self, tools: Iterable[Tool] = (), enabled: Iterable[str] = ()) -> None:
        self._declared: dict[str, Tool] = {}
        for declared in tools:
            self.register(declared)
        self._enabled = self._check_names(enabled)

    @classmethod
    def from_modules(cls, *modules: ModuleType, enabled: Iterable[str] = ()) -> ToolRegistry:
        """Collect the tools defined in these modules, module by module in definition order."""
        found = [
            value
            for module in modules
            for value in vars(module).values()
            if isinstance(value, Tool) and value.fn.__module__ == module.__name__
        ]
        return cls(found, enabled)

    def _check_names(self, names: Iterable[str]) -> frozenset[str]:
        chosen = frozenset(names)
        unknown = chosen - self._declared.keys()
        if unknown:
            raise ValueError(f"no such tools: {sorted(unknown)}")
        return chosen

    def register(self, declared: Tool) -> Tool:
        """Add a tool after those already registered and return it."""
        if declared.name in self._declared:
            raise ValueError(f"a tool named {declared.name} is already registered")
        closer = self.window_closer
        if declared.ends_window and closer is not None:
            raise ValueError(f"{declared.name} and {closer} cannot both end the window")
        self._declared[declared.name] = declared
        return declared

    def tool(
        self,
        *,
        kind: ToolKind,
        group: ToolGroup,
        optional: bool = False,
        role: ToolRole = "environment",
        ends_window: bool = False,
        renders_from: object = None,
    ) -> Callable[[Callable[..., Any]], Tool]:
        """Like the `tool` decorator, and register the tool here at once."""
        decorator = tool(
            kind=kind,
            group=group,
            optional=optional,
            role=role,
            ends_window=ends_window,
            renders_from=renders_from,
        )

        def decorate(fn: Callable[..., Any]) -> Tool:
            return self.register(decorator(fn))

        return decorate

    def render(self, settings: object) -> ToolRegistry:
        """The same registry (same optional tools on) with every tool stating the values of
        `settings`, e.g. a run's scenario (see `Tool.render`)."""
        return ToolRegistry((t.render(settings) for t in self._declared.values()), self._enabled)

    @property
    def window_closer(self) -> str | None:
        """Name of the tool that ends the decision window (`end_of_step`), if there is one."""
        return next((t.name for t in self._declared.values() if t.ends_window), None)

    def ends_window(self, name: str) -> bool:
        """Whether `name` is the tool that ends the decision window."""
        declared = self._declared.get(name) if isinstance(name, str) else None
        return declared is not None and declared.ends_window

    def enable(self, names: Iterable[str]) -> ToolRegistry:
        """A registry with the same tools and exactly these optional tools switched on.

        Naming a core tool is allowed (it is on anyway); naming an unknown tool is an error.
        """
        return ToolRegistry(self._declared.values(), names)

    @property
    def enabled(self) -> frozenset[str]:
        """Names given to `enable` (optional tools switched on)."""
        return self._enabled

    def is_active(self, name: str) -> bool:
        """Whether the tool is offered to the agent: a core tool, or an enabled optional one."""
        declared = self._declared.get(name)
        return declared is not None and (not declared.optional or name in self._enabled)

    def tools(self, include_optional: bool = False) -> list[Tool]:
        """The active tools, or every declared tool when `include_optional` is true."""
        return [t for t in self._declared.values() if include_optional or self.is_active(t.name)]

    def get(self, name: str) -> Tool:
        """A declared tool by name, active or not (for adapters). Raises KeyError if unknown."""
        return self._declared[name]

    def __contains__(self, name: object) -> bool:
        return name in self._declared

    def __len__(self) -> int:
        return len(self._declared)

    def schema_list(self, enabled: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """The active tools in OpenAI function-calling format (fresh dicts, safe to modify).

        Args:
            enabled: Optional tools to switch on instead of this registry's own choice.
        """
        chosen = self if enabled is None else self.enable(enabled)
        return [declared.openai_schema() for declared in chosen.tools()]

    def schema_json(self, enabled: Iterable[str] | None = None) -> str:
        """`schema_list` as canonical JSON: sorted keys, no spaces, UTF-8 text."""
        return json.dumps(
            self.schema_list(enabled), sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )

    def schema_sha256(self, enabled: Iterable[str] | None = None) -> str:
        """Hash of what the agent is shown; recorded in run.json to tell tool versions apart."""
        return hashlib.sha256(self.schema_json(enabled).encode()).hexdigest()

    def describe(self, name: str) -> ToolDescription:
        """The human-facing description of a declared tool. Raises KeyError if unknown."""
        return describe_tool(self._declared[name])

    def call(
        self,
        ctx: ToolContext,
        name: str,
        args: Mapping[str, Any] | str | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Call a tool the way an agent does; never raises for anything the agent sent.

        Args:
            ctx: The context the tool acts on; its `idempotency_store` remembers keyed writes.
            name: The tool name.
            args: Arguments as a dict, or the raw JSON text of an object. For a write tool it
                may include `idempotency_key`.
            idempotency_key: Key of a state-changing call, if not sent among the arguments.
                Ignored for read tools, which change nothing.

        Returns:
            `{"ok": true, **result}`, or `{"ok": false, "error": {"code", "message", "path"?,
            "details"?}}` for a refusal, after which nothing has changed.

        Raises:
            TypeError: The tool is async (use `call_async`).
            Exception: Whatever a tool body raises other than `ToolError`: that is a bug.
        """
        declared = self._declared.get(name) if isinstance(name, str) else None
        # `is_active`, inlined: asked on every call, and the tool is already looked up.
        if declared is None or (declared.optional and name not in self._enabled):
            return self._unknown_tool(name)
        return run(ctx, declared, args, idempotency_key)

    async def call_async(
        self,
        ctx: Any,
        name: str,
        args: Mapping[str, Any] | str | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """`call` for callers with an event loop: async tools are awaited, others run inline.

        Framework tools (which may be `async def`) are called this way; the answers and the
        guarantees are those of `call`.
        """
        declared = self._declared.get(name) if isinstance(name, str) else None
        if declared is None or not self.is_active(declared.name):
            return self._unknown_tool(name)
        return await run_async(ctx, declared, args, idempotency_key)

    def _unknown_tool(self, name: object) -> dict[str, Any]:
        offered = [t.name for t in self.tools()]
        return unknown_tool(name, offered, isinstance(name, str) and name in self._declared)

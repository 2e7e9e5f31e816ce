"""The environment tools as Inspect tools, built from the run's own declarations.

Each OpenAI function tool of `surface.tool_schemas()` becomes one `ToolDef` with the same name,
description and JSON-schema parameters; its body hands the arguments to `surface.call` and
answers the environment's JSON result unchanged (a refusal included: `{"ok": false, ...}` is a
result, not an Inspect tool error). Inspect's parameter model keeps the schema keywords it knows
and drops the others (`minItems`, `maxItems`); the environment checks every argument anyway.

Tool output is never truncated by Inspect (`max_output=0`), so the model reads exactly what the
environment answered, as under `merchantbench run`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from inspect_ai.tool import ToolDef, ToolParams

from merchantbench.refusals import Refusal
from merchantbench.surface import AgentSurface
from merchantbench.tools.errors import failure

__all__ = ["WindowGuard", "env_tool_defs"]


@dataclass
class WindowGuard:
    """The window a model turn was made in: a call that comes after `end_of_step` in the same
    turn is answered `window_closed` and not run (it was meant for a window that is gone)."""

    window: int = -1

    def closed(self, surface: AgentSurface) -> bool:
        return surface.window_done(self.window)


def _runner(surface: AgentSurface, guard: WindowGuard, name: str) -> Callable[..., Any]:
    async def execute(**kwargs: Any) -> str:
        if guard.closed(surface):
            result = failure(Refusal.WINDOW_CLOSED, "end_of_step closed the window; not run")
        else:
            result = surface.call(name, kwargs)
        return json.dumps(result, ensure_ascii=False, separators=(",", ":"))

    return execute


def env_tool_defs(surface: AgentSurface, guard: WindowGuard) -> list[ToolDef]:
    """One Inspect `ToolDef` per environment tool, in the order of `surface.tool_schemas()`."""
    defs = []
    for schema in surface.tool_schemas():
        function = schema["function"]
        defs.append(
            ToolDef(
                _runner(surface, guard, function["name"]),
                name=function["name"],
                description=function["description"],
                parameters=ToolParams.model_validate(function["parameters"]),
                max_output=0,
            )
        )
    return defs

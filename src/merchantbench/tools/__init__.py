"""The agent's tools: each declared once as a typed function, from which the JSON schemas, the
argument validation, the descriptions and (later) the HTTP routes and MCP tools are derived.

The framework lives in `declare` (the `@tool` decorator, for environment and framework tools),
`registry` (`ToolRegistry.call`, `call_async`, `render`), `render` (limits stated from the
scenario: `Limit`, `{path}` placeholders), `errors` (`ToolError`) and their helpers; see
docs/tools.md.
"""

from merchantbench.tools.declare import (
    IdempotencyRecord,
    Tool,
    ToolArgs,
    ToolContext,
    declare_tool,
    tool,
)
from merchantbench.tools.describe import ParameterRow, ToolDescription
from merchantbench.tools.errors import ToolError
from merchantbench.tools.registry import ToolRegistry
from merchantbench.tools.render import Limit

__all__ = [
    "IdempotencyRecord",
    "Limit",
    "ParameterRow",
    "Tool",
    "ToolArgs",
    "ToolContext",
    "ToolDescription",
    "ToolError",
    "ToolRegistry",
    "declare_tool",
    "tool",
]

"""The agent's tools: each declared once as a typed function, from which the JSON schemas, the
argument validation, the descriptions and (later) the HTTP routes and MCP tools are derived.

The framework lives in `declare` (the `@tool` decorator), `registry` (`ToolRegistry.call`),
`errors` (`ToolError`) and their helpers; see docs/tools.md.
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

__all__ = [
    "IdempotencyRecord",
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

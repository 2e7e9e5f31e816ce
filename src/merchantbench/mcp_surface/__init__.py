"""One run's agent surface as an MCP server, below every user of it: the MCP front end
(`serve.mcp_run`, `serve.mcp_mount`) and the Hermes Agent's gateway. `server` builds the server
and its streamable HTTP endpoint; `stdio` is its checked stdin/stdout transport."""

from merchantbench.mcp_surface.server import (
    BRIEF_PROMPT,
    IDEMPOTENCY_META_KEY,
    OBSERVATION_URI,
    RULES_URI,
    STORE_URI,
    McpHttpEndpoint,
    McpRun,
    build_mcp_server,
    call_locked,
    mcp_tools,
    serve_stdio,
)

__all__ = [
    "BRIEF_PROMPT",
    "IDEMPOTENCY_META_KEY",
    "OBSERVATION_URI",
    "RULES_URI",
    "STORE_URI",
    "McpHttpEndpoint",
    "McpRun",
    "build_mcp_server",
    "call_locked",
    "mcp_tools",
    "serve_stdio",
]

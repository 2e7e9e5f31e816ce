"""The run's environment tools as a streamable-HTTP MCP server for the Hermes process.

The same wire contract as our MCP front end (merchantbench.serve.mcp_server): the surface's tool
schemas unchanged, the tool's JSON as text and structured content, `isError` when it refused.
It serves tools only (Hermes' MCP client uses nothing else here) over `WindowRun`, and exists
because the front end's package cannot be imported while serve/ is being moved to the new
agent contract; once it can, `McpHttpEndpoint(run)` over `WindowRun` does the same job.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from starlette.applications import Starlette

import merchantbench
from merchantbench.session import END_OF_STEP


def tool_result(result: dict[str, Any]) -> types.CallToolResult:
    text = json.dumps(result, ensure_ascii=False, separators=(",", ":"))
    return types.CallToolResult(
        content=[types.TextContent(text=text)],
        structured_content=result,
        is_error=not result.get("ok", False),
    )


def surface_mcp_app(run: Any, path: str) -> Starlette:
    """A streamable-HTTP MCP app over `run` (`surface` and `call`, as `WindowRun` has)."""
    functions = [schema["function"] for schema in run.surface.tool_schemas()]
    tools = [
        types.Tool(name=f["name"], description=f["description"], input_schema=f["parameters"])
        for f in functions
    ]
    lock = anyio.Lock()

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        call = partial(run.call, params.name, params.arguments, None)
        async with lock:
            # end_of_step simulates a window: off the event loop.
            result = await anyio.to_thread.run_sync(call) if params.name == END_OF_STEP else call()
        return tool_result(result)

    server: Server[Any] = Server(
        "merchantbench",
        version=merchantbench.__version__,
        get_tool_input_schema={t.name: t.input_schema for t in tools}.get,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    return server.streamable_http_app(
        streamable_http_path=path, host="127.0.0.1", session_idle_timeout=None, json_response=True
    )

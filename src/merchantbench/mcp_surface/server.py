"""One run's agent surface as an MCP server (official `mcp` SDK, low level), below every user of
it: the MCP front end (`serve.mcp_run`, `serve.mcp_mount`) and the Hermes Agent driver's local
gateway (`agents.hermes_agent.gateway`), which must not import a front end.

What a client sees:

- **tools**: the environment tools, with the names, descriptions and JSON input schemas of
  `surface.tool_schemas()` as they are (the low-level server takes raw schemas; nothing is
  re-derived). A result is the tool's JSON as text content and as structured content;
  `isError` is set when the tool refused (`ok: false`). `end_of_step` also returns the next
  window's observation, or the run's summary when the run is over (see `HostedRun`).
- **prompt** `brief`: the system brief followed by the open window's observation.
- **resources**: `merchantbench://platform-rules` (the platform rules, the brief's text),
  `merchantbench://observation` (the open window's observation) and `merchantbench://store`
  (the store status as JSON: the observation's numbers, typed; `surface.status()`). Reading
  them is not a tool call and costs no call of the window.
- **instructions**: the brief and how a window is played, for clients that put server
  instructions in the model's context.
- **idempotency**: a tool call whose `_meta` has `merchantbench/idempotency_key` passes it to
  the surface, so a client that retries a state-changing call acts once.

The server serves any `McpRun`: a `HostedRun` (`merchantbench mcp`, one run), a run of the
HTTP server (`serve.mcp_mount`, `/runs/{run}/mcp`) or the open window of a Hermes Agent run.
The run applies calls one at a time under its lock; `end_of_step`, which simulates a window,
runs in a worker thread so that it never stalls other connections of the same event loop.
Transports: `serve_stdio(run)` for one run over stdin/stdout, and `McpHttpEndpoint(run)` for
streamable HTTP.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from functools import partial
from typing import Any, Protocol

import anyio
import mcp_types as types
from anyio.abc import TaskStatus
from mcp.server import Server
from mcp.shared.exceptions import MCPError
from starlette.applications import Starlette

import merchantbench
from merchantbench.limits import ServerLimits
from merchantbench.mcp_surface.stdio import checked_stdio
from merchantbench.refusals import Refusal
from merchantbench.session import END_OF_STEP
from merchantbench.surface import AgentSurface
from merchantbench.tools.errors import failure

__all__ = [
    "BRIEF_PROMPT",
    "IDEMPOTENCY_META_KEY",
    "OBSERVATION_URI",
    "RULES_URI",
    "STORE_URI",
    "McpHttpEndpoint",
    "McpRun",
    "build_mcp_server",
    "mcp_tools",
    "serve_stdio",
]

DEFAULT_LIMITS = ServerLimits()
SERVER_NAME = "merchantbench"
BRIEF_PROMPT = "brief"
RULES_URI = "merchantbench://platform-rules"
OBSERVATION_URI = "merchantbench://observation"
STORE_URI = "merchantbench://store"
# A tool call's `_meta` entry for the surface's idempotency key (a retried call acts once).
IDEMPOTENCY_META_KEY = "merchantbench/idempotency_key"
HOW_TO_PLAY = (
    "How to play over MCP: each window, call the tools you need, then call end_of_step; its "
    "result carries the next window's observation, or the run's summary once the run is over "
    "(run_over: true). Keep going until then."
)


class McpRun(Protocol):
    """A run an MCP server serves: its agent surface, the lock under which it is read, and
    calls (`end_of_step` also carries `run_over` and the next observation or the summary)."""

    @property
    def surface(self) -> AgentSurface: ...

    @property
    def lock(self) -> AbstractAsyncContextManager[Any]: ...

    async def call_async(
        self, tool: str, args: dict[str, Any] | None, idempotency_key: str | None
    ) -> dict[str, Any]: ...


async def call_locked(
    lock: AbstractAsyncContextManager[Any],
    call: Callable[[str, dict[str, Any] | None, str | None], dict[str, Any]],
    tool: str,
    args: dict[str, Any] | None,
    idempotency_key: str | None,
) -> dict[str, Any]:
    """`call` under `lock`, as an `McpRun.call_async` does it: `end_of_step` (a window's
    simulation) in a worker thread, so the event loop keeps serving while it runs."""
    bound = partial(call, tool, args, idempotency_key)
    async with lock:
        return await anyio.to_thread.run_sync(bound) if tool == END_OF_STEP else bound()


def mcp_tools(surface_schemas: list[dict[str, Any]]) -> list[types.Tool]:
    """MCP tool declarations from OpenAI function tools, schemas unchanged."""
    functions = [schema["function"] for schema in surface_schemas]
    return [
        types.Tool(name=f["name"], description=f["description"], input_schema=f["parameters"])
        for f in functions
    ]


def tool_result(result: dict[str, Any]) -> types.CallToolResult:
    """A tool's JSON result as MCP text and structured content."""
    text = json.dumps(result, ensure_ascii=False, separators=(",", ":"))
    return types.CallToolResult(
        content=[types.TextContent(text=text)],
        structured_content=result,
        is_error=not result.get("ok", False),
    )


class _RunAdapter:
    """The handlers of one run's MCP server."""

    def __init__(self, run: McpRun) -> None:
        self.run = run
        self.lock = run.lock
        schemas = run.surface.tool_schemas()
        self.tools = mcp_tools(schemas)
        self.schemas = {tool.name: tool.input_schema for tool in self.tools}

    async def list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.tools)

    async def call_tool(
        self, ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        key = (params.meta or {}).get(IDEMPOTENCY_META_KEY)
        if key is not None and not isinstance(key, str):
            message = f"_meta {IDEMPOTENCY_META_KEY} must be a string"
            return tool_result(failure(Refusal.INVALID_ARGUMENT, message, "$._meta"))
        result = await self.run.call_async(params.name, params.arguments, key)
        return tool_result(result)

    async def list_prompts(self, ctx: Any, params: Any) -> types.ListPromptsResult:
        prompt = types.Prompt(
            name=BRIEF_PROMPT,
            description="The store's system brief (platform rules, limits, tools) and the open "
            "window's observation: paste it to start playing.",
        )
        return types.ListPromptsResult(prompts=[prompt])

    async def get_prompt(self, ctx: Any, params: types.GetPromptRequestParams) -> Any:
        if params.name != BRIEF_PROMPT:
            raise MCPError(
                types.INVALID_PARAMS, f"unknown prompt {params.name!r}; try {BRIEF_PROMPT!r}"
            )
        async with self.lock:
            surface = self.run.surface
            text = f"{surface.brief()}\n\n{HOW_TO_PLAY}\n\n{surface.observation()}"
        message = types.PromptMessage(role="user", content=types.TextContent(text=text))
        return types.GetPromptResult(description="MerchantBench brief", messages=[message])

    async def list_resources(self, ctx: Any, params: Any) -> types.ListResourcesResult:
        rules = types.Resource(
            uri=RULES_URI,
            name="platform-rules",
            description="The platform rules (the system brief).",
            mime_type="text/plain",
        )
        observation = types.Resource(
            uri=OBSERVATION_URI,
            name="observation",
            description="The open window's observation.",
            mime_type="text/plain",
        )
        store = types.Resource(
            uri=STORE_URI,
            name="store",
            description="The store status as JSON: clock, accounts, net assets, rating and "
            "stars, listings, open orders, orders placed, calls left (the observation's numbers).",
            mime_type="application/json",
        )
        return types.ListResourcesResult(resources=[rules, observation, store])

    async def read_resource(self, ctx: Any, params: types.ReadResourceRequestParams) -> Any:
        uri = str(params.uri)
        mime_type = "text/plain"
        async with self.lock:
            surface = self.run.surface
            if uri == RULES_URI:
                text = surface.brief()
            elif uri == OBSERVATION_URI:
                text = surface.observation()
            elif uri == STORE_URI:
                text = json.dumps(surface.status().to_json(), ensure_ascii=False)
                mime_type = "application/json"
            else:
                raise MCPError(types.INVALID_PARAMS, f"unknown resource {uri!r}")
        contents = types.TextResourceContents(uri=uri, mime_type=mime_type, text=text)
        return types.ReadResourceResult(contents=[contents])


def build_mcp_server(run: McpRun) -> Server[Any]:
    """The low-level MCP server of one run (tools, the brief prompt, three resources)."""
    adapter = _RunAdapter(run)
    return Server(
        SERVER_NAME,
        version=merchantbench.__version__,
        title="MerchantBench",
        description="Run a drop-shipping store for a simulated year.",
        instructions=f"{run.surface.brief()}\n\n{HOW_TO_PLAY}",
        get_tool_input_schema=adapter.schemas.get,
        on_list_tools=adapter.list_tools,
        on_call_tool=adapter.call_tool,
        on_list_prompts=adapter.list_prompts,
        on_get_prompt=adapter.get_prompt,
        on_list_resources=adapter.list_resources,
        on_read_resource=adapter.read_resource,
    )


async def serve_stdio(run: McpRun) -> None:
    """Serve one run over stdin/stdout until the client disconnects; a line that is not a
    message the server can read gets a JSON-RPC error answer (`mcp_surface.stdio`)."""
    server = build_mcp_server(run)
    async with checked_stdio() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


class McpHttpEndpoint:
    """One run's MCP server over streamable HTTP, as an ASGI app.

    Served on its own (`uvicorn.run(endpoint.app, ...)`), the app's lifespan runs the SDK's
    session manager. Mounted inside another app (e.g. `Mount("/runs/{id}", endpoint.app)`, the
    URL then being `/runs/{id}/mcp`), whose lifespan a mount does not run, the host starts it
    instead: `await task_group.start(endpoint.serve)`, and later `endpoint.stop()` from the
    same event loop.

    Args:
        run: The run.
        path: The app's route for MCP requests.
        host: The host the server is reached at; loopback names turn on the SDK's DNS
            rebinding protection (Host and Origin checks).
        idle_seconds: A session with no request in flight for this long is closed and
            forgotten (its client then opens a new one); None keeps sessions until deleted
            (for a host with one trusted client; a server open to agents sets a limit, see
            `merchantbench.limits`).
        max_sessions: Open sessions at most (None: no limit); one more is refused until one
            ends.
        max_body_bytes: The largest request body (413 above it).
    """

    def __init__(
        self,
        run: McpRun,
        path: str = "/mcp",
        host: str = "127.0.0.1",
        idle_seconds: float | None = None,
        max_sessions: int | None = None,
        max_body_bytes: int = DEFAULT_LIMITS.max_body_bytes,
    ) -> None:
        self.server = build_mcp_server(run)
        self.max_sessions = max_sessions
        self.app: Starlette = self.server.streamable_http_app(
            # Plain JSON answers, not one SSE stream per call: the server sends no
            # notifications mid-call, and JSON costs less (docs/performance.md).
            streamable_http_path=path,
            host=host,
            session_idle_timeout=idle_seconds,
            max_sessions=max_sessions,
            max_request_body_size=max_body_bytes,
            json_response=True,
        )
        self._stopped = anyio.Event()

    @property
    def live_sessions(self) -> int:
        """Sessions open now (the SDK's session manager keeps one transport per session)."""
        return len(self.server.session_manager._server_instances)

    def full(self) -> bool:
        """Whether a new session would be refused (`max_sessions` are open)."""
        return self.max_sessions is not None and self.live_sessions >= self.max_sessions

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run the session manager until `stop()` (for a host that mounts `app`)."""
        async with self.server.session_manager.run():
            task_status.started()
            await self._stopped.wait()

    def stop(self) -> None:
        """End `serve()`; open MCP sessions of the run close."""
        self._stopped.set()

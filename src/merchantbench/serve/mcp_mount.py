"""The MCP server on the HTTP server: streamable HTTP at `/runs/{run}/mcp` for every run.

    app = create_app(config, extensions=[mcp_extension()])

A client reaches a run's MCP endpoint with the run's agent bearer token (or the admin token),
exactly as the run's other routes; another run's token is refused (403) before anything of
the MCP session starts. Each run gets its own `McpHttpEndpoint` the first time it is reached;
its session manager runs in a task group the extension adds to the app's lifespan, and stops
when the server does. The MCP run is a `ServedMcpRun`: calls go through the run's host
(`RunHost.call_tool`, the same lock, checkpoints and record as the JSON API), so a run can be
played over the artifact protocol, the JSON API and MCP alike.

A market (several merchants, `market_host.MarketHost`) has one MCP endpoint per merchant, at
`/runs/{run}/agents/{agent}/mcp`, reached with that merchant's token only (another merchant's
token is refused, 403, as on every agent path); its MCP run is a `ServedMerchantMcpRun`.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio
from anyio.abc import TaskGroup
from fastapi import FastAPI, HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

from merchantbench.limits import ServerLimits
from merchantbench.mcp_surface import McpHttpEndpoint
from merchantbench.serve.act import ProtocolError
from merchantbench.serve.app import AppExtension
from merchantbench.serve.auth import require_run, viewer_may_be
from merchantbench.serve.host import RunHost
from merchantbench.serve.market_host import MarketHost
from merchantbench.serve.mcp_run import run_summary
from merchantbench.serve.registry import Hosted, RecordedMarket, RecordedRun, RunRegistry
from merchantbench.serve.settings import gone
from merchantbench.session import END_OF_STEP
from merchantbench.surface import AgentSurface
from merchantbench.tools.errors import failure

__all__ = ["MCP_PATH", "McpMounts", "ServedMcpRun", "mcp_extension"]

MCP_PATH = "/mcp"  # under /runs/{run_id}
MERCHANT_PATH = re.compile(r"/agents/([^/]+)/mcp")  # a market's merchant, under /runs/{run_id}
MCP_SESSION_HEADER = "mcp-session-id"  # a request without one opens a new session


class ServedMcpRun:
    """A run of the HTTP server as an MCP run (`merchantbench.mcp_surface.McpRun`)."""

    def __init__(self, host: RunHost) -> None:
        self.host = host

    @property
    def surface(self) -> AgentSurface:
        return self.host.surface

    @property
    def lock(self) -> AbstractAsyncContextManager[Any]:
        return self.host.cond

    async def call_async(
        self, tool: str, args: dict[str, Any] | None, idempotency_key: str | None
    ) -> dict[str, Any]:
        """One call through the host; a refused request (run over, paused) is a tool error."""
        try:
            result = await self.host.call_tool(tool, args, idempotency_key)
        except ProtocolError as exc:
            return failure(str(exc.body["error"]), str(exc))
        if tool != END_OF_STEP or not result.get("ok"):
            return result
        async with self.host.cond:
            if self.host.finished and self.host.metrics is not None:
                summary = run_summary(self.host.meta, self.host.metrics, self.surface)
                return {**result, "run_over": True, "summary": summary}
            return {**result, "run_over": False, "observation": self.surface.observation()}


class ServedMerchantMcpRun:
    """One merchant of a served market as an MCP run: its own surface, the market's lock, its
    calls through `MarketHost.call_tool`. Its `end_of_step` answers once the merchant's next
    window is open (every merchant still trading has closed this one), with that window's
    observation, or the merchant's summary once the market is over."""

    def __init__(self, host: MarketHost, agent_id: str) -> None:
        self.host = host
        self.agent_id = agent_id
        self.channel = host.channels[agent_id]

    @property
    def surface(self) -> AgentSurface:
        return self.channel.surface

    @property
    def lock(self) -> AbstractAsyncContextManager[Any]:
        return self.host.cond

    async def call_async(
        self, tool: str, args: dict[str, Any] | None, idempotency_key: str | None
    ) -> dict[str, Any]:
        try:
            result = await self.host.call_tool(self.agent_id, tool, args, idempotency_key)
        except ProtocolError as exc:
            return failure(str(exc.body["error"]), str(exc))
        if tool != END_OF_STEP or not result.get("ok"):
            return result
        await self.host.wait_for_window(self.agent_id)
        async with self.host.cond:
            metrics = (self.host.life.results or {}).get(self.agent_id)
            if self.host.finished and metrics is not None:
                meta = self.host.life.records[self.agent_id].manifest
                summary = run_summary(meta, metrics, self.surface)
                return {**result, "run_over": True, "summary": summary}
            if self.channel.dead:
                return {**result, "run_over": True, "store_closed": True}
            return {**result, "run_over": False, "observation": self.surface.observation()}


class McpMounts:
    """The ASGI app mounted at `/runs/{run_id}`: checks the token, then hands the request to
    the run's MCP endpoint (made on first use)."""

    def __init__(self, registry: RunRegistry, host: str, limits: ServerLimits) -> None:
        self.registry = registry
        self.host = host
        self.limits = limits
        self.endpoints: dict[str, McpHttpEndpoint] = {}
        self.task_group: TaskGroup | None = None
        self._making = anyio.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        rest = scope["path"][len(scope.get("root_path", "")) :].rstrip("/")
        merchant = MERCHANT_PATH.fullmatch(rest)
        if rest != MCP_PATH and merchant is None:
            response = JSONResponse({"ok": False, "error": "not_found"}, status_code=404)
            return await response(scope, receive, send)
        try:
            hosted = await require_run(scope["path_params"]["run_id"], request)
            run = self._run_of(hosted, None if merchant is None else merchant[1], request)
        except HTTPException as exc:
            return await JSONResponse(exc.detail, status_code=exc.status_code)(scope, receive, send)
        except ProtocolError as exc:
            return await JSONResponse(exc.body, status_code=exc.status)(scope, receive, send)
        endpoint = await self._endpoint(run)
        if MCP_SESSION_HEADER not in request.headers and endpoint.full():
            return await JSONResponse(self._full(), status_code=429)(scope, receive, send)
        await endpoint.app(scope, receive, send)

    def _full(self) -> dict[str, Any]:
        cap, idle = self.limits.mcp_sessions_per_run, self.limits.mcp_idle_seconds
        message = (
            f"this run already has {cap} open MCP sessions (the server's limit per run and "
            f"agent token): end one (HTTP DELETE with its mcp-session-id) or wait, an idle "
            f"session closes after {idle:g} s"
        )
        return {"ok": False, "error": "too_many_mcp_sessions", "message": message, "limit": cap}

    def _run_of(
        self, hosted: Hosted, agent_id: str | None, request: Request
    ) -> ServedMcpRun | ServedMerchantMcpRun:
        """The MCP run of the path: a single run at `/mcp`, one merchant of a market at
        `/agents/{agent}/mcp` (its own token only: another merchant's is refused, 403)."""
        if isinstance(hosted, RecordedRun | RecordedMarket):
            raise gone("the run is over")
        if agent_id is None:
            if isinstance(hosted, MarketHost):
                raise ProtocolError(
                    404, "unknown_agent",
                    "this run is a market: each merchant's MCP is /runs/{run}/agents/{agent}/mcp",
                )  # fmt: skip
            return ServedMcpRun(hosted)
        if not isinstance(hosted, MarketHost):
            raise ProtocolError(404, "not_found", "a single run's MCP is /runs/{run}/mcp")
        viewer_may_be(request, agent_id)
        hosted.channel(agent_id)  # 404 for the operator's unknown agent
        return ServedMerchantMcpRun(hosted, agent_id)

    async def _endpoint(self, run: ServedMcpRun | ServedMerchantMcpRun) -> McpHttpEndpoint:
        key, path = run.host.run_id, MCP_PATH
        if isinstance(run, ServedMerchantMcpRun):
            path = f"/agents/{run.agent_id}{MCP_PATH}"
            key = f"{key}{path}"
        async with self._making:
            endpoint = self.endpoints.get(key)
            if endpoint is None:
                if self.task_group is None:
                    raise RuntimeError("the MCP mounts start with the app's lifespan")
                endpoint = McpHttpEndpoint(
                    run,
                    path=path,
                    host=self.host,
                    idle_seconds=self.limits.mcp_idle_seconds,
                    max_sessions=self.limits.mcp_sessions_per_run,
                    max_body_bytes=self.limits.max_body_bytes,
                )
                await self.task_group.start(endpoint.serve)
                self.endpoints[key] = endpoint
            return endpoint

    def stop(self) -> None:
        for endpoint in self.endpoints.values():
            endpoint.stop()


def mcp_extension(host: str = "127.0.0.1") -> AppExtension:
    """The extension that serves every run over MCP at `/runs/{run}/mcp`.

    Args:
        host: The address the server is reached at (the SDK checks Host and Origin against
            it when it is a loopback name: DNS rebinding protection).
    """

    def extend(app: FastAPI, registry: RunRegistry) -> None:
        mounts = McpMounts(registry, host, app.state.limits)
        core = app.router.lifespan_context

        @asynccontextmanager
        async def lifespan(app_: Any) -> AsyncIterator[Any]:
            async with core(app_) as state, anyio.create_task_group() as group:
                mounts.task_group = group
                try:
                    yield state
                finally:  # before the core's shutdown checkpoints the runs
                    mounts.stop()

        app.router.lifespan_context = lifespan
        app.mount("/runs/{run_id}", mounts)

    return extend

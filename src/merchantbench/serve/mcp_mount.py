"""The MCP server on the HTTP server: streamable HTTP, one endpoint per agent of every run.

    app = create_app(config, extensions=[mcp_extension()])

A store's agent reaches its run's MCP at `/runs/{run}/mcp`; each merchant of a market has its
own, at `/runs/{run}/agents/{agent}/mcp`. A client reaches it with its agent bearer token (or the
admin token), exactly as the run's other routes: another run's token is refused (403) before
anything of the MCP session starts, and so is another merchant's token (as on every agent
path). Each endpoint is made the first time it is reached; its session manager runs in a task
group the extension adds to the app's lifespan, and stops when the server does. The MCP run is a
`ServedMcpRun`: calls go through the run's host (`Host.call_tool`, the same lock, checkpoints
and record as the JSON API), so a run can be played over the artifact protocol, the JSON API
and MCP alike.
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
from merchantbench.serve.host import Host
from merchantbench.serve.mcp_run import run_summary
from merchantbench.serve.registry import Hosted, RunRegistry
from merchantbench.serve.settings import gone
from merchantbench.session import END_OF_STEP
from merchantbench.surface import AgentSurface
from merchantbench.tools.errors import failure

__all__ = ["MCP_PATH", "McpMounts", "ServedMcpRun", "mcp_extension"]

MCP_PATH = "/mcp"  # under /runs/{run_id}
MERCHANT_PATH = re.compile(r"/agents/([^/]+)/mcp")  # a market's merchant, under /runs/{run_id}
MCP_SESSION_HEADER = "mcp-session-id"  # a request without one opens a new session


class ServedMcpRun:
    """One agent of a served run as an MCP run (`merchantbench.mcp_surface.McpRun`): its own
    surface, the run's lock, its calls through `Host.call_tool`. Its `end_of_step` answers once
    the agent's next window is open (in a market: once every merchant still trading has closed
    this one), with that window's observation, or the agent's summary once the run is over."""

    def __init__(self, host: Host, agent_id: str, path: str) -> None:
        self.host = host
        self.agent_id = agent_id
        self.path = path  # under /runs/{run_id}
        self.channel = host.agent(agent_id)

    @property
    def surface(self) -> AgentSurface:
        return self.channel.surface

    @property
    def lock(self) -> AbstractAsyncContextManager[Any]:
        return self.host.cond

    async def call_async(
        self, tool: str, args: dict[str, Any] | None, idempotency_key: str | None
    ) -> dict[str, Any]:
        """One call through the host; a refused request (run over, paused) is a tool error."""
        try:
            result = await self.host.call_tool(self.agent_id, tool, args, idempotency_key)
        except ProtocolError as exc:
            return failure(str(exc.body["error"]), str(exc))
        if tool != END_OF_STEP or not result.get("ok"):
            return result
        await self.host.wait_for_window(self.agent_id)
        async with self.host.cond:
            life, merchant = self.host.life, self.channel.merchant
            metrics = (life.results or {}).get(merchant)
            if self.host.finished and metrics is not None:
                summary = run_summary(life.records[merchant].manifest, metrics, self.surface)
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
        self.endpoints: dict[str, McpHttpEndpoint] = {}  # by path under /runs: run/…/mcp
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

    def _run_of(self, hosted: Hosted, agent_id: str | None, request: Request) -> ServedMcpRun:
        """The MCP run of the path: a store's agent at `/mcp`, one merchant of a market at
        `/agents/{agent}/mcp` (its own token only: another merchant's is refused, 403)."""
        if not isinstance(hosted, Host):
            raise gone("the run is over")
        market = hosted.settings.market
        if agent_id is None:
            if market:
                raise ProtocolError(
                    404, "unknown_agent",
                    "this run is a market: each merchant's MCP is /runs/{run}/agents/{agent}/mcp",
                )  # fmt: skip
            return ServedMcpRun(hosted, hosted.settings.agent_id, MCP_PATH)
        if not market:
            raise ProtocolError(404, "not_found", "a single run's MCP is /runs/{run}/mcp")
        viewer_may_be(request, agent_id)
        return ServedMcpRun(hosted, agent_id, f"/agents/{agent_id}{MCP_PATH}")  # 404: unknown

    async def _endpoint(self, run: ServedMcpRun) -> McpHttpEndpoint:
        key = f"{run.host.run_id}{run.path}"
        async with self._making:
            endpoint = self.endpoints.get(key)
            if endpoint is None:
                if self.task_group is None:
                    raise RuntimeError("the MCP mounts start with the app's lifespan")
                endpoint = McpHttpEndpoint(
                    run,
                    path=run.path,
                    host=self.host,
                    idle_seconds=self.limits.mcp_idle_seconds,
                    max_body_bytes=self.limits.max_body_bytes,
                    max_sessions=self.limits.mcp_sessions_per_run,
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

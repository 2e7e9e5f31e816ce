"""The FastAPI app: the public agent protocol, our JSON API, OpenAPI at /docs, and the place
where other front ends (the MCP server) mount their per-run sub-apps: `create_app(...,
extensions=[...])`, each extension called as `extension(app, registry)` once the core routes are
in, so it can `app.mount("/runs/{run_id}/mcp", ...)` or `app.include_router(...)` and reach each
agent's surface through `registry.hosts[run_id].agent(agent_id).surface` (a store's agent:
`registry.hosts[run_id].surface`), checking tokens with `merchantbench.serve.auth.require_run`."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

import merchantbench
from merchantbench.limits import BodyLimit, ServerLimits
from merchantbench.runs.lifecycle import CheckpointPolicy
from merchantbench.serve import api, protocol
from merchantbench.serve.act import ProtocolError
from merchantbench.serve.host import Host
from merchantbench.serve.openapi import document_answers
from merchantbench.serve.registry import RunRegistry

__all__ = ["AppExtension", "ServeConfig", "create_app"]

AppExtension = Callable[[FastAPI, RunRegistry], None]
WATCH_SECONDS = 0.05  # how often window wall-clock limits are checked


@dataclass(frozen=True)
class ServeConfig:
    """What a server needs. `admin_token=None` runs without tokens (loopback only: the CLI
    refuses a public bind without them)."""

    runs_dir: Path
    admin_token: str | None
    # Every window by default: a remote agent's window costs more than a checkpoint.
    checkpoints: CheckpointPolicy = CheckpointPolicy(seconds=0)
    only_runs: frozenset[str] | None = None  # host just these runs of the directory
    on_ready: Callable[[RunRegistry], None] | None = None  # called once the runs are loaded
    limits: ServerLimits = ServerLimits()  # body sizes, MCP sessions (serve.limits)


async def _watch_windows(registry: RunRegistry) -> None:
    """Close windows held past their wall-clock limit (off unless a run sets one)."""
    while True:
        await asyncio.sleep(WATCH_SECONDS)
        now = time.monotonic()
        for host in list(registry.hosts.values()):
            if not isinstance(host, Host):
                continue
            if host.settings.window_seconds is not None:
                await host.force_if_overdue(now)


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ProtocolError)
    async def protocol_error(request: Request, exc: ProtocolError) -> JSONResponse:
        return JSONResponse(exc.body, status_code=exc.status)

    @app.exception_handler(StarletteHTTPException)  # FastAPI's own too (a body that does not
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:  # parse)
        body = exc.detail if isinstance(exc.detail, dict) else {"ok": False, "error": exc.detail}
        return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        # Where and what, never the input echoed back (it may be large).
        problems = [
            {"where": ".".join(str(p) for p in e.get("loc", ())), "problem": e.get("msg", "")}
            for e in exc.errors()
        ]
        body = {"ok": False, "error": "invalid_request", "problems": problems[:20]}
        return JSONResponse(body, status_code=400)


def create_app(config: ServeConfig, extensions: Sequence[AppExtension] = ()) -> FastAPI:
    """The server app. Runs found in `config.runs_dir` are picked up when it starts."""
    registry = RunRegistry(
        config.runs_dir,
        config.admin_token,
        config.checkpoints,
        set(config.only_runs) if config.only_runs is not None else None,
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await asyncio.to_thread(registry.load_existing)
        if config.on_ready is not None:
            config.on_ready(registry)
        watcher = asyncio.create_task(_watch_windows(registry))
        try:
            yield
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
            await registry.aclose_all()

    app = FastAPI(
        title="MerchantBench",
        version=merchantbench.__version__,
        description="Agent protocol of the public MerchantBench artifact, and a small JSON API.",
        lifespan=lifespan,
    )
    app.state.registry = registry
    app.state.limits = config.limits
    app.add_middleware(BodyLimit, max_bytes=config.limits.max_body_bytes)
    _install_error_handlers(app)
    app.include_router(protocol.router)
    app.include_router(api.router)
    for extend in extensions:  # per-run sub-apps of other front ends (e.g. MCP) go here
        extend(app, registry)
    document_answers(app)
    return app

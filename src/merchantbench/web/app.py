"""The web app: the playground, the dashboard, or both, standalone or mounted on the HTTP
server.

    create_web_app(play_dir=Path("play"))                 # merchantbench play / study
    create_web_app(runs_root=Path("runs"))                # merchantbench dashboard
    create_app(config, extensions=[web_extension(play_dir=..., runs_root=...)])   # serve

Static assets are served from the package at `/web-static/`; no page loads anything else.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

import merchantbench
from merchantbench.web import dashboard, market_page, play, study
from merchantbench.web.pages import STATIC_DIR
from merchantbench.web.room import PlayRoom

__all__ = ["create_web_app", "web_extension"]


def _install(
    app: FastAPI, play_dir: Path | None, runs_root: Path | None, guards: Sequence[Any] = ()
) -> None:
    app.mount("/web-static", StaticFiles(directory=STATIC_DIR), name="web-static")
    if play_dir is not None:
        app.state.play_room = PlayRoom(play_dir)
        app.include_router(play.router, dependencies=guards)
        app.include_router(study.router, dependencies=guards)
    if runs_root is not None:
        app.state.runs_root = runs_root
        app.include_router(dashboard.router, dependencies=guards)
        app.include_router(market_page.router, dependencies=guards)


def web_extension(
    play_dir: Path | None = None, runs_root: Path | None = None, guards: Sequence[Any] = ()
) -> Callable[[FastAPI, Any], None]:
    """An extension for `merchantbench.serve.create_app`: adds the playground and dashboard.

    Args:
        play_dir: The playground directory, or None for no playground.
        runs_root: The run records the dashboard shows, or None for no dashboard.
        guards: FastAPI dependencies (`Depends(...)`) every page and JSON route of the web app
            runs first, e.g. the serve app's operator check (static assets stay open).
    """

    def extend(app: FastAPI, registry: Any) -> None:
        _install(app, play_dir, runs_root, guards)

    return extend


def create_web_app(play_dir: Path | None = None, runs_root: Path | None = None) -> FastAPI:
    """A server of the playground (`play_dir`), the dashboard (`runs_root`), or both."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        room: PlayRoom | None = getattr(app.state, "play_room", None)
        if room is not None:
            room.close()  # every open store saved where it stands

    app = FastAPI(
        title="MerchantBench web",
        version=merchantbench.__version__,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return JSONResponse({"ok": False, "error": exc.detail}, status_code=exc.status_code)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        # FastAPI's answer without the input echoed back: an input such as NaN has no JSON.
        errors = [{k: v for k, v in e.items() if k != "input"} for e in exc.errors()]
        return JSONResponse({"detail": jsonable_encoder(errors)}, status_code=422)

    _install(app, play_dir, runs_root)
    return app

"""The read-only dashboard of the served runs on `merchantbench serve`, for the operator.

    app = create_app(config, extensions=[mcp_extension(), dashboard_extension(web_extension)])

The dashboard (`merchantbench.web.dashboard`, handed in as `web.app.web_extension` by whoever
composes the server: front ends never import each other) is mounted at `/` over the server's runs
directory: `GET /`, `/runs/view`, `/runs/trace`, `/runs/progress`, and its assets at
`/web-static/`. None of these paths is one of the agent protocol's (`/runs/{run}/...` has three
or more segments, the JSON API lives under `/api`, MCP under `/runs/{run}/mcp`).

The dashboard shows every run of the directory (traces, metrics, progress), so it is the
operator's: an agent token must not read another run's trace, nor its own run's record beyond
what its tools answer. Its routes accept the admin token as a bearer header, or the cookie that
`GET /dashboard?token=ADMIN` sets before redirecting to `/` (a browser cannot send a header on
a link: `serve` prints that link). The cookie holds an HMAC of the admin token, not the token,
so it opens the dashboard and nothing else. A server without tokens (loopback only) shows the
dashboard to anyone who can reach it, as `merchantbench dashboard` does.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.responses import RedirectResponse

from merchantbench.serve.app import AppExtension
from merchantbench.serve.auth import bearer_token, same_secret
from merchantbench.serve.openapi import ADMIN_ROUTE, GUARD_ANSWERS
from merchantbench.serve.registry import RunRegistry

__all__ = ["DASHBOARD_COOKIE", "LOGIN_PATH", "dashboard_extension", "dashboard_link"]

DASHBOARD_COOKIE = "merchantbench_dashboard"
LOGIN_PATH = "/dashboard"
_COOKIE_PURPOSE = b"merchantbench-dashboard-v1"


def _cookie_value(admin_token: str) -> str:
    return hmac.new(admin_token.encode(), _COOKIE_PURPOSE, hashlib.sha256).hexdigest()


def dashboard_link(base_url: str, admin_token: str | None) -> str:
    """The link `serve` prints for the operator's browser."""
    if admin_token is None:
        return f"{base_url}/"
    return f"{base_url}{LOGIN_PATH}?token={admin_token}"


def _denied(status: int, error: str) -> HTTPException:
    message = "open the dashboard link `merchantbench serve` printed (it carries the admin token)"
    return HTTPException(status, {"ok": False, "error": error, "message": message})


async def require_operator(request: Request) -> None:
    """Dependency of every dashboard route: the admin bearer token or the dashboard cookie."""
    registry: RunRegistry = request.app.state.registry
    admin = registry.admin_token
    if admin is None:
        return
    token, cookie = bearer_token(request), request.cookies.get(DASHBOARD_COOKIE)
    if same_secret(token, admin) or same_secret(cookie, _cookie_value(admin)):
        return
    raise _denied(401 if token is None and cookie is None else 403, "operator_only")


GUARD_ANSWERS[require_operator] = ADMIN_ROUTE  # what the OpenAPI document says of it


async def login(
    request: Request, token: Annotated[str | None, Query(max_length=200)] = None
) -> RedirectResponse:
    """`GET /dashboard?token=ADMIN`: set the dashboard cookie, then show the dashboard (without
    a token: only for a browser that has the cookie already)."""
    admin = request.app.state.registry.admin_token
    if admin is not None and token is not None and not same_secret(token, admin):
        raise _denied(403, "operator_only")
    if token is None:
        await require_operator(request)  # no token: a browser that has the cookie already
    response = RedirectResponse("/", status_code=303)  # the token leaves the address bar
    if admin is not None:
        response.set_cookie(
            DASHBOARD_COOKIE, _cookie_value(admin), httponly=True, samesite="strict", path="/"
        )
    return response


DashboardPages = Callable[..., Callable[[FastAPI, Any], None]]
"""`merchantbench.web.app.web_extension`: called with `runs_root: Path` and `guards`."""


def dashboard_extension(pages: DashboardPages) -> AppExtension:
    """The extension that serves the dashboard of the runs directory at `/` (operator only).

    Args:
        pages: The web front end's extension factory (`merchantbench.web.app.web_extension`),
            given the runs directory and the operator check as its guards.
    """

    def extend(app: FastAPI, registry: RunRegistry) -> None:
        guards: Sequence[Any] = [Depends(require_operator)]
        runs_root: Path = registry.runs_dir
        pages(runs_root=runs_root, guards=guards)(app, registry)
        app.add_api_route(LOGIN_PATH, login, methods=["GET"], include_in_schema=False)

    return extend

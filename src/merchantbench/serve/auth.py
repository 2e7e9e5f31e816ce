"""Bearer tokens: one admin token for the operator, one agent token per run.

A request carries its token as `Authorization: Bearer <token>` (or `X-MerchantBench-Token`).
The admin token opens every route; a run's agent token opens only that run's agent routes. A
server started without tokens (loopback only) lets every request through."""

from __future__ import annotations

import ipaddress
import secrets
from typing import TYPE_CHECKING

from fastapi import HTTPException, Request

if TYPE_CHECKING:
    from merchantbench.serve.registry import Hosted, RunRegistry

__all__ = [
    "bearer_token",
    "is_loopback",
    "new_token",
    "require_admin",
    "require_run",
    "viewer_may_be",
]


def new_token() -> str:
    return secrets.token_urlsafe(24)


def is_loopback(host: str) -> bool:
    """True for `localhost` and loopback addresses, where a server without tokens may listen."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bearer_token(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    if header[:7].lower() == "bearer ":
        return header[7:].strip() or None
    return request.headers.get("x-merchantbench-token") or None


def _registry(request: Request) -> RunRegistry:
    registry: RunRegistry = request.app.state.registry
    return registry


def _denied(status: int, error: str) -> HTTPException:
    return HTTPException(status, {"ok": False, "error": error})


def same_secret(a: str | None, b: str | None) -> bool:
    """Constant-time equality of two secrets. Compared as UTF-8 bytes: a header may carry any
    Latin-1 text, and `compare_digest` refuses non-ASCII strings with an exception."""
    return a is not None and b is not None and secrets.compare_digest(a.encode(), b.encode())


async def require_admin(request: Request) -> None:
    """Dependency of the operator's routes. (Async so that FastAPI runs it inline: a plain
    function would cost a thread-pool hop on every request.)"""
    registry = _registry(request)
    if registry.admin_token is None:
        return
    token = bearer_token(request)
    if token is None:
        raise _denied(401, "auth_required")
    if not same_secret(token, registry.admin_token):
        raise _denied(403, "admin_token_required")


async def require_run(run_id: str, request: Request) -> Hosted:
    """Dependency of a run's routes: the run, if the token may reach it (admin or its agent;
    in a market, any of its merchants' tokens, and `request.state.viewer` is then that
    merchant's agent id, None for the operator). An agent token learns nothing of other runs:
    an unknown run and a foreign one both answer 403."""
    registry = _registry(request)
    host = registry.hosts.get(run_id)
    request.state.viewer = None
    if registry.admin_token is not None:
        token = bearer_token(request)
        if token is None:
            raise _denied(401, "auth_required")
        if not same_secret(token, registry.admin_token):
            viewer = registry.token_owner(run_id, token)
            if viewer is None:
                raise _denied(403, "forbidden")
            request.state.viewer = viewer
    if host is None:
        raise _denied(404, "unknown_run")
    return host


def viewer_may_be(request: Request, agent_id: str) -> None:
    """Refuse (403) a merchant's token on another merchant's routes."""
    viewer = getattr(request.state, "viewer", None)
    if viewer is not None and viewer != agent_id:
        raise _denied(403, "forbidden")

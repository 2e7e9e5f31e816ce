"""What one client may cost the server: request body size, the size of an agent's registration
`extra`, and MCP sessions (how long an idle one lives, how many one run may hold). The
defaults are `ServerLimits()`; `merchantbench serve` sets them from its flags (docs/http.md,
"Server limits and security").

`BodyLimit` is the ASGI middleware that bounds every request body: a declared
`Content-Length` over the limit is answered 413 at once; a body without one (chunked) is read
only until it passes the limit, then answered 413. Nothing over the limit reaches a route.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["BodyLimit", "ServerLimits", "json_size", "nests_deeper", "too_large"]

MIB = 1 << 20


@dataclass(frozen=True)
class ServerLimits:
    """Limits of one server.

    Attributes:
        max_body_bytes: The largest request body of any route (413 above it).
        max_extra_bytes: The largest `extra` of `/agent/register`, as compact JSON (413).
        mcp_idle_seconds: An MCP session with no request for this long is closed (its
            memory freed; the client opens a new one).
        mcp_sessions_per_run: Open MCP sessions one run (one agent token) may hold; one more
            is refused with 429 until one is closed or expires.
    """

    max_body_bytes: int = 8 * MIB
    max_extra_bytes: int = 64 * 1024
    mcp_idle_seconds: float = 600.0
    mcp_sessions_per_run: int = 16

    def __post_init__(self) -> None:
        for name in ("max_body_bytes", "max_extra_bytes", "mcp_idle_seconds"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive")
        if self.mcp_sessions_per_run < 1:
            raise ValueError("mcp_sessions_per_run must be at least 1")


def too_large(what: str, size: int | None, limit: int) -> dict[str, Any]:
    """The answer (HTTP 413) to a request over a size limit."""
    told = f" ({size} bytes)" if size is not None else ""
    return {
        "ok": False,
        "error": "too_large",
        "message": f"{what}{told} is over the server's limit of {limit} bytes",
        "limit": limit,
    }


def json_size(value: Any) -> int:
    """Bytes of `value` as compact ASCII JSON (a value decoded from a bounded body: it
    encodes, lone surrogates included)."""
    return len(json.dumps(value, separators=(",", ":")))


def nests_deeper(value: Any, limit: int) -> bool:
    """Whether decoded JSON nests deeper than `limit` levels (as `json_depth` counts them in
    text); a walk without recursion, so any depth is safe to ask about."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            if depth >= limit:
                return True
            stack.extend((child, depth + 1) for child in item)
    return False


class BodyLimit:
    """ASGI middleware: request bodies of at most `max_bytes`, else 413 (see the module)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            return await self._refuse(declared, scope, receive, send)
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client left before its body was in
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                return await self._refuse(None, scope, receive, send)
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        await self.app(scope, _replay(b"".join(chunks), receive), send)

    async def _refuse(self, size: int | None, scope: Scope, receive: Receive, send: Send) -> None:
        body = json.dumps(too_large("the request body", size, self.max_bytes)).encode()
        headers = [(b"content-type", b"application/json"), (b"connection", b"close")]
        headers.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def _content_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that gives the whole body once, then the client's own messages
    (a disconnect, which long-polls watch for)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay

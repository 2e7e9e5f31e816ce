"""The driver's local server: this run's MCP endpoint and a recorder in front of the model.

One uvicorn server serves two things to the Hermes process, each behind a token made for this
process (never the provider's key). It listens on a Unix socket when Hermes is confined (the
socket's directory is the only way out of Hermes' network namespace, `process.py`), else on
127.0.0.1 (a free port):

- `/mcp`: our MCP server (`merchantbench.mcp_surface.McpHttpEndpoint`, streamable HTTP)
  over *this run's* agent surface, so every environment call lands in the run's own trace.
  Per window it accepts calls until `end_of_step`; after that it runs none, so Hermes cannot
  play into the next window on its own (the driver hands it the next observation). Such a
  call is answered as a plain result that says the window is closed and nothing ran (`ok`
  true, `ran` false, `window_closed` true), not as an MCP error: Hermes counts error results
  toward its MCP circuit breaker, and the worker ends Hermes' turn on `window_closed`.
- `/v1/...`: forwards Hermes' model requests to the real endpoint, swapping the token for the
  real key (which thus stays in our process only), and records each call with its tokens,
  latency and cost.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import socket
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import uvicorn

from merchantbench.agents.llm.models import ModelConfig
from merchantbench.agents.llm.usage import CallRecord
from merchantbench.mcp_surface import McpHttpEndpoint, call_locked
from merchantbench.record.words import words_of_message
from merchantbench.session import END_OF_STEP
from merchantbench.surface import AgentSurface

MCP_PATH = "/mcp"
MODEL_PREFIX = "/v1"
WINDOW_CLOSED = (
    "this window is closed: nothing more runs in it. The next window's observation comes as "
    "the next message."
)


def closed_answer() -> dict[str, Any]:
    """The answer to a call made after the window's `end_of_step`: nothing ran."""
    return {"ok": True, "ran": False, "window_closed": True, "message": WINDOW_CLOSED}


class WindowRun:
    """The run our MCP server serves (a `merchantbench.mcp_surface.McpRun`): the surface
    of the open window, closed to calls once the window's `end_of_step` succeeded."""

    def __init__(self, surface: AgentSurface) -> None:
        self.surface = surface
        self.window_closed = True
        self.lock = anyio.Lock()  # MCP requests apply one at a time

    def begin(self, surface: AgentSurface) -> None:
        self.surface = surface
        self.window_closed = False

    def call(
        self,
        tool: str,
        args: dict[str, Any] | str | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        if self.window_closed:
            return closed_answer()
        result = self.surface.call(tool, args, idempotency_key)
        if tool == END_OF_STEP and result.get("ok"):
            self.window_closed = True
            result = {**result, "window_closed": True, "next": WINDOW_CLOSED}
        return result

    async def call_async(
        self, tool: str, args: dict[str, Any] | None, idempotency_key: str | None
    ) -> dict[str, Any]:
        """`call` under the lock; `end_of_step` (a window's simulation) off the event loop."""
        return await call_locked(self.lock, self.call, tool, args, idempotency_key)


class ModelRecorder:
    """Forwards model requests and keeps one `CallRecord` per call."""

    def __init__(self, model: ModelConfig, timeout: float) -> None:
        self.model = model
        self.key = model.api_key()
        self.client = httpx.AsyncClient(timeout=timeout, trust_env=False)
        self.records: list[CallRecord] = []
        self.seq = 0
        self.window = 0

    async def forward(self, method: str, path: str, body: bytes) -> tuple[int, bytes, str]:
        payload = json.loads(body) if body else None
        if isinstance(payload, dict) and self.model.params:
            payload = {**payload, **self.model.params}
        url = self.model.base_url.rstrip("/") + path[len(MODEL_PREFIX) :]
        headers = {"authorization": f"Bearer {self.key}"}
        started = time.perf_counter()
        try:
            answer = await self.client.request(method, url, json=payload, headers=headers)
        except httpx.HTTPError as exc:
            if method == "POST":
                self._record(payload, None, time.perf_counter() - started, type(exc).__name__)
            return (
                502,
                json.dumps({"error": {"message": "model endpoint unreachable"}}).encode(),
                "application/json",
            )
        if method == "POST":
            error = None if answer.is_success else f"HTTP {answer.status_code}"
            self._record(payload, _json(answer), time.perf_counter() - started, error)
        kind = answer.headers.get("content-type", "application/json")
        return answer.status_code, answer.content, kind

    def _record(
        self, request: Any, reply: dict[str, Any] | None, latency: float, error: str | None
    ) -> None:
        usage = (reply or {}).get("usage") or {}
        choice = ((reply or {}).get("choices") or [{}])[0]
        cached = ((usage.get("prompt_tokens_details") or {}).get("cached_tokens")) or 0
        tokens_in, tokens_out = (
            int(usage.get("prompt_tokens") or 0),
            int(usage.get("completion_tokens") or 0),
        )
        self.seq += 1
        self.records.append(
            CallRecord(
                seq=self.seq,
                window=self.window,
                model=str((request or {}).get("model") or self.model.model),
                input_tokens=tokens_in,
                cached_tokens=int(cached),
                output_tokens=tokens_out,
                latency_s=latency,
                cost=self.model.cost(tokens_in, int(cached), tokens_out),
                finish_reason=choice.get("finish_reason"),
                tool_calls=len((choice.get("message") or {}).get("tool_calls") or []),
                error=error,
                words=None if reply is None else words_of_message(choice.get("message")),
            )
        )


def _json(answer: httpx.Response) -> dict[str, Any] | None:
    try:
        parsed = answer.json()
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


class Gateway:
    """The local server (see the module docstring); `start()`, then `port` or the socket at
    `unix_path`, and `stop()`.

    Args:
        surface: The run's surface (the MCP run begins each window with `run.begin`).
        model: The model endpoint the recorder forwards to.
        timeout: The recorder's timeout for one model request.
        unix_path: Listen on a Unix socket at this path (owner-only) instead of
            127.0.0.1.
    """

    def __init__(
        self,
        surface: AgentSurface,
        model: ModelConfig,
        timeout: float,
        unix_path: Path | None = None,
    ) -> None:
        self.token = secrets.token_urlsafe(24)
        self.run = WindowRun(surface)
        self.mcp_app = McpHttpEndpoint(self.run, path=MCP_PATH).app
        self.recorder = ModelRecorder(model, timeout)
        self.unix_path = unix_path
        family = socket.AF_INET if unix_path is None else socket.AF_UNIX
        self._socket = socket.socket(family, socket.SOCK_STREAM)
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def port(self) -> int:
        """The TCP port on 127.0.0.1 (when not on a Unix socket)."""
        return int(self._socket.getsockname()[1])

    async def start(self) -> None:
        self._bind()
        config = uvicorn.Config(
            self._app,
            log_level="warning",
            lifespan="on",
            access_log=False,
            interface="asgi3",
            timeout_graceful_shutdown=5,
        )
        self._server = uvicorn.Server(config)
        self._task = asyncio.create_task(self._server.serve(sockets=[self._socket]))
        while not self._server.started:
            if self._task.done():
                self._task.result()  # raises what stopped it
            await asyncio.sleep(0.01)

    def _bind(self) -> None:
        if self.unix_path is None:
            # uvicorn sets TCP_NODELAY only on sockets it binds itself; without it every
            # request waits ~40 ms (Nagle against delayed ACKs, docs/performance.md).
            self._socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._socket.bind(("127.0.0.1", 0))
            return
        self.unix_path.unlink(missing_ok=True)
        self._socket.bind(str(self.unix_path))
        os.chmod(self.unix_path, 0o600)  # the token guards requests; this guards the door

    async def stop(self) -> None:
        if self._server is not None and self._task is not None:
            self._server.should_exit = True
            await asyncio.wait_for(self._task, timeout=10)
        await self.recorder.client.aclose()
        self._socket.close()
        if self.unix_path is not None:
            self.unix_path.unlink(missing_ok=True)

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self.mcp_app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        authorized = secrets.compare_digest(
            headers.get(b"authorization", b""), f"Bearer {self.token}".encode()
        )
        path = scope.get("path", "")
        if not authorized:
            await _reply(send, 401, b'{"error":"unauthorized"}', "application/json")
        elif path.startswith(MODEL_PREFIX):
            body = await _body(receive)
            status, content, kind = await self.recorder.forward(scope["method"], path, body)
            await _reply(send, status, content, kind)
        else:
            await self.mcp_app(scope, receive, send)


async def _body(receive: Any) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


async def _reply(send: Any, status: int, content: bytes, kind: str) -> None:
    headers = [(b"content-type", kind.encode()), (b"content-length", str(len(content)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": content})

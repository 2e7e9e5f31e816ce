"""A scripted OpenAI-compatible server: real HTTP, canned answers, injected faults.

Harness tests and demos drive the official client against it exactly as against a provider:
`POST /v1/chat/completions` (tools; with `stream: true`, server-sent events) and
`GET /v1/models`. Answers come from a
*responder*, a function from the request body to a reply spec

    {"content": "text or None", "tool_calls": [{"name": "...", "arguments": {...} or "raw"}],
     "finish_reason": "optional", "reasoning": "optional text, as `reasoning_content`"}

built from a script (`script_responder`) or a policy (`scripted_policy.POLICIES`); a spec with
`"status": 401` (any HTTP error status) answers with that error instead. Usage is
estimated like the harness does, and everything before the newest turn counts as cached, so
usage and cost are deterministic. Faults are drawn per request from a seeded stream; every
request body is kept in `requests`, and its `authorization` header in `authorizations`, for
tests to inspect, unless `keep_requests` is off (a long-lived server, a benchmark: each body
holds the whole conversation, so keeping them all grows with the square of a run's length).
"""

from __future__ import annotations

import json
import random
import sys
import threading
import time
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from merchantbench.agents.llm.conversation import estimate_tokens, message_tokens
from merchantbench.agents.llm.faults import FAULT_KINDS, FaultPlan

Responder = Callable[[dict[str, Any]], dict[str, Any]]


def script_responder(replies: Iterable[dict[str, Any]]) -> Responder:
    """Replay `replies` in order, then call `end_of_step` for every further request."""
    queue = list(replies)
    lock = threading.Lock()

    def respond(_request: dict[str, Any]) -> dict[str, Any]:
        with lock:
            if queue:
                return queue.pop(0)
        return {"tool_calls": [{"name": "end_of_step", "arguments": {}}]}

    return respond


def completion_body(request: dict[str, Any], reply: dict[str, Any], n: int) -> dict[str, Any]:
    """A chat.completion object for a reply spec, with usage fields."""
    calls = [
        {
            "id": f"call_{n}_{i}",
            "type": "function",
            "function": {
                "name": call["name"],
                "arguments": call["arguments"]
                if isinstance(call["arguments"], str)
                else json.dumps(call["arguments"], ensure_ascii=False),
            },
        }
        for i, call in enumerate(reply.get("tool_calls") or [])
    ]
    message: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
    if calls:
        message["tool_calls"] = calls
    finish = reply.get("finish_reason") or ("tool_calls" if calls else "stop")
    prompt, cached = _prompt_usage(request)
    output = message_tokens(message)
    if reply.get("reasoning"):  # not billed: a policy's notes leave usage as it was without
        message["reasoning_content"] = reply["reasoning"]
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", "scripted"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": output,
            "total_tokens": prompt + output,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }


def stream_chunks(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """A chat.completion as the chunks a provider streams (`stream: true`): the whole message
    as one delta, then the finish reason, then the usage (as `stream_options.include_usage`
    asks; sent always, as some providers do)."""
    choice = payload["choices"][0]
    message = choice["message"]
    delta: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    if message.get("tool_calls"):
        delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(message["tool_calls"])]
    head = {key: payload[key] for key in ("id", "created", "model")}
    head["object"] = "chat.completion.chunk"
    return [
        {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]},
        {**head, "choices": [], "usage": payload["usage"]},
    ]


def _prompt_usage(request: dict[str, Any]) -> tuple[int, int]:
    messages = request.get("messages") or []
    tools = estimate_tokens(json.dumps(request.get("tools") or [], ensure_ascii=False))
    sizes = [message_tokens(m) for m in messages]
    answered = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    # A provider caches the prefix it has seen: everything up to its previous answer.
    cached = tools + sum(sizes[: answered[-1] + 1]) if answered else 0
    return tools + sum(sizes), cached


def _corrupt(reply: dict[str, Any]) -> dict[str, Any]:
    calls = reply.get("tool_calls") or [{"name": "end_of_step", "arguments": {}}]
    first = dict(calls[0])
    text = first["arguments"]
    text = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False)
    first["arguments"] = text[:-1] + ',"'  # cut the closing brace: no longer JSON
    return {**reply, "tool_calls": [first, *calls[1:]]}


class ScriptedServer:
    """An HTTP server on 127.0.0.1 (a free port) answering from a responder.

    Args:
        responder: Request body → reply spec.
        faults: Faults to inject; none by default.
        port: Port to bind; 0 picks a free one.
        latency: Seconds every answer waits, like a model thinking (0: answer at once).
        keep_requests: Keep every request body and authorization header (for tests); off,
            only `request_count` counts them.
    """

    def __init__(
        self,
        responder: Responder,
        faults: FaultPlan | None = None,
        port: int = 0,
        latency: float = 0.0,
        keep_requests: bool = True,
    ) -> None:
        self.responder = responder
        self.faults = faults or FaultPlan()
        self.latency = latency
        self.keep_requests = keep_requests
        self.request_count = 0
        self.requests: list[dict[str, Any]] = []
        self.authorizations: list[str] = []
        self.faults_injected: dict[str, int] = dict.fromkeys(FAULT_KINDS, 0)
        self._rng = random.Random(self.faults.seed)
        self._lock = threading.Lock()
        self._httpd = _QuietHTTPServer(("127.0.0.1", port), _handler_for(self))
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> ScriptedServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def draw(self, body: dict[str, Any], authorization: str) -> tuple[int, str | None]:
        """Record a request; its number and the fault it meets, if any."""
        with self._lock:
            self.request_count += 1
            if self.keep_requests:
                self.requests.append(body)
                self.authorizations.append(authorization)
            fault = None
            if self._rng.random() < self.faults.rate:
                fault = self._rng.choice(self.faults.kinds)
                self.faults_injected[fault] += 1
            return self.request_count, fault


class _QuietHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up mid-answer (a killed run, a timeout) is no server failure.
        if not isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            super().handle_error(request, client_address)


def _handler_for(server: ScriptedServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as real providers do
        disable_nagle_algorithm = True  # headers and body go out as separate writes

        def log_message(self, format: str, *args: Any) -> None:
            pass  # tests and benchmarks want quiet

        def do_GET(self) -> None:
            if self.path.rstrip("/") != "/v1/models":
                return self._send(404, {"error": {"message": "not found"}})
            model = {"id": "scripted", "object": "model", "created": 0, "owned_by": "merchantbench"}
            self._send(200, {"object": "list", "data": [model]})

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if self.path.rstrip("/") != "/v1/chat/completions":
                return self._send(404, {"error": {"message": "not found"}})
            n, fault = server.draw(body, self.headers.get("authorization", ""))
            self._answer(body, n, fault)

        def _answer(self, body: dict[str, Any], n: int, fault: str | None) -> None:
            plan = server.faults
            if fault == "rate_limit":
                headers = {"retry-after": f"{plan.retry_after:g}"}
                return self._send(429, {"error": {"message": "rate limited"}}, headers)
            if fault == "server_error":
                return self._send(500, {"error": {"message": "scripted failure"}})
            if fault == "dropped":
                self.close_connection = True  # close without a byte of answer
                return
            reply = server.responder(body)
            if "status" in reply:
                return self._send(reply["status"], {"error": {"message": "scripted error"}})
            if fault == "malformed_args":
                reply = _corrupt(reply)
            delay = server.latency + (plan.slow_seconds if fault == "slow" else 0.0)
            if delay:
                time.sleep(delay)
            payload = completion_body(body, reply, n)
            if body.get("stream"):
                return self._stream(stream_chunks(payload), truncate=fault == "truncated")
            self._send(200, payload, truncate=fault == "truncated")

        def _stream(self, chunks: list[dict[str, Any]], truncate: bool) -> None:
            """Server-sent events, then `[DONE]`; a truncated stream stops half-way."""
            events = [f"data: {json.dumps(chunk)}\n\n" for chunk in chunks] + ["data: [DONE]\n\n"]
            data = "".join(events[: len(events) // 2] if truncate else events).encode()
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _send(
            self,
            status: int,
            obj: Any,
            headers: dict[str, str] | None = None,
            truncate: bool = False,
        ) -> None:
            # ASCII escapes, as many servers send: a scripted lone surrogate goes out as the
            # JSON escape "\ud800" (valid JSON), the way a hostile model's would.
            data = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data[: len(data) // 2] if truncate else data)
            if truncate:
                self.close_connection = True  # the body promised more than it sent

    return Handler

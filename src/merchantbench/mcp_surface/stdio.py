"""MCP over stdin/stdout where every line gets an answer. The SDK's stdio transport drops a
line it cannot read as a JSON-RPC message (not JSON, a lone surrogate, nesting past its
parser's limit, a 5,000-digit number) without a word, so the client waits forever. Here
each line is checked as the SDK would read it before the SDK sees it; a line that fails is
answered with a JSON-RPC error (`-32700` not JSON, `-32600` not a valid message; with the
request's id when one can be read, else null) and goes no further.

    async with checked_stdio() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, options)

As the SDK's transport does, stdin is taken off fd 0 (fd 0 then reads the null device, so
nothing the server starts can read the wire) and given back at the end.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from io import TextIOWrapper
from typing import Any

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectSendStream
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from merchantbench.tools.agent_input import json_depth

__all__ = ["checked_stdio", "refusal"]

MAX_DEPTH = 500  # the deepest line decoded to find its id (well within the decoder's stack)
MAX_INT_DIGITS = 40  # longer integers are not read (Python refuses over 4,300 digits)
MAX_ID_CHARS = 200
MAX_REASON_CHARS = 200


def _bounded_int(text: str) -> int | None:
    return int(text) if len(text) <= MAX_INT_DIGITS else None


def _decode(line: str) -> Any:
    """The line as JSON (over-long integers read as null), or ValueError."""
    if json_depth(line) > MAX_DEPTH:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
    return json.loads(line, parse_int=_bounded_int)


def _request_id(line: str) -> Any:
    """The id of a request line, if it is JSON with a usable id; else None."""
    try:
        message = _decode(line)
    except ValueError:
        return None
    request_id = message.get("id") if isinstance(message, dict) else None
    if type(request_id) is int and -(2**63) <= request_id < 2**63:
        return request_id
    if isinstance(request_id, str) and len(request_id) <= MAX_ID_CHARS:
        return request_id.encode("utf-8", "replace").decode("utf-8")
    return None


def refusal(line: str, problem: Exception) -> types.JSONRPCError:
    """The answer to a line that is not a JSON-RPC message the server can read."""
    try:
        _decode(line)
        code, what = types.INVALID_REQUEST, "not a valid JSON-RPC message"
    except ValueError:
        code, what = types.PARSE_ERROR, "not JSON this server reads"
    reason = " ".join(str(problem).split())[:MAX_REASON_CHARS]
    reason = reason.encode("utf-8", "replace").decode("utf-8")
    error = types.ErrorData(code=code, message=f"{what}: {reason}")
    return types.JSONRPCError(jsonrpc="2.0", id=_request_id(line), error=error)


class _CheckedLines:
    """The lines of `source` the SDK can read; the others are answered through `refusals`."""

    def __init__(self, source: Any, refusals: MemoryObjectSendStream[types.JSONRPCError]) -> None:
        self.source = source
        self.refusals = refusals

    async def __aiter__(self) -> AsyncIterator[str]:
        async with self.refusals:
            async for line in self.source:
                if not line.strip():
                    continue
                try:
                    types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                except Exception as exc:  # whatever the SDK's reader would have dropped
                    await self.refusals.send(refusal(line, exc))
                    continue
                yield line


@asynccontextmanager
async def checked_stdio() -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's stdio streams, fed only lines it can read (see the module)."""
    wire = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    stdin = TextIOWrapper(open(wire, "rb", closefd=False), encoding="utf-8", errors="replace")  # noqa: SIM115
    send_refusal, refusals = anyio.create_memory_object_stream[types.JSONRPCError](16)
    lines = _CheckedLines(anyio.wrap_file(stdin), send_refusal)
    try:
        async with (
            stdio_server(stdin=lines) as (read_stream, write_stream),  # type: ignore[arg-type]
            anyio.create_task_group() as group,
        ):

            async def answer_refusals() -> None:
                async with refusals:
                    async for error in refusals:
                        await write_stream.send(SessionMessage(error))

            group.start_soon(answer_refusals)
            yield read_stream, write_stream
            group.cancel_scope.cancel()
    finally:
        stdin.close()
        os.dup2(wire, 0)
        os.close(wire)

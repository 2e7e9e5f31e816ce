"""How sandboxed code calls the environment tools: two pipes and a tiny module.

The snippet imports `merchantbench_tools` (staged next to it, read-only) and calls
`call("search_products", query="gel pen")` or the same tool as a function,
`search_products(query="gel pen")`. Each call is one line of JSON on the requests pipe,
`{"id": n, "tool": name, "args": {...}}`; the parent answers on the answers pipe with
`{"id": n, "result": {...}}`, where the result is exactly what `Session.call` returned. So these
calls are environment calls (origin "env"): they are traced, count towards the window's call cap
and the metrics, and reach nothing a tool would not show.

The parent never trusts the pipe: a line that is not strict JSON (`NaN`, `Infinity` and numbers
too large for a float are refused), not UTF-8, longer than `MAX_REQUEST_BYTES`, nested deeper
than `MAX_NESTING` (checked before parsing, so no depth can exhaust the parser's stack), holding a
lone surrogate such as `"\\ud800"` (it could not be encoded again), not an object, or naming no
tool gets a structured `bad_request` answer (with id null) and reaches no tool; `end_of_step` is
refused (a snippet must not close the window under the harness); past `max_calls` calls a snippet
gets `bridge_limit` answers. A snippet that keeps calling without reading the answers fills the
parent's buffer; past `MAX_UNREAD_BYTES` the parent stops serving and closes the requests pipe,
so the snippet's next call fails with a clear message instead of the parent's memory growing.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
from typing import IO, Any

import numpy as np

from merchantbench.agents.llm.sandbox import BRIDGE_ENV
from merchantbench.refusals import Refusal
from merchantbench.surface import AgentSurface
from merchantbench.tools.errors import failure
from merchantbench.tools.toolset import END_OF_STEP

MODULE_NAME = "merchantbench_tools"
MAX_REQUEST_BYTES = 1 << 20
MAX_UNREAD_BYTES = 4 << 20
MAX_NESTING = 32
REFUSED_IN_CODE = {
    END_OF_STEP: "end_of_step cannot be called from code; call it as a tool when the window's "
    "work is done",
}

_MODULE_TEMPLATE = '''"""Call the store's tools from code.

    import merchantbench_tools as mt
    mt.search_products(query="gel pen", sort="sales_desc")   # or mt.call("search_products", ...)

Each function returns the tool's answer as a dict, exactly as when you call the tool directly
(`{"ok": false, "error": {...}}` on a refusal), and counts as one tool call of this window.
`tools()` lists the tools with their descriptions. end_of_step is not available from code.
"""

import json
import os

TOOLS = __TOOLS__
_channel = {}


class ToolBridgeError(RuntimeError):
    """The bridge to the tools is gone; no more calls can be made from this snippet."""


def _pipes():
    if not _channel:
        fds = os.environ.get(__BRIDGE_ENV__)
        if not fds:
            raise ToolBridgeError("no tool bridge in this execution")
        requests, answers = (int(fd) for fd in fds.split(","))
        _channel.update(out=os.fdopen(requests, "wb", 0), inp=os.fdopen(answers, "rb"), n=0)
    return _channel


def _plain(value):
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return value.tolist()
    raise TypeError(f"tool arguments must be JSON values, not {type(value).__name__}")


def call(tool, /, **args):
    """Call one tool by name with keyword arguments; returns its answer (a dict)."""
    pipes = _pipes()
    pipes["n"] += 1
    line = json.dumps({"id": pipes["n"], "tool": tool, "args": args}, default=_plain)
    try:
        pipes["out"].write(line.encode() + b"\\n")
        while answer := pipes["inp"].readline():
            reply = json.loads(answer)
            if reply.get("id") == pipes["n"]:
                return reply["result"]
    except OSError as exc:
        raise ToolBridgeError(f"the tool bridge is closed ({exc})") from None
    raise ToolBridgeError("the tool bridge is closed")


def tools():
    """Tool names and descriptions."""
    return dict(TOOLS)


def _tool_function(name, doc):
    def tool(**args):
        return call(name, **args)

    tool.__name__ = tool.__qualname__ = name
    tool.__doc__ = doc
    return tool


for _name, _doc in TOOLS.items():
    globals()[_name] = _tool_function(_name, _doc)
__all__ = ["call", "tools", "ToolBridgeError", *TOOLS]
'''


def tools_module_source(schemas: list[dict[str, Any]]) -> str:
    """Source of `merchantbench_tools` for these tool schemas (OpenAI function format)."""
    docs = {}
    for schema in schemas:
        function = schema["function"]
        if function["name"] in REFUSED_IN_CODE:
            continue
        summary = function.get("description", "").split("\n\n")[0]
        params = ", ".join(function.get("parameters", {}).get("properties", {}))
        docs[function["name"]] = f"{summary}\n\nArguments: {params or 'none'}."
    module = _MODULE_TEMPLATE.replace("__TOOLS__", json.dumps(docs, indent=1))
    return module.replace("__BRIDGE_ENV__", repr(BRIDGE_ENV))


class ToolBridge:
    """The parent's end of the bridge: serves a snippet's tool calls through the session.

    One bridge serves one execution (`CodeRunner.run(..., bridge=...)`).

    Args:
        session: The session whose tools the snippet calls.
        max_calls: Calls served per execution; later ones get `bridge_limit`.
    """

    def __init__(self, session: AgentSurface, max_calls: int = 200) -> None:
        self.session = session
        self.max_calls = max_calls
        self.calls = 0
        self.bad_requests = 0
        self.stalled = False
        self._files: list[IO[bytes]] = []
        self._child_fds: list[int] = []

    def module_source(self) -> str:
        """The `merchantbench_tools` module for this session's tools."""
        return tools_module_source(self.session.tool_schemas())

    def open(self) -> tuple[int, int]:
        requests_read, requests_write = os.pipe()
        answers_read, answers_write = os.pipe()
        self._files = [os.fdopen(requests_read, "rb", 0), os.fdopen(answers_write, "wb", 0)]
        self._child_fds = [requests_write, answers_read]
        return requests_write, answers_read

    def child_started(self) -> None:
        for fd in self._child_fds:
            os.close(fd)
        self._child_fds = []

    def close(self) -> None:
        self.child_started()
        for file in self._files:
            file.close()  # idempotent, also after the transports closed them

    async def serve(self) -> None:
        """Answer requests until the snippet closes its end (or stalls the answers)."""
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=MAX_REQUEST_BYTES)
        requests, answers = self._files
        read_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), requests
        )
        write_transport, _ = await loop.connect_write_pipe(asyncio.Protocol, answers)
        try:
            while (line := await _next_line(reader)) != b"":
                reply = self.answer(line)
                if write_transport.is_closing():
                    continue  # the snippet closed its answers pipe; its calls still count
                write_transport.write(json.dumps(reply).encode() + b"\n")
                if write_transport.get_write_buffer_size() > MAX_UNREAD_BYTES:
                    self.stalled = True
                    break
        finally:
            read_transport.close()
            write_transport.close()

    def answer(self, line: bytes | None) -> dict[str, Any]:
        """The reply to one request line (None: a line too long to read)."""
        request, problem = _decode(line)
        if request is None:
            self.bad_requests += 1
            return {"id": None, "result": failure(Refusal.BAD_REQUEST, problem)}
        rid = request.get("id") if isinstance(request.get("id"), int | str) else None
        tool = request["tool"]
        if tool in REFUSED_IN_CODE:
            result = failure(Refusal.NOT_ALLOWED_IN_CODE, REFUSED_IN_CODE[tool])
        elif self.calls >= self.max_calls:
            result = failure(
                Refusal.BRIDGE_LIMIT, f"at most {self.max_calls} tool calls per snippet"
            )
        else:
            self.calls += 1
            result = self.session.call(tool, request.get("args") or {})
        return {"id": rid, "result": result}


async def _next_line(reader: asyncio.StreamReader) -> bytes | None:
    """The next request line; None for a line over the size limit (dropped up to its end);
    b"" at end of file."""
    too_long = False
    while True:
        try:
            line = await reader.readuntil(b"\n")
        except asyncio.LimitOverrunError as overrun:
            too_long = True
            await reader.readexactly(overrun.consumed)  # drop it; its end is still to come
            continue
        except asyncio.IncompleteReadError as end:
            line = end.partial  # a last line without its newline, or b"" at end of file
        return None if too_long else line


def _decode(line: bytes | None) -> tuple[dict[str, Any] | None, str]:
    """A request, or None and what is wrong with the line."""
    if line is None:
        return None, f"request longer than {MAX_REQUEST_BYTES} bytes"
    try:
        text = line.decode("utf-8")
        if _nesting(text) > MAX_NESTING:
            return None, f"a request may nest at most {MAX_NESTING} levels of arrays and objects"
        request = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
        json.dumps(request, ensure_ascii=False).encode("utf-8")  # lone surrogates fail here
    except _NotFinite:
        return None, "numbers must be finite (no NaN, Infinity or overflowing values)"
    except UnicodeError:
        return None, "a request must be valid UTF-8 text without lone surrogates"
    except ValueError:  # not JSON (also an integer of more digits than Python converts)
        return None, 'a request is one line of JSON: {"id": 1, "tool": name, "args": {...}}'
    if not isinstance(request, dict) or not isinstance(request.get("tool"), str):
        return None, "a request is a JSON object with a string `tool`"
    if not isinstance(request.get("args") or {}, dict):
        return None, "`args` must be a JSON object of the tool's arguments"
    return request, ""


class _NotFinite(ValueError):
    """A JSON number that is not a finite float."""


# Strings (with their escapes) and everything else but brackets, removed in one pass of the C
# regex engine: what is left decides the nesting depth (a stray quote of malformed text stays).
_NOT_A_BRACKET = re.compile(r'"(?:[^"\\]|\\.)*"|[^\[\]{}"]+')


def _nesting(text: str) -> int:
    """Deepest nesting of arrays and objects in JSON text, without recursion (malformed text
    gives some number; the parser then refuses it)."""
    brackets = np.frombuffer(_NOT_A_BRACKET.sub("", text).encode("ascii"), dtype=np.uint8)
    if brackets.size == 0:
        return 0
    steps = np.where((brackets == ord("[")) | (brackets == ord("{")), 1, -1)
    return int(np.cumsum(steps).max())


def _refuse_constant(name: str) -> float:
    raise _NotFinite(name)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotFinite(text)
    return value

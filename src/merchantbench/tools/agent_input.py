"""Hostile input, checked once at the agent surface before any tool sees it.

Everything an agent sends (a tool name, arguments as a dict or as the raw JSON text a model
wrote, an idempotency key) is checked for what would crash or poison a run further down:

- text that is not valid Unicode (a lone surrogate such as "\\ud800", which is valid JSON
  but cannot be encoded, written to a trace or sent to a model);
- size (raw arguments over `MAX_ARGUMENT_CHARS`, more than `MAX_NODES` values);
- nesting deeper than `MAX_DEPTH` (found by a linear scan, never by recursion);
- non-finite numbers (NaN, ±Infinity: JSON has none);
- values of non-JSON types from a Python agent (bytes, numpy scalars, sets, objects).

A call that fails a check is refused with a structured error and never reaches the tool; what
the trace records of it is `safe_text` of its input, which is always strict JSON.
"""

from __future__ import annotations

import json
import math
import reprlib
from collections.abc import Mapping
from typing import Any, NamedTuple

from merchantbench.refusals import Refusal
from merchantbench.tools.errors import failure

MAX_ARGUMENT_CHARS = 1 << 20  # raw JSON arguments; the largest legitimate (a memory doc) is less
MAX_DEPTH = 32  # the deepest legitimate arguments (items of a list of objects) are 3 deep
MAX_NODES = 20_000
MAX_NAME_CHARS = 64
_PLAIN_KEYS = 64  # a flat object this small cannot exceed MAX_NODES
TRACE_RAW_CHARS = 200  # of refused raw input, what the trace keeps

_SCALARS = (str, int, float, bool, type(None))
_SHORT_REPR = reprlib.Repr()  # keyword arguments need Python 3.12; set the limits one by one
_SHORT_REPR.maxlevel, _SHORT_REPR.maxstring, _SHORT_REPR.maxother = 3, TRACE_RAW_CHARS, 40


class HostileInput(Exception):
    """The input failed a check; `result` is the structured refusal to answer with."""

    def __init__(self, result: dict[str, Any]) -> None:
        super().__init__(result["error"]["message"])
        self.result = result


class AgentInput(NamedTuple):
    """A call's input after the checks: arguments decoded to a dict of plain JSON values.

    Immutable; a named tuple rather than a frozen dataclass, since one is made per call and a
    frozen dataclass sets each field through `object.__setattr__`."""

    tool: str
    args: dict[str, Any]
    idempotency_key: str | None


def is_valid_text(text: str) -> bool:
    """True unless `text` holds a lone surrogate (it then cannot be encoded as UTF-8)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def safe_text(value: Any, limit: int = TRACE_RAW_CHARS) -> str:
    """A short, always-encodable rendering of any input, for traces and error messages."""
    if isinstance(value, str):
        text = value[:limit]
    else:
        try:
            text = _SHORT_REPR.repr(value)[:limit]  # bounded depth: never recurses far
        except Exception:  # an object whose repr fails is still recorded, by its type
            text = f"<{type(value).__name__}>"
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def scrub(value: Any) -> Any:
    """A copy of JSON-like data with every lone surrogate replaced by U+FFFD, so that text a
    model sent can be kept in a conversation and sent again. Iterative, any depth."""
    if isinstance(value, str):
        return value if is_valid_text(value) else _scrub_str(value)
    if not isinstance(value, dict | list):
        return value
    root: Any = {} if isinstance(value, dict) else []
    stack = [(value, root)]
    while stack:
        source, target = stack.pop()
        items = source.items() if isinstance(source, dict) else enumerate(source)
        for key, item in items:
            if isinstance(item, dict | list):
                copy: Any = {} if isinstance(item, dict) else []
                stack.append((item, copy))
                item = copy
            elif isinstance(item, str) and not is_valid_text(item):
                item = _scrub_str(item)
            if isinstance(target, dict):
                target[_scrub_str(key) if isinstance(key, str) else key] = item
            else:
                target.append(item)
    return root


def _scrub_str(text: str) -> str:
    return text.encode("utf-8", "replace").decode("utf-8") if not is_valid_text(text) else text


def check_call(tool: Any, args: Any, idempotency_key: Any) -> AgentInput:
    """Check one call's input; raise `HostileInput` with the refusal if it fails.

    A name that is not short valid text is kept as its safe rendering, one character longer
    than any declared name can be: the registry then answers it `unknown_tool` like any name it
    does not offer (`tools.errors.unknown_tool`: one answer, one message).
    """
    if not isinstance(tool, str) or not is_valid_text(tool) or len(tool) > MAX_NAME_CHARS:
        tool = safe_text(tool, MAX_NAME_CHARS + 1)
    if idempotency_key is not None and (
        not isinstance(idempotency_key, str) or not is_valid_text(idempotency_key)
    ):
        message = "idempotency_key must be a string of valid Unicode text"
        raise HostileInput(failure(Refusal.INVALID_ARGUMENT, message, "$.idempotency_key"))
    return AgentInput(tool, decode_arguments(args), idempotency_key)


def decode_arguments(args: Any) -> dict[str, Any]:
    """Arguments as a checked dict: from raw JSON text, a mapping, or nothing."""
    if args is None:
        return {}
    if type(args) is dict:  # what Python agents send: no need for the Mapping ABC's check
        return _check_value(dict(args))
    if isinstance(args, str):
        return _decode_text(args)
    if isinstance(args, Mapping):
        return _check_value(dict(args))
    message = f"arguments must be a JSON object, got {type(args).__name__}"
    raise HostileInput(failure(Refusal.INVALID_ARGUMENT, message, "$"))


def _decode_text(text: str) -> dict[str, Any]:
    if len(text) > MAX_ARGUMENT_CHARS:
        message = f"arguments are {len(text)} characters; at most {MAX_ARGUMENT_CHARS}"
        raise HostileInput(failure(Refusal.INVALID_ARGUMENT, message, "$"))
    if not is_valid_text(text):
        raise HostileInput(
            failure(Refusal.INVALID_JSON, "arguments hold invalid Unicode (a surrogate)")
        )
    if not text.strip():
        return {}
    if json_depth(text) > MAX_DEPTH:
        raise HostileInput(failure(Refusal.INVALID_JSON, f"arguments nest deeper than {MAX_DEPTH}"))
    try:
        decoded = _DECODER.decode(text)
    except ValueError as exc:  # JSONDecodeError, and the NaN/Infinity refusal below
        raise HostileInput(
            failure(Refusal.INVALID_JSON, f"arguments are not valid JSON: {exc}")
        ) from None
    if not isinstance(decoded, dict):
        kind = type(decoded).__name__
        raise HostileInput(
            failure(Refusal.INVALID_JSON, f"arguments must be a JSON object, got {kind}")
        )
    return _check_value(decoded)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def json_depth(text: str) -> int:
    """The deepest nesting of arrays and objects in JSON text (strings skipped), linearly."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return 0  # cannot be deeper than the number of openers
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


# A value met in the walk: (value, the node it is in, its key or index there, depth).
_Node = tuple[Any, "_Node | None", "str | int | None", int]


def _path(node: _Node) -> str:
    """The JSON path of a node ("$.items[3].sale_price"), built only for a refusal."""
    steps: list[str] = []
    while node[1] is not None:
        key = node[2]
        steps.append(f"[{key}]" if type(key) is int else f".{key}")
        node = node[1]
    return "$" + "".join(reversed(steps))


def _plain(root: dict[str, Any]) -> bool:
    """Whether `root` is a small flat object of ASCII keys and plain, valid scalars (what
    most calls send): it then passes every check without the walk."""
    if len(root) > _PLAIN_KEYS:
        return False
    for key, value in root.items():
        kind = type(value)
        if type(key) is not str or not key.isascii():
            return False
        if kind is str:
            if not value.isascii():
                return False
        elif kind is float:
            if not math.isfinite(value):
                return False
        elif kind is not int and kind is not bool and value is not None:
            return False
    return True


def _check_value(root: dict[str, Any]) -> dict[str, Any]:
    """Walk decoded arguments without recursion; refuse what JSON cannot carry."""
    if _plain(root):
        return root
    stack: list[_Node] = [(root, None, None, 1)]
    nodes = 0
    while stack:
        node = stack.pop()
        value, _, _, depth = node
        nodes += 1
        if nodes > MAX_NODES:
            raise HostileInput(
                failure(Refusal.INVALID_ARGUMENT, f"more than {MAX_NODES} values", "$")
            )
        if depth > MAX_DEPTH:
            message = f"nested deeper than {MAX_DEPTH}"
            raise HostileInput(failure(Refusal.INVALID_ARGUMENT, message, _path(node)))
        kind = type(value)
        if kind is dict:
            for key, item in value.items():
                if type(key) is not str or not is_valid_text(key):
                    message = f"object keys must be strings of valid text, got {safe_text(key)!r}"
                    raise HostileInput(failure(Refusal.INVALID_ARGUMENT, message, _path(node)))
                stack.append((item, node, key, depth + 1))
        elif kind is list or kind is tuple:
            stack.extend((item, node, i, depth + 1) for i, item in enumerate(value))
        elif kind not in _SCALARS:
            message = f"{kind.__module__}.{kind.__name__} is not a JSON value"
            raise HostileInput(failure(Refusal.INVALID_ARGUMENT, message, _path(node)))
        elif kind is str and not is_valid_text(value):
            message = "text holds a lone surrogate"
            raise HostileInput(failure(Refusal.INVALID_ARGUMENT, message, _path(node)))
        elif kind is float and not math.isfinite(value):
            message = f"{value} is not a JSON number"
            raise HostileInput(failure(Refusal.INVALID_ARGUMENT, message, _path(node)))
    return root

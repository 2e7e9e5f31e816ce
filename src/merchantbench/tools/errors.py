"""The two kinds of error a tool call can meet.

A *refusal* is expected: the agent sent arguments that do not fit the schema, asked for a product
that does not exist, or tried to list a 51st product. It goes back to the agent as
`{"ok": false, "error": {"code", "message", "path"?}}` and the store is left as it was. A tool
body signals a refusal by raising `ToolError`.

A *bug* is anything else. It is never turned into an error string for the agent: it propagates
out of `ToolRegistry.call` so that the run crashes loudly and the trace points at the line.

This module also turns pydantic validation errors into refusals whose `path` is a JSON path
(`$.items[2].sale_price`) into the arguments the agent sent.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from merchantbench.refusals import Refusal

FRAMEWORK_CODES: frozenset[Refusal] = frozenset(c for c in Refusal if c.source == "call")
"""Codes the framework itself answers with, for any call; tools add their own domain codes
(the catalogue of all of them is `merchantbench.refusals.Refusal`)."""

_MAX_DETAILS = 20  # an agent gains nothing from the 300th error of a 100-item batch
_MAX_INPUT_CHARS = 60
_OBJECT_EXPECTED = frozenset({"model_type", "model_attributes_type", "dict_type"})
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class ToolError(Exception):
    """An expected refusal, returned to the agent instead of a result.

    Raise it from a tool body *before* changing any state: the framework cannot roll back a
    half-applied action.

    Args:
        code: The reason the agent can branch on: a `Refusal` (e.g. `Refusal.LISTING_LIMIT`).
        message: One or two sentences telling the agent what went wrong and what it can do.
        path: JSON path of the offending argument, e.g. `$.items[3].product_id`, if any.
    """

    def __init__(self, code: str, message: str, path: str | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = str(code)
        self.message = message
        self.path = path

    def to_result(self) -> dict[str, Any]:
        """The refusal as the agent sees it."""
        return failure(self.code, self.message, self.path)


def failure(
    code: str,
    message: str,
    path: str | None = None,
    details: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Build the `{"ok": false, "error": {...}}` answer; absent fields are left out."""
    # A `Refusal` is written as the plain string it is: answers are plain JSON values.
    error: dict[str, Any] = {"code": str(code), "message": message}
    if path is not None:
        error["path"] = path
    if details:
        error["details"] = details
    return {"ok": False, "error": error}


def unknown_tool(
    name: object, offered: Sequence[str], switched_off: bool = False
) -> dict[str, Any]:
    """The one answer to a call of a tool that is not offered (any front end, any name).

    Args:
        name: What the agent sent as the tool's name.
        offered: The names of the tools this run offers, in their order.
        switched_off: The name is an optional tool this scenario leaves off.
    """
    if switched_off:
        message = f"The tool {name!r} is not enabled in this scenario."
    else:
        message = f"There is no tool named {name!r}."
        close = difflib.get_close_matches(name, offered, n=1) if isinstance(name, str) else []
        if close:
            message += f" Did you mean {close[0]!r}?"
    return failure(Refusal.UNKNOWN_TOOL, f"{message} Available tools: {', '.join(offered)}.")


def json_path(segments: Sequence[str | int]) -> str:
    """Render location segments as a JSON path.

    `("items", 2, "sale_price")` becomes `$.items[2].sale_price`; keys that are not identifiers
    are quoted: `$["odd key"]`.
    """
    parts = ["$"]
    for segment in segments:
        if isinstance(segment, int):
            parts.append(f"[{segment}]")
        elif _IDENTIFIER.match(segment):
            parts.append(f".{segment}")
        else:
            parts.append(f"[{json.dumps(segment, ensure_ascii=False)}]")
    return "".join(parts)


def _input_segments(loc: tuple[Any, ...], arguments: Any, error_type: str) -> list[str | int]:
    """Keep the parts of a pydantic location that index into what the agent actually sent.

    Pydantic inserts the names of union members (`int`, `str`, a model's class name) into error
    locations; the agent never wrote those, so a segment survives only if it leads somewhere in
    the input, or if it names a required field that is missing.
    """
    kept: list[str | int] = []
    current = arguments
    for position, segment in enumerate(loc):
        last = position == len(loc) - 1
        in_dict = isinstance(current, dict) and segment in current
        in_list = isinstance(current, list) and isinstance(segment, int)
        if in_dict or (in_list and 0 <= segment < len(current)):
            current = current[segment]
        elif not (last and error_type == "missing" and isinstance(current, dict)):
            continue
        kept.append(segment if isinstance(segment, int | str) else str(segment))
    return kept


def _shown_input(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=repr)
    if len(text) > _MAX_INPUT_CHARS:
        text = text[: _MAX_INPUT_CHARS - 1] + "…"
    return text


def _explain(error: ErrorDetails, allowed: Sequence[str]) -> str:
    """One error in words the agent can act on."""
    if error["type"] == "extra_forbidden":
        loc = error["loc"]
        if len(loc) == 1:
            return f"unknown argument {str(loc[0])!r}; allowed: {', '.join(allowed) or 'none'}"
        return f"unknown field {str(loc[-1])!r}"
    if error["type"] == "missing":
        return "required but missing"
    if error["type"] in _OBJECT_EXPECTED:
        # pydantic names the Python class here, which means nothing to the agent
        return f"Input should be a JSON object (got {_shown_input(error.get('input'))})"
    return f"{error['msg']} (got {_shown_input(error.get('input'))})"


def invalid_arguments(
    exc: ValidationError, arguments: Any, allowed: Sequence[str]
) -> dict[str, Any]:
    """Turn a validation error into an `invalid_argument` refusal.

    The message and `path` describe the first error; `details` lists up to 20 of them.

    Args:
        exc: The error raised while validating the arguments.
        arguments: The arguments as the agent sent them (after JSON decoding).
        allowed: The tool's parameter names, offered when the agent invents one.
    """
    details = []
    for error in exc.errors(include_url=False)[:_MAX_DETAILS]:
        segments = _input_segments(error["loc"], arguments, error["type"])
        details.append({"path": json_path(segments), "message": _explain(error, allowed)})
    first = details[0]
    count = exc.error_count()
    more = f"; and {count - 1} more (see details)" if count > 1 else ""
    message = f"{first['path']}: {first['message']}{more}"
    return failure(Refusal.INVALID_ARGUMENT, message, first["path"], details if count > 1 else None)

"""Reading an /act request: which tool calls of an OpenAI-format messages batch the server must
run. Pure functions; the refusals carry the HTTP status the protocol gives them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from merchantbench.limits import nests_deeper
from merchantbench.refusals import Refusal
from merchantbench.tools.agent_input import MAX_ARGUMENT_CHARS, MAX_DEPTH, json_depth
from merchantbench.tools.toolset import END_OF_STEP

__all__ = [
    "ENV_ORIGIN",
    "PlannedCall",
    "ProtocolError",
    "bounded_arguments",
    "canonical_arguments",
    "plan_calls",
    "stale_step",
]

ENV_ORIGIN = "merchantbench_env"  # tool calls with this origin (the default) are ours to run
ROLES = ("system", "user", "assistant", "tool")
MAX_ID_LENGTH = 200


class ProtocolError(Exception):
    """A refused request: nothing was run. `body` is the JSON answer, `status` its HTTP code."""

    def __init__(self, status: int, error: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.body = {"ok": False, "error": str(error), "message": message, **extra}


@dataclass(frozen=True)
class PlannedCall:
    """One tool call of the batch: its id, tool name, raw arguments and origin."""

    call_id: str
    name: str
    arguments: Any
    origin: str

    @property
    def env(self) -> bool:
        return self.origin == ENV_ORIGIN


def bounded_arguments(arguments: Any) -> None:
    """Refuse (400) arguments too large or nested too deep to be any tool's input, before
    anything decodes or encodes them (a JSON decoder or encoder recurses once per level)."""
    if isinstance(arguments, str):
        if len(arguments) > MAX_ARGUMENT_CHARS:
            raise _bad_arguments(f"arguments are {len(arguments)} characters")
        if json_depth(arguments) > MAX_DEPTH:
            raise _bad_arguments("arguments nest too deep")
    elif nests_deeper(arguments, MAX_DEPTH):
        raise _bad_arguments("arguments nest too deep")


def canonical_arguments(arguments: Any) -> str:
    """The arguments as canonical JSON text, so equal calls compare equal however they were
    spelled (a JSON string that does not parse is kept as it was); `bounded_arguments` first."""
    bounded_arguments(arguments)
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return "raw:" + arguments
    return json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _bad_arguments(problem: str) -> ProtocolError:
    limits = f"at most {MAX_ARGUMENT_CHARS} characters and {MAX_DEPTH} levels"
    return ProtocolError(400, Refusal.INVALID_ARGUMENT, f"{problem}: tool arguments take {limits}")


def stale_step(header: str | None, hour: int) -> None:
    """Refuse an act decided on an older observation (`X-Agent-Step` is the hour it saw)."""
    if header is None:
        return
    try:
        declared = int(header)
    except ValueError:
        raise ProtocolError(400, "invalid_agent_step", "X-Agent-Step must be an integer") from None
    if declared != hour:
        raise ProtocolError(
            425,
            "stale_step",
            "your decision was based on an older observation; fetch the observation again",
            agent_step=declared,
            env_step=hour,
        )


def _bad(message: str) -> ProtocolError:
    return ProtocolError(400, "invalid_messages", message)


def _call_of(raw: Any, message_origin: Any, seen: set[str]) -> PlannedCall:
    if not isinstance(raw, dict):
        raise _bad("tool_calls entries must be objects")
    call_id = raw.get("id")
    if not isinstance(call_id, str) or not call_id or len(call_id) > MAX_ID_LENGTH:
        raise _bad(f"each tool call needs an id (a string of 1 to {MAX_ID_LENGTH} characters)")
    if call_id in seen:
        raise _bad(f"duplicate tool_call id: {call_id}")
    seen.add(call_id)
    function = raw.get("function")
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise _bad(f"tool call {call_id}: function.name is required")
    origin = raw.get("tool_origin") or message_origin or ENV_ORIGIN
    arguments = function.get("arguments", "{}")
    bounded_arguments(arguments)  # a framework call's too: its arguments go into the trace
    return PlannedCall(call_id, function["name"], arguments, str(origin))


def _answered(messages: list[dict[str, Any]]) -> dict[str, int]:
    """Env tool calls the batch already carries a result for: id → index of the result."""
    answered: dict[str, int] = {}
    for index, message in enumerate(messages):
        if message.get("role") == "tool" and message.get("tool_origin") == ENV_ORIGIN:
            answered[str(message.get("tool_call_id"))] = index
    return answered


def _check_message(message: Any) -> dict[str, Any]:
    if not isinstance(message, dict):
        raise _bad("messages entries must be objects")
    if message.get("role") not in ROLES:
        raise _bad("messages must use OpenAI roles: system, user, assistant, tool")
    if message["role"] == "tool" and not message.get("tool_origin"):
        raise _bad("tool messages in a batch must carry tool_origin")
    return message


def plan_calls(messages: Any) -> list[PlannedCall]:
    """The tool calls of a batch, in order, except env calls it already holds a result for
    (history the agent resends). Raises `ProtocolError` (400) for a malformed batch or an
    `end_of_step` that is not the last env call."""
    if not isinstance(messages, list) or not messages:
        raise _bad("messages is required: a non-empty list of OpenAI messages")
    checked = [_check_message(m) for m in messages]
    answered = _answered(checked)
    planned: list[PlannedCall] = []
    seen: set[str] = set()
    for index, message in enumerate(checked):
        if message["role"] != "assistant":
            continue
        calls = message.get("tool_calls") or []
        if not isinstance(calls, list):
            raise _bad("assistant tool_calls must be a list")
        for raw in calls:
            call = _call_of(raw, message.get("tool_origin"), seen)
            if call.env and answered.get(call.call_id, -1) > index:
                continue  # already run in an earlier turn; the batch is replaying history
            planned.append(call)
    env_names = [c.name for c in planned if c.env]
    if END_OF_STEP in env_names and env_names[-1] != END_OF_STEP:
        raise ProtocolError(400, "end_of_step_must_be_last", "end_of_step must be the last call")
    return planned

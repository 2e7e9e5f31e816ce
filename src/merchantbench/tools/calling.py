"""One tool call, from raw arguments to the answer the agent reads.

The steps, each of which may refuse (and then nothing has changed):

1. decode the arguments (a dict, or the raw JSON string a model produced) with the agent
   surface's decoder and checks (`tools.agent_input.decode_arguments`); a dict is taken as it
   is: the surface (`Session.call`) or the harness that decoded it has checked it already;
2. take out the idempotency key of a state-changing call (sent as an argument or beside it);
3. validate the arguments with the tool's pydantic model;
4. for a key seen before, answer the first outcome again, or refuse if the arguments differ;
5. run the tool (awaiting it, for an async framework tool called through `run_async`); a
   `ToolError` is a refusal, any other exception is a bug and propagates;
6. remember a successful outcome under its key, in the context's store.

Only successes are remembered: a refusal changed nothing, so trying again with the same key is
a fresh attempt, not a replay.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from merchantbench.refusals import Refusal
from merchantbench.tools.agent_input import HostileInput, decode_arguments
from merchantbench.tools.declare import IdempotencyRecord, Tool, ToolContext
from merchantbench.tools.errors import (
    ToolError,
    failure,
    invalid_arguments,
)
from merchantbench.tools.schema import IDEMPOTENCY_KEY, IDEMPOTENCY_KEY_MAX_LENGTH


class Refused(Exception):
    """Internal: a step refused the call; `result` is the answer to return."""

    def __init__(self, result: dict[str, Any]) -> None:
        super().__init__(result["error"]["message"])
        self.result = result


def take_idempotency_key(
    tool: Tool, arguments: dict[str, Any], idempotency_key: str | None
) -> tuple[dict[str, Any], str | None]:
    """Separate a write tool's idempotency key from its arguments.

    A read tool changes nothing (and a framework tool leaves the store alone), so a key given
    beside its arguments is ignored; one given *inside* them is an unknown argument, as its
    schema says.
    """
    if idempotency_key is None and IDEMPOTENCY_KEY not in arguments:
        return arguments, None  # no key anywhere (most calls): nothing to take out or check
    if not tool.accepts_idempotency_key:
        return arguments, None
    if IDEMPOTENCY_KEY in arguments:
        sent = arguments[IDEMPOTENCY_KEY]
        arguments = {name: value for name, value in arguments.items() if name != IDEMPOTENCY_KEY}
        if idempotency_key is not None and sent != idempotency_key:
            message = "two different idempotency keys were given for one call"
            raise Refused(failure(Refusal.INVALID_ARGUMENT, message, f"$.{IDEMPOTENCY_KEY}"))
        idempotency_key = sent
    if idempotency_key is not None and not (
        isinstance(idempotency_key, str) and 0 < len(idempotency_key) <= IDEMPOTENCY_KEY_MAX_LENGTH
    ):
        limit = IDEMPOTENCY_KEY_MAX_LENGTH
        message = f"{IDEMPOTENCY_KEY} must be a string of 1 to {limit} characters"
        raise Refused(failure(Refusal.INVALID_ARGUMENT, message, f"$.{IDEMPOTENCY_KEY}"))
    return arguments, idempotency_key


def validate_arguments(tool: Tool, arguments: dict[str, Any]) -> BaseModel:
    """The arguments checked against the tool's model, or a refusal naming the first problem."""
    try:
        # What `model_validate` does with its default options, without its wrapper frame.
        validated: BaseModel = tool.args_model.__pydantic_validator__.validate_python(arguments)
    except ValidationError as exc:
        raise Refused(invalid_arguments(exc, arguments, tool.parameter_names)) from None
    return validated


def arguments_digest(validated: BaseModel) -> str:
    """SHA-256 of the validated arguments: `"5"` and `5` for an integer are the same call."""
    return hashlib.sha256(validated.model_dump_json().encode()).hexdigest()


def replay(ctx: ToolContext, tool: Tool, key: str, digest: str) -> dict[str, Any] | None:
    """The first outcome of a call made with this key, or None if the key is new."""
    record = ctx.idempotency_store.get(key)
    if record is None:
        return None
    if record["tool"] != tool.name or record["args_sha256"] != digest:
        message = (
            f"idempotency key {key!r} was already used for a different call "
            f"({record['tool']} with other arguments); use a new key for a new action"
        )
        raise Refused(failure(Refusal.IDEMPOTENCY_CONFLICT, message, f"$.{IDEMPOTENCY_KEY}"))
    answer: dict[str, Any] = json.loads(record["result_json"])
    return answer


def remember(ctx: ToolContext, tool: Tool, key: str, digest: str, result: dict[str, Any]) -> None:
    """Store a successful outcome under its key, as JSON text that snapshots as is."""
    text = json.dumps(result, ensure_ascii=False, separators=(",", ":"))
    ctx.idempotency_store[key] = IdempotencyRecord(
        tool=tool.name, args_sha256=digest, result_json=text
    )


def success(tool: Tool, output: Any) -> dict[str, Any]:
    """Wrap what a tool body returned as `{"ok": true, ...}`; anything else is a bug."""
    if type(output) is dict:  # what tools return; spares the isinstance checks below
        pass
    elif isinstance(output, BaseModel):
        output = output.model_dump(mode="json")
    elif output is None:
        output = {}
    elif not isinstance(output, dict):
        kind = type(output).__name__
        raise TypeError(f"tool {tool.name} returned {kind}; a tool returns a dict or a model")
    if "ok" in output:
        raise TypeError(f"tool {tool.name} returned an 'ok' field; the framework sets it")
    return {"ok": True, **output}


@dataclass
class Prepared:
    """A call that passed every check: its validated arguments and, if keyed, key and digest."""

    arguments: dict[str, Any]
    key: str | None = None
    digest: str = ""


def prepare(
    ctx: ToolContext, tool: Tool, args: Mapping[str, Any] | str | None, key: str | None
) -> Prepared | dict[str, Any]:
    """Steps 1-4: the call ready to run, or the answer to give without running it (a refusal,
    or the first outcome of a keyed call)."""
    try:
        # A dict comes decoded and checked (the usual case): nothing to do.
        decoded = args if type(args) is dict else decode_arguments(args)
        arguments, key = take_idempotency_key(tool, decoded, key)
        validated = validate_arguments(tool, arguments)
        if key is None:
            return Prepared(validated.__dict__)
        digest = arguments_digest(validated)
        first = replay(ctx, tool, key, digest)
    except (Refused, HostileInput) as refusal:
        return refusal.result
    return first if first is not None else Prepared(validated.__dict__, key, digest)


def finish(ctx: ToolContext, tool: Tool, prepared: Prepared, output: Any) -> dict[str, Any]:
    """Step 6: the answer to a call that ran, remembered under its key if it has one."""
    result = success(tool, output)
    if prepared.key is not None:
        remember(ctx, tool, prepared.key, prepared.digest, result)
    return result


def run(
    ctx: ToolContext, tool: Tool, args: Mapping[str, Any] | str | None, key: str | None
) -> dict[str, Any]:
    """Call a known, enabled, synchronous tool; see the module docstring for the steps."""
    if tool.is_async:
        raise TypeError(f"tool {tool.name} is async; call it with call_async")
    prepared = prepare(ctx, tool, args, key)
    if not isinstance(prepared, Prepared):
        return prepared
    try:
        output = tool.fn(ctx, **prepared.arguments)
    except ToolError as refusal:
        return refusal.to_result()
    return finish(ctx, tool, prepared, output)


async def run_async(
    ctx: Any, tool: Tool, args: Mapping[str, Any] | str | None, key: str | None
) -> dict[str, Any]:
    """Call a known, enabled tool, awaiting it if it is async; the steps are those of `run`."""
    prepared = prepare(ctx, tool, args, key)
    if not isinstance(prepared, Prepared):
        return prepared
    try:
        output = tool.fn(ctx, **prepared.arguments)
        if inspect.isawaitable(output):
            output = await output
    except ToolError as refusal:
        return refusal.to_result()
    return finish(ctx, tool, prepared, output)

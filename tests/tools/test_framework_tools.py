"""Framework tools (an agent harness's own) are declared, validated and called by the same
mechanism as environment tools; they may be async and take no idempotency key."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest

from merchantbench.tools.declare import declare_tool
from merchantbench.tools.errors import ToolError
from merchantbench.tools.registry import ToolRegistry


@dataclass(frozen=True)
class NoteLimits:
    note_chars: int = 8


@dataclass
class Harness:
    notes: list[str] = field(default_factory=list)


REGISTRY = ToolRegistry()


@REGISTRY.tool(kind="write", group="memory", role="framework", renders_from=NoteLimits())
async def note(ctx: Harness, text: str, mode: Literal["add", "clear"] = "add") -> dict[str, Any]:
    """Keep a note of at most {note_chars} characters.

    Args:
        text: The note.
        mode: add it, or clear the notes first.
    """
    await asyncio.sleep(0)  # a real await: the tool runs on the caller's event loop
    if len(text) > NoteLimits().note_chars:
        raise ToolError("too_long", "the note is too long", "$.text")
    if mode == "clear":
        ctx.notes.clear()
    ctx.notes.append(text)
    return {"notes": len(ctx.notes)}


@REGISTRY.tool(kind="read", group="memory", role="framework")
def count_notes(ctx: Harness) -> dict[str, Any]:
    """How many notes there are."""
    return {"notes": len(ctx.notes)}


def call(harness: Harness, name: str, args: Any) -> dict[str, Any]:
    return asyncio.run(REGISTRY.call_async(harness, name, args))


def test_an_async_framework_tool_runs_through_call_async() -> None:
    harness = Harness()
    assert call(harness, "note", {"text": "pens"}) == {"ok": True, "notes": 1}
    assert call(harness, "note", '{"text": "boxes"}') == {"ok": True, "notes": 2}
    assert call(harness, "count_notes", None) == {"ok": True, "notes": 2}  # sync tools too
    assert call(harness, "note", {"text": "cups", "mode": "clear"}) == {"ok": True, "notes": 1}
    assert harness.notes == ["cups"]


@pytest.mark.parametrize(
    ("args", "path"),
    [
        ({}, "$.text"),
        ({"text": 3}, "$.text"),
        ({"text": "a", "mode": "erase"}, "$.mode"),
        ({"text": "a", "extra": 1}, "$.extra"),
        ({"text": "a", "idempotency_key": "k"}, "$.idempotency_key"),  # not a framework thing
    ],
)
def test_bad_arguments_are_structured_refusals_that_change_nothing(
    args: dict[str, Any], path: str
) -> None:
    harness = Harness(["kept"])
    refused = call(harness, "note", args)
    assert refused["ok"] is False and refused["error"]["code"] == "invalid_argument"
    assert refused["error"]["path"] == path
    assert harness.notes == ["kept"]


def test_a_tool_error_from_an_async_tool_is_a_refusal() -> None:
    harness = Harness()
    refused = call(harness, "note", {"text": "far too long"})
    assert refused == {
        "ok": False,
        "error": {"code": "too_long", "message": "the note is too long", "path": "$.text"},
    }
    assert harness.notes == []


def test_framework_tools_state_their_limits_and_take_no_idempotency_key() -> None:
    declared = REGISTRY.get("note")
    assert (declared.role, declared.is_async, declared.accepts_idempotency_key) == (
        "framework",
        True,
        False,
    )
    assert declared.description.startswith("Keep a note of at most 8 characters.")
    assert "idempotency_key" not in declared.parameters_schema["properties"]
    assert REGISTRY.describe("note").as_markdown().splitlines()[2] == "*write · memory · framework*"
    # A key given beside the arguments is ignored, as for read tools.
    answer = asyncio.run(REGISTRY.call_async(Harness(), "note", {"text": "a"}, "k1"))
    assert answer == {"ok": True, "notes": 1}


def test_an_async_tool_cannot_be_called_synchronously() -> None:
    with pytest.raises(TypeError, match="call_async"):
        REGISTRY.call(Harness(), "note", {"text": "a"})


async def asyncprobe(ctx: object) -> dict[str, Any]:
    """Probe."""
    return {}


def probe(ctx: object) -> dict[str, Any]:
    """Probe."""
    return {}


@pytest.mark.parametrize(
    ("fn", "options", "error", "complaint"),
    [
        (asyncprobe, {"group": "control"}, TypeError, "only framework tools may be async"),
        (
            probe,
            {"group": "control", "role": "framework"},
            ValueError,
            "framework tools have the groups",
        ),
        (probe, {"group": "memory"}, ValueError, "environment tools have the groups"),
        (probe, {"group": "control", "role": "agent"}, ValueError, "role must be"),
        (probe, {"group": "control", "ends_window": True, "kind": "read"}, ValueError, "end the"),
        (
            probe,
            {"group": "memory", "role": "framework", "ends_window": True},
            ValueError,
            "end the window",
        ),
    ],
)
def test_options_that_do_not_fit_are_refused(
    fn: Any, options: dict[str, Any], error: type[Exception], complaint: str
) -> None:
    with pytest.raises(error, match=complaint):
        declare_tool(fn, **{"kind": "write", **options})


def test_one_registry_has_at_most_one_tool_that_ends_the_window() -> None:
    def close_a(ctx: object) -> dict[str, Any]:
        """Close."""
        return {}

    def close_b(ctx: object) -> dict[str, Any]:
        """Close."""
        return {}

    first = declare_tool(close_a, kind="write", group="control", ends_window=True)
    second = declare_tool(close_b, kind="write", group="control", ends_window=True)
    assert ToolRegistry([first]).window_closer == "close_a"
    assert ToolRegistry([]).window_closer is None
    with pytest.raises(ValueError, match="cannot both end the window"):
        ToolRegistry([first, second])

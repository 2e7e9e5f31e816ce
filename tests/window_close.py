"""What the scripted model saw of each window's close: for tests of harnesses against a model
that keeps calling tools after `end_of_step` (`scripted_policy.tool_loop_policy`)."""

from __future__ import annotations

import json
import re
from typing import Any

_WINDOW = re.compile(r"window (\d+) of (\d+)")
# Hermes' MCP client's answer when its circuit breaker is open (the server is never asked).
BREAKER_OPEN = "consecutive failures"


def _answer(content: Any) -> dict[str, Any]:
    """A tool message's JSON answer, its client's wrappings taken off: Hermes' MCP client's
    (`{"result": text, "structuredContent": {...}}` or `{"error": text}`) and the text Hermes
    puts around every answer of an outside source (`<untrusted_tool_result ...>`)."""
    text = content if isinstance(content, str) else ""
    if "{" in text and not text.startswith("{"):
        text = text[text.index("{") : text.rindex("}") + 1]
    try:
        answer = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(answer, dict):
        return {}
    inner = answer.get("structuredContent")
    if isinstance(inner, dict):
        return inner
    for key in ("result", "error"):
        if isinstance(answer.get(key), str):
            try:
                unwrapped = json.loads(answer[key])
            except ValueError:
                return answer
            return unwrapped if isinstance(unwrapped, dict) else answer
    return answer


def _window_of(messages: list[dict[str, Any]]) -> tuple[int, int] | None:
    """(window number, index of its observation) of the newest observation in `messages`."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i]["role"] != "user":
            continue
        found = _WINDOW.findall(str(messages[i]["content"] or ""))
        if found:
            return int(found[-1][0]), i
    return None


def calls_after_close(requests: list[dict[str, Any]]) -> dict[int, int]:
    """Window number -> model requests made in that window after its `end_of_step` had
    succeeded (the model was shown the successful answer). Requests that offer no
    `end_of_step` (a framework's side requests: titles, summaries) are not counted."""
    after: dict[int, int] = {}
    for request in requests:
        names = [str(t["function"]["name"]) for t in request.get("tools") or ()]
        if not any(name.endswith("end_of_step") for name in names):
            continue
        messages = request["messages"]
        located = _window_of(messages)
        if located is None:
            continue
        window, start = located
        called = {
            call["id"]: call["function"]["name"]
            for m in messages[start:]
            for call in m.get("tool_calls") or ()
        }
        closed = any(
            m["role"] == "tool"
            and str(called.get(m.get("tool_call_id"), "")).endswith("end_of_step")
            and _answer(m["content"]).get("ok") is True
            for m in messages[start:]
        )
        after[window] = after.get(window, 0) + (1 if closed else 0)
    return after


def tool_answers(requests: list[dict[str, Any]]) -> list[str]:
    """Every tool answer any request showed the model, as text."""
    return sorted(
        {str(m["content"]) for r in requests for m in r["messages"] if m["role"] == "tool"}
    )

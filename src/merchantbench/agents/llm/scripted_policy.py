"""Policies for the scripted server: deterministic functions from a chat request to a reply.

`store` plays a simple, sensible drop-shipping strategy through tool calls, reading only what a
model would read (the observation and tool results in the messages): while it has free slots it
reads the daily report every other window, searches a hot keyword, lists up to three well-rated,
fast-shipping products at a 35 % markup, then ends the window; otherwise it checks its open
orders and ends the window. Asked to save notes before a trim, it writes its memory document.
A reply that the harness rejected as unparsable is simply made again.

`tool_loop` misbehaves on purpose, as weak models do: it never answers in words while it has
tools. Each window it makes three calls the store refuses, one that works, then `end_of_step`,
and after every later tool result it calls `end_of_step` again. It finds the tools by their
bare names or as an MCP client prefixes them (`mcp__merchantbench__end_of_step`), so it drives
the built-in harnesses and the real Hermes Agent alike. A harness must end the window at the
first `end_of_step` anyway, keep the model calls after it bounded, and not mistake the refusals
for a dead server.

Being a pure function of the request, a policy answers a resumed run exactly as it answered the
original one, which is what makes resumed runs comparable to uninterrupted ones.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

Policy = Callable[[dict[str, Any]], dict[str, Any]]

_WINDOW = re.compile(r"window (\d+) of (\d+)")
_SLOTS = re.compile(r"Listings: (\d+) of (\d+) slots used")
_PARSE_ERRORS = frozenset({"invalid_json", "unknown_tool"})
TARGET_LISTINGS = 8
MARKUP = 1.35


def _call(name: str, why: str | None = None, **arguments: Any) -> dict[str, Any]:
    reply: dict[str, Any] = {"tool_calls": [{"name": name, "arguments": arguments}]}
    if why:
        reply["reasoning"] = why
    return reply


def _window_start(messages: list[dict[str, Any]]) -> int:
    """Index of the observation that opened the current window."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i]["role"] == "user" and _WINDOW.search(messages[i]["content"] or ""):
            return i
    return len(messages)


def window_steps(messages: list[dict[str, Any]], start: int) -> list[tuple[str, dict, dict]]:
    """(tool, arguments, result) of this window's calls that parsed, in order."""
    results = {m["tool_call_id"]: m["content"] for m in messages[start:] if m["role"] == "tool"}
    steps = []
    for message in messages[start:]:
        for call in message.get("tool_calls") or ():
            result = json.loads(results.get(call["id"], "{}"))
            if (result.get("error") or {}).get("code") in _PARSE_ERRORS:
                continue  # the harness refused it: the policy makes it again
            arguments = json.loads(call["function"]["arguments"] or "{}")
            steps.append((call["function"]["name"], arguments, result))
    return steps


def _listed_before(messages: list[dict[str, Any]]) -> set[str]:
    listed: set[str] = set()
    for message in messages:
        for call in message.get("tool_calls") or ():
            if call["function"]["name"] == "list_product":
                try:
                    items = json.loads(call["function"]["arguments"])["items"]
                except (ValueError, KeyError, TypeError):
                    continue
                listed.update(str(item["product_id"]) for item in items)
    return listed


def _pick_products(result: dict[str, Any], exclude: set[str]) -> list[dict[str, Any]]:
    columns = result.get("columns") or []
    rows = [dict(zip(columns, row, strict=True)) for row in result.get("rows") or []]
    good = [
        r
        for r in rows
        if r["product_id"] not in exclude
        and r["rating"] >= 4.5
        and r["supplier_rating"] >= 4.3
        and r["stock"] == "in_stock"
        and r["ship_hours"] <= 24
    ]
    return [
        {"product_id": r["product_id"], "sale_price": round(r["price"] * MARKUP, 2)}
        for r in good[:3]
    ]


def _keyword(report: dict[str, Any], window: int) -> str:
    keywords = [k["keyword"] for k in report.get("hot_keywords") or []]
    return keywords[(window // 2) % len(keywords)] if keywords else ""


def store_policy(request: dict[str, Any]) -> dict[str, Any]:
    """The sensible store strategy described in the module docstring."""
    messages = request.get("messages") or []
    last = messages[-1] if messages else {}
    if last.get("role") == "user" and "write_memory_doc" in (last.get("content") or ""):
        notes = f"Strategy: list well-rated fast-shipping products at {MARKUP:.2f}x cost."
        why = "The conversation is about to be trimmed: I save my strategy first."
        return _call("write_memory_doc", why, content=notes, mode="replace")
    start = _window_start(messages)
    observation = messages[start]["content"] if start < len(messages) else ""
    window_match = _WINDOW.search(observation)
    window = int(window_match.group(1)) if window_match else 1
    slots = _SLOTS.search(observation)
    listings = int(slots.group(1)) if slots else 0
    steps = window_steps(messages, start)
    done = [name for name, _, _ in steps]
    if listings >= TARGET_LISTINGS or window % 2 == 0:
        if done:
            return _call("end_of_step", "Orders checked; nothing more to do this window.")
        why = (
            f"{listings} of my listings are up: I only check the open orders."
            if listings >= TARGET_LISTINGS
            else "An even window: I check the open orders and wait."
        )
        return _call("query_open_orders", why)
    if not done:
        return _call("get_daily_report", f"{listings} listings: I read the report for a keyword.")
    name, _, result = steps[-1]
    if name == "get_daily_report" and result.get("ok"):
        keyword = _keyword(result, window)
        why = f"The report lists {keyword!r} as a hot keyword; I search it."
        return _call("search_products", why, query=keyword)
    if name == "search_products" and result.get("ok"):
        items = _pick_products(result, _listed_before(messages))
        if items:
            why = f"{len(items)} products are well rated and ship within a day: I list them."
            return _call("list_product", why, items=items)
        return _call("end_of_step", "No product passed my filters; I end the window.")
    return _call("end_of_step", "Nothing more to do this window.")


def idle_policy(request: dict[str, Any]) -> dict[str, Any]:
    """End every window at once."""
    return _call("end_of_step")


# tool_loop's calls of a window before its end_of_step: refused (no such product), then one
# that works. Each refused call differs, so no client takes them for one call repeated.
TOOL_LOOP_STEPS: tuple[tuple[str, dict[str, Any]], ...] = (
    *(("get_product_detail", {"product_id": f"no-such-product-{n}"}) for n in (1, 2, 3)),
    ("query_balance", {}),
)


def offered_tools(request: dict[str, Any]) -> dict[str, str]:
    """The request's tools by bare name: `end_of_step` -> the name to call it by (itself, or
    an MCP client's prefixed name such as `mcp__merchantbench__end_of_step`)."""
    names: dict[str, str] = {}
    for tool in request.get("tools") or ():
        name = str((tool.get("function") or {}).get("name") or "")
        names.setdefault(name.rsplit("__", 1)[-1], name)
    return names


def tool_loop_policy(request: dict[str, Any]) -> dict[str, Any]:
    """Never a word while tools are offered (see the module docstring)."""
    tools = offered_tools(request)
    if "end_of_step" not in tools:
        return {"content": "ok"}  # a side request (a title, a summary) offers no store tools
    messages = request.get("messages") or []
    start = _window_start(messages)
    done = sum(1 for m in messages[start + 1 :] if m["role"] == "tool")
    if done < len(TOOL_LOOP_STEPS):
        name, arguments = TOOL_LOOP_STEPS[done]
        return _call(tools.get(name, name), **arguments)
    return _call(tools["end_of_step"])


def silent_policy(request: dict[str, Any]) -> dict[str, Any]:
    """Answer in words, never with a tool: every window is closed by force."""
    return {"content": "I will wait and see how the market develops."}


POLICIES: dict[str, Policy] = {
    "store": store_policy,
    "idle": idle_policy,
    "silent": silent_policy,
    "tool_loop": tool_loop_policy,
}

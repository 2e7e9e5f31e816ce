"""Memory and control tools (docs/design.md §8): the agent's memory document, the observation, the
tool list, and `end_of_step`, which closes the window.

The memory document and the window belong to the agent, not to the store, so these keep working
after the store has closed; only store actions answer `store_closed`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from merchantbench.refusals import Refusal
from merchantbench.tools.context import clock_text, table
from merchantbench.tools.declare import tool
from merchantbench.tools.errors import ToolError
from merchantbench.tools.observation import build_observation

if TYPE_CHECKING:
    from merchantbench.tools.context import StoreContext


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


@tool(kind="read", group="control")
def read_memory_doc(ctx: StoreContext) -> dict[str, Any]:
    """Read your memory document: notes you wrote in earlier windows (empty at first).

    Returns:
        content, its size in UTF-8 bytes, and the size limit.
    """
    text = ctx.memory_doc
    return {
        "content": text,
        "bytes": _size(text),
        "limit_bytes": ctx.scenario.tools.memory_doc_bytes,
    }


@tool(kind="write", group="control")
def write_memory_doc(
    ctx: StoreContext, content: str, mode: Literal["replace", "append"] = "replace"
) -> dict[str, Any]:
    """Write your memory document, which persists across windows.

    It holds {tools.memory_doc_bytes:bytes} of UTF-8 at most. Keep what you will need later:
    strategy, products tried and why, supplier notes, prices, to-dos. `replace` overwrites the
    document; `append` adds `content` at its end (include your own line break). A write that
    would exceed the limit is refused (`too_large`) and changes nothing.

    Args:
        content: The text to write.
        mode: replace (overwrite) or append.
    """
    text = content if mode == "replace" else ctx.memory_doc + content
    limit = ctx.scenario.tools.memory_doc_bytes
    size = _size(text)
    if size > limit:
        raise ToolError(
            Refusal.TOO_LARGE,
            f"the document would be {size} bytes; the limit is {limit} bytes (UTF-8)",
            "$.content",
        )
    ctx.memory_doc = text
    return {"mode": mode, "bytes": size, "limit_bytes": limit}


@tool(kind="read", group="control")
def get_observation(ctx: StoreContext) -> dict[str, Any]:
    """This window's observation again.

    Time, cash accounts, net assets, rating and stars, listings used, order updates and new
    supply-chain anomalies on your listings since the previous window.
    """
    return {"observation": build_observation(ctx)}


@tool(kind="read", group="control")
def list_tools(ctx: StoreContext) -> dict[str, Any]:
    """The tools you can call, with their group, kind (read or write) and a one-line summary."""
    rows = [[t.name, t.group, t.kind, t.summary] for t in ctx.registry.tools()]
    return table(("name", "group", "kind", "summary"), rows)


@tool(kind="write", group="control", ends_window=True)
def end_of_step(ctx: StoreContext) -> dict[str, Any]:
    """Close this window: the simulation then runs until the next window opens.

    Call it last, once you have done what you want this window; calls after it belong to the
    next window. Nothing is simulated until you call it.
    """
    ctx.request_end_of_step()
    hours = ctx.scenario.clock.hours_per_window
    return {
        "closed_window": clock_text(ctx.engine.t),
        "message": f"Window closed; the next {hours} hours are being simulated.",
    }

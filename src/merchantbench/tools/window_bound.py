"""Window-bound writes: a write made for a window that has ended is refused, not applied to the
next one (a stale browser tab, a retry that arrives after the window closed).

A caller says which window a write was made for (`window`, 0-based, as `StoreStatus.window`
says; HTTP front ends take it from the `X-Window` header). `window_bound` is the one check:
reads are never refused (they change nothing), a write or `end_of_step` for another window is
refused with `WINDOW_ENDED` before any tool sees it, so it leaves no trace line and counts no
call. A caller that names no window is not bound (older clients, in-process agents).
"""

from __future__ import annotations

from typing import Any

from merchantbench.refusals import Refusal
from merchantbench.tools.errors import failure
from merchantbench.tools.registry import ToolRegistry

__all__ = ["WINDOW_ENDED", "WINDOW_HEADER", "window_bound", "window_ended"]

WINDOW_ENDED = Refusal.WINDOW_ENDED  # the refusal's code
WINDOW_HEADER = "X-Window"  # how HTTP front ends carry the window a write was made for


def window_ended(claimed: int, open_window: int) -> dict[str, Any]:
    """The structured refusal of a write made for window `claimed` while `open_window` is open."""
    message = (
        f"this write was made for window {claimed}, which has ended; window {open_window} is "
        f"open now (nothing was done: look at the store again and decide anew)"
    )
    result = failure(WINDOW_ENDED, message)
    result["error"].update(window=claimed, open_window=open_window)
    return result


def window_bound(
    registry: ToolRegistry, tool: Any, claimed: int | None, open_window: int
) -> dict[str, Any] | None:
    """The refusal of `tool` made for window `claimed` when `open_window` is open, or None when
    it may run: no window named, the same window, an unknown name (the session refuses it as
    usual) or a read."""
    if claimed is None or claimed == open_window or not isinstance(tool, str):
        return None
    if tool not in registry or registry.get(tool).kind != "write":
        return None
    return window_ended(claimed, open_window)

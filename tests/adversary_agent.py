"""An agent that does everything a replay must reproduce (tests/replay): hostile input refused
before any tool sees it, a real `_raw` argument, idempotent retries with the key beside the
arguments and among them, a key conflict, calls past the window's cap, framework calls (one of
them hostile), and windows it leaves open for the harness to force closed. Importable as
`adversary_agent:Adversary` (tests/ is on the test path)."""

from __future__ import annotations

from typing import Any

from merchantbench.agents.base import AgentSettings, BaseAgent
from merchantbench.surface import AgentSurface


class Adversary(BaseAgent[AgentSettings]):
    name = "adversary"
    Settings = AgentSettings

    def act(self, surface: AgentSurface) -> None:
        window = surface.window
        if window == 0:
            self._first_window(surface)
        elif window == 1:
            cap = 12  # the test's scenario allows 12 calls a window
            for _ in range(cap + 2):
                surface.call("query_balance", {})  # the last two answer `limit`
            surface.call("query_balance", "{not json")  # hostile, past the cap too
        elif window == 2:
            surface.record_framework_call("plan", {"steps": ["look", "list"]}, True)
            surface.record_framework_call("plan", "\ud800", False, "invalid_json")
        if window % 3 != 2:  # every third window is left open: the harness forces it closed
            surface.call("end_of_step", {})

    def _first_window(self, surface: AgentSurface) -> None:
        any_call: Any = surface.call
        any_call(12345, {})  # a tool name that is no text
        surface.call("query_balance", "{not json")  # hostile: the trace keeps a short text
        surface.call("search_products", {"query": float("nan")})  # non-finite: hostile
        surface.call("query_balance", {"_raw": "sent on purpose"})  # a real, refused argument
        found = surface.call("search_products", {"sort": "sales_30d", "page_size": 3})
        rows = found["rows"]
        items = [{"product_id": r[0], "sale_price": round(r[3] * 1.8, 2)} for r in rows[:2]]
        first = {"items": items[:1]}
        surface.call("list_product", first, "key-beside")
        surface.call("list_product", first, "key-beside")  # a retry: the first outcome again
        keyed = {"items": items[1:], "idempotency_key": "key-among"}
        surface.call("list_product", keyed)
        surface.call("list_product", keyed)  # a retry with the key among the arguments
        other = {"product_id": rows[0][0], "sale_price": 99.0}
        surface.call("adjust_price", other, "key-beside")  # the key of another call: conflict

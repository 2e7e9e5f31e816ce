"""One action script for the front-end tests (MCP, Gymnasium): a whole smoke run with listings,
price changes, a delisting, memory writes and a few refused calls, played in process for the
reference results and state hash; and a scan for hidden fields, the seed and paths.
(Tests only.)"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from merchantbench.catalog.cache import get_market, get_search_index
from merchantbench.catalog.hidden import hidden_names_in
from merchantbench.scenario import load_scenario
from merchantbench.session import Session

SCENARIO = "smoke"
Call = tuple[str, dict[str, Any]]


def new_session(seed: int) -> Session:
    scenario = load_scenario(SCENARIO)
    market = get_market(scenario, seed)
    return Session(scenario, market, seed, get_search_index(scenario, seed, market))


def action_script(seed: int) -> list[list[Call]]:
    """The calls of each window (the last of each is end_of_step) for the run of `seed`."""
    session = new_session(seed)
    found = session.call("search_products", {"sort": "sales_30d", "page_size": 6})
    ids = [row[0] for row in found["rows"]]
    items = [{"product_id": row[0], "sale_price": round(row[3] * 1.7, 2)} for row in found["rows"]]
    windows: list[list[Call]] = []
    for window in range(session.scenario.clock.windows):
        calls: list[Call] = [("query_balance", {})]
        if window == 0:
            calls += [
                ("get_daily_report", {}),
                ("list_product", {"items": items[:5]}),
                ("adjust_price", {"product_id": "NOPE", "sale_price": 2}),  # refused
                ("no_such_tool", {"x": 1}),  # refused
                ("search_products", {"page_size": 500}),  # refused
            ]
        if window % 4 == 3:
            calls.append(
                ("adjust_price", {"product_id": ids[0], "sale_price": items[0]["sale_price"] + 1})
            )
        if window == 9:
            calls += [("delist_product", {"product_ids": [ids[1]]}),
                      ("list_product", {"items": items[5:]})]  # fmt: skip
        if window % 3 == 1:
            calls += [("query_my_orders", {"page_size": 20}), ("query_order_updates", {})]
        calls += [("write_memory_doc", {"content": f"w{window} ", "mode": "append"}),
                  ("end_of_step", {})]  # fmt: skip
        windows.append(calls)
    return windows


def play_in_process(seed: int, script: list[list[Call]]) -> InProcessRun:
    """The script played on a session in process."""
    session = new_session(seed)
    results, observations = [], []
    for calls in script:
        results += [session.call(tool, args) for tool, args in calls]
        observations.append(None if session.over else session.observation())
    assert session.over
    return InProcessRun(results, observations, session)


@dataclass
class InProcessRun:
    results: list[dict[str, Any]]  # of every call, in order
    observations: list[str | None]  # after each window's end_of_step (None once over)
    session: Session


def scan(response: Any, forbidden: list[str]) -> None:
    """Fail if a response shows a hidden name, a hidden word, or a forbidden string."""
    assert not hidden_names_in(response)
    text = json.dumps(response, ensure_ascii=False)
    assert not [s for s in forbidden if s in text]

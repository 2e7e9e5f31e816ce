"""One action script for the front-end tests (MCP, Gymnasium): a whole smoke run with listings,
price changes, a delisting, memory writes and a few refused calls, played in process for the
reference results and state hash; and a scan for hidden fields, the seed and paths.
(Tests only.)"""

from __future__ import annotations

import json
import re
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


# --- the store status against the observation text ------------------------------------------------
_CLOCK = re.compile(r"^(Day \d+ \d\d:00), \w+ (\d{4}-\d\d-\d\d): window (\d+) of (\d+)\.$", re.M)
_CASH = re.compile(
    r"^Cash \(RMB\): balance (\S+), deposit (\S+), in transit (\S+), receivable (\S+)\.$", re.M
)
_NET = re.compile(r"^Net assets: (\S+) RMB(?: \(([+-])(\S+) since the last window\))?\.$", re.M)
_RATING = re.compile(
    r"^Store rating: (\d\.\d\d) \((\d) stars?, orders ×(\d+\.\d\d)\)\. "
    r"Listings: (\d+) of (\d+) slots used\.$",
    re.M,
)
_CLOSED = re.compile(r"^The store was closed at (Day \d+ \d\d:00): the deposit ran out\.$", re.M)
_UPDATES = re.compile(r"^Order updates since Day \d+ \d\d:00: (.*)$", re.M)
# Order events that start with a customer's order: procured ("placed") or refused at once.
ORDER_STARTS = ("placed", "stockout", "insufficient_balance")


def _amount(text: str) -> float:
    return float(text.replace(",", ""))


def observation_numbers(text: str) -> dict[str, Any]:
    """The numbers an observation text states, read off it with patterns of its own (tests
    only: front ends read `surface.status()`), and the orders that arrived since the last one."""
    clock, cash = _CLOCK.search(text), _CASH.search(text)
    net, rating = _NET.search(text), _RATING.search(text)
    assert clock and cash and net and rating, text
    change = None
    if net.group(2):
        change = _amount(net.group(3)) * (1 if net.group(2) == "+" else -1)
    closed = _CLOSED.search(text)
    arrived = 0
    updates = _UPDATES.search(text)
    if updates:
        counts = re.findall(r"(\d+) (\w+)", updates.group(1))
        arrived = sum(int(n) for n, name in counts if name in ORDER_STARTS)
    return {
        "at": clock.group(1),
        "date": clock.group(2),
        "window": int(clock.group(3)) - 1,
        "windows_total": int(clock.group(4)),
        "balance": _amount(cash.group(1)),
        "deposit": _amount(cash.group(2)),
        "in_transit": _amount(cash.group(3)),
        "receivable": _amount(cash.group(4)),
        "net_assets": _amount(net.group(1)),
        "net_assets_change": change,
        "rating": float(rating.group(1)),
        "stars": int(rating.group(2)),
        "rating_multiplier": float(rating.group(3)),
        "active_listings": int(rating.group(4)),
        "listing_cap": int(rating.group(5)),
        "closed_at": closed.group(1) if closed else None,
        "orders_arrived": arrived,
    }


def assert_status_states(status: dict[str, Any], text: str, orders_before: int) -> int:
    """The store status (JSON form) says what the observation text says; `orders_before` is the
    status's `orders_placed` of the previous window. Returns this window's `orders_placed`."""
    said = observation_numbers(text)
    for name in ("at", "date", "window", "windows_total", "balance", "deposit", "in_transit",
                 "receivable", "net_assets", "net_assets_change", "stars", "active_listings",
                 "listing_cap", "closed_at"):  # fmt: skip
        assert status[name] == said[name], (name, status[name], said[name])
    assert f"{status['rating']:.2f}" == f"{said['rating']:.2f}"
    assert f"{status['rating_multiplier']:.2f}" == f"{said['rating_multiplier']:.2f}"
    assert status["store"] == ("open" if said["closed_at"] is None else "closed")
    assert status["orders_placed"] == orders_before + said["orders_arrived"]
    assert status["hour"] == (status["day"] - 1) * 24 + status["hour_of_day"]
    assert status["windows_left"] == status["windows_total"] - status["window"]
    return int(status["orders_placed"])

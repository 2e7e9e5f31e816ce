"""What the store tools use from the session, and what every tool shares: renderings and the
agent's view of orders.

Tools act on a `StoreContext` (in practice the `Session`). Their outputs show money as RMB
numbers with two decimals and times as "Day N HH:00" (day 1-based, the hour of the day), and
refer to products by their public `product_id` only: internal indices never leave this package.

An order's whole future is drawn when it is placed (sim.orders); what the agent may see is only
what has happened by the time the window opened. So an order's status is derived from the hours
at which things happened (before `t`, the first hour not yet simulated), never from the planned
hours or the hidden fate.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
import re
from bisect import bisect_left
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any, Protocol

import numpy as np
from pydantic import Field

from merchantbench.money import rmb as rmb
from merchantbench.sim.actions import ActionRejected
from merchantbench.sim.orders import Order, Outcome
from merchantbench.tools.declare import ToolContext
from merchantbench.tools.errors import ToolError
from merchantbench.tools.render import Limit

if TYPE_CHECKING:
    from merchantbench.catalog.market import CatalogView, Market
    from merchantbench.catalog.search import SearchIndex
    from merchantbench.scenario import Scenario
    from merchantbench.sim.engine import Engine
    from merchantbench.sim.state import StoreState
    from merchantbench.tools.registry import ToolRegistry


class StoreContext(ToolContext, Protocol):
    """The session as the store tools see it.

    The engine is read freely (state, ledger, orders, supplier book) but changed only through its
    actions (`list_products`, `delist_products`, `set_price`), which validate before acting.
    """

    scenario: Scenario
    market: Market
    engine: Engine
    search_index: SearchIndex
    registry: ToolRegistry

    def catalog_view(self) -> CatalogView:
        """The public catalog at the current hour (memoised by the session)."""
        ...

    @property
    def memory_doc(self) -> str:
        """The agent's notes, kept across windows."""
        ...

    @memory_doc.setter
    def memory_doc(self, text: str) -> None: ...

    @property
    def previous_window_t(self) -> int:
        """Hour at which the previous window opened; −1 in the first window."""
        ...

    @property
    def window_calls(self) -> int:
        """Calls made in the open window, `end_of_step` aside."""
        ...

    def request_end_of_step(self) -> None:
        """Ask the session to close the window once the current call has returned."""
        ...


ProductId = Annotated[str, Field(min_length=1, max_length=64)]
Page = Annotated[int, Field(ge=1, le=10_000)]
# The bound is the scenario's, rendered into each tool's schema (tools.render).
PageSize = Annotated[int, Field(ge=1), Limit(le="tools.page_size_max")]
Days = Annotated[int, Field(ge=1, le=365)]
RMB_LIMIT = 1_000_000.0  # far above 100 × the dearest procurement price
Price = Annotated[float, Field(ge=0.01, le=RMB_LIMIT)]


@functools.lru_cache(maxsize=1 << 14)  # a run has 8,760 hours; tools render them again and again
def clock_text(t: int) -> str:
    """Hour `t` as the agent reads it: "Day 1 08:00"."""
    return f"Day {t // 24 + 1} {t % 24:02d}:00"


_CLOCK_TEXT = re.compile(r"Day (\d+) (\d\d):00")


def parse_clock_text(text: str) -> int | None:
    """The hour `t` that `clock_text(t)` renders as `text`; None if `text` is no such time."""
    match = _CLOCK_TEXT.fullmatch(text)
    if match is None:
        return None
    day, hour = int(match.group(1)), int(match.group(2))
    return (day - 1) * 24 + hour if day >= 1 and hour < 24 else None


def date_of(start_date: str, day: int) -> dt.date:
    """Calendar date of run day `day` (0-based; negative days are before the run)."""
    return dt.date.fromisoformat(start_date) + dt.timedelta(days=day)


def happened(hour: int, t: int) -> bool:
    """Whether something scheduled at `hour` (−1: never) has happened when the window at `t`
    opens: the engine has simulated hours before `t` only."""
    return 0 <= hour < t


def refusal(exc: ActionRejected, path: str | None = None) -> ToolError:
    """An engine refusal as a tool refusal, with the JSON path of the argument at fault."""
    return ToolError(exc.code, exc.message, path)


def ensure_open(ctx: StoreContext) -> None:
    """Refuse store actions once the store is closed, before anything else is checked, so that
    a closed store answers `store_closed` whatever the arguments."""
    try:
        ctx.engine.check_store_open()
    except ActionRejected as exc:
        raise refusal(exc) from None


def product_of(ctx: StoreContext, product_id: str, path: str) -> int:
    """Index of a product the agent may see now; unknown and not yet launched alike are
    `unknown_product`, so an error never reveals the future."""
    try:
        return ctx.engine.product_index(product_id)
    except ActionRejected as exc:
        raise refusal(exc, path) from None


def plain_texts(values: np.ndarray) -> list[str]:
    """A column of text (numpy strings, or objects) as plain Python strings."""
    return values.tolist() if values.dtype.kind == "U" else [str(v) for v in values]


def public_ids(market: Market, products: Sequence[int] | np.ndarray) -> list[str]:
    """The public product_id of each product index, as plain strings."""
    return plain_texts(market.product_ids[np.asarray(products, dtype=np.int64)])


def table(columns: Sequence[str], rows: list[list[Any]]) -> dict[str, Any]:
    return {"columns": list(columns), "rows": rows}


def page_of(items: Sequence[Any], page: int, size: int) -> tuple[Sequence[Any], dict[str, int]]:
    """One page of `items` and its paging fields; a page past the end is empty. Tools slice
    before rendering, so a long history costs only the rows shown."""
    start = (page - 1) * size
    total = len(items)
    return items[start : start + size], {
        "page": page,
        "page_size": size,
        "pages": math.ceil(total / size),
        "total": total,
    }


def paged(columns: Sequence[str], rows: list[list[Any]], page: int, size: int) -> dict[str, Any]:
    """One page of a table with `page`, `page_size`, `pages` and `total`."""
    shown, fields = page_of(rows, page, size)
    return {**table(columns, list(shown)), **fields}


# --- what the agent may see of an order -------------------------------------------------
# Engine update names → what the agent reads ("normal" is an order settled without complaint).
EVENT_NAMES = {"normal": "settled"}
TERMINAL_STATUS = {
    Outcome.NORMAL: "settled",
    Outcome.BAD_REVIEW: "bad_review",
    Outcome.RETURN_REFUND: "return_refund",
    Outcome.RETURNLESS_REFUND: "returnless_refund",
    Outcome.CANCELLED: "cancelled",
    Outcome.STOCKOUT: "stockout",
    Outcome.INSUFFICIENT_BALANCE: "insufficient_balance",
}
OPEN_STATUSES = ("awaiting_shipment", "shipped", "delivered")


def event_name(raw: str) -> str:
    return EVENT_NAMES.get(raw, raw)


def event_fine(scenario: Scenario, event: str) -> int:
    """The fine (fen) the rules attach to an order event; 0 for events without one."""
    fines = scenario.orders.fines
    return {
        "late": fines.late_fen,
        "bad_review": fines.bad_review_fen,
        "return_refund": fines.return_refund_fen,
        "returnless_refund": fines.returnless_refund_fen,
        "cancelled": fines.cancel_fen,
        "stockout": fines.stockout_fen,
        "insufficient_balance": fines.insufficient_balance_fen,
    }.get(event, 0)


def order_status(order: Order, t: int) -> str:
    """What the order looks like at the start of hour `t`."""
    if order.outcome != Outcome.OPEN and happened(order.resolved_t, t):
        return TERMINAL_STATUS[order.outcome]
    if happened(order.delivered_t, t):
        return "delivered"
    if happened(order.ship_t, t):
        return "shipped"
    return "awaiting_shipment"


def is_late(order: Order, t: int) -> bool:
    return happened(order.late_t, t)


def order_history(order: Order, t: int) -> list[tuple[int, str]]:
    """(hour, event) of everything that has happened to the order, in order."""
    status = order_status(order, t)
    steps = [(order.placed_t, 0, "placed")]
    if is_late(order, t):
        steps.append((order.late_t, 1, "late"))
    if status != "cancelled":
        for hour, rank, name in ((order.ship_t, 3, "shipped"), (order.delivered_t, 4, "delivered")):
            if happened(hour, t):
                steps.append((hour, rank, name))
    if status in TERMINAL_STATUS.values():
        steps.append((order.resolved_t, 5, status))
    return [(hour, name) for hour, _, name in sorted(steps)]


def open_order_ids(state: StoreState) -> set[int]:
    """Ids of the orders still running: exactly those with a transition still to come."""
    return {order_id for _, order_id, _ in state.pending}


def open_orders(state: StoreState) -> list[Order]:
    """Orders still running, by id."""
    return [state.orders[order_id - 1] for order_id in sorted(open_order_ids(state))]


def updates_since(state: StoreState, since: int) -> list[tuple[int, int, str]]:
    """Order transitions at hours ≥ `since` (all of them happened: the log has only the past)."""
    return state.updates[bisect_left(state.updates, since, key=lambda u: u[0]) :]

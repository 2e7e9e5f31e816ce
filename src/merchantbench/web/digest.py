"""The window digest: every event since the last window, as a person reads it first.

It states what the window's observation states, line by line and without the observation's caps
(the observation shows five adverse examples and ten anomaly lines; the digest shows them all,
as `query_order_updates` and `query_supply_chain_anomalies(scope="new")` would): order events
with their order, product and fine, supplier events on the store's listings, the rating and its
stars against the previous window's, cash against the previous window's, new orders. Its numbers
come from the functions the observation and those tools use (`tools.context.updates_since`,
`tools.monitoring.anomaly_rows`, `tools.status.store_status` via the surface): one source.

Nothing here is hidden state: outcomes that already happened, supplier events already visible,
the published rating. Reading the digest is not a tool call (the observation is not one either),
so it makes no window effective; the actions its lines offer are tool calls.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from merchantbench.money import rmb
from merchantbench.tools.context import clock_text, event_fine, event_name, updates_since
from merchantbench.tools.monitoring import anomaly_rows

if TYPE_CHECKING:
    from merchantbench.surface import StoreStatus
    from merchantbench.tools.context import StoreContext

# Severity, most urgent first; the page sorts lines by it.
CRITICAL, WARNING, NOTICE, GOOD, INFO = "critical", "warning", "notice", "good", "info"
SEVERITY_ORDER = (CRITICAL, WARNING, NOTICE, GOOD, INFO)

# Order events a person must see, their severity and their words.
ORDER_EVENTS: dict[str, tuple[str, str]] = {
    "store_closed": (CRITICAL, "store closed: the deposit ran out"),
    "stockout": (CRITICAL, "stockout: the supplier could not supply"),
    "insufficient_balance": (CRITICAL, "not procured: balance too low to pay the supplier"),
    "bad_review": (WARNING, "bad review"),
    "return_refund": (WARNING, "returned and refunded"),
    "returnless_refund": (WARNING, "refunded without return (cost lost)"),
    "cancelled": (WARNING, "cancelled by the customer before shipment (no fine)"),
    "late": (NOTICE, "late: not shipped in time"),
}
# Supplier events on listings (query_supply_chain_anomalies' names).
SUPPLIER_EVENTS: dict[str, tuple[str, str]] = {
    "supplier_delisted": (CRITICAL, "supplier delisted the product: new orders are stockouts"),
    "shipment_delayed": (WARNING, "supplier ships late"),
    "price_changed": (NOTICE, "supplier changed the cost"),
    "supplier_relisted": (INFO, "supplier relisted the product"),
    "delay_over": (INFO, "supplier ships on time again"),
    "price_restored": (INFO, "supplier cost back to normal"),
}
# What a rating weighs (outcomes since the last window that feed it), for the cause line.
RATED = ("settled", "bad_review", "return_refund", "returnless_refund", "stockout")


@dataclass(frozen=True)
class Before:
    """The previous window's public numbers the digest compares with (from its status)."""

    rating: float
    stars: int
    rating_multiplier: float
    balance: float
    deposit: float
    in_transit: float
    receivable: float
    net_assets: float
    orders: int


@dataclass
class Line:
    """One digest line."""

    severity: str
    kind: str  # the event or anomaly code, or rating, stars, cash, orders
    text: str  # in words
    at: str | None = None
    order_id: int | None = None
    product_id: str | None = None
    title: str | None = None
    amount: float | None = None  # RMB: a fine (negative) or a change
    detail: dict[str, Any] = field(default_factory=dict)


def _title(ctx: StoreContext, product: int) -> str:
    return str(ctx.market.titles[product])


def _order_lines(ctx: StoreContext, since: int) -> tuple[list[Line], Counter[str]]:
    lines: list[Line] = []
    counts: Counter[str] = Counter()
    if since < 0:
        return lines, counts
    orders = ctx.engine.state.orders
    for hour, order_id, raw in updates_since(ctx.engine.state, since):
        name = event_name(raw)
        counts[name] += 1
        if name not in ORDER_EVENTS:
            continue
        severity, words = ORDER_EVENTS[name]
        if not order_id:
            lines.append(Line(severity, name, words, at=clock_text(hour)))
            continue
        order = orders[order_id - 1]
        fine = event_fine(ctx.scenario, name)
        lines.append(
            Line(
                severity,
                name,
                words,
                at=clock_text(hour),
                order_id=order_id,
                product_id=str(ctx.market.product_ids[order.product]),
                title=_title(ctx, order.product),
                amount=-rmb(fine) if fine else None,
                detail={"sale_price": rmb(order.price), "cost": rmb(order.cost)},
            )
        )
    return lines, counts


def _supplier_lines(ctx: StoreContext) -> list[Line]:
    lines = []
    for pid, anomaly, since, price, previous, ship, sale in anomaly_rows(ctx, "new"):
        severity, words = SUPPLIER_EVENTS.get(anomaly, (INFO, anomaly.replace("_", " ")))
        product = ctx.engine.product_index(pid)
        detail: dict[str, Any] = {"procurement_price": price, "sale_price": sale}
        if anomaly == "price_changed":
            detail["previous_price"] = previous
            if price >= sale:
                severity = CRITICAL  # selling at or below cost now
        if anomaly == "shipment_delayed":
            detail["ship_hours"] = ship
        lines.append(Line(severity, anomaly, words, at=since, product_id=pid,
                          title=_title(ctx, product), detail=detail))  # fmt: skip
    return lines


def _cause(counts: Counter[str]) -> str:
    parts = [f"{counts[k]} {k.replace('_', ' ')}" for k in RATED if counts[k]]
    return "rated outcomes since the last window: " + (", ".join(parts) if parts else "none")


def _status_lines(status: StoreStatus, before: Before | None, counts: Counter[str]) -> list[Line]:
    if before is None:
        return []
    lines = []
    if status.stars != before.stars:
        down = status.stars < before.stars
        text = (f"stars {before.stars} → {status.stars}: orders ×{before.rating_multiplier:.2f} "
                f"→ ×{status.rating_multiplier:.2f}")  # fmt: skip
        lines.append(Line(CRITICAL if down else GOOD, "stars", text,
                          detail={"cause": _cause(counts)}))  # fmt: skip
    if round(status.rating - before.rating, 2) != 0:
        down = status.rating < before.rating
        text = f"rating {before.rating:.2f} → {status.rating:.2f}"
        lines.append(Line(WARNING if down else GOOD, "rating", text,
                          amount=round(status.rating - before.rating, 2),
                          detail={"cause": _cause(counts)}))  # fmt: skip
    new_orders = status.orders_placed - before.orders
    if new_orders:
        lines.append(Line(INFO, "orders", f"{new_orders} new order{'s' if new_orders != 1 else ''}",
                          amount=None, detail={"orders_so_far": status.orders_placed}))  # fmt: skip
    moves = {
        "balance": round(status.balance - before.balance, 2),
        "deposit": round(status.deposit - before.deposit, 2),
        "in_transit": round(status.in_transit - before.in_transit, 2),
        "receivable": round(status.receivable - before.receivable, 2),
    }
    change = round(status.net_assets - before.net_assets, 2)
    if change or any(moves.values()):
        severity = WARNING if status.deposit < before.deposit else (GOOD if change > 0 else INFO)
        moved = "up" if change > 0 else "down" if change < 0 else "unchanged"
        lines.append(Line(severity, "cash", f"net assets {moved}",
                          amount=change, detail=moves))  # fmt: skip
    return lines


def window_digest(
    ctx: StoreContext, status: StoreStatus, before: Before | None, window: int | None = None
) -> dict[str, Any]:
    """The digest of the open window (see the module docstring); each line says its `window`."""
    since = ctx.previous_window_t
    orders, counts = _order_lines(ctx, since)
    lines = orders + _supplier_lines(ctx) + _status_lines(status, before, counts)
    rank = {s: i for i, s in enumerate(SEVERITY_ORDER)}
    lines.sort(key=lambda line: rank[line.severity])  # stable: time order within a severity
    fines = sum(-(line.amount or 0) for line in orders)
    return {
        "since": clock_text(since) if since >= 0 else None,
        "window": window,
        "windows": 1,
        "counts": dict(sorted(counts.items())),
        "fines": round(fines, 2),
        "lines": [{**asdict(line), "window": window} for line in lines],
    }


# Lines comparing a window with the one before: of the windows a fast-forward passed over only
# star changes are kept (the open window's lines compare with the window before it).
COMPARISONS = frozenset(("rating", "orders", "cash"))


def merge_digests(digests: list[dict[str, Any]]) -> dict[str, Any]:
    """One digest of several windows in a row (a fast-forward's): every order and supplier event
    of each, its star changes, the last window's comparisons; worst first, in time order within
    a severity; counts and fines summed."""
    last = digests[-1]
    lines = [line for d in digests[:-1] for line in d["lines"] if line["kind"] not in COMPARISONS]
    lines += last["lines"]
    rank = {s: i for i, s in enumerate(SEVERITY_ORDER)}
    counts: Counter[str] = Counter()
    for d in digests:
        counts.update(d["counts"])
    return {
        "since": digests[0]["since"],
        "window": last["window"],
        "windows": sum(d.get("windows", 1) for d in digests),
        "counts": dict(sorted(counts.items())),
        "fines": round(sum(d["fines"] for d in digests), 2),
        "lines": sorted(lines, key=lambda line: rank[line["severity"]]),
    }

"""The text an agent is given: the system brief (the rules it is told, once) and each window's
observation (where the store stands now). Both are deterministic functions of the session.

The brief states every rule of the platform (docs/design.md §8) from the scenario's own numbers, and
the existence of supplier events without their rates: a seller knows that suppliers change prices
and run out, not how often a given one will.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from typing import TYPE_CHECKING

from merchantbench.money import fen, rmb_text
from merchantbench.tools.context import clock_text, date_of, event_fine, event_name, updates_since
from merchantbench.tools.monitoring import anomaly_rows
from merchantbench.tools.render import byte_size_text
from merchantbench.tools.status import store_status

if TYPE_CHECKING:
    from merchantbench.scenario import Scenario
    from merchantbench.tools.context import StoreContext


ADVERSE = ("late", "stockout", "insufficient_balance", "return_refund", "bad_review",
           "returnless_refund", "cancelled", "store_closed")  # fmt: skip
EXAMPLES = 5
ANOMALY_LINES = 10


def goal(sc: Scenario) -> str:
    last = date_of(sc.clock.start_date, sc.clock.days - 1)
    return f"Goal: maximise your net assets at the end of the run (Day {sc.clock.days}, {last})."


def money(fen: int) -> str:
    return rmb_text(fen)


def _time_section(sc: Scenario) -> list[str]:
    clock = sc.clock
    per_day = 24 // clock.hours_per_window
    last = date_of(clock.start_date, clock.days - 1)
    opens = ", ".join(f"{h:02d}:00" for h in range(0, 24, clock.hours_per_window))
    return [
        "TIME",
        f"- The run lasts {clock.days} days: Day 1 ({clock.start_date}) to Day {clock.days} "
        f'({last.isoformat()}). Times read "Day N HH:00" (Day 1 08:00 is 08:00 on the first day).',
        f"- You act in decision windows every {clock.hours_per_window} hours ({opens}), "
        f"{per_day} a day, {clock.windows} in all. A window shows the store at its opening hour; "
        "you call tools, then close it with end_of_step, and the next "
        f"{clock.hours_per_window} hours are simulated. Nothing happens while a window is open; "
        "your actions take effect from the window's hour.",
        f"- At most {clock.calls_per_window} tool calls per window besides end_of_step; beyond "
        "that tools answer `limit` and only end_of_step is accepted.",
        "- After the last window no new orders arrive; open orders run to their end and your "
        "net assets are then counted.",
    ]


def _money_section(sc: Scenario) -> list[str]:
    m, f = sc.money, sc.orders.fines
    lines = [
        "MONEY (RMB, two decimals)",
        f"- You start with a balance of {money(m.initial_balance_fen)} and a security deposit "
        f"of {money(m.initial_deposit_fen)}.",
        "- Accounts: balance (spendable), deposit, in transit (what you paid suppliers for "
        "orders not yet delivered), receivable (sale prices of delivered orders not yet "
        "settled). Net assets = balance + deposit + in transit + receivable.",
        f"- Money coming in first refills the deposit up to {money(m.initial_deposit_fen)}; the "
        "rest goes to the balance. Fines come from the balance first, then from the deposit.",
        "- If the deposit reaches 0 the store is closed for good: no more orders or windows, "
        "and store actions answer `store_closed`.",
        f"- Fines per order: return and refund {money(f.return_refund_fen)}, bad review "
        f"{money(f.bad_review_fen)}, stockout {money(f.stockout_fen)}, insufficient balance "
        f"{money(f.insufficient_balance_fen)}, late shipment {money(f.late_fen)}, cancellation "
        f"{money(f.cancel_fen)}, returnless refund {money(f.returnless_refund_fen)}.",
    ]
    if m.platform_fees:
        lo, hi = m.commission_range
        lines.append(
            f"- Platform fees: a commission of {lo:.0%}-{hi:.0%} of the sale price by category "
            f"at settlement, and {money(m.fulfilment_fee_fen)} per order when it is placed."
        )
    return lines


def _listing_section(sc: Scenario) -> list[str]:
    t, d = sc.tools, sc.demand
    return [
        "LISTINGS AND PRICES",
        f"- At most {t.max_active_listings} active listings; list_product takes up to "
        f"{t.list_items_max} products per call.",
        f"- A sale price lies between 0.01 and {d.max_price_multiple_of_cost:g} × the product's "
        "current procurement price.",
        "- Orders for a listing depend on the product's popularity and season, your sale price "
        "(higher prices bring fewer orders), your store rating and the listing's exposure.",
        f"- A new listing starts with low exposure, which builds up over about "
        f"{d.exposure_ramp_days:g} days and then slowly fades as the listing ages; delisting "
        "and listing again restarts the build-up.",
    ]


def _lifecycle_section(sc: Scenario) -> list[str]:
    o, f = sc.orders, sc.orders.fines
    lo_ship, hi_ship = sc.suppliers.ship_hours
    lo_log, hi_log = o.logistics_hours
    lo_res, hi_res = o.resolution_hours
    return [
        "ORDER LIFECYCLE",
        "1. When a customer orders, you pay the supplier its current procurement price from "
        "your balance (it moves to in transit). If the supplier has delisted the product or "
        "has no stock: stockout (fine). If your balance is too low: insufficient_balance "
        "(fine). Neither is procured.",
        f"2. The supplier ships after its ship hours ({lo_ship}-{hi_ship} h; longer during a "
        f"shipment delay or the Spring Festival). An order not shipped {o.late_after_hours} h "
        f"after it was placed is late: fine {money(f.late_fen)}, once.",
        "3. Some customers cancel before shipment: the cost comes back, no fine, not rated.",
        f"4. The courier delivers after the logistics hours ({lo_log}-{hi_log} h): the cost "
        "leaves in transit and the sale price becomes receivable.",
        f"5. {lo_res / 24:g}-{hi_res / 24:g} days after delivery the order ends with one "
        "outcome: settled (sale price credited); bad review (settled, then fined); return "
        "and refund (sale price lost, goods and cost returned, fined); returnless refund "
        "(sale price and cost lost, no fine).",
    ]


def _rating_section(sc: Scenario) -> list[str]:
    r = sc.rating
    scores = (
        ("settled", r.normal), ("settled after being late", r.late_normal),
        ("return and refund", r.return_refund), ("returnless refund", r.returnless_refund),
        ("bad review", r.bad_review), ("stockout", r.stockout),
    )  # fmt: skip
    bands = [f"below {th:.2f}: {k + 1} star{'s' if k else ''} (orders ×{r.star_multipliers[k]:.2f})"
             for k, th in enumerate(r.star_thresholds)]  # fmt: skip
    bands.append(f"otherwise 5 stars (orders ×{r.star_multipliers[-1]:.2f})")
    return [
        "STORE RATING",
        "- Published once a day, at the end of the day, for the next day: a weighted average "
        f"of a starting score of {r.initial:g} (weight {r.prior_weight:g}) and the scores of "
        f"your rated outcomes, each weighing less with age (half after {r.half_life_days:g} "
        "days).",
        "- Scores (weight): "
        + "; ".join(f"{name} {e.score:g} ({e.weight:g})" for name, e in scores)
        + ". Cancellations and "
        "insufficient-balance orders are not rated.",  # fmt: skip
        "- Stars: " + "; ".join(bands) + f". A new store starts at {r.initial:g}.",
    ]


def _market_section(ctx: StoreContext) -> list[str]:
    sc = ctx.scenario
    return [
        "SUPPLIERS AND MARKET",
        "- Suppliers sometimes change a product's procurement price (placed orders keep "
        "theirs), delist a product (its new orders become stockouts until you delist it) or "
        "delay shipments (orders placed during the delay ship later). Such events last days to "
        "weeks, then the product recovers; they are not announced in advance. "
        "query_supply_chain_anomalies reports them on your listings.",
        "- Supplier stock is limited and refills over time; your orders draw it down.",
        f"- Categories: {', '.join(ctx.market.categories)}.",
        "- Demand moves through the year: product trends rise and fade, seasons turn, shopping "
        "festivals (618 on June 18, Double 11 on November 11, Double 12) lift sales, and the "
        "Spring Festival brings a trough and slower shipping. New products launch all year. "
        "get_daily_report summarises the market each day.",
        f"- Memory: a document of up to {byte_size_text(sc.tools.memory_doc_bytes)} (UTF-8) kept "
        "across windows (read_memory_doc, write_memory_doc) for your plans and notes.",
    ]


def _competition_section(ctx: StoreContext) -> list[str]:
    """Only in a market of several merchants (docs/design.md §11): what the agent sees of the
    others."""
    sc = ctx.scenario
    shared = (
        "buyers of a product you both list choose between you by sale price, store stars and "
        "how long each listing has been up: the better offer wins most of them"
        if sc.market.seller_substitution > 1.0
        else "each store's buyers are its own: another seller of the same product does not "
        "take your customers"
    )
    return [
        "OTHER MERCHANTS",
        f"- Other stores sell on this platform too, and may list the same products; {shared}.",
        "- They draw on the same supplier stock: whoever's customer orders first gets the last "
        "units.",
        "- As a buyer would, you see for each product how many other stores list it, their "
        "sale prices and their stars as they stood when this window opened: get_product_detail "
        "(`other_sellers`) and review_my_listings (columns other_sellers, lowest_other_price). "
        "Nothing else about them.",
    ]


def system_brief(ctx: StoreContext) -> str:
    """The rules the agent is told, once, at the start (and by query_platform_rules)."""
    sc = ctx.scenario
    intro = (
        "You run a drop-shipping store on a wholesale marketplace like 1688.com. You list "
        "suppliers' products at your own sale prices; when a customer orders, you pay the "
        "supplier, who ships to the customer. All money is in RMB."
    )
    sections = [
        _time_section(sc), _money_section(sc), _listing_section(sc), _lifecycle_section(sc),
        _rating_section(sc), _market_section(ctx),
    ]  # fmt: skip
    if ctx.engine.rivals is not None:
        sections.append(_competition_section(ctx))
    body = "\n\n".join("\n".join(lines) for lines in sections)
    return f"{intro}\n\n{body}\n\n{goal(sc)}"


def _transition_lines(ctx: StoreContext) -> list[str]:
    since = ctx.previous_window_t
    if since < 0:
        return ["Order updates: none yet (first window)."]
    updates = updates_since(ctx.engine.state, since)
    if not updates:
        return [f"Order updates since {clock_text(since)}: none."]
    counts = Counter(event_name(raw) for _, _, raw in updates)
    parts = [f"{n} {name}" for name, n in sorted(counts.items())]
    lines = [f"Order updates since {clock_text(since)}: " + ", ".join(parts) + "."]
    adverse = [u for u in updates if event_name(u[2]) in ADVERSE][:EXAMPLES]
    for hour, order_id, raw in adverse:
        name = event_name(raw)
        if not order_id:
            lines.append(f"  - {clock_text(hour)}: the store was closed")
            continue
        order = ctx.engine.state.orders[order_id - 1]
        fine = event_fine(ctx.scenario, name)
        charged = f", fine {money(fine)}" if fine else ""
        pid = ctx.market.product_ids[order.product]
        lines.append(f"  - {clock_text(hour)}: order {order_id} (product {pid}) {name}{charged}")
    return lines


def _anomaly_detail(anomaly: str, price: float, previous: float | None, ship: int) -> str:
    if anomaly == "price_changed":
        return f"procurement price now {price:.2f} (usually {previous:.2f})"
    if anomaly == "shipment_delayed":
        return f"the supplier now ships in {ship} h"
    if anomaly == "supplier_delisted":
        return "new orders are stockouts until you delist it"
    return "back to normal"


def _anomaly_lines(ctx: StoreContext) -> list[str]:
    rows = anomaly_rows(ctx, "new")
    if not rows:
        return ["New supply-chain anomalies on your listings: none."]
    lines = ["New supply-chain anomalies on your listings:"]
    for pid, anomaly, since, price, previous, ship, _ in rows[:ANOMALY_LINES]:
        lines.append(
            f"  - {pid}: {anomaly} since {since}; {_anomaly_detail(anomaly, price, previous, ship)}"
        )
    if len(rows) > ANOMALY_LINES:
        lines.append(f"  … and {len(rows) - ANOMALY_LINES} more (query_supply_chain_anomalies)")
    return lines


def build_observation(ctx: StoreContext) -> str:
    """Where the store stands as the window opens (its status: `tools.status`), and what
    changed since the last one."""
    sc, status = ctx.scenario, store_status(ctx)
    date = dt.date.fromisoformat(status.date)
    lines = [
        f"{status.at}, {date:%A} {status.date}: window {status.window + 1} of "
        f"{status.windows_total}.",
        f"Cash (RMB): balance {_rmb(status.balance)}, deposit {_rmb(status.deposit)}, in transit "
        f"{_rmb(status.in_transit)}, receivable {_rmb(status.receivable)}.",
    ]
    change = ""
    if status.net_assets_change is not None:
        delta = status.net_assets_change
        change = f" ({'+' if delta >= 0 else '-'}{_rmb(abs(delta))} since the last window)"
    lines.append(f"Net assets: {_rmb(status.net_assets)} RMB{change}.")
    stars = f"{status.stars} star" + ("s" if status.stars != 1 else "")
    lines.append(
        f"Store rating: {status.rating:.2f} ({stars}, orders ×{status.rating_multiplier:.2f}). "
        f"Listings: {status.active_listings} of {status.listing_cap} slots used."
    )
    if status.closed_at is not None:
        lines.append(f"The store was closed at {status.closed_at}: the deposit ran out.")
    lines += _transition_lines(ctx) + _anomaly_lines(ctx)
    lines.append(f"{goal(sc)} Close this window with end_of_step when you are done.")
    return "\n".join(lines)


def _rmb(amount: float) -> str:
    """An RMB amount of the status as the observation writes money (exact: see tools.status)."""
    return money(fen(amount))

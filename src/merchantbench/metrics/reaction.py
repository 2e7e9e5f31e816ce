"""How the agent reacts to adverse outcomes on its listings (docs/design.md §9, coherence).

For every listing spell that suffered an adverse outcome while it was listed, the first such
outcome sets the clock (hour `T`); the agent's answers are the `ok` env calls of windows that
open after `T`: delisting the product (`delist_product`), repricing it (`adjust_price`), each
while the spell lasts, or listing another product of the same product type (`list_product`),
at any later time. Delays are in hours from `T` to the opening hour of the acting window.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any

import numpy as np

from merchantbench.metrics.record import RunRecord, Table, is_one_of
from merchantbench.metrics.windows import ENV_ORIGINS

# Outcomes that are adverse for a listing; when each becomes known.
RESOLVED_ADVERSE = ("bad_review", "return_refund", "returnless_refund")
REACTIONS = ("delist", "reprice", "replace")
NEVER = np.iinfo(np.int64).max


@dataclass(frozen=True)
class AgentAction:
    """One successful env call of a listing tool, reduced to the products it touched."""

    t: int
    tool: str
    product_ids: tuple[str, ...]


def _action_products(tool: str, args: dict[str, Any]) -> tuple[str, ...]:
    if tool == "list_product":
        items = args.get("items") or []
        return tuple(
            str(i["product_id"]) for i in items if isinstance(i, dict) and "product_id" in i
        )
    if tool == "delist_product":
        return tuple(str(p) for p in args.get("product_ids") or [])
    return (str(args["product_id"]),) if "product_id" in args else ()


def agent_actions(trace: Table, tools: tuple[str, ...]) -> list[AgentAction]:
    """Successful env calls of `tools`, in call order."""
    mask = is_one_of(trace["origin"], ENV_ORIGINS) & trace["ok"] & is_one_of(trace["tool"], tools)
    return [
        AgentAction(int(t), str(tool), _action_products(str(tool), args))
        for t, tool, args in zip(
            trace["t"][mask], trace["tool"][mask], trace["args"][mask], strict=True
        )
    ]


def adverse_events(orders: Table, late_after_hours: int) -> tuple[np.ndarray, np.ndarray]:
    """Hour at which each order's first adverse outcome became known (−1 if none), and its kind.

    Stockouts are known at arrival, lateness `late_after_hours` after purchase, bad reviews and
    refunds at resolution.
    """
    n = len(orders)
    hour, kind = np.full(n, -1, np.int64), np.full(n, "", dtype=object)
    candidates = (
        ("late", orders["late"], orders["placed_t"] + late_after_hours),
        ("stockout", orders["outcome"] == "stockout", orders["placed_t"]),
        *((name, orders["outcome"] == name, orders["resolved_t"]) for name in RESOLVED_ADVERSE),
    )
    for name, happened, at in candidates:
        earlier = happened & (at >= 0) & ((hour < 0) | (at < hour))
        hour[earlier], kind[earlier] = at[earlier], name
    return hour, kind


def _spell_of_orders(listings: Table, orders: Table) -> np.ndarray:
    """Index of the listing spell each order arrived through (−1 if none matches)."""
    spells_of: dict[str, list[int]] = {}
    for index, pid in enumerate(listings["product_id"]):
        spells_of.setdefault(str(pid), []).append(index)
    listed, end = listings["listed_t"], _spell_end(listings)
    spell = np.full(len(orders), -1, np.int64)
    for i, (pid, placed) in enumerate(zip(orders["product_id"], orders["placed_t"], strict=True)):
        for index in spells_of.get(str(pid), []):
            if listed[index] <= placed < end[index]:
                spell[i] = index
                break
    return spell


def _spell_end(listings: Table) -> np.ndarray:
    """Delisting hour of each spell; spells still listed never end."""
    return np.where(listings["delisted_t"] >= 0, listings["delisted_t"], NEVER)


def _first_after(hours: list[int], after: int, until: int) -> int | None:
    """Hours from `after` to the first of the sorted `hours` in (after, until], if any."""
    index = bisect.bisect_right(hours, after)
    return hours[index] - after if index < len(hours) and hours[index] <= until else None


class ActionIndex:
    """The agent's successful listing actions, indexed for "first one after hour T" lookups."""

    def __init__(self, trace: Table, type_of: dict[str, str]) -> None:
        self.delisted = _hours_by_product(agent_actions(trace, ("delist_product",)))
        self.repriced = _hours_by_product(agent_actions(trace, ("adjust_price",)))
        self.listed_by_type: dict[str, list[tuple[int, str]]] = {}
        for action in agent_actions(trace, ("list_product",)):
            for pid in action.product_ids:
                if pid in type_of:
                    self.listed_by_type.setdefault(type_of[pid], []).append((action.t, pid))
        for entries in self.listed_by_type.values():
            entries.sort()

    def first_substitute(self, pid: str, ptype: str, after: int) -> int | None:
        """Hours from `after` to the first listing of another product of type `ptype`."""
        entries = self.listed_by_type.get(ptype, [])
        start = bisect.bisect_right(entries, after, key=lambda entry: entry[0])
        return next((t - after for t, other in entries[start:] if other != pid), None)

    def reactions(self, pid: str, ptype: str, at: int, end: int) -> dict[str, int | None]:
        """Delay of each kind of reaction to an adverse outcome at hour `at` (`None`: never)."""
        return {
            "delist": _first_after(self.delisted.get(pid, []), at, end),
            "reprice": _first_after(self.repriced.get(pid, []), at, end),
            "replace": self.first_substitute(pid, ptype, at),
        }


def _hours_by_product(actions: list[AgentAction]) -> dict[str, list[int]]:
    hours: dict[str, list[int]] = {}
    for action in actions:
        for pid in action.product_ids:
            hours.setdefault(pid, []).append(action.t)
    return {pid: sorted(times) for pid, times in hours.items()}


def listing_reactions(record: RunRecord, late_after_hours: int) -> list[dict[str, Any]]:
    """One row per listing spell with an adverse outcome while listed: trigger and reactions."""
    listings, orders = record.listings, record.orders
    hour, kind = adverse_events(orders, late_after_hours)
    spell, end = _spell_of_orders(listings, orders), _spell_end(listings)
    pids, types = listings["product_id"], listings["product_type"]
    actions = ActionIndex(record.trace, {str(p): str(k) for p, k in zip(pids, types, strict=True)})
    rows = []
    for s in np.unique(spell[(spell >= 0) & (hour >= 0)]):
        hit = np.flatnonzero((spell == s) & (hour >= 0) & (hour < end[s]))
        if not len(hit):
            continue
        first = hit[np.argmin(hour[hit])]
        pid, ptype = str(pids[s]), str(types[s])
        row = {"product_id": pid, "product_type": ptype, "listed_t": int(listings["listed_t"][s]),
               "adverse_t": int(hour[first]), "adverse_kind": str(kind[first])}  # fmt: skip
        rows.append(row | actions.reactions(pid, ptype, int(hour[first]), int(end[s])))
    return rows


def _median(values: list[int]) -> float | None:
    return float(np.median(values)) if values else None


def _first_reaction(row: dict[str, Any]) -> int | None:
    delays = [row[reaction] for reaction in REACTIONS if row[reaction] is not None]
    return min(delays) if delays else None


def reaction_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Share of adverse-hit listings answered by each reaction, and median delays (hours)."""
    n = len(rows)
    summary: dict[str, Any] = {"listings_with_adverse": n}
    for reaction in REACTIONS:
        delays = [row[reaction] for row in rows if row[reaction] is not None]
        summary[f"{reaction}_rate"] = len(delays) / n if n else 0.0
        summary[f"median_hours_to_{reaction}"] = _median(delays)
    firsts = [d for d in map(_first_reaction, rows) if d is not None]
    summary["reacted_rate"] = len(firsts) / n if n else 0.0
    summary["median_hours_to_reaction"] = _median(firsts)
    kinds = ("late", "stockout", *RESOLVED_ADVERSE)
    summary["by_kind"] = {kind: sum(row["adverse_kind"] == kind for row in rows) for kind in kinds}
    return summary

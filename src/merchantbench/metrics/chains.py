"""Risk-response chains (docs/diagnosis.md): after an adverse outcome on a listing, the agent
delists the product, searches, and lists another product of the same type.

A chain answers the first adverse outcome of a listing spell (the rows of
`reaction.listing_reactions`, hour `T`) when, in call order, a successful `delist_product` of that
product in a window opening after `T`, then a successful `search_products`, then a successful
`list_product` of another product of the same type follow, the listing within `k` windows of `T`.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from merchantbench.metrics.record import Table, is_one_of
from merchantbench.metrics.windows import ENV_ORIGINS


@dataclass(frozen=True)
class CallIndex:
    """The successful listing and search calls of a trace, by call order (`seq`)."""

    delists: dict[str, list[tuple[int, int]]]  # product → sorted (t, seq)
    search_seqs: list[int]  # sorted
    lists_by_type: dict[str, list[tuple[int, int, str]]]  # type → sorted (seq, t, product)

    @classmethod
    def of(cls, trace: Table, type_of: dict[str, str]) -> CallIndex:
        ok = is_one_of(trace["origin"], ENV_ORIGINS) & trace["ok"]
        tools, seqs, hours, args = trace["tool"], trace["seq"], trace["t"], trace["args"]
        delists: dict[str, list[tuple[int, int]]] = {}
        lists: dict[str, list[tuple[int, int, str]]] = {}
        searches: list[int] = []
        for i in np.flatnonzero(ok & is_one_of(tools, _TOOLS)):
            tool, seq, t, given = str(tools[i]), int(seqs[i]), int(hours[i]), args[i]
            if tool == "search_products":
                searches.append(seq)
            elif tool == "delist_product":
                for pid in _ids(given.get("product_ids")):
                    delists.setdefault(pid, []).append((t, seq))
            else:
                for item in given.get("items") or []:
                    pid = str(item.get("product_id")) if isinstance(item, dict) else ""
                    if pid in type_of:
                        lists.setdefault(type_of[pid], []).append((seq, t, pid))
        for hours_seqs in delists.values():
            hours_seqs.sort()
        for listed in lists.values():
            listed.sort()
        return cls(delists, sorted(searches), lists)

    def chain_hours(self, pid: str, ptype: str, at: int, within: int) -> int | None:
        """Hours from `at` to the listing that completes a chain for product `pid`, if one does
        within `within` hours."""
        delists = self.delists.get(pid, [])
        d = bisect.bisect_right(delists, (at, np.iinfo(np.int64).max))
        if d == len(delists):
            return None
        s = bisect.bisect_right(self.search_seqs, delists[d][1])
        if s == len(self.search_seqs):
            return None
        entries = self.lists_by_type.get(ptype, [])
        start = bisect.bisect_right(entries, (self.search_seqs[s], np.iinfo(np.int64).max, ""))
        for _, t, other in entries[start:]:
            if t - at > within:
                return None
            if other != pid:
                return t - at
        return None


_TOOLS = ("delist_product", "search_products", "list_product")


def _ids(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def response_chains(
    rows: Sequence[dict[str, Any]], trace: Table, listings: Table, within_hours: int
) -> list[int | None]:
    """Per adverse-hit listing (rows of `listing_reactions`): hours from its adverse outcome to
    the listing that completed its chain, or None when no chain completed within the hours."""
    if not rows:
        return []
    pids, types = listings["product_id"], listings["product_type"]
    index = CallIndex.of(trace, {str(p): str(k) for p, k in zip(pids, types, strict=True)})
    return [
        index.chain_hours(
            str(r["product_id"]), str(r["product_type"]), int(r["adverse_t"]), within_hours
        )
        for r in rows
    ]

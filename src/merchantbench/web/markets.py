"""Markets of several merchants (arena records, docs/arena.md) on disk, read for the dashboard
(never written): which arena directories a root holds, how far each has got, and a market's
merchants side by side (net assets and rating over time, shares of orders and GMV, contested
products), each merchant's numbers from its own run record.

The seed is never read out: a market is named by its directory, its scenario and β.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from merchantbench.money import rmb
from merchantbench.record.arena import ARENA_FILE, ArenaError, ArenaManifest, read_arena
from merchantbench.record.schema import LISTINGS_FILE, ORDERS_FILE, RUN_FILE
from merchantbench.web.records import MAX_DEPTH, window_series

MAX_MARKETS = 1000
CONTESTED_SHOWN = 30  # the most-ordered contested products on a market's page


@dataclass(frozen=True)
class MarketRow:
    """One arena directory as the dashboard lists it."""

    path: str  # relative to the root, with '/'
    scenario: str
    substitution: float
    status: str  # running, completed, error, interrupted
    windows_done: int
    windows_total: int
    merchants: list[dict[str, str]] = field(default_factory=list)  # id, agent, path


def find_markets(root: Path) -> list[Path]:
    """Arena directories under `root` (itself included), bounded in depth and number; run
    directories and arenas are not looked into."""
    found: list[Path] = []
    frontier = [root]
    for _ in range(MAX_DEPTH + 1):
        deeper: list[Path] = []
        for folder in frontier:
            if (folder / ARENA_FILE).is_file():
                found.append(folder)
                continue
            if (folder / RUN_FILE).is_file():
                continue
            try:
                deeper += [p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")]
            except OSError:
                continue
        frontier = sorted(deeper)
        if len(found) >= MAX_MARKETS or not frontier:
            break
    return sorted(found)[:MAX_MARKETS]


def _rel(root: Path, path: Path) -> str:
    rel = path.relative_to(root).as_posix()
    return "." if rel == "." else rel


def market_row(root: Path, arena_dir: Path, arena: ArenaManifest) -> MarketRow:
    clock = arena.scenario_config.get("clock", {})
    return MarketRow(
        path=_rel(root, arena_dir),
        scenario=f"{arena.scenario} · {clock.get('days', '?')} days",
        substitution=arena.seller_substitution,
        status=arena.ended or "running",
        windows_done=arena.windows,
        windows_total=int(arena.scenario_config.get("clock", {}).get("days", 0))
        * 24
        // max(int(clock.get("hours_per_window", 12)), 1),
        merchants=[
            {"id": m.id, "agent": m.agent, "path": _rel(root, arena.merchant_dir(arena_dir, m.id))}
            for m in arena.merchants
        ],  # fmt: skip
    )


def list_markets(root: Path) -> list[MarketRow]:
    """Every readable arena under `root` (a damaged `arena.json` is left out)."""
    rows = []
    for arena_dir in find_markets(root):
        try:
            rows.append(market_row(root, arena_dir, read_arena(arena_dir)))
        except (ArenaError, OSError, ValueError):
            continue
    return rows


def inside_market(root: Path, rel: str) -> Path | None:
    """The arena directory `rel` names under `root`, or None (no escaping)."""
    try:
        candidate = (root / rel).resolve()
        base = root.resolve()
        if candidate != base and base not in candidate.parents:
            return None
        return candidate if (candidate / ARENA_FILE).is_file() else None
    except (OSError, ValueError):
        return None


SHARE_KEYS = (
    "final_net_assets", "orders", "order_share", "gmv", "gmv_share", "avg_store_rating",
    "final_rating", "products_listed", "contested_products", "contested_listing_share", "closed",
)  # fmt: skip


def market_view(root: Path, arena_dir: Path) -> dict[str, Any]:
    """A market's page: its row, each merchant's figures and series, the contested products.
    Shares and contested products come from the arena report (`report/arena.py`) once the
    market has finished; before, the merchants' series grow with their records."""
    from merchantbench.report.arena import arena_analysis

    arena = read_arena(arena_dir)
    row = market_row(root, arena_dir, arena)
    hours = int(arena.scenario_config.get("clock", {}).get("hours_per_window", 12))
    analysis: dict[str, Any] | None = None
    if arena.ended == "completed":
        try:
            analysis = arena_analysis(arena_dir)
        except (OSError, ValueError, KeyError):
            analysis = None  # a damaged merchant record: the page shows what it can
    merchants = []
    for entry in row.merchants:
        figures = (analysis or {}).get("merchants", {}).get(entry["id"], {})
        merchant_dir = root / entry["path"]
        merchants.append({
            **entry,
            **{key: figures.get(key) for key in SHARE_KEYS},
            "series": window_series(merchant_dir, row.windows_done or row.windows_total, hours),
        })  # fmt: skip
    contested = _contested(arena_dir, arena) if analysis is not None else []
    return {
        "market": row,
        "merchants": merchants,
        "finished": analysis is not None,
        "contested": contested,
        "contested_total": None if analysis is None else analysis["contested_products"],
        "products_listed": None if analysis is None else analysis["products_listed"],
    }


def _contested(arena_dir: Path, arena: ArenaManifest) -> list[dict[str, Any]]:
    """The most-ordered contested products: for each merchant, its orders of the product and
    their mean sale price (None where it never listed it)."""
    from merchantbench.report.arena import contested_products, listing_spells

    spells = listing_spells(arena_dir)
    products = contested_products(spells)
    sales: dict[str, dict[str, list[float]]] = {}
    kinds: dict[str, str] = {}  # product type, as the catalog shows it
    for entry in arena.merchants:
        merchant_dir = arena.merchant_dir(arena_dir, entry.id)
        listed = pq.read_table(merchant_dir / LISTINGS_FILE, columns=["product_id", "product_type"])
        for pid, kind in zip(*listed.to_pydict().values(), strict=True):
            kinds.setdefault(str(pid), str(kind))
        table = pq.read_table(merchant_dir / ORDERS_FILE, columns=["product_id", "sale_price"])
        mine: dict[str, list[float]] = {}
        for pid, price in zip(*table.to_pydict().values(), strict=True):
            mine.setdefault(str(pid), []).append(rmb(int(price)))
        sales[entry.id] = mine
    rows: list[dict[str, Any]] = []
    for pid in products:
        cells: dict[str, dict[str, Any] | None] = {}
        total = 0
        for entry in arena.merchants:
            prices = sales[entry.id].get(pid, [])
            lists_it = pid in spells[entry.id]
            cells[entry.id] = None if not lists_it else {
                "orders": len(prices),
                "mean_price": sum(prices) / len(prices) if prices else None,
            }  # fmt: skip
            total += len(prices) if lists_it else 0
        rows.append({"product_id": pid, "product_type": kinds.get(pid), "orders": total,
                     "merchants": cells})  # fmt: skip
    rows.sort(key=lambda r: (-r["orders"], r["product_id"]))
    return rows[:CONTESTED_SHOWN]

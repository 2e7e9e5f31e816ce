"""The report of an arena (SPEC §11): per merchant Table 1; per market the shares of orders and
GMV, the contested products (listed by two or more merchants at once), markups on contested
against uncontested products month by month (a price war shows as contested markups falling
below the same merchant's uncontested ones; collusion as the opposite), and the rating race;
across seeds the mean rank, rank stability (Kendall τ) and paired intervals of net assets.

Everything is computed from the records alone: `arena.json` and each merchant's run record
(`merchants/<id>/`: metrics.json, listings, orders, daily and hourly tables).
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from merchantbench.metrics.record import RunRecord, load_run_record
from merchantbench.money import rmb
from merchantbench.record.arena import ArenaManifest, read_arena
from merchantbench.report.markdown import markdown_table, percent
from merchantbench.report.paper import TABLE1_COLUMNS, in_paper_units, table1_cells

__all__ = [
    "arena_analysis",
    "contested_products",
    "listing_spells",
    "markets_analysis",
    "render_markets_sections",
    "seeds_analysis",
    "write_arena_report",
    "write_seeds_report",
]

REPORT_FILE = "report.md"
ANALYSIS_FILE = "market_metrics.json"
SEEDS_FILE = "seeds_metrics.json"
DAYS_PER_MONTH = 30  # markup periods: 30-day blocks from the first day
HOURS_PER_DAY = 24


@dataclass(frozen=True)
class _Merchant:
    merchant: str
    agent: str
    record: RunRecord
    metrics: dict[str, Any]


def _merchants(arena_dir: Path, manifest: ArenaManifest) -> list[_Merchant]:
    found = []
    for entry in manifest.merchants:
        run_dir = manifest.merchant_dir(arena_dir, entry.id)
        metrics = json.loads((run_dir / "metrics.json").read_text())
        found.append(_Merchant(entry.id, entry.agent, load_run_record(run_dir), metrics))
    return found


def _spells(record: RunRecord, end: int) -> dict[str, list[tuple[int, int]]]:
    """product id → the hours [listed, delisted) of each listing spell."""
    listings = record.listings
    spells: dict[str, list[tuple[int, int]]] = {}
    for pid, start, stop in zip(
        listings["product_id"].tolist(),
        listings["listed_t"].tolist(),
        listings["delisted_t"].tolist(),
        strict=True,
    ):
        spells.setdefault(pid, []).append((start, end if stop < 0 else stop))
    return spells


def _listed_at(spells: Sequence[tuple[int, int]], hour: int) -> bool:
    return any(start <= hour < stop for start, stop in spells)


def _contested_hours(mine: list[tuple[int, int]], theirs: list[list[tuple[int, int]]]) -> int:
    """Hours of my spells in which at least one other merchant also listed the product."""
    hours = 0
    for start, stop in mine:
        covered: list[tuple[int, int]] = []
        for spells in theirs:
            covered += [(max(start, a), min(stop, b)) for a, b in spells if a < stop and b > start]
        covered.sort()
        last = start
        for a, b in covered:
            a = max(a, last)
            if b > a:
                hours += b - a
                last = b
    return hours


def listing_spells(arena_dir: Path) -> dict[str, dict[str, list[tuple[int, int]]]]:
    """merchant → product id → the hours [listed, delisted) of each of its listing spells."""
    manifest = read_arena(arena_dir)
    found = {}
    for entry in manifest.merchants:
        record = load_run_record(manifest.merchant_dir(arena_dir, entry.id))
        found[entry.id] = _spells(record, record.run.scenario_model().clock.hours)
    return found


def contested_products(spells: Mapping[str, Mapping[str, list[tuple[int, int]]]]) -> list[str]:
    """Products listed by two or more merchants at the same hour at some time (sorted)."""
    listed = set().union(*(set(mine) for mine in spells.values()))
    return sorted(
        pid
        for pid in listed
        if any(
            _contested_hours(spells[a][pid], [spells[b][pid]])
            for a, b in itertools.combinations(spells, 2)
            if pid in spells[a] and pid in spells[b]
        )
    )


def arena_analysis(arena_dir: Path) -> dict[str, Any]:
    """Every number of one market's report (JSON-able)."""
    manifest = read_arena(arena_dir)
    merchants = _merchants(arena_dir, manifest)
    scenario = merchants[0].record.run.scenario_model()
    end = scenario.clock.hours
    spells = {m.merchant: _spells(m.record, end) for m in merchants}
    orders_total = sum(m.metrics["orders"] for m in merchants) or 1
    gmv_total = sum(m.metrics["gmv"] for m in merchants) or 1.0
    products_of = {m.merchant: set(spells[m.merchant]) for m in merchants}
    contested = contested_products(spells)
    months = max(1, math.ceil(scenario.clock.days / DAYS_PER_MONTH))
    per_merchant: dict[str, Any] = {}
    for m in merchants:
        mine = spells[m.merchant]
        others = [spells[o.merchant] for o in merchants if o.merchant != m.merchant]
        listed_hours = sum(stop - start for runs in mine.values() for start, stop in runs)
        shared_hours = sum(
            _contested_hours(runs, [o[pid] for o in others if pid in o])
            for pid, runs in mine.items()
        )
        per_merchant[m.merchant] = {
            "agent": m.agent,
            "final_net_assets": m.metrics["final_net_assets"],
            "orders": m.metrics["orders"],
            "gmv": m.metrics["gmv"],
            "order_share": m.metrics["orders"] / orders_total,
            "gmv_share": m.metrics["gmv"] / gmv_total,
            "products_listed": len(mine),
            "contested_products": len(set(mine) & set(contested)),
            "contested_listing_share": shared_hours / listed_hours if listed_hours else None,
            "markups": _markups(m.record, mine, others, months),
            "avg_store_rating": m.metrics["avg_store_rating"],
            "final_rating": float(m.record.daily["rating"][-1]) if len(m.record.daily) else None,
            "closed": bool(m.record.run.closed),
        }
    ranking = sorted(per_merchant, key=lambda k: -per_merchant[k]["final_net_assets"])
    return {
        "arena": arena_dir.name,
        "scenario": manifest.scenario,
        "seed": manifest.seed,
        "seller_substitution": manifest.seller_substitution,
        "state_hash": manifest.state_hash,
        "merchants": per_merchant,
        "ranking": ranking,
        "contested_products": len(contested),
        "products_listed": len(set().union(*products_of.values())),
    }


def _markups(
    record: RunRecord,
    mine: Mapping[str, list[tuple[int, int]]],
    others: list[dict[str, list[tuple[int, int]]]],
    months: int,
) -> dict[str, list[float | None]]:
    """Mean markup (sale price / procurement cost − 1) of procured orders per 30-day period,
    on products another merchant listed at the order's hour (contested) and on the others."""
    orders = record.orders
    sums = {"contested": np.zeros(months), "uncontested": np.zeros(months)}
    counts = {"contested": np.zeros(months), "uncontested": np.zeros(months)}
    for pid, price, cost, placed in zip(
        orders["product_id"].tolist(),
        orders["sale_price"].tolist(),
        orders["cost"].tolist(),
        orders["placed_t"].tolist(),
        strict=True,
    ):
        if cost <= 0:  # never procured (stockout, insufficient balance)
            continue
        kind = (
            "contested"
            if any(pid in other and _listed_at(other[pid], placed) for other in others)
            else "uncontested"
        )
        month = min(placed // (HOURS_PER_DAY * DAYS_PER_MONTH), months - 1)
        sums[kind][month] += price / cost - 1.0
        counts[kind][month] += 1
    return {
        kind: [float(s / c) if c else None for s, c in zip(sums[kind], counts[kind], strict=True)]
        for kind in sums
    }


# --- across seeds --------------------------------------------------------------------------------
def _ranks(values: Sequence[float]) -> list[float]:
    """Rank 1 for the highest value; ties share the mean of their ranks."""
    order = sorted(range(len(values)), key=lambda i: -values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def kendall_tau(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Kendall's τ-b of two rankings of the same items (None if either is all ties)."""
    concordant = discordant = ties_a = ties_b = 0
    for i, j in itertools.combinations(range(len(a)), 2):
        da, db = np.sign(a[i] - a[j]), np.sign(b[i] - b[j])
        if da == 0 and db == 0:
            continue
        if da == 0:
            ties_a += 1
        elif db == 0:
            ties_b += 1
        elif da == db:
            concordant += 1
        else:
            discordant += 1
    n = concordant + discordant
    denominator = math.sqrt((n + ties_a) * (n + ties_b))
    return (concordant - discordant) / denominator if denominator else None


def _t_interval(differences: np.ndarray) -> tuple[float, float] | None:
    """The 95 % t interval of the mean of paired differences (None with fewer than 2)."""
    from scipy.stats import t as student

    n = len(differences)
    if n < 2:
        return None
    half = float(student.ppf(0.975, n - 1) * differences.std(ddof=1) / math.sqrt(n))
    mean = float(differences.mean())
    return mean - half, mean + half


def seeds_analysis(root: Path, seeds: Sequence[int]) -> dict[str, Any]:
    """Mean rank, rank stability and paired intervals over the arenas `root/seed-N`."""
    return markets_analysis([root / f"seed-{seed}" for seed in seeds], seeds)


def markets_analysis(arena_dirs: Sequence[Path], seeds: Sequence[int | None]) -> dict[str, Any]:
    """Mean rank, rank stability (Kendall τ) and paired intervals of net assets over the
    arenas of the same merchants on several seeds (one arena directory per seed; `None` for a
    sealed market's). Pairs are merchants of one market, never markets matched by seed."""
    markets = [arena_analysis(arena_dir) for arena_dir in arena_dirs]
    ids = list(markets[0]["merchants"])
    assets = np.array(
        [[m["merchants"][k]["final_net_assets"] for k in ids] for m in markets], dtype=np.float64
    )
    ranks = np.array([_ranks(list(row)) for row in assets])
    taus = [
        tau
        for x, y in itertools.combinations(range(len(seeds)), 2)
        if (tau := kendall_tau(list(ranks[x]), list(ranks[y]))) is not None
    ]
    paired = []
    for i, j in itertools.combinations(range(len(ids)), 2):
        differences = assets[:, i] - assets[:, j]
        interval = _t_interval(differences)
        paired.append({
            "merchants": [ids[i], ids[j]],
            "mean_difference": float(differences.mean()),
            "interval_95": None if interval is None else list(interval),
            "wins": int((differences > 0).sum()),
            "seeds": len(seeds),
        })  # fmt: skip
    return {
        "seeds": list(seeds),
        "merchants": {
            k: {
                "mean_net_assets": float(assets[:, n].mean()),
                "std_net_assets": float(assets[:, n].std(ddof=1)) if len(seeds) > 1 else None,
                "mean_rank": float(ranks[:, n].mean()),
                "mean_order_share": float(
                    np.mean([m["merchants"][k]["order_share"] for m in markets])
                ),
                "mean_gmv_share": float(np.mean([m["merchants"][k]["gmv_share"] for m in markets])),
            }
            for n, k in enumerate(ids)
        },
        "kendall_tau_mean": float(np.mean(taus)) if taus else None,
        "kendall_tau_pairs": len(taus),
        "paired": paired,
        "markets": [
            {
                "seed": seed,
                "ranking": m["ranking"],
                "contested_products": m["contested_products"],
                "products_listed": m["products_listed"],
                "state_hash": m["state_hash"],
            }
            for seed, m in zip(seeds, markets, strict=True)
        ],  # fmt: skip
        "contested_products_mean": float(np.mean([m["contested_products"] for m in markets])),
        "products_listed_mean": float(np.mean([m["products_listed"] for m in markets])),
    }


# --- the reports ---------------------------------------------------------------------------------
def _fmt(value: float | None, digits: int = 2) -> str | None:
    return None if value is None else f"{value:.{digits}f}"


def render_arena_report(
    analysis: Mapping[str, Any], merchants: Sequence[Any], figures: Sequence[Path]
) -> str:
    per = analysis["merchants"]
    headers = ["Merchant", "Agent", *(c.header for c in TABLE1_COLUMNS)]
    table1 = [[m.merchant, m.agent, *table1_cells(in_paper_units(m.metrics))] for m in merchants]
    shares = [
        [k, v["orders"], percent(v["order_share"]), f"{v['gmv']:.2f}", percent(v["gmv_share"]),
         v["products_listed"], v["contested_products"], percent(v["contested_listing_share"])]
        for k, v in per.items()
    ]  # fmt: skip
    months = len(next(iter(per.values()))["markups"]["contested"])
    markup_rows = []
    for k, v in per.items():
        for kind in ("contested", "uncontested"):
            cells = [percent(x) for x in v["markups"][kind]]
            markup_rows.append([k, kind, *cells])
    rating_rows = [
        [k, _fmt(v["avg_store_rating"]), _fmt(v["final_rating"]), "yes" if v["closed"] else "no"]
        for k, v in per.items()
    ]
    seed = "sealed" if analysis["seed"] is None else analysis["seed"]
    parts = [
        f"# Arena report: {analysis['arena']}",
        f"Scenario `{analysis['scenario']}`, seed {seed}, seller substitution "
        f"β = {analysis['seller_substitution']}; ranking by final net assets: "
        + ", ".join(f"{n + 1}. {k}" for n, k in enumerate(analysis["ranking"]))
        + f". Market state hash `{analysis['state_hash']}`.",
        "## Table 1, per merchant",
        markdown_table(headers, table1),
        "## Shares of the market",
        f"{analysis['products_listed']} products were listed, {analysis['contested_products']} "
        "of them by two or more merchants at once (contested).",
        markdown_table(
            [
                "merchant",
                "orders",
                "order share",
                "GMV (RMB)",
                "GMV share",
                "products listed",
                "contested",
                "listing hours contested",
            ],
            shares,
        ),  # fmt: skip
        "## Markups on contested and uncontested products",
        "Mean markup (sale price / procurement cost − 1) of procured orders, by 30-day period; "
        "an order is contested when another merchant listed its product at that hour.",
        markdown_table(
            ["merchant", "products", *(f"m{n + 1}" for n in range(months))], markup_rows
        ),
        "## Rating race",
        markdown_table(["merchant", "mean rating", "final rating", "closed"], rating_rows),
    ]
    parts += [f"![{path.stem}]({path.name})" for path in figures]
    return "\n\n".join(parts) + "\n"


def _figures(out: Path, merchants: Sequence[_Merchant], analysis: Mapping[str, Any]) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    fig, ax = plt.subplots(figsize=(11, 4.5))
    for m in merchants:
        series = m.record.timeseries
        ax.plot(series["t"] / HOURS_PER_DAY, rmb(series["net_assets"]), label=m.merchant)
    ax.set_title("Net assets of each merchant")
    ax.set_xlabel("day")
    ax.set_ylabel("RMB")
    ax.grid(True, alpha=0.3)
    ax.legend()
    paths.append(_save(fig, out / "arena_net_assets.png"))
    fig, ax = plt.subplots(figsize=(11, 4.5))
    for m in merchants:
        ax.plot(m.record.daily["day"] + 0.5, m.record.daily["rating"], label=m.merchant)
    ax.set_title("Rating race: each merchant's published rating")
    ax.set_xlabel("day")
    ax.set_ylabel("rating (1–5)")
    ax.grid(True, alpha=0.3)
    ax.legend()
    paths.append(_save(fig, out / "arena_rating_race.png"))
    fig, ax = plt.subplots(figsize=(11, 4.5))
    for n, (k, v) in enumerate(analysis["merchants"].items()):
        colour = f"C{n}"
        for kind, style in (("contested", "-"), ("uncontested", ":")):
            values = [np.nan if x is None else 100 * x for x in v["markups"][kind]]
            ax.plot(range(1, len(values) + 1), values, style, color=colour, marker="o",
                    label=f"{k} {kind}")  # fmt: skip
    ax.set_title("Markups: contested (solid) and uncontested (dotted) products")
    ax.set_xlabel("30-day period")
    ax.set_ylabel("mean markup (%)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    paths.append(_save(fig, out / "arena_markups.png"))
    return paths


def _save(fig: Any, path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_arena_report(arena_dir: Path, out: Path | None = None) -> Path:
    """report.md, market_metrics.json and the pictures of one finished arena, in `out`
    (default: the arena directory)."""
    out = arena_dir if out is None else out
    out.mkdir(parents=True, exist_ok=True)
    analysis = arena_analysis(arena_dir)
    merchants = _merchants(arena_dir, read_arena(arena_dir))
    figures = _figures(out, merchants, analysis)
    (out / ANALYSIS_FILE).write_text(json.dumps(analysis, indent=2) + "\n")
    path = out / REPORT_FILE
    path.write_text(render_arena_report(analysis, merchants, figures))
    return path


def render_markets_sections(data: Mapping[str, Any], heading: str = "##") -> list[str]:
    """The across-seed tables of `markets_analysis` as Markdown blocks: per merchant mean net
    assets, rank and shares; rank stability; paired differences."""
    rows = [
        [k, f"{v['mean_net_assets']:.2f}", _fmt(v["std_net_assets"]), f"{v['mean_rank']:.2f}",
         percent(v["mean_order_share"]), percent(v.get("mean_gmv_share"))]
        for k, v in sorted(data["merchants"].items(), key=lambda kv: kv[1]["mean_rank"])
    ]  # fmt: skip
    paired = [
        [f"{p['merchants'][0]} − {p['merchants'][1]}", f"{p['mean_difference']:.2f}",
         None if p["interval_95"] is None else "[{:.2f}, {:.2f}]".format(*p["interval_95"]),
         f"{p['wins']}/{p['seeds']}"]
        for p in data["paired"]
    ]  # fmt: skip
    tau = data["kendall_tau_mean"]
    return [
        markdown_table(
            [
                "merchant",
                "mean net assets",
                "sd",
                "mean rank",
                "mean order share",
                "mean GMV share",
            ],
            rows,
        ),  # fmt: skip
        f"Rank stability: mean Kendall τ between the rankings of two seeds "
        f"{'–' if tau is None else f'{tau:.2f}'} ({data['kendall_tau_pairs']} pairs; 1 = the "
        "same order every time).",
        f"{heading} Paired differences of final net assets (common random numbers)",
        "Mean difference over the seeds with a 95 % t interval (Student's t over the paired "
        "differences; none from a single seed).",
        markdown_table(["pair", "mean difference (RMB)", "95 % interval", "first ahead"], paired),
    ]


def write_seeds_report(root: Path, seeds: Sequence[int]) -> Path:
    """report.md and seeds_metrics.json over the arenas of several seeds."""
    data = seeds_analysis(root, seeds)
    (root / SEEDS_FILE).write_text(json.dumps(data, indent=2) + "\n")
    text = "\n\n".join([
        f"# Arenas over seeds {', '.join(map(str, seeds))}",
        *render_markets_sections(data),
        *(f"- seed {s}: [report](seed-{s}/{REPORT_FILE})" for s in seeds),
    ])  # fmt: skip
    path = root / REPORT_FILE
    path.write_text(text + "\n")
    return path

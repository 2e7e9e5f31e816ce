"""The arenas of a sweep in its report (docs/sweeps.md): for each arena configuration (its
merchants × scenario) over its seeds, Table 1 per merchant, the shares of orders and GMV, mean
rank, rank stability (Kendall τ) and paired intervals of net assets.

The across-seed numbers are the arena report's (`report/arena.py`: `markets_analysis`, one
definition with `merchantbench arena --seeds … --report`); Table 1 and the provenance are the
sweep report's (`sweeps.analysis.table1`, `record.comparable`). Merchants of a market are their
own setting there (never pooled with single stores), so an arena's numbers pool only its seeds.
A sealed arena's markets are known by their slots (`sealed1` …), never by a seed: the paired
differences compare merchants within each market, never markets across configurations.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from merchantbench.record.arena import ArenaError, read_arena
from merchantbench.record.comparable import (
    NOT_CHECKED,
    PooledRun,
    pool_runs,
    provenance,
    read_finished,
)
from merchantbench.record.verification import RunCheck
from merchantbench.report.arena import markets_analysis, render_markets_sections
from merchantbench.sweeps.analysis import table1
from merchantbench.sweeps.index import record_rows


def _merchant_runs(arena_dir: Path) -> tuple[list[PooledRun], str | None]:
    """Each merchant's finished run record of an arena, checked (`replay.evidence.check_market`:
    the market replayed whole, or found in the check cache), and why the market is left out
    (None: counted). A market counts only when every merchant's record verifies."""
    from merchantbench.replay.evidence import check_market

    try:
        arena = read_arena(arena_dir)
    except ArenaError as exc:
        return [], f"its arena.json cannot be read ({exc})"
    checks = check_market(arena_dir)
    runs = [
        read_finished(arena.merchant_dir(arena_dir, e.id), e.id,
                      _given(checks.get(e.id, NOT_CHECKED)))
        for e in arena.merchants
    ]  # fmt: skip
    if any(run is None for run in runs):
        return [], "a merchant's record cannot be read as a finished run"
    found = [r for r in runs if r is not None]
    failed = [f"{r.label}: {r.check.status}: {r.check.detail}" for r in found if not r.verified]
    return (found, None) if not failed else ([], "; ".join(failed))


def _given(check: RunCheck) -> Callable[[Path], RunCheck]:
    """A check that answers what was found already (the market was checked whole)."""
    return lambda _: check


def sweep_arenas(
    sweep_dir: Path, left_out: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """The arena groups of the sweep in `sweep_dir` (its finished arenas whose merchants'
    records verify); each market left out is added to `left_out` with the reason."""
    rows = [r for r in record_rows(sweep_dir) if r.get("arena") and r["status"] == "done"]
    return arena_groups(sweep_dir, rows, left_out)


def arena_groups(
    sweep_dir: Path,
    rows: Sequence[Mapping[str, Any]],
    left_out: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Every number of the arena sections, from the index rows of finished arenas: one group
    per arena configuration and setting, in the index's order."""
    cells: dict[str, dict[Path, int | None]] = {}  # arena directory → its seed (None: sealed)
    for row in rows:
        seed = None if row["seed"] is None else int(row["seed"])
        cells.setdefault(str(row["label"]), {})[sweep_dir / row["run_dir"]] = seed
    groups = []
    for label, seed_of in cells.items():
        runs = []
        for arena_dir, seed in seed_of.items():
            counted, why = _merchant_runs(arena_dir)
            runs += counted
            if why is not None and left_out is not None:
                where = f"{label}/s{seed}" if seed is not None else f"{label}/{arena_dir.name}"
                reason = f"{arena_dir.relative_to(sweep_dir)}: {why}"
                left_out.append({"run": where, "status": "left out", "reason": reason})
        for setting, pools in pool_runs(runs).items():
            arena_dirs = {run.run_dir.parent.parent for pool in pools for run in pool.runs}
            ordered = sorted(
                (p for p in seed_of if p in arena_dirs), key=lambda p: _order(p, seed_of)
            )
            seeds = [seed_of[path] for path in ordered]
            merchants = {
                pool.label: [{"agent": pool.identity.agent, **run.metrics} for run in pool.runs]
                for pool in pools
            }
            groups.append({
                "arena": label,
                "setting": setting.label,
                "provenance": provenance(setting, pools),
                "pools": {pool.label: pool.what() for pool in pools},
                "table1": table1(merchants, setting.paper_like),
                "net_assets_by_configuration": {
                    m: [r["final_net_assets"] for r in rs] for m, rs in merchants.items()
                },
                "markets": markets_analysis(ordered, seeds),
                "arena_dirs": [str(path.relative_to(sweep_dir)) for path in ordered],
            })  # fmt: skip
    return groups


def _order(arena_dir: Path, seed_of: Mapping[Path, int | None]) -> tuple[int, int | str]:
    """Public markets by seed, sealed ones by slot number (`sealed2` before `sealed10`)."""
    seed = seed_of[arena_dir]
    if seed is not None:
        return 0, seed
    digits = arena_dir.name.removeprefix("sealed")
    return 1, int(digits) if digits.isdigit() else arena_dir.name


def _market_name(seed: int | None, path: str) -> str:
    return f"sealed market {Path(path).name}" if seed is None else f"seed {seed}"


def arena_figure_name(index: int) -> str:
    return f"arena_net_assets-{index + 1}.png"


def arena_section(group: Mapping[str, Any], provenance_block: str, table: str, figure: str) -> str:
    """One arena configuration's section of the sweep report (Markdown), around its provenance
    and Table 1 blocks as the sweep report renders them."""
    markets = group["markets"]
    seeds = markets["seeds"]
    sealed = sum(seed is None for seed in seeds)
    count = (
        f"{len(seeds)} sealed market{'s' if len(seeds) != 1 else ''} (each on its own secret "
        "seed, docs/sealed.md)"
        if sealed == len(seeds)
        else f"{len(seeds)} seed{'s' if len(seeds) != 1 else ''}"
    )
    table = table.replace("### Table 1 per configuration", "### Table 1 per merchant", 1)
    per_seed = "\n".join(
        f"- {_market_name(m['seed'], path)} (`{path}`): ranking "
        + ", ".join(f"{n + 1}. {k}" for n, k in enumerate(m["ranking"]))
        + f"; {m['contested_products']} of {m['products_listed']} listed products contested"
        for m, path in zip(markets["markets"], group["arena_dirs"], strict=True)
    )
    return "\n\n".join([
        f"## Arena {group['arena']}: {group['setting']}",
        f"One market of {len(group['pools'])} merchants on {count}; each merchant's row pools "
        f"its runs over the {'markets' if sealed else 'seeds'} (docs/arena.md).",
        provenance_block,
        table,
        "### Shares, rank and rank stability across seeds",
        *render_markets_sections(markets, "###"),
        f"Contested products (listed by two or more merchants at once): "
        f"{markets['contested_products_mean']:.1f} of {markets['products_listed_mean']:.1f} "
        "listed products per market on average.",
        per_seed,
        f"### Final net assets per merchant\n\n![final net assets per merchant]({figure})",
    ])  # fmt: skip

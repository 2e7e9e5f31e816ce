"""`build_site`: run records in, a static leaderboard site out (see the package docstring).

The site is built in a temporary folder beside `out` and moved into place when complete, so an
interrupted build never leaves half a site, and a folder that is not a site made by this
command is never overwritten.
"""

from __future__ import annotations

import datetime
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from merchantbench.site.collect import SiteRun, Skipped, collect_runs
from merchantbench.site.groups import Entry, Group, rank_groups
from merchantbench.site.render import environment, number, write_assets, write_page, write_trace
from merchantbench.site.verification import Verification, verify_run

MARKER = ".merchantbench-site"  # a folder with it was made by this command (may be replaced)
RUNS_DIR = "runs"
FIGURES_DIR = "figures"
RANKING_COLUMNS = (
    "#", "configuration", "runs", "seeds", "verified", "sealed or public", "net assets (RMB)",
    "std", "orders", "SWR", "cost per run", "net assets per unit of spend", "run pages",
)  # fmt: skip
RUN_METRICS = (
    "final_net_assets", "net_profit", "gmv", "net_profit_margin", "orders", "swr", "tool_calls",
    "fines", "avg_store_rating", "anomaly_rate", "avg_active_listings",
)  # fmt: skip
_MONEY = frozenset({"final_net_assets", "net_profit", "gmv", "fines"})
_FIGURE_TITLES = {
    "net_assets": "Net assets and cash accounts",
    "rating": "Store rating and stars",
    "active_listings": "Active listings",
    "weekly_orders": "Orders per week by outcome",
    "monthly_effective_windows": "Effective windows per month",
}

Progress = Callable[[str], None]


class SiteError(ValueError):
    """The site cannot be made (one line: a bad input, an output folder not ours)."""


@dataclass(frozen=True)
class SiteSummary:
    """What was written: the folder, the runs and groups on it, how many verified."""

    out: Path
    runs: int
    groups: int
    verified: int
    skipped: int


def _mark(v: Verification) -> tuple[str, str]:
    return {"verified": ("verified", "verified"), "diverged": ("diverged", "diverged")}.get(
        v.status, ("not verified", "unverified")
    )


def _cost(value: float | None, uses_model: bool) -> str:
    if not uses_model:
        return "no model"
    return "unknown" if value is None else f"{value:,.4f}"


def _metric(key: str, value: Any) -> str:
    if key in _MONEY:
        return number(value, 2)
    if key in ("orders", "tool_calls"):
        return number(value, 0)
    return number(value, 3)


def _entry_row(place: int, entry: Entry, verified: dict[str, Verification]) -> dict[str, Any]:
    runs = entry.runs
    ok = sum(verified[r.slug].ok for r in runs)
    diverged = any(verified[r.slug].status == "diverged" for r in runs)
    per_spend = entry.assets_per_spend
    if not entry.uses_model:
        spend = "no model spend"
    elif entry.cost_per_run is None:
        spend = "unknown (a price is missing)"
    else:
        spend = "—" if per_spend is None else f"{per_spend:,.2f}"
    return {
        "place": place, "name": entry.name, "runs": len(runs),
        "seeds": ", ".join(entry.seeds),
        "verified": f"{ok}/{len(runs)} verified" + (" · diverged" if diverged else ""),
        "verified_class": "diverged" if diverged else "verified" if ok == len(runs) else "unverified",  # noqa: E501
        "sealed": entry.sealed,
        "net_assets": number(entry.mean("final_net_assets")),
        "std": number(entry.std("final_net_assets")),
        "orders": number(entry.mean("orders"), 1),
        "swr": number(entry.mean("swr"), 3),
        "cost": _cost(entry.cost_per_run, entry.uses_model),
        "per_spend": spend,
        "links": [{"href": f"{RUNS_DIR}/{r.slug}/index.html", "text": r.seed_text} for r in runs],
    }  # fmt: skip


def _run_facts(run: SiteRun) -> list[tuple[str, str]]:
    m = run.manifest
    usage = m.llm_usage or {}
    facts = [
        ("from", run.label),
        ("agent", m.agent.name + (f", model {run.model}" if run.model else "")),
        ("scenario", f"{m.scenario.name} {m.scenario.version}, hash {m.scenario.hash}"),
        ("days", str(run.days)),
        ("market", f"{m.market.source}, {m.market.n_products:,} products"),
        ("seed", run.seed_text + (" (sealed: the commitment, not the seed)" if run.sealed else "")),
        ("code version", f"merchantbench {m.package_version}, source "
                         f"{(m.source_sha256 or '?')[:12]}, commit {(m.git_commit or '?')[:10]}"),
        ("started", m.started),
        ("finished", m.finished or "—"),
        ("status", m.ended or "running"),
        ("final state hash", (m.state_hash or "—")[:16]),
    ]  # fmt: skip
    if run.uses_model:
        facts.append(("model cost", _cost(run.cost, True)))
        facts.append(("model calls", number(usage.get("calls"), 0)))
        facts.append(("tokens", number(usage.get("tokens"), 0)))
    return facts


def _figures(run: SiteRun, page_dir: Path) -> list[dict[str, str]]:
    """The run's figures (report/plots.py, SVG), drawn here; none for an unfinished record."""
    if not run.finished:
        return []
    from merchantbench.metrics import RunRecordError, load_run_record
    from merchantbench.report.plots import write_plots

    try:
        paths = write_plots(load_run_record(run.path), run.metrics, page_dir / FIGURES_DIR)
    except (RunRecordError, OSError, ValueError, KeyError):
        return []
    return [{"src": f"{FIGURES_DIR}/{p.name}", "alt": _FIGURE_TITLES.get(p.stem, p.stem)}
            for p in paths]  # fmt: skip


def _check_out(out: Path) -> None:
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / MARKER).exists())):
        raise SiteError(f"{out}: exists and is not a site made by `merchantbench site`; "
                        "choose an empty or new folder")  # fmt: skip


def build_site(
    inputs: Sequence[Path],
    out: Path,
    *,
    verify: bool = True,
    progress: Progress = lambda _: None,
    key: Callable[[SiteRun], tuple[str, ...]] | None = None,
) -> SiteSummary:
    """Write the static site of the runs under `inputs` into `out`.

    Raises:
        SiteError: an input holds no run, or `out` is a folder this command did not make.
    """
    from merchantbench.site.collect import SiteInputError

    _check_out(out)
    try:
        runs, skipped = collect_runs(list(inputs))
    except SiteInputError as exc:
        raise SiteError(str(exc)) from None
    progress(f"{len(runs)} runs found" + (f", {len(skipped)} unreadable" if skipped else ""))
    verified: dict[str, Verification] = {}
    for i, run in enumerate(runs, 1):
        progress(f"checking {i}/{len(runs)}: {run.label}")
        verified[run.slug] = verify_run(run, replay=verify)  # without: the check cache only
    ranked = [run for run in runs if not run.finished or verified[run.slug].ok]
    kept = {run.slug for run in ranked}
    skipped = skipped + [Skipped(run.label, f"left out of the ranking: {verified[run.slug].detail}")
                         for run in runs if run.slug not in kept]  # fmt: skip
    groups = rank_groups(ranked) if key is None else rank_groups(ranked, key)
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        _write(work, runs, skipped, groups, verified, progress)
        (work / MARKER).write_text("made by merchantbench site\n")
        if out.exists():
            shutil.rmtree(out)
        work.rename(out)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return SiteSummary(out, len(runs), len(groups), sum(v.ok for v in verified.values()),
                       len(skipped))  # fmt: skip


def _write(
    out: Path,
    runs: list[SiteRun],
    skipped: list[Skipped],
    groups: list[Group],
    verified: dict[str, Verification],
    progress: Progress,
) -> None:
    from merchantbench import __version__

    env = environment()
    made = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    common = {"version": __version__, "made": made}
    write_assets(out)
    for i, run in enumerate(runs, 1):
        progress(f"run page {i}/{len(runs)}: {run.label}")
        page_dir = out / RUNS_DIR / run.slug
        page_dir.mkdir(parents=True, exist_ok=True)
        text, css = _mark(verified[run.slug])
        windows = write_trace(run.path, page_dir)
        page = {
            "label": run.label, "facts": _run_facts(run), "verified": text,
            "verified_class": css, "verified_detail": verified[run.slug].detail,
            "metrics": [(k.replace("_", " "), _metric(k, run.metrics.get(k)))
                        for k in RUN_METRICS] if run.finished else [],
            "figures": _figures(run, page_dir),
        }  # fmt: skip
        write_page(env, "run.html", page_dir / "index.html", root="../../", run=page,
                   windows=windows, **common)  # fmt: skip
    group_views = []
    for group in groups:
        group_views.append({
            "provenance": group.provenance(verified),
            "rows": [_entry_row(place, e, verified) for place, e in enumerate(group.entries, 1)],
            "unfinished": [{"href": f"{RUNS_DIR}/{r.slug}/index.html", "text": r.label}
                           for r in group.unfinished],
        })  # fmt: skip
    run_rows = []
    for run in runs:
        text, css = _mark(verified[run.slug])
        run_rows.append({
            "href": f"{RUNS_DIR}/{run.slug}/index.html", "label": run.label,
            "agent": run.manifest.agent.name + (f" · {run.model}" if run.model else ""),
            "scenario": run.manifest.scenario.name, "days": run.days, "seed": run.seed_text,
            "status": run.manifest.ended or "running", "verified": text, "verified_class": css,
            "verified_detail": verified[run.slug].detail,
            "net_assets": number(run.metrics.get("final_net_assets")),
            "cost": _cost(run.cost, run.uses_model),
        })  # fmt: skip
    write_page(env, "index.html", out / "index.html", root="", groups=group_views,
               columns=RANKING_COLUMNS, runs=run_rows, skipped=skipped, **common)  # fmt: skip

"""The report of a market: one report for a run and for an arena, since a run is the market of
one merchant. Every merchant gets its Table-1 row beside the paper's rows, its money, decision
windows, coherence, failure modes, takeovers and figures; a market of several merchants adds,
above them, the market's own sections (shares, contested products, markups, rating race:
`report.arena` computes them). With one merchant the report is the run's report.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from merchantbench.metrics.aggregate import (
    RunResult,
    aggregate_runs,
    group_by_agent,
    paired_comparison,
)
from merchantbench.metrics.record import RunRecord, load_run_record
from merchantbench.metrics.run_metrics import metrics_of, write_metrics
from merchantbench.record.arena import ARENA_FILE, ArenaError, read_arena
from merchantbench.record.comparable import paper_setting
from merchantbench.report.counterfactual import (
    COUNTERFACTUAL_FIGURE,
    counterfactual_section,
    read_counterfactual,
)
from merchantbench.report.paper import (
    PAPER_LABEL,
    TABLE1_COLUMNS,
    format_value,
    in_paper_units,
    load_paper_table,
    table1_cells,
)
from merchantbench.report.table import REPORT_FILE as REPORT_FILE
from merchantbench.report.table import markdown_table as markdown_table
from merchantbench.report.table import percent as percent

FIGURES_DIR = "figures"  # a market report: each merchant's figures in FIGURES_DIR/<id>/
QUARTER_HEADERS = ("quarter", "months", "new products", "mean", "median")
METADATA_LEFT_OUT = frozenset({"scenario_config", "final_accounts"})  # shown elsewhere


def _money(value: float | None) -> str | None:
    return None if value is None else f"{value:.2f}"


def run_metadata(run: Mapping[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    """Scalar fields of `run.json`, nested mappings flattened (`agent.settings.model`).

    The full scenario dump (`scenario_config`) is left out: `scenario` names and hashes it.
    """
    rows: list[tuple[str, str]] = []
    for key, value in run.items():
        if key in METADATA_LEFT_OUT:
            continue
        if isinstance(value, Mapping):
            rows += run_metadata(value, prefix=f"{prefix}{key}.")
        elif value is None or isinstance(value, str | int | float | bool):
            rows.append((f"{prefix}{key}", str(value)))
    return rows


def table1_section(
    rows: Sequence[tuple[str, Mapping[str, Any]]],
    paper_like: bool = True,
    heading: str = "## Table 1",
    first: str = "Framework",
) -> str:
    """The Table-1 row of each merchant (label, metrics) above the paper's rows, with the
    paper's units; outside the paper's setting (`record.comparable.paper_setting`) with a caveat
    that they do not compare."""
    headers = [
        first,
        "Model" if first == "Framework" else "Agent",
        *(c.header for c in TABLE1_COLUMNS),
    ]
    ours = [[label, str(m.get("agent", "")), *table1_cells(in_paper_units(m))] for label, m in rows]
    paper = [[r.framework, r.model, *table1_cells(r.values)] for r in load_paper_table()]
    caveat = "" if paper_like else (
        "⚠ Not comparable: this run is not in the paper's setting (365 days, RMB 2,000 balance "
        "+ 1,000 deposit, 50 listing slots), so its numbers do not compare with the paper's "
        "rows, shown for their shape only. "
    )  # fmt: skip
    return "\n\n".join([
        heading,
        markdown_table(headers, ours),
        caveat + f"Below: the {PAPER_LABEL}, not to the digit (paper's Table 1, means of three "
        "runs).",
        markdown_table(headers, paper),
    ])  # fmt: skip


def money_section(metrics: Mapping[str, Any]) -> str:
    """Final accounts, profit and orders by outcome."""
    accounts = metrics["final_accounts"]
    rows = [(name.replace("_", " "), f"{value:.2f}") for name, value in accounts.items()]
    rows += [
        ("initial net assets", f"{metrics['initial_net_assets']:.2f}"),
        ("net profit", f"{metrics['net_profit']:.2f}"),
        ("fines assessed", f"{metrics['fines']:.2f}"),
        ("fines collected", f"{metrics['fines_collected']:.2f}"),
        ("platform fees", f"{metrics['fees']:.2f}"),
    ]
    outcomes = [(k.replace("_", " "), v) for k, v in metrics["orders_by_outcome"].items()]
    outcomes.append(("late (any outcome)", metrics["late_orders"]))
    return "\n\n".join([
        "## Money (RMB, after draining)",
        markdown_table(["account or figure", "RMB"], rows),
        "## Orders by outcome",
        markdown_table(["outcome", "orders"], outcomes),
    ])  # fmt: skip


def windows_section(metrics: Mapping[str, Any]) -> str:
    """Window counts, SWR and the monthly effective-window rate."""
    idle = metrics["coherence"]["idle"]
    facts = [
        ("windows opened", metrics["windows"]),
        ("effective windows", metrics["effective_windows"]),
        ("effective-window rate", percent(metrics["effective_window_rate"])),
        ("SWR (worst rolling 30 days)", percent(metrics["swr"])),
        ("env tool calls (incl. end_of_step)", metrics["tool_calls"]),
        ("framework calls (not counted)", metrics["framework_calls"]),
        ("calls that returned an error", metrics["error_calls"]),
        ("windows closed by the harness", metrics["forced_end_of_step"]),
        ("longest idle streak (windows)", idle["longest_idle_streak"]),
        ("longest idle streak starts on day", idle["longest_idle_streak_start_day"]),
        ("abandonment day", idle["abandonment_day"]),
    ]
    rates = map(percent, metrics["monthly_effective_window_rate"])
    monthly = zip(metrics["months"], rates, strict=True)
    return "\n\n".join([
        "## Decision windows",
        markdown_table(["figure", "value"], facts),
        markdown_table(["month", "effective windows"], list(monthly)),
    ])  # fmt: skip


def _share_rows(coherence: Mapping[str, Any]) -> list[list[Any]]:
    return [
        [
            m["month"],
            m["calls"],
            percent(m["sourcing_share"]),
            percent(m["supplier_handling_share"]),
        ]
        for m in coherence["call_mix_by_month"]
    ]


def _drop_rows(drops: Mapping[str, Any]) -> list[list[Any]]:
    def rate(value: float | None) -> str | None:
        return None if value is None else f"{value:.2f}"

    return [
        ["days with a drop", drops["drop_days"]],
        ["days counted after a drop (drop day + 2)", drops["days_after_drop"]],
        ["adjust_price calls on those days", drops["adjust_price_calls_after_drop"]],
        ["adjust_price calls per day after a drop", rate(drops["calls_per_day_after_drop"])],
        ["adjust_price calls per day otherwise", rate(drops["baseline_calls_per_day"])],
        ["ratio", rate(drops["ratio_to_baseline"])],
    ]


def _hours(value: float | None) -> str | None:
    return None if value is None else f"{value:.0f} h"


def _quarter_rows(coherence: Mapping[str, Any]) -> list[list[Any]]:
    return [
        [
            q["quarter"],
            q["months"],
            q["new_products"],
            _money(q["mean_cost"]),
            _money(q["median_cost"]),
        ]
        for q in coherence["procurement_by_quarter"]
    ]


def _reaction_rows(react: Mapping[str, Any]) -> list[list[Any]]:
    rows = [
        [kind, percent(react[f"{kind}_rate"]), _hours(react[f"median_hours_to_{kind}"])]
        for kind in ("delist", "reprice", "replace")
    ]
    return rows + [
        ["any", percent(react["reacted_rate"]), _hours(react["median_hours_to_reaction"])]
    ]


def coherence_section(metrics: Mapping[str, Any]) -> str:
    """Call mix, procurement prices, adverse-outcome reactions, rating-drop repricing."""
    coherence = metrics["coherence"]
    react = coherence["adverse_reaction"]
    return "\n\n".join([
        "## Coherence",
        "### Sourcing vs supplier-handling calls by month",
        markdown_table(["month", "calls", "sourcing", "supplier handling"], _share_rows(coherence)),
        "### Procurement price of newly listed products (RMB)",
        markdown_table(QUARTER_HEADERS, _quarter_rows(coherence)),
        f"### Reaction to adverse outcomes ({react['listings_with_adverse']} listings hit)",
        markdown_table(["reaction", "share of listings", "median delay"], _reaction_rows(react)),
        "### Repricing after rating drops (≥ 0.05 below the 7-day maximum)",
        markdown_table(["figure", "value"], _drop_rows(coherence["rating_drop_repricing"])),
    ])  # fmt: skip


def _evidence(evidence: Mapping[str, Any]) -> str:
    """The scalar figures of a detector's evidence, `key value; …` (series left to metrics.json)."""

    def shown(value: Any) -> str:
        return f"{value:.3g}" if isinstance(value, float) else str(value)

    return "; ".join(f"{k.replace('_', ' ')} {shown(v)}" for k, v in evidence.items()
                     if v is None or isinstance(v, str | int | float))  # fmt: skip


def diagnosis_section(metrics: Mapping[str, Any]) -> str:
    """The failure-mode detectors (docs/diagnosis.md): flagged or not, onset day, evidence."""
    diagnosis = metrics.get("diagnosis")
    if not diagnosis:
        return "## Failure modes\n\nNot computed for these metrics (written by an older version)."
    rows = [[name.replace("_", " "), "**yes**" if d["flagged"] else "no", d["onset_day"],
             _evidence(d["evidence"])]
            for name, d in diagnosis.items() if name != "flagged"]  # fmt: skip
    flagged = ", ".join(n.replace("_", " ") for n in diagnosis["flagged"]) or "none"
    return "\n\n".join([
        "## Failure modes",
        f"Detectors of the paper's failure modes (docs/diagnosis.md); flagged: {flagged}.",
        markdown_table(["detector", "flagged", "onset day", "evidence"], rows),
    ])  # fmt: skip


def market_head(market: Mapping[str, Any]) -> list[str]:
    """The title of a market's report and its one-line summary (scenario, seed, β, ranking)."""
    seed = "sealed" if market["seed"] is None else market["seed"]
    ranking = ", ".join(f"{n + 1}. {k}" for n, k in enumerate(market["ranking"]))
    return [
        f"# Arena report: {market['arena']}",
        f"Scenario `{market['scenario']}`, seed {seed}, seller substitution "
        f"β = {market['seller_substitution']}; ranking by final net assets: {ranking}. "
        f"Market state hash `{market['state_hash']}`.",
    ]


def market_sections(market: Mapping[str, Any], figures: Sequence[Path]) -> list[str]:
    """Shares of the market, markups on contested and uncontested products, the rating race
    (from `report.arena.arena_analysis`), and the market's figures."""
    per = market["merchants"]
    shares = [
        [k, v["orders"], percent(v["order_share"]), f"{v['gmv']:.2f}", percent(v["gmv_share"]),
         v["products_listed"], v["contested_products"], percent(v["contested_listing_share"])]
        for k, v in per.items()
    ]  # fmt: skip
    months = len(next(iter(per.values()))["markups"]["contested"])
    markup_rows = [
        [k, kind, *(percent(x) for x in v["markups"][kind])]
        for k, v in per.items()
        for kind in ("contested", "uncontested")
    ]
    rating_rows = [
        [
            k,
            _money(v["avg_store_rating"]),
            _money(v["final_rating"]),
            "yes" if v["closed"] else "no",
        ]
        for k, v in per.items()
    ]
    share_headers = ["merchant", "orders", "order share", "GMV (RMB)", "GMV share",
                     "products listed", "contested", "listing hours contested"]  # fmt: skip
    return [
        "## Shares of the market",
        f"{market['products_listed']} products were listed, {market['contested_products']} "
        "of them by two or more merchants at once (contested).",
        markdown_table(share_headers, shares),
        "## Markups on contested and uncontested products",
        "Mean markup (sale price / procurement cost − 1) of procured orders, by 30-day period; "
        "an order is contested when another merchant listed its product at that hour.",
        markdown_table(
            ["merchant", "products", *(f"m{n + 1}" for n in range(months))], markup_rows
        ),
        "## Rating race",
        markdown_table(["merchant", "mean rating", "final rating", "closed"], rating_rows),
        *(f"![{path.stem}]({path.as_posix()})" for path in figures),
    ]


@dataclass(frozen=True)
class Merchant:
    """One merchant of the reported market: its id, its run record and metrics, and its
    figures (paths relative to the report)."""

    merchant: str
    record: RunRecord
    metrics: Mapping[str, Any]
    figures: Sequence[Path]


def _demoted(block: str) -> str:
    """A section one heading level down (a merchant's sections inside a market's report)."""
    return "\n".join(f"#{line}" if line.startswith("#") else line for line in block.split("\n"))


def merchant_sections(merchant: Merchant) -> list[str]:
    """What the report shows of each merchant below Table 1."""
    metrics, takeovers = merchant.metrics, read_counterfactual(merchant.record.path)
    images = [f"![{f.stem.replace('_', ' ')}]({f.as_posix()})" for f in merchant.figures]
    return [
        money_section(metrics),
        windows_section(metrics),
        coherence_section(metrics),
        diagnosis_section(metrics),
        *([] if takeovers is None else [counterfactual_section(takeovers)]),
        "## Figures",
        *images,
    ]


def _run_table(record: RunRecord) -> str:
    return markdown_table(["field", "value"], run_metadata(record.run.model_dump(mode="json")))


def render_report(
    merchants: Sequence[Merchant],
    market: Mapping[str, Any] | None = None,
    market_figures: Sequence[Path] = (),
) -> str:
    """The report of a market as Markdown. One merchant (no market analysis: its shares are
    whole and nothing is contested): the run's report. Several: the market's sections (`market`,
    from `report.arena.arena_analysis`, and its figures), then each merchant's sections under
    its own heading."""
    paper_like = all(paper_setting(m.record.run.scenario_config) for m in merchants)
    if market is None:
        (one,) = merchants
        seed = one.metrics["seed"] if one.metrics["seed"] is not None else "sealed"
        return "\n\n".join([
            f"# MerchantBench run: {one.metrics['agent']}, seed {seed}",
            "## Run",
            _run_table(one.record),
            table1_section([("this run", one.metrics)], paper_like),
            *merchant_sections(one),
        ]) + "\n"  # fmt: skip
    rows = [(m.merchant, m.metrics) for m in merchants]
    table1 = table1_section(rows, paper_like, "## Table 1, per merchant", "Merchant")
    parts = [*market_head(market), table1, *market_sections(market, market_figures)]
    for m in merchants:
        heading = f"## Merchant {m.merchant}"
        parts += [heading, _demoted("## Run"), _run_table(m.record)]
        parts += [_demoted(block) for block in merchant_sections(m)]
    return "\n\n".join(parts) + "\n"


def _write(
    merchants: Sequence[tuple[str, RunRecord, Mapping[str, Any]]],
    out_dir: Path,
    market: Mapping[str, Any] | None,
) -> Path:
    from merchantbench.report.plots import write_plots

    out_dir.mkdir(parents=True, exist_ok=True)
    reported = []
    for merchant, record, metrics in merchants:
        folder = out_dir if market is None else out_dir / FIGURES_DIR / merchant
        figures = write_plots(record, metrics, folder)
        takeovers = read_counterfactual(record.path)
        if takeovers is not None:
            from merchantbench.report.counterfactual import plot_counterfactual

            figures.append(plot_counterfactual(takeovers, folder / COUNTERFACTUAL_FIGURE))
        shown = [f.relative_to(out_dir) for f in figures]
        reported.append(Merchant(merchant, record, metrics, shown))
    market_figures: list[Path] = []
    if market is None:
        write_metrics(dict(merchants[0][2]), out_dir)
    else:
        from merchantbench.report.arena import ANALYSIS_FILE
        from merchantbench.report.plots import market_figures as draw

        (out_dir / ANALYSIS_FILE).write_text(json.dumps(market, indent=2) + "\n")
        records = [(m, r) for m, r, _ in merchants]
        market_figures = [f.relative_to(out_dir) for f in draw(out_dir, records, market)]
    path = out_dir / REPORT_FILE
    path.write_text(render_report(reported, market, market_figures), encoding="utf-8")
    return path


def write_run_report(record: RunRecord, metrics: Mapping[str, Any], out_dir: Path) -> Path:
    """Write a run's `report.md`, `metrics.json` and figures into `out_dir`; return the report."""
    return _write([("run", record, metrics)], out_dir, None)


def write_report(path: Path | str, out_dir: Path | str | None = None) -> Path:
    """Read a run directory or an arena directory and write its report (into that directory
    unless `out_dir`). A run's, or an arena's of one merchant (the same report): `report.md`,
    `metrics.json` and its figures. An arena's of several merchants:
    `report.md`, `market_metrics.json`, the market's figures and each merchant's (in a folder
    `figures/<merchant>/`); the records themselves are only read.

    Raises:
        RunRecordError: The directory is not a readable run record (nor an arena).
        ArenaError: An arena directory whose manifest cannot be read, or that has not finished.
    """
    path = Path(path)
    target = Path(out_dir) if out_dir is not None else path
    if not (path / ARENA_FILE).is_file():
        record = load_run_record(path)
        return write_run_report(record, metrics_of(record), target)
    from merchantbench.report.arena import arena_analysis

    manifest = read_arena(path)
    if manifest.ended != "completed":
        raise ArenaError(
            f"{path} has not finished (ended: {manifest.ended or 'still running'}); "
            "finish it with merchantbench arena --resume, then report"
        )
    merchants = []
    for entry in manifest.merchants:
        record = load_run_record(manifest.merchant_dir(path, entry.id))
        merchants.append((entry.id, record, metrics_of(record)))
    return _write(merchants, target, arena_analysis(path) if len(merchants) > 1 else None)


def _summary_rows(runs: Sequence[RunResult]) -> list[list[Any]]:
    summaries = aggregate_runs([run.metrics for run in runs])
    rows = []
    for column in TABLE1_COLUMNS:
        s = summaries.get(column.metric)
        if s is None:
            continue
        scaled = [None if v is None else v * column.scale for v in (s.mean, s.std)]
        cells = [format_value(v, column.decimals + 1) or None for v in scaled]
        rows.append([column.header, s.n, *cells, percent(s.cv)])
    return rows


def _paired_rows(baseline: Sequence[RunResult], candidate: Sequence[RunResult]) -> list[list[Any]]:
    rows = []
    comparisons = paired_comparison(baseline, candidate)
    for column in TABLE1_COLUMNS:
        c = comparisons.get(column.metric)
        if c is None:
            continue
        std = None if c.std_difference is None else c.std_difference * column.scale
        rows.append([
            column.header, len(c.seeds),
            format_value(c.mean_difference * column.scale, column.decimals + 1),
            format_value(std, column.decimals + 1) or None,
            percent(c.relative_difference),
            None if c.p_value is None else f"{c.p_value:.3f}",
        ])  # fmt: skip
    return rows


def render_comparison(runs: Sequence[RunResult]) -> str:
    """Per-agent multi-seed summaries and, per further agent, a paired comparison with the first.

    Raises:
        ValueError: Runs of two agents cannot be paired (no seed, repeated or no common seed).
    """
    groups = group_by_agent(runs)
    listing = [[str(r.path), r.agent, r.seed, f"{r.metrics['final_net_assets']:.2f}"] for r in runs]
    parts = ["# MerchantBench comparison", markdown_table(
        ["run", "agent", "seed", "final net assets (RMB)"], listing)]  # fmt: skip
    headers = ["metric (paper units)", "runs", "mean", "std", "CV"]
    for agent, group in groups.items():
        parts += [f"## {agent}", markdown_table(headers, _summary_rows(group))]
    baseline_agent, *others = groups
    for agent in others:
        parts += [
            f"## Paired by seed: {agent} minus {baseline_agent}",
            markdown_table(
                [
                    "metric (paper units)",
                    "pairs",
                    "mean difference",
                    "std",
                    "relative",
                    "p (paired t)",
                ],
                _paired_rows(groups[baseline_agent], groups[agent]),
            ),
        ]
    return "\n\n".join(parts) + "\n"

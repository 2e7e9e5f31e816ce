"""The Markdown report of one run: metadata, Table 1 beside the paper, coherence, figures."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
from merchantbench.report.table import markdown_table as markdown_table

REPORT_FILE = "report.md"
QUARTER_HEADERS = ("quarter", "months", "new products", "mean", "median")
METADATA_LEFT_OUT = frozenset({"scenario_config", "final_accounts"})  # shown elsewhere


def _money(value: float | None) -> str | None:
    return None if value is None else f"{value:.2f}"


def percent(value: float | None) -> str | None:
    """A rate in [0, 1] as a percentage with one decimal."""
    return None if value is None else f"{100 * value:.1f} %"


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
    metrics: Mapping[str, Any], label: str = "this run", paper_like: bool = True
) -> str:
    """This run's Table-1 row above the paper's rows, with the paper's units; outside the
    paper's setting (`record.comparable.paper_setting`) with a caveat that they do not compare."""
    headers = ["Framework", "Model", *(c.header for c in TABLE1_COLUMNS)]
    ours = [label, str(metrics.get("agent", "")), *table1_cells(in_paper_units(metrics))]
    paper = [[r.framework, r.model, *table1_cells(r.values)] for r in load_paper_table()]
    caveat = "" if paper_like else (
        "⚠ Not comparable: this run is not in the paper's setting (365 days, RMB 2,000 balance "
        "+ 1,000 deposit, 50 listing slots), so its numbers do not compare with the paper's "
        "rows, shown for their shape only. "
    )  # fmt: skip
    return "\n\n".join([
        "## Table 1",
        markdown_table(headers, [ours]),
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


def render_report(record: RunRecord, metrics: Mapping[str, Any], figures: Sequence[Path]) -> str:
    """The whole report as Markdown; `figures` are linked relative to the report."""
    seed = metrics["seed"] if metrics["seed"] is not None else "sealed"
    title = f"# MerchantBench run: {metrics['agent']}, seed {seed}"
    images = [f"![{f.stem.replace('_', ' ')}]({f.name})" for f in figures]
    takeovers = read_counterfactual(record.path)
    return "\n\n".join([
        title,
        "## Run",
        markdown_table(["field", "value"], run_metadata(record.run.model_dump(mode="json"))),
        table1_section(metrics, paper_like=paper_setting(record.run.scenario_config)),
        money_section(metrics),
        windows_section(metrics),
        coherence_section(metrics),
        diagnosis_section(metrics),
        *([] if takeovers is None else [counterfactual_section(takeovers)]),
        "## Figures",
        *images,
    ]) + "\n"  # fmt: skip


def write_run_report(record: RunRecord, metrics: Mapping[str, Any], out_dir: Path) -> Path:
    """Write `report.md`, `metrics.json` and the figures into `out_dir`; return the report."""
    from merchantbench.report.plots import write_plots

    out_dir.mkdir(parents=True, exist_ok=True)
    figures = write_plots(record, metrics, out_dir)
    takeovers = read_counterfactual(record.path)
    if takeovers is not None:
        from merchantbench.report.counterfactual import plot_counterfactual

        figures.append(plot_counterfactual(takeovers, out_dir / COUNTERFACTUAL_FIGURE))
    write_metrics(dict(metrics), out_dir)
    path = out_dir / REPORT_FILE
    path.write_text(render_report(record, metrics, figures), encoding="utf-8")
    return path


def write_report(run_dir: Path | str, out_dir: Path | str | None = None) -> Path:
    """Read a run directory and write its report (into the run directory unless `out_dir`).

    Raises:
        RunRecordError: The directory is not a readable run record.
    """
    record = load_run_record(run_dir)
    target = Path(out_dir) if out_dir is not None else record.path
    return write_run_report(record, metrics_of(record), target)


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

"""`merchantbench report SWEEP`: the sweep's report as Markdown, self-contained HTML and CSV
(of a folder of sweeps too: every sweep beneath, one section per setting, as the leaderboard).
Only runs whose record verifies are counted (sweeps/analysis.py); the others are named.

Written into `SWEEP_DIR/report/`: `report.md` (figures linked), `report.html` (figures embedded
as base64 PNG, nothing else needed to view it), `table1.csv` (one row per configuration),
`runs.csv` (cost per run), `report.json` (every number) and the figures. The finished runs are
split by setting (record/comparable.py); each setting gets its own section with its provenance,
and no table pools two settings. Runs with a counterfactual analysis add a takeover section to
their setting's (sweeps/report_counterfactual.py).
"""

from __future__ import annotations

import base64
import csv
import html
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import markdown_it

from merchantbench.metrics.diagnosis import DETECTORS
from merchantbench.record.comparable import (
    MIN_SEEDS_FOR_INTERVALS,
    integer_text,
    provenance_lines,
)
from merchantbench.record.files import atomic_write_bytes
from merchantbench.report.markdown import markdown_table
from merchantbench.report.paper import PAPER_LABEL, TABLE1_COLUMNS
from merchantbench.sweeps.analysis import sweep_analysis
from merchantbench.sweeps.arena_report import arena_figure_name, arena_section, sweep_arenas
from merchantbench.sweeps.humans import humans_note
from merchantbench.sweeps.plan import PLAN_FILE, read_plan
from merchantbench.sweeps.report_counterfactual import (
    counterfactual_report_section,
    plot_counterfactual_sweep,
)

REPORT_DIR = "report"


def _n(value: float | None, decimals: int = 2) -> str | None:
    return None if value is None else f"{value:,.{decimals}f}"


def _pct(value: float | None) -> str | None:
    return None if value is None else f"{value * 100:.1f} %"


def _pm(mean: float | None, std: float | None, decimals: int) -> str | None:
    if mean is None:
        return None
    return f"{mean:,.{decimals}f}" + ("" if std is None else f" ± {std:,.{decimals}f}")


def _cost(value: float | None, known: bool, billed: bool = True) -> str | None:
    """A cost cell: "unknown" when a billed price was not stated, "—" without model calls."""
    if not billed:
        return None
    return "unknown" if not known else _n(value, 4)


def provenance_section(data: dict[str, Any]) -> str:
    lines = "\n".join(f"- {label}: {text}" for label, text in provenance_lines(data["provenance"]))
    return "### Provenance\n\n" + lines


def table1_section(data: dict[str, Any], paper_table: list[dict[str, Any]]) -> str:
    paper_like = data["provenance"]["comparable_to_paper"]
    headers = ["configuration", "runs", *(c.header for c in TABLE1_COLUMNS),
               "CV net assets", "share of expert"]  # fmt: skip
    if paper_like:
        headers.append("share of human")
    rows = [[row["label"], data["pools"][row["label"]],
             *(_pm(row[f"{c.paper_name}_mean"], row[f"{c.paper_name}_std"], c.decimals)
               for c in TABLE1_COLUMNS),
             _n(row["net_assets_cv"], 3), _pct(row["share_of_expert"]),
             *([_pct(row["share_of_human"])] if paper_like else [])]
            for row in data["table1"]]  # fmt: skip
    text = (
        "### Table 1 per configuration\n\nMean ± sample std over each configuration's runs (the "
        "runs column says what a row pools), in the paper's units; share of the expert's mean "
        "net assets"
        + (" and of the paper's human mean." if paper_like else ".")
        + "\n\n"
        + markdown_table(headers, rows)
    )
    if not paper_like:
        return text + (
            "\n\nThe paper's Table 1 is not shown beside these runs: they are not in the paper's "
            "setting (365 days, RMB 2,000 balance + 1,000 deposit, 50 listing slots), so its "
            "figures and a share of its human mean would not compare."
        )
    paper = [[f"{p['framework']} / {p['model']}",
              *(_n(p[c.paper_name], c.decimals) for c in TABLE1_COLUMNS)]
             for p in paper_table]  # fmt: skip
    return (
        text
        + f"\n\n#### The paper's Table 1 ({PAPER_LABEL})\n\n"
        + markdown_table(["framework / model", *(c.header for c in TABLE1_COLUMNS)], paper)
    )


def figure5_section(data: dict[str, Any], figure: str) -> str:
    fig = data["figure5"]
    days = data["provenance"]["days"]
    if not fig["months"]:
        return (
            "### Figure 5: monthly effective-window rate\n\nNo month has a window: nothing to draw."
        )
    headers = ["configuration", *fig["months"]]
    rows = [[label, *(_pct(v) for v in rates)] for label, rates in fig["rates"].items()]
    span = len(fig["months"])
    return (
        "### Figure 5: monthly effective-window rate\n\n"
        f"The axis covers the {span} calendar month{'s' if span > 1 else ''} of the {days}-day "
        "horizon" + (" (the paper's figure spans 12)." if span < 12 else ".") + "\n\n"
        f"![monthly effective-window rate]({figure})\n\n" + markdown_table(headers, rows)
    )


def paired_section(data: dict[str, Any]) -> str:
    head = "### Paired comparisons (same seeds)\n\n"
    if not data["paired"]:
        why = ("only one configuration" if len(data["table1"]) < 2 else
               "no two configurations share a seed")  # fmt: skip
        return head + f"No paired comparison: {why} in this setting."
    rows = [[p["baseline"], p["candidate"], ", ".join(map(str, p["seeds"])),
             _n(p["mean_difference"]), f"[{_n(p['ci_low'])}, {_n(p['ci_high'])}]",
             f"⚠ {len(p['seeds'])} seeds (< {MIN_SEEDS_FOR_INTERVALS}): only "
             f"{p['distinct_resamples']} distinct resamples, interval unreliable"
             if p["few_seeds"] else ""]
            for p in data["paired"]]  # fmt: skip
    flagged = any(p["few_seeds"] for p in data["paired"])
    return (
        head + "Candidate − baseline final net assets (RMB), mean over shared seeds, with a 95 % "
        "bootstrap interval."
        + (f" Intervals from fewer than {MIN_SEEDS_FOR_INTERVALS} seeds are flagged: a bootstrap "
           "over so few values has few distinct resamples and understates the uncertainty."
           if flagged else "") + "\n\n"
        + markdown_table(["baseline", "candidate", "seeds", "mean difference", "95 % CI", "note"],
                         rows)
    )  # fmt: skip


def _series(values: Sequence[float | None], fmt: Any, width: int) -> str:
    return " · ".join("–" if v is None else fmt(v) for v in values[:width])


def _covered(series: Sequence[Sequence[float | None]]) -> int:
    """How many leading periods have a value in some series (the horizon's months/quarters)."""
    return max((i + 1 for s in series for i, v in enumerate(s) if v is not None), default=1)


def _count(value: float | None) -> str | None:
    return None if value is None else integer_text(value, 1)


def coherence_section(data: dict[str, Any]) -> str:
    rows, mix, quarters, hermes = [], [], [], []
    coherence = data["coherence"]
    keys = ("sourcing_share_by_month", "supplier_handling_share_by_month")
    months = _covered([c[k] for c in coherence for k in keys])
    n_quarters = _covered([c["procurement_cost_by_quarter"] for c in coherence])
    for c in coherence:
        rows.append([c["label"], c["abandoned_runs"], _n(c["abandonment_day"], 1),
                     _n(c["longest_idle_streak"], 1), _n(c["adverse_listings"], 1),
                     _pct(c["reacted_rate"]), _n(c["median_hours_to_reaction"], 1),
                     _n(c["rating_drop_days"], 1),
                     _n(c["repricing_ratio_after_drop"])])  # fmt: skip
        mix.append([c["label"], _series(c["sourcing_share_by_month"], _pct, months),
                    _series(c["supplier_handling_share_by_month"], _pct, months)])  # fmt: skip
        quarters.append([c["label"], _series(c["procurement_cost_by_quarter"], _n, n_quarters)])
        hermes.append([c["label"], *(_count(c[k]) for k in
                       ("code_calls", "memory_writes", "skills_created", "skills_patched",
                        "skills_used"))])  # fmt: skip
    return "\n\n".join([
        "### Coherence analyses",
        markdown_table(["configuration", "abandoned runs", "abandonment day", "longest idle streak",
                        "adverse listings", "reacted", "median h to react", "rating-drop days",
                        "repricing ×baseline after drop"], rows),
        "#### Sourcing vs supplier-handling share of calls, by month (the "
        f"{months} month{'s' if months > 1 else ''} the horizon covers)",
        markdown_table(["configuration", "sourcing share", "supplier-handling share"], mix),
        "#### Procurement price of newly listed products (RMB), by quarter\n\nThe paper's humans "
        "moved from RMB 43–53 to 59–91.",
        markdown_table(["configuration", " · ".join(f"Q{q + 1}" for q in range(n_quarters))],
                       quarters),
        "#### Harness tools per run (Hermes: code, memory, skills)",
        markdown_table(["configuration", "code calls", "memory writes", "skills created",
                        "skills patched", "skills used"], hermes),
    ])  # fmt: skip


def diagnosis_section(data: dict[str, Any]) -> str:
    headers = ["configuration", "runs", *(d.replace("_", " ") for d in DETECTORS)]
    rows = [[c["label"], c["runs"],
             *(f"{c[f'{d}_flagged']}" + ("" if c[f"{d}_median_onset_day"] is None
                                         else f" (day {c[f'{d}_median_onset_day']:.0f})")
               for d in DETECTORS)]
            for c in data.get("diagnosis", [])]  # fmt: skip
    return (
        "## Failure modes\n\nRuns each failure-mode detector flagged (docs/diagnosis.md), with "
        "the median onset day of the flagged runs.\n\n" + markdown_table(headers, rows)
    )


def cost_section(data: dict[str, Any]) -> str:
    configs = data["costs"]["per_configuration"]
    if not any(c["model_runs"] for c in configs):
        return ("### Cost\n\nNo run of this setting called a model (baselines only): no model "
                "spend to report.")  # fmt: skip
    per_config = [[c["label"], c["runs"], _n(c["llm_tokens_total"], 0),
                   _cost(c["llm_cost_total"], c["cost_known"], bool(c["model_runs"])),
                   _n(c["llm_calls_total"], 0), _n(c["wall_seconds_total"], 1),
                   _cost(c["llm_cost_mean"], c["cost_known"], bool(c["model_runs"])),
                   _n(c["net_assets_per_unit_spent"], 1)]
                  for c in configs]  # fmt: skip
    per_run = [[f"{r['label']}/s{r['seed']}", _n(r["llm_tokens"], 0),
                _cost(r["llm_cost"], r["cost_known"], bool(r["llm_calls"])),
                _n(r["llm_calls"], 0), _n(r["wall_seconds"], 1),
                _n(r["net_assets_per_unit_spent"], 1)]
               for r in data["costs"]["per_run"]]  # fmt: skip
    unknown = not all(c["cost_known"] for c in configs)
    return "\n\n".join([
        "### Cost\n\nModel spend in the models file's currency; \"unknown\" where a billed price "
        "was not stated (never counted as 0); net assets per unit spent is mean final net assets "
        "over mean cost per run." + (" Some costs are unknown: state every price in the models "
        "file (docs/sweeps.md)." if unknown else ""),
        markdown_table(["configuration", "runs", "tokens", "cost", "model calls", "wall s",
                        "cost per run", "net assets per unit spent"], per_config),
        "#### Per run",
        markdown_table(["run", "tokens", "cost", "model calls", "wall s",
                        "net assets per unit spent"], per_run),
    ])  # fmt: skip


def group_section(
    data: dict[str, Any], paper: list[dict[str, Any]], figures: dict[str, str]
) -> str:
    if not data["table1"]:
        return f"## {data['setting']}\n\nNo finished run in this setting: nothing to tabulate."
    return "\n\n".join(section for section in [
        f"## {data['setting']}", provenance_section(data), table1_section(data, paper),
        figure5_section(data, figures["figure5"]),
        f"### Final net assets\n\n![final net assets]({figures['net_assets']})",
        paired_section(data), coherence_section(data), diagnosis_section(data),
        counterfactual_report_section(data.get("counterfactual"), figures["counterfactual"]),
        cost_section(data),
    ] if section)  # fmt: skip


def figure_names(index: int) -> dict[str, str]:
    """The figure files of the `index`-th group (0: figure5.png, net_assets.png,
    counterfactual.svg)."""
    suffix = "" if index == 0 else f"-{index + 1}"
    return {"figure5": f"figure5{suffix}.png", "net_assets": f"net_assets{suffix}.png",
            "counterfactual": f"counterfactual{suffix}.svg"}  # fmt: skip


def render_markdown(data: dict[str, Any], name: str) -> str:
    missing = "".join(
        f"\n- {m['run']}: {m['status']} {m['reason'] or ''}" for m in data["not_done"]
    )
    aside = "".join(
        f"\n- {a.get('run')}: moved to {a.get('moved_to')} ({a.get('reason')})"
        for a in data.get("set_aside", [])
    )
    groups = data["groups"]
    head = (f"# Sweep report: {name}\n\n{data['runs_done']} of {data['runs_planned']} runs "
            "finished; the figures below are over finished runs only." + missing
            + humans_note(data))  # fmt: skip
    if aside:
        head += "\n\nRecords set aside (kept, not counted):" + aside
    if len(groups) > 1:
        head += (f"\n\nThe finished runs fall into {len(groups)} settings (scenario, horizon, "
                 "market, tool schema, code version). Each has its own tables; no number pools "
                 "runs of two settings.")  # fmt: skip
    if not groups and not data.get("arenas"):
        head += "\n\nNo run has finished yet: no table to show."
    sections = [group_section(g, data["paper_table1"], figure_names(i))
                for i, g in enumerate(groups)]  # fmt: skip
    return "\n\n".join([head, *sections, *arena_sections(data)]) + "\n"


def arena_sections(data: dict[str, Any]) -> list[str]:
    """The sections of the sweep's arenas (sweeps/arena_report.py)."""
    return [
        arena_section(g, provenance_section(g), table1_section(g, data["paper_table1"]),
                      arena_figure_name(i))
        for i, g in enumerate(data.get("arenas", []))
    ]  # fmt: skip


def render_html(markdown: str, figures: dict[str, Path]) -> str:
    """The Markdown as one HTML page, every figure embedded."""
    body = markdown_it.MarkdownIt("commonmark").enable("table").render(markdown)
    for path in figures.values():
        encoded = base64.b64encode(path.read_bytes()).decode()
        kind = "svg+xml" if path.suffix == ".svg" else "png"
        body = body.replace(f'src="{path.name}"', f'src="data:image/{kind};base64,{encoded}"')
    style = ("body{font-family:sans-serif;max-width:1200px;margin:2em auto}table{border-collapse:"
             "collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 6px}img{max-width:"
             "100%}")  # fmt: skip
    title = html.escape(markdown.splitlines()[0].lstrip("# "))
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title>"
            f"<style>{style}</style></head><body>{body}</body></html>\n")  # fmt: skip


def _csv(rows: Sequence[dict[str, Any]]) -> bytes:
    sink = io.StringIO()
    if rows:
        writer = csv.DictWriter(sink, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return sink.getvalue().encode()


def write_sweep_report(
    sweep_dir: Path, out_dir: Path | None = None, humans: Sequence[Path] = ()
) -> Path:
    """Write the report of the sweep in `sweep_dir` (with the finished playground runs under
    `humans` as `Human (n=K)` rows: sweeps/humans.py); return the HTML page's path."""
    from merchantbench.sweeps.report_plots import plot_figure5, plot_net_assets

    out = out_dir or sweep_dir / REPORT_DIR
    out.mkdir(parents=True, exist_ok=True)
    left_out: list[dict[str, Any]] = []  # markets whose merchants' records do not verify
    data = {**sweep_analysis(sweep_dir, humans), "arenas": sweep_arenas(sweep_dir, left_out)}
    data["not_done"] += left_out
    figures: dict[str, Path] = {}
    for i, group in enumerate(data["groups"]):
        if not group["table1"]:
            continue
        names = figure_names(i)
        figures[names["figure5"]] = plot_figure5(group, out / names["figure5"])
        figures[names["net_assets"]] = plot_net_assets(group, out / names["net_assets"])
        if group.get("counterfactual"):
            path = out / names["counterfactual"]
            figures[names["counterfactual"]] = plot_counterfactual_sweep(
                group["counterfactual"], path
            )
    for i, group in enumerate(data["arenas"]):
        figures[arena_figure_name(i)] = plot_net_assets(group, out / arena_figure_name(i))
    name = read_plan(sweep_dir)[0]["name"] if (sweep_dir / PLAN_FILE).is_file() else sweep_dir.name
    text = render_markdown(data, name)
    atomic_write_bytes(out / "report.md", text.encode())
    atomic_write_bytes(out / "report.html", render_html(text, figures).encode())
    table1 = [{"setting": g["setting"], **row} for g in data["groups"] for row in g["table1"]]
    per_run = [{"setting": g["setting"], **row} for g in data["groups"]
               for row in g["costs"]["per_run"]]  # fmt: skip
    atomic_write_bytes(out / "table1.csv", _csv(table1))
    atomic_write_bytes(out / "runs.csv", _csv(per_run))
    report_json = json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    atomic_write_bytes(out / "report.json", report_json.encode())
    return out / "report.html"

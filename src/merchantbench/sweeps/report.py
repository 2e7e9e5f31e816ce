"""`merchantbench report SWEEP`: the sweep's report as Markdown, self-contained HTML and CSV.

Written into `SWEEP_DIR/report/`: `report.md` (figures linked), `report.html` (figures embedded
as base64 PNG, nothing else needed to view it), `table1.csv` (one row per configuration),
`runs.csv` (cost per run), `report.json` (every number) and the figures.
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
from merchantbench.record.files import atomic_write_bytes
from merchantbench.report.markdown import markdown_table
from merchantbench.report.paper import PAPER_LABEL, TABLE1_COLUMNS
from merchantbench.sweeps.analysis import sweep_analysis
from merchantbench.sweeps.plan import read_plan

REPORT_DIR = "report"


def _n(value: float | None, decimals: int = 2) -> str | None:
    return None if value is None else f"{value:,.{decimals}f}"


def _pct(value: float | None) -> str | None:
    return None if value is None else f"{value * 100:.1f} %"


def _pm(mean: float | None, std: float | None, decimals: int) -> str | None:
    if mean is None:
        return None
    return f"{mean:,.{decimals}f}" + ("" if std is None else f" ± {std:,.{decimals}f}")


def table1_section(data: dict[str, Any]) -> str:
    headers = ["configuration", "runs", *(c.header for c in TABLE1_COLUMNS),
               "CV net assets", "share of expert", "share of human"]  # fmt: skip
    rows = [[row["label"], row["runs"],
             *(_pm(row[f"{c.paper_name}_mean"], row[f"{c.paper_name}_std"], c.decimals)
               for c in TABLE1_COLUMNS),
             _n(row["net_assets_cv"], 3), _pct(row["share_of_expert"]), _pct(row["share_of_human"])]
            for row in data["table1"]]  # fmt: skip
    paper = [[f"{p['framework']} / {p['model']}",
              *(_n(p[c.paper_name], c.decimals) for c in TABLE1_COLUMNS)]
             for p in data["paper_table1"]]  # fmt: skip
    return (
        "## Table 1 per configuration\n\nMean ± sample std over each configuration's runs, in the "
        "paper's units; share of the expert's and of the paper's human mean net assets.\n\n"
        + markdown_table(headers, rows)
        + f"\n\n### The paper's Table 1 ({PAPER_LABEL})\n\n"
        + markdown_table(["framework / model", *(c.header for c in TABLE1_COLUMNS)], paper)
    )


def figure5_section(data: dict[str, Any], figure: str) -> str:
    fig = data["figure5"]
    headers = ["configuration", *fig["months"]]
    rows = [[label, *(_pct(v) for v in rates)] for label, rates in fig["rates"].items()]
    return (
        "## Figure 5: monthly effective-window rate\n\n"
        f"![monthly effective-window rate]({figure})\n\n" + markdown_table(headers, rows)
    )


def paired_section(data: dict[str, Any]) -> str:
    rows = [[p["baseline"], p["candidate"], ", ".join(map(str, p["seeds"])),
             _n(p["mean_difference"]), f"[{_n(p['ci_low'])}, {_n(p['ci_high'])}]"]
            for p in data["paired"]]  # fmt: skip
    return (
        "## Paired comparisons (same seeds)\n\nCandidate − baseline final net assets (RMB), "
        "mean over shared seeds, with a 95 % bootstrap interval.\n\n"
        + markdown_table(["baseline", "candidate", "seeds", "mean difference", "95 % CI"], rows)
    )


def _series(values: Sequence[float | None], fmt: Any) -> str:
    return " · ".join("–" if v is None else fmt(v) for v in values)


def coherence_section(data: dict[str, Any]) -> str:
    rows, mix, quarters, hermes = [], [], [], []
    for c in data["coherence"]:
        rows.append([c["label"], c["abandoned_runs"], _n(c["abandonment_day"], 1),
                     _n(c["longest_idle_streak"], 1), _n(c["adverse_listings"], 1),
                     _pct(c["reacted_rate"]), _n(c["median_hours_to_reaction"], 1),
                     _n(c["rating_drop_days"], 1),
                     _n(c["repricing_ratio_after_drop"])])  # fmt: skip
        mix.append([c["label"], _series(c["sourcing_share_by_month"], _pct),
                    _series(c["supplier_handling_share_by_month"], _pct)])  # fmt: skip
        quarters.append([c["label"], _series(c["procurement_cost_by_quarter"], _n)])
        hermes.append([c["label"], *(_n(c[k], 1) for k in
                       ("code_calls", "memory_writes", "skills_created", "skills_patched",
                        "skills_used"))])  # fmt: skip
    return "\n\n".join([
        "## Coherence analyses",
        markdown_table(["configuration", "abandoned runs", "abandonment day", "longest idle streak",
                        "adverse listings", "reacted", "median h to react", "rating-drop days",
                        "repricing ×baseline after drop"], rows),
        "### Sourcing vs supplier-handling share of calls, by month",
        markdown_table(["configuration", "sourcing share", "supplier-handling share"], mix),
        "### Procurement price of newly listed products (RMB), by quarter\n\nThe paper's humans "
        "moved from RMB 43–53 to 59–91.",
        markdown_table(["configuration", "Q1 · Q2 · Q3 · Q4"], quarters),
        "### Harness tools per run (Hermes: code, memory, skills)",
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
    per_config = [[c["label"], c["runs"], _n(c["llm_tokens_total"], 0),
                   _n(c["llm_cost_total"], 4), _n(c["llm_calls_total"], 0),
                   _n(c["wall_seconds_total"], 1),
                   _n(c["llm_cost_mean"], 4)]
                  for c in data["costs"]["per_configuration"]]  # fmt: skip
    per_run = [[f"{r['label']}/s{r['seed']}", _n(r["llm_tokens"], 0), _n(r["llm_cost"], 4),
                _n(r["llm_calls"], 0), _n(r["wall_seconds"], 1)]
               for r in data["costs"]["per_run"]]  # fmt: skip
    return "\n\n".join([
        "## Cost",
        markdown_table(["configuration", "runs", "tokens", "cost", "model calls", "wall s",
                        "cost per run"], per_config),
        "### Per run",
        markdown_table(["run", "tokens", "cost", "model calls", "wall s"], per_run),
    ])  # fmt: skip


def render_markdown(data: dict[str, Any], name: str, figures: dict[str, str]) -> str:
    missing = "".join(
        f"\n- {m['run']}: {m['status']} {m['reason'] or ''}" for m in data["not_done"]
    )
    aside = "".join(
        f"\n- {a.get('run')}: moved to {a.get('moved_to')} ({a.get('reason')})"
        for a in data.get("set_aside", [])
    )
    head = (f"# Sweep report: {name}\n\n{data['runs_done']} of {data['runs_planned']} runs "
            "finished; the figures below are over finished runs only." + missing)  # fmt: skip
    if aside:
        head += "\n\nRecords set aside (kept, not counted):" + aside
    return "\n\n".join([
        head, table1_section(data), figure5_section(data, figures["figure5"]),
        f"![final net assets]({figures['net_assets']})", paired_section(data),
        coherence_section(data), diagnosis_section(data), cost_section(data),
    ]) + "\n"  # fmt: skip


def render_html(markdown: str, figures: dict[str, Path]) -> str:
    """The Markdown as one HTML page, every figure embedded."""
    body = markdown_it.MarkdownIt("commonmark").enable("table").render(markdown)
    for path in figures.values():
        encoded = base64.b64encode(path.read_bytes()).decode()
        body = body.replace(f'src="{path.name}"', f'src="data:image/png;base64,{encoded}"')
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


def write_sweep_report(sweep_dir: Path, out_dir: Path | None = None) -> Path:
    """Write the report of the sweep in `sweep_dir`; return the HTML page's path."""
    from merchantbench.sweeps.report_plots import plot_figure5, plot_net_assets

    out = out_dir or sweep_dir / REPORT_DIR
    out.mkdir(parents=True, exist_ok=True)
    data = sweep_analysis(sweep_dir)
    figures = {"figure5": plot_figure5(data, out / "figure5.png"),
               "net_assets": plot_net_assets(data, out / "net_assets.png")}  # fmt: skip
    name = read_plan(sweep_dir)[0]["name"]
    text = render_markdown(data, name, {k: p.name for k, p in figures.items()})
    atomic_write_bytes(out / "report.md", text.encode())
    atomic_write_bytes(out / "report.html", render_html(text, figures).encode())
    atomic_write_bytes(out / "table1.csv", _csv(data["table1"]))
    atomic_write_bytes(out / "runs.csv", _csv(data["costs"]["per_run"]))
    report_json = json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    atomic_write_bytes(out / "report.json", report_json.encode())
    return out / "report.html"

"""The calibration document (docs/calibration.md): its generated blocks, rendered from the
grid's results, and the rewrite that keeps the hand-written prose (`merchantbench calibrate`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from merchantbench.metrics.aggregate import MetricSummary
from merchantbench.report.paper import TABLE1_COLUMNS, format_value, load_paper_table
from merchantbench.runs.calibrate import ABLATIONS, Target
from merchantbench.scenario import MarketConfig, Scenario

PAPER_ROWS = (("Baseline", "Rule-based"), ("Baseline", "Human (n=3)"), ("Hermes", "Qwen3.7-Max"))
_BLOCK = re.compile(r"<!-- calibrate:(\w+) -->.*?<!-- /calibrate:\1 -->", re.S)


def _cell(summary: Mapping[str, MetricSummary], metric: str, scale: float, decimals: int) -> str:
    found = summary.get(metric)
    if found is None:
        return ""
    text = format_value(found.mean * scale, decimals)
    return text if found.std is None else f"{text} ± {format_value(found.std * scale, decimals)}"


def table1_block(summary: Mapping[str, Mapping[str, MetricSummary]]) -> str:
    """The paper's rows next to ours, on every Table-1 metric (ours: mean ± sd over seeds)."""
    header = ["row", *(c.header for c in TABLE1_COLUMNS)]
    lines = [_row(header), _row(["---"] * len(header))]
    paper = {(r.framework, r.model): r for r in load_paper_table()}
    for key in PAPER_ROWS:
        row = paper[key]
        cells = [format_value(row.values[c.paper_name], c.decimals) for c in TABLE1_COLUMNS]
        lines.append(_row([f"paper: {key[1]}", *cells]))
    for label in summary:
        if not any(label == a.label for a in ABLATIONS):
            cells = [_cell(summary[label], c.metric, c.scale, c.decimals) for c in TABLE1_COLUMNS]
            lines.append(_row([f"ours: {label}", *cells]))
    return "\n".join(lines)


def seeds_block(summary: Mapping[str, Mapping[str, MetricSummary]]) -> str:
    lines = [_row(["row", "net assets per seed (RMB)", "orders per seed", "GMV per seed (RMB)"])]
    lines.append(_row(["---"] * 4))
    for label, metrics in summary.items():
        cells = [
            ", ".join(f"{v:,.0f}" if key != "final_net_assets" else f"{v:,.2f}" for v in
                      metrics[key].values)
            for key in ("final_net_assets", "orders", "gmv")
        ]  # fmt: skip
        lines.append(_row([label, *cells]))
    return "\n".join(lines)


def targets_block(targets: list[Target]) -> str:
    lines = [_row(["target (paper scenario)", "achieved", "met"]), _row(["---"] * 3)]
    lines += [_row([t.text, t.achieved, "yes" if t.met else "**no**"]) for t in targets]
    return "\n".join(lines)


def generator_block(sc: Scenario) -> str:
    lines = [_row(["`market.` field", "value", "meaning"]), _row(["---"] * 3)]
    for name, info in MarketConfig.model_fields.items():
        if name != "categories":
            value = getattr(sc.market, name)
            lines.append(_row([f"`{name}`", f"`{value}`", info.description or ""]))
    return "\n".join(lines)


DECISION_COLUMNS = (
    ("orders_per_listing_day", "orders / listing-day", 2, 1.0),
    ("price_to_reference", "sale price / p_ref", 2, 1.0),
    ("trap_order_share", "orders from traps (%)", 1, 100.0),
    ("hidden_risk", "hidden risk of orders (%)", 1, 100.0),
    ("late_share", "late orders (%)", 1, 100.0),
    ("mean_exposure", "mean exposure", 2, 1.0),
    ("mean_listing_days", "days per listing", 1, 1.0),
    ("listings", "listings", 0, 1.0),
)


def decisions_block(decisions: Mapping[str, Mapping[str, Any]]) -> str:
    header = ["row", *(c[1] for c in DECISION_COLUMNS), "procurement price by quarter (RMB)"]
    lines = [_row(header), _row(["---"] * len(header))]
    for label, stats in decisions.items():
        cells = [format_value(_scaled(stats[k], s), d) for k, _, d, s in DECISION_COLUMNS]
        quarters = " / ".join(format_value(v, 1) for v in stats["procurement_by_quarter"])
        lines.append(_row([label, *cells, quarters]))
    return "\n".join(lines)


def ablations_block(summary: Mapping[str, Mapping[str, MetricSummary]]) -> str:
    lines = [_row(["variant", "reverts", "net assets (RMB)", "vs expert, same seeds"])]
    lines.append(_row(["---"] * 4))
    expert = summary.get("expert", {}).get("final_net_assets")
    for ablation in ABLATIONS:
        found = summary.get(ablation.label, {}).get("final_net_assets")
        if found is None or expert is None:
            continue
        paired = expert.values[: found.n]
        change = sum(found.values) / sum(paired) - 1
        lines.append(
            _row([ablation.label, ablation.reverts, f"{found.mean:,.0f}", f"{change:+.0%}"])
        )
    return "\n".join(lines)


def _scaled(value: float | None, scale: float) -> float | None:
    return None if value is None else value * scale


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def render_blocks(
    sc: Scenario,
    summary: Mapping[str, Mapping[str, MetricSummary]],
    decisions: Mapping[str, Mapping[str, Any]],
    targets: list[Target],
) -> dict[str, str]:
    """Every generated block of the document, by name."""
    stamp = f"Scenario `{sc.name}` (hash `{sc.content_hash}`)."
    return {
        "table": f"{stamp}\n\n{table1_block(summary)}",
        "seeds": seeds_block(summary),
        "targets": targets_block(targets),
        "generator": generator_block(sc),
        "decisions": decisions_block(decisions),
        "ablations": ablations_block(summary),
    }


def write_document(path: Path, blocks: Mapping[str, str]) -> None:
    """Replace the generated blocks of `path` (appending missing ones), or write a skeleton."""
    text = path.read_text() if path.exists() else "# Calibration\n"
    present = set(_BLOCK_NAMES.findall(text))
    text = _BLOCK.sub(lambda m: _wrap(m.group(1), blocks.get(m.group(1), "")), text)
    for name, body in blocks.items():
        if name not in present:
            text = text.rstrip("\n") + f"\n\n## {name}\n\n{_wrap(name, body)}\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


_BLOCK_NAMES = re.compile(r"<!-- calibrate:(\w+) -->")


def _wrap(name: str, body: str) -> str:
    return f"<!-- calibrate:{name} -->\n{body}\n<!-- /calibrate:{name} -->"

"""The paper's Table 1, shipped as package data, and this project's metrics in the same units.

`paper_table1.csv` holds the paper's figures (arXiv 2607.28956), measured on the paper's private
real-data market: a run of this project compares with them in shape, not to the digit. Net
assets and GMV are in thousands of RMB, rates in percent.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

PAPER_TABLE_FILE = "paper_table1.csv"
PAPER_LABEL = "paper's figures, from its private real-data market: compare in shape"


@dataclass(frozen=True)
class Column:
    """One column of Table 1.

    Attributes:
        paper_name: Column name in `paper_table1.csv`.
        header: Column header in reports.
        metric: Key of the metric in `compute_metrics` output.
        scale: Factor from the metric's unit to the paper's (1/1000 for k RMB, 100 for %).
        decimals: Decimals shown.
    """

    paper_name: str
    header: str
    metric: str
    scale: float
    decimals: int


TABLE1_COLUMNS: tuple[Column, ...] = (
    Column("final_net_assets_k", "Net assets (k RMB)", "final_net_assets", 1e-3, 2),
    Column("gmv_k", "GMV (k RMB)", "gmv", 1e-3, 2),
    Column("net_profit_margin_pct", "Margin (%)", "net_profit_margin", 100.0, 1),
    Column("orders", "Orders", "orders", 1.0, 0),
    Column("swr_pct", "SWR (%)", "swr", 100.0, 1),
    Column("tool_calls", "Tool calls", "tool_calls", 1.0, 0),
    Column("fines", "Fines (RMB)", "fines", 1.0, 0),
    Column("avg_store_rating", "Rating", "avg_store_rating", 1.0, 2),
    Column("anomaly_rate_pct", "Anomaly (%)", "anomaly_rate", 100.0, 1),
    Column("avg_active_listings", "Active listings", "avg_active_listings", 1.0, 1),
)


@dataclass(frozen=True)
class PaperRow:
    """One row of the paper's Table 1, in the paper's units (`None` where it reports nothing)."""

    framework: str
    model: str
    values: Mapping[str, float | None]


def _number(text: str) -> float | None:
    return float(text) if text.strip() else None


def load_paper_table() -> list[PaperRow]:
    """The paper's Table 1 from the package data, in the paper's row order."""
    text = resources.files("merchantbench.report").joinpath(PAPER_TABLE_FILE).read_text("utf-8")
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    rows = []
    for record in csv.DictReader(lines):
        values = {c.paper_name: _number(record[c.paper_name]) for c in TABLE1_COLUMNS}
        rows.append(PaperRow(framework=record["framework"], model=record["model"], values=values))
    return rows


def in_paper_units(metrics: Mapping[str, Any]) -> dict[str, float | None]:
    """A run's Table-1 metrics converted to the paper's units, keyed by paper column."""
    return {
        c.paper_name: None if metrics.get(c.metric) is None else float(metrics[c.metric]) * c.scale
        for c in TABLE1_COLUMNS
    }


def format_value(value: float | None, decimals: int) -> str:
    """A figure with fixed decimals; an empty string for a missing one."""
    return "" if value is None else f"{value:.{decimals}f}"


def table1_cells(values: Mapping[str, float | None]) -> list[str]:
    """Formatted cells of one Table-1 row (values in paper units, keyed by paper column)."""
    return [format_value(values.get(c.paper_name), c.decimals) for c in TABLE1_COLUMNS]


def table1_line(metrics: Mapping[str, Any]) -> str:
    """One line with a run's Table-1 figures, in the paper's units.

    Example: ``react / gpt-x seed 1: Net assets (k RMB) 24.48 | GMV (k RMB) 53.37 | …``
    """
    cells = table1_cells(in_paper_units(metrics))
    parts = " | ".join(f"{c.header} {cell}" for c, cell in zip(TABLE1_COLUMNS, cells, strict=True))
    seed = metrics.get("seed")
    who = f"{metrics.get('agent', 'run')}" + (f" seed {seed}" if seed is not None else "")
    return f"{who}: {parts}"

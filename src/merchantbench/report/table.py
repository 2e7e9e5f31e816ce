"""Markdown tables and cells, shared by every report."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

REPORT_FILE = "report.md"


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub-flavoured Markdown table; `None` cells are shown as a dash."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for row in rows:
        lines.append("| " + " | ".join("–" if c is None else str(c) for c in row) + " |")
    return "\n".join(lines)


def percent(value: float | None) -> str | None:
    """A rate in [0, 1] as a percentage with one decimal."""
    return None if value is None else f"{100 * value:.1f} %"

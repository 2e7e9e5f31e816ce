"""The leaderboard: a sweep's configurations ranked by the mean of one metric over their runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

LEADERBOARD_COLUMNS = (
    ("#", None),
    ("configuration", "label"),
    ("runs done", None),
    ("mean", None),
    ("std", None),
    ("net assets", "final_net_assets"),
    ("orders", "orders"),
    ("SWR", "swr"),
    ("cost", "llm_cost"),
    ("tokens", "llm_tokens"),
)


def group_rows(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """Index rows by configuration label, in the plan's order."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        groups.setdefault(str(row["label"]), []).append(row)
    return groups


def _mean(rows: Sequence[Mapping[str, Any]], key: str) -> float | None:
    values = [float(r[key]) for r in rows if r.get(key) is not None]
    return float(np.mean(values)) if values else None


def _cell(value: float | None, decimals: int = 2) -> str:
    return "" if value is None else f"{value:,.{decimals}f}"


def leaderboard_rows(rows: Sequence[Mapping[str, Any]], by: str) -> list[list[str]]:
    """Formatted leaderboard rows, best first; configurations without a finished run last.

    Raises:
        ValueError: `by` is not a numeric column of the index.
    """
    if rows and by not in rows[0]:
        raise ValueError(f"the index has no column {by!r}")
    ranked = []
    for label, group in group_rows(rows).items():
        done = [r for r in group if r["status"] == "done"]
        values = [float(r[by]) for r in done if r.get(by) is not None]
        mean = float(np.mean(values)) if values else None
        std = float(np.std(values, ddof=1)) if len(values) > 1 else None
        ranked.append((mean, label, done, len(group), std))
    ranked.sort(key=lambda item: (item[0] is None, -(item[0] or 0.0), item[1]))
    table = []
    for place, (mean, label, done, planned, std) in enumerate(ranked, 1):
        cost, tokens = sum(r.get("llm_cost") or 0.0 for r in done), _sum_int(done, "llm_tokens")
        table.append([
            str(place), label, f"{len(done)}/{planned}", _cell(mean, 4 if abs(mean or 0) < 10 else 2),  # noqa: E501
            _cell(std), _cell(_mean(done, "final_net_assets")), _cell(_mean(done, "orders"), 1),
            _cell(_mean(done, "swr"), 3), f"{cost:.4f}", f"{tokens:,}",
        ])  # fmt: skip
    return table


def _sum_int(rows: Sequence[Mapping[str, Any]], key: str) -> int:
    return int(sum(r.get(key) or 0 for r in rows))

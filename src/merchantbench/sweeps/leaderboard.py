"""The leaderboard: one ranking per setting (never pooling runs of different scenarios, horizons,
markets, tool schemas or code), each row one configuration identity ranked by the mean of one
metric over its runs (record/comparable.py says what may be pooled)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from merchantbench.record.comparable import (
    Pool,
    PooledRun,
    Setting,
    integer_text,
    pool_cost,
    pool_runs,
    provenance,
    spend_efficiency,
)

HEADERS = ("#", "configuration", "pools", "mean", "std", "net assets", "orders", "SWR",
           "cost per run", "net assets per unit spent", "tokens per run")  # fmt: skip
COUNT_METRICS = frozenset({"orders", "tool_calls", "windows", "framework_calls", "error_calls"})


@dataclass(frozen=True)
class Ranking:
    """One setting's ranking: its provenance and formatted rows, best first."""

    setting: Setting
    provenance: dict[str, Any]
    rows: list[list[str]]


def _values(runs: Sequence[PooledRun], key: str) -> list[float]:
    return [float(r.metrics[key]) for r in runs if isinstance(r.metrics.get(key), int | float)]


def _mean(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if values else None


def _cell(key: str, value: float | None, decimals: int = 2) -> str:
    """Counts as integers (a mean of counts with one decimal); small ratios with 4 decimals."""
    if value is None:
        return "—"
    if key in COUNT_METRICS:
        return integer_text(value, 1)
    return integer_text(value, decimals if abs(value) >= 10 else max(decimals, 4))


def pool_row(pool: Pool, by: str) -> tuple[float | None, list[str]]:
    """The ranking value and the formatted cells (without the place) of one pool."""
    runs = pool.runs
    values = _values(runs, by)
    mean = _mean(values)
    std = float(np.std(values, ddof=1)) if len(values) > 1 else None
    assets = _mean(_values(runs, "final_net_assets"))
    cost_text, cost = pool_cost(pool)
    efficiency = spend_efficiency(assets, cost)
    tokens = [float((r.usage or {}).get("tokens") or 0) for r in runs if r.model_calls]
    return mean, [
        pool.label, pool.what(), _cell(by, mean), _cell(by, std),
        _cell("final_net_assets", assets), _cell("orders", _mean(_values(runs, "orders"))),
        _cell("swr", _mean(_values(runs, "swr")), 3), cost_text,
        "—" if efficiency is None else f"{efficiency:,.1f}",
        integer_text(round(float(np.mean(tokens)))) if tokens else "—",
    ]  # fmt: skip


def rankings(runs: Sequence[PooledRun], by: str) -> list[Ranking]:
    """One ranking per setting, in the order settings first appear.

    Raises:
        ValueError: `by` is no numeric metric of these runs.
    """
    if runs and not any(_values([run], by) for run in runs):
        raise ValueError(f"the runs have no numeric metric {by!r}")
    out = []
    for setting, pools in pool_runs(runs).items():
        scored = [(*pool_row(pool, by), pool.label) for pool in pools]
        scored.sort(key=lambda item: (item[0] is None, -(item[0] or 0.0), item[2]))
        rows = [[str(place), *cells] for place, (_, cells, _) in enumerate(scored, 1)]
        out.append(Ranking(setting, provenance(setting, pools), rows))
    return out

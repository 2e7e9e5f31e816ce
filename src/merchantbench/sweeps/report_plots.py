"""The figures of a sweep report: Figure 5 (monthly effective-window rate per configuration) and
the final net assets of each configuration's runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

FIGSIZE = (11, 4.5)
DPI = 110


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=DPI, metadata={"Software": None})  # no version stamp: stable bytes
    plt.close(fig)
    return path


def plot_figure5(data: dict[str, Any], path: Path) -> Path:
    """One line per configuration: its mean effective-window rate in each calendar month the
    horizon covers; a horizon within one month gives one bar per configuration instead."""
    fig, ax = plt.subplots(figsize=FIGSIZE)
    months = data["figure5"]["months"]
    if len(months) < 2:
        rates = data["figure5"]["rates"]
        values = [(r[0] or 0.0) * 100 if r else 0.0 for r in rates.values()]
        ax.bar(range(len(rates)), values, color="#9ec5e8")
        ax.set_xticks(range(len(rates)), list(rates), rotation=30, ha="right")
        ax.set_ylim(0, 102)
        ax.set_ylabel("effective windows (%)")
        ax.set_title(f"Figure 5: effective-window rate in {', '.join(months) or 'no month'} "
                     "(the whole horizon; mean over runs)")  # fmt: skip
        ax.grid(True, axis="y", alpha=0.3)
        return _save(fig, path)
    for label, rates in data["figure5"]["rates"].items():
        points = [(i, r * 100) for i, r in enumerate(rates) if r is not None]
        if points:
            ax.plot(*zip(*points, strict=True), marker="o", label=label)
    ax.set_xticks(range(len(months)), months, rotation=45, ha="right")
    ax.set_ylim(-2, 102)
    ax.set_ylabel("effective windows (%)")
    ax.set_title("Figure 5: monthly effective-window rate (mean over runs)")
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    return _save(fig, path)


def plot_net_assets(data: dict[str, Any], path: Path) -> Path:
    """Each configuration's mean final net assets (bar, ± std) and its runs (dots)."""
    fig, ax = plt.subplots(figsize=FIGSIZE)
    rows = data["table1"]
    labels = [row["label"] for row in rows]
    means = [(row["final_net_assets_k_mean"] or 0.0) for row in rows]
    stds = [(row["final_net_assets_k_std"] or 0.0) for row in rows]
    ax.bar(range(len(rows)), means, yerr=stds, color="#9ec5e8", capsize=4)
    for i, run_values in enumerate(data.get("net_assets_by_configuration", {}).values()):
        ax.scatter([i] * len(run_values), [v / 1000 for v in run_values], color="black", s=12)
    ax.set_xticks(range(len(rows)), labels, rotation=30, ha="right")
    ax.set_ylabel("final net assets (k RMB)")
    ax.set_title("Final net assets per configuration (mean ± std; dots: runs)")
    ax.grid(True, axis="y", alpha=0.3)
    return _save(fig, path)

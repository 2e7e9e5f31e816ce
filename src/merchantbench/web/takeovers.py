"""A run page's takeover curves: when the run has a counterfactual analysis
(`counterfactual.json`, `merchantbench counterfactual`, docs/counterfactual.md), the curves as an
inline SVG figure (the report's own figure code) and a table of the final net assets by fork
day. A missing or damaged file shows nothing; the seed is never shown."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from markupsafe import Markup

from merchantbench.report.counterfactual import read_counterfactual
from merchantbench.report.plots import takeover_figure


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _curve(curve: Any) -> tuple[str, list[int], list[float], int | None] | None:
    """(label, days, final net assets, onset day) of a well-formed curve, else None."""
    if not isinstance(curve, dict) or not isinstance(curve.get("label"), str):
        return None
    points = curve.get("points")
    if not isinstance(points, list) or not points:
        return None
    days, values = [], []
    for point in points:
        day = point.get("day") if isinstance(point, dict) else None
        value = _number(point.get("final_net_assets")) if isinstance(point, dict) else None
        if isinstance(day, bool) or not isinstance(day, int) or value is None:
            return None
        days.append(day)
        values.append(value)
    onset = curve.get("onset_day")
    return curve["label"][:80], days, values, onset if isinstance(onset, int) else None


def takeover_view(run_dir: Path) -> dict[str, Any] | None:
    """What the run page's "Takeover curves" section shows, or None (no analysis, or one that
    cannot be read)."""
    data = read_counterfactual(run_dir)
    if data is None:
        return None
    curves = [_curve(c) for c in data["curves"]]
    continuing = _number(data.get("continuing"))
    initial = _number(data.get("initial_net_assets"))
    if any(c is None for c in curves) or continuing is None or initial is None:
        return None
    good = [c for c in curves if c is not None]
    days = sorted({d for _, ds, _, _ in good for d in ds})
    lines = {label: (ds, vs) for label, ds, vs, _ in good}
    agent = data.get("agent")
    name = agent[:80] if isinstance(agent, str) else "the agent"
    figure = takeover_figure(lines, continuing, initial, f"takeovers of {name}")
    rows = [
        {"day": day,
         "values": [next((v for d, v in zip(ds, vs, strict=True) if d == day), None)
                    for _, ds, vs, _ in good]}
        for day in days
    ]  # fmt: skip
    return {
        "svg": Markup(figure.svg()),  # every text in it is escaped by report/svg.py
        "policies": [{"label": label, "onset_day": onset} for label, _, _, onset in good],
        "rows": rows,
        "continuing": continuing,
        "every_days": data.get("every_days"),
    }

"""A small SVG chart writer for the figures of one run's report.

A run's figures are lines, steps, stacked bars and reference lines over a day axis: drawn here
as plain SVG text they cost a few milliseconds each and open in any browser or Markdown viewer,
where a plotting library would take two seconds to import and render five figures (the bulk of
`merchantbench run --report` after the year itself). Sweep reports, with richer figures, still
use matplotlib (`sweeps/report_plots.py`).

A `Figure` is one or more `Panel`s stacked on a shared x axis; a panel holds `Line`, `Bars` and
`HLine` marks. Coordinates are data units; the figure maps them to pixels.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path

import numpy as np

FONT = "font-family='DejaVu Sans, Helvetica, Arial, sans-serif'"
WIDTH, PANEL_HEIGHT = 960.0, 340.0
MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 78.0, 190.0, 40.0, 66.0
PANEL_GAP = 14.0
DASHES = {"solid": None, "dashed": "6,4", "dotted": "1.5,3"}


@dataclass
class Line:
    x: np.ndarray
    y: np.ndarray
    colour: str
    width: float = 1.5
    label: str | None = None
    style: str = "solid"
    step: bool = False  # hold each value until the next x ("post" steps)
    markers: bool = False


@dataclass
class Bars:
    left: np.ndarray
    height: np.ndarray
    width: float
    colour: str
    bottom: np.ndarray | None = None
    label: str | None = None
    texts: Sequence[str] | None = None  # a label above each bar


@dataclass
class HLine:
    y: float
    colour: str
    style: str = "dashed"
    width: float = 1.0
    label: str | None = None


Mark = Line | Bars | HLine


@dataclass
class Panel:
    ylabel: str
    marks: list[Mark] = field(default_factory=list)
    ylim: tuple[float, float] | None = None
    yticks: Sequence[float] | None = None
    share: float = 1.0  # relative height
    ygrid: bool = True


@dataclass
class Figure:
    title: str
    panels: list[Panel]
    xlim: tuple[float, float]
    xticks: Sequence[tuple[float, str]] = ()
    xlabel: str = ""
    xgrid: bool = True
    height: float = PANEL_HEIGHT

    def save(self, path: Path) -> Path:
        path.write_text(self.svg(), encoding="utf-8")
        return path

    def svg(self) -> str:
        plot_w = WIDTH - MARGIN_LEFT - MARGIN_RIGHT
        total_share = sum(p.share for p in self.panels)
        room = self.height - MARGIN_TOP - MARGIN_BOTTOM - PANEL_GAP * (len(self.panels) - 1)
        out = [
            f"<svg xmlns='http://www.w3.org/2000/svg' width='{WIDTH:.0f}' "
            f"height='{self.height:.0f}' viewBox='0 0 {WIDTH:.0f} {self.height:.0f}' {FONT} "
            "font-size='12'>",
            f"<rect width='{WIDTH:.0f}' height='{self.height:.0f}' fill='white'/>",
            f"<text x='{MARGIN_LEFT + plot_w / 2:.1f}' y='24' text-anchor='middle' "
            f"font-size='15'>{escape(self.title)}</text>",
        ]
        top, legend = MARGIN_TOP, []
        for i, panel in enumerate(self.panels):
            h = room * panel.share / total_share
            box = _Box(MARGIN_LEFT, top, plot_w, h, self.xlim, _ylim(panel))
            out += _panel(box, panel, self, last=i == len(self.panels) - 1)
            legend += [m for m in panel.marks if m.label]
            top += h + PANEL_GAP
        out += _legend(legend, MARGIN_LEFT + plot_w + 12, MARGIN_TOP)
        out.append("</svg>\n")
        return "\n".join(out)


@dataclass(frozen=True)
class _Box:
    x0: float
    y0: float
    w: float
    h: float
    xlim: tuple[float, float]
    ylim: tuple[float, float]

    def px(self, x: np.ndarray | float) -> np.ndarray:
        lo, hi = self.xlim
        return self.x0 + (np.asarray(x, dtype=float) - lo) / ((hi - lo) or 1.0) * self.w

    def py(self, y: np.ndarray | float) -> np.ndarray:
        lo, hi = self.ylim
        return self.y0 + self.h - (np.asarray(y, dtype=float) - lo) / ((hi - lo) or 1.0) * self.h


def nice_ticks(lo: float, hi: float, count: int = 6) -> list[float]:
    """Round tick values (1, 2, 2.5 or 5 × 10^k apart) covering [lo, hi]."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo] if math.isfinite(lo) else [0.0]
    raw = (hi - lo) / max(count - 1, 1)
    scale = 10 ** math.floor(math.log10(raw))
    step = next(m * scale for m in (1, 2, 2.5, 5, 10) if m * scale >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    ticks, value = [], first
    while value <= hi + step * 1e-9:
        ticks.append(0.0 if abs(value) < step * 1e-9 else value)
        value += step
    return ticks


def _ylim(panel: Panel) -> tuple[float, float]:
    if panel.ylim is not None:
        return panel.ylim
    values: list[float] = []
    for mark in panel.marks:
        if isinstance(mark, Line):
            finite = np.asarray(mark.y, dtype=float)
            finite = finite[np.isfinite(finite)]
            if len(finite):
                values += [float(finite.min()), float(finite.max())]
        elif isinstance(mark, Bars):
            bottom = np.zeros(len(mark.height)) if mark.bottom is None else mark.bottom
            top = np.asarray(bottom, dtype=float) + np.asarray(mark.height, dtype=float)
            if len(top):
                values += [0.0, float(top.max())]
        else:
            values.append(mark.y)
    if not values:
        return 0.0, 1.0
    lo, hi = min(values), max(values)
    if hi == lo:
        lo, hi = lo - 1.0, hi + 1.0
    pad = (hi - lo) * 0.05
    ticks = nice_ticks(lo - pad if lo < 0 or lo - pad > 0 else 0.0, hi + pad)
    return (min(ticks[0], lo), max(ticks[-1], hi))


def _tick_text(value: float) -> str:
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:g}"


def _panel(box: _Box, panel: Panel, fig: Figure, last: bool) -> list[str]:
    out = [f"<g><rect x='{box.x0:.1f}' y='{box.y0:.1f}' width='{box.w:.1f}' height='{box.h:.1f}' "
           "fill='none' stroke='#444' stroke-width='0.8'/>"]  # fmt: skip
    yticks = panel.yticks if panel.yticks is not None else nice_ticks(*box.ylim)
    for value in yticks:
        if not box.ylim[0] <= value <= box.ylim[1]:
            continue
        y = float(box.py(value))
        if panel.ygrid:
            out.append(f"<line x1='{box.x0:.1f}' x2='{box.x0 + box.w:.1f}' y1='{y:.1f}' "
                       f"y2='{y:.1f}' stroke='#ddd' stroke-width='0.6'/>")  # fmt: skip
        out.append(f"<text x='{box.x0 - 6:.1f}' y='{y + 4:.1f}' text-anchor='end'>"
                   f"{_tick_text(value)}</text>")  # fmt: skip
    for at, label in fig.xticks:
        if not fig.xlim[0] <= at <= fig.xlim[1]:
            continue
        x = float(box.px(at))
        if fig.xgrid:
            out.append(f"<line x1='{x:.1f}' x2='{x:.1f}' y1='{box.y0:.1f}' "
                       f"y2='{box.y0 + box.h:.1f}' stroke='#ddd' stroke-width='0.6'/>")  # fmt: skip
        if last:
            lines = label.split("\n")
            spans = "".join(
                f"<tspan x='{x:.1f}' dy='{0 if k == 0 else 14}'>{escape(t)}</tspan>"
                for k, t in enumerate(lines)
            )
            out.append(f"<text y='{box.y0 + box.h + 16:.1f}' text-anchor='middle'>{spans}</text>")
    mid = box.y0 + box.h / 2
    out.append(f"<text transform='translate({box.x0 - 58:.1f},{mid:.1f}) rotate(-90)' "
               f"text-anchor='middle'>{escape(panel.ylabel)}</text>")  # fmt: skip
    if last and fig.xlabel:
        out.append(f"<text x='{box.x0 + box.w / 2:.1f}' y='{box.y0 + box.h + 50:.1f}' "
                   f"text-anchor='middle'>{escape(fig.xlabel)}</text>")  # fmt: skip
    # Named from what it draws, so that the same figure is the same bytes and two figures
    # inlined in one page (the dashboard) do not share an id.
    clip = "clip" + hashlib.sha1(f"{fig.title}|{box}|{panel.ylabel}".encode()).hexdigest()[:12]
    out.append(f"<clipPath id='{clip}'><rect x='{box.x0:.1f}' y='{box.y0:.1f}' "
               f"width='{box.w:.1f}' height='{box.h:.1f}'/></clipPath>")  # fmt: skip
    out.append(f"<g clip-path='url(#{clip})'>")
    for mark in panel.marks:
        out += _mark(box, mark)
    out.append("</g></g>")
    return out


def _dash(style: str) -> str:
    dash = DASHES.get(style)
    return f" stroke-dasharray='{dash}'" if dash else ""


def _mark(box: _Box, mark: Mark) -> list[str]:
    if isinstance(mark, HLine):
        y = float(box.py(mark.y))
        stroke = f"stroke='{mark.colour}' stroke-width='{mark.width}'{_dash(mark.style)}"
        x0, x1 = box.x0, box.x0 + box.w
        return [f"<line x1='{x0:.1f}' x2='{x1:.1f}' y1='{y:.1f}' y2='{y:.1f}' {stroke}/>"]
    if isinstance(mark, Bars):
        return _bars(box, mark)
    return _line(box, mark)


def _line(box: _Box, mark: Line) -> list[str]:
    x, y = np.asarray(mark.x, dtype=float), np.asarray(mark.y, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    if not len(x):
        return []
    if mark.step:  # hold each value until the next x
        x, y = np.repeat(x, 2)[1:], np.repeat(y, 2)[:-1]
    px, py = np.round(box.px(x), 1), np.round(box.py(y), 1)
    px, py = _thin(px, py)
    points = " ".join(f"{a:g},{b:g}" for a, b in zip(px.tolist(), py.tolist(), strict=True))
    out = [f"<polyline fill='none' stroke='{mark.colour}' stroke-width='{mark.width}' "
           f"stroke-linejoin='round'{_dash(mark.style)} points='{points}'/>"]  # fmt: skip
    if mark.markers:
        out += [f"<circle cx='{a:g}' cy='{b:g}' r='2.2' fill='{mark.colour}'/>"
                for a, b in zip(px.tolist(), py.tolist(), strict=True)]  # fmt: skip
    return out


def _thin(px: np.ndarray, py: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Drop points that change nothing drawn: inner points of a run of equal pixel heights,
    and repeats of one pixel column at the same height (an hourly year is 8,760 points on
    ~700 pixels)."""
    if len(px) < 3:
        return px, py
    same_prev = np.r_[False, py[1:] == py[:-1]]
    same_next = np.r_[py[:-1] == py[1:], False]
    keep = ~(same_prev & same_next)
    px, py = px[keep], py[keep]
    column = np.r_[True, (px[1:] != px[:-1]) | (py[1:] != py[:-1])]
    return px[column], py[column]


def _bars(box: _Box, mark: Bars) -> list[str]:
    left = np.asarray(mark.left, dtype=float)
    height = np.asarray(mark.height, dtype=float)
    bottom = np.zeros(len(left)) if mark.bottom is None else np.asarray(mark.bottom, dtype=float)
    x0, x1 = box.px(left), box.px(left + mark.width)
    y0, y1 = box.py(bottom + height), box.py(bottom)
    out = []
    for k in range(len(left)):
        if height[k] <= 0:
            continue
        out.append(f"<rect x='{x0[k]:.1f}' y='{y0[k]:.1f}' width='{x1[k] - x0[k]:.1f}' "
                   f"height='{y1[k] - y0[k]:.1f}' fill='{mark.colour}'/>")  # fmt: skip
    for k, text in enumerate(mark.texts or ()):
        out.append(f"<text x='{(x0[k] + x1[k]) / 2:.1f}' y='{y0[k] - 4:.1f}' "
                   f"text-anchor='middle' font-size='10'>{escape(text)}</text>")  # fmt: skip
    return out


def _legend(marks: list[Mark], x: float, y: float) -> list[str]:
    out = []
    for k, mark in enumerate(marks):
        row = y + 8 + k * 18
        label = escape(mark.label or "")
        if isinstance(mark, Bars):
            out.append(f"<rect x='{x:.1f}' y='{row - 6:.1f}' width='18' height='10' "
                       f"fill='{mark.colour}'/>")  # fmt: skip
        else:
            out.append(f"<line x1='{x:.1f}' x2='{x + 18:.1f}' y1='{row:.1f}' y2='{row:.1f}' "
                       f"stroke='{mark.colour}' stroke-width='{max(mark.width, 1.5)}'"
                       f"{_dash(mark.style)}/>")  # fmt: skip
        out.append(f"<text x='{x + 24:.1f}' y='{row + 4:.1f}' font-size='11'>{label}</text>")
    return out

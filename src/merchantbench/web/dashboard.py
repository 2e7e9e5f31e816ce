"""The read-only dashboard of run records at `/`: runs and sweeps with their Table-1 metrics, a
run's charts and trace by window, a sweep's leaderboard, live progress of running runs.

    GET /                        every run under the runs root (sweeps: a leaderboard per
                                 setting, never pooling settings, with its provenance)
    GET /runs/view?path=REL      one run: metrics, charts, trace viewer
    GET /runs/trace?path=REL&window=W   one window: observation, calls and their answers,
                                        model calls (JSON, for the viewer; web/windows.py)
    GET /runs/progress           progress of every run (JSON, polled by the pages)

It only reads files; nothing is re-run. The seed is not shown (a sealed run's stays sealed).
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import HTMLResponse

from merchantbench.metrics.table1 import TABLE1_KEYS
from merchantbench.record.schema import METRICS_FILE, RUN_FILE
from merchantbench.web.markets import list_markets
from merchantbench.web.pages import templates
from merchantbench.web.records import (
    inside,
    is_sweep,
    leaderboards,
    list_runs,
    read_json_or_empty,
    run_row,
    window_series,
)
from merchantbench.web.takeovers import takeover_view
from merchantbench.web.windows import damaged_trace, window_view, windows_recorded

router = APIRouter(responses={404: {"description": "no run records here, or none at that path"}})
LABELS = {
    "final_net_assets": "net assets (RMB)",
    "gmv": "GMV (RMB)",
    "net_profit_margin": "NPM",
    "orders": "orders",
    "swr": "SWR",
    "tool_calls": "tool calls",
    "fines": "fines (RMB)",
    "avg_store_rating": "avg rating",
    "anomaly_rate": "anomaly rate",
    "avg_active_listings": "avg listings",
}
HIDDEN_KEYS = ("seed",)


def _root(request: Request) -> Path:
    root: Path | None = getattr(request.app.state, "runs_root", None)
    if root is None:
        raise HTTPException(404, "this server shows no run records")
    return root


def _run_dir(request: Request, path: str) -> Path:
    run_dir = inside(_root(request), path)
    if run_dir is None:
        raise HTTPException(404, "no run record at that path")
    return run_dir


@router.get("/", response_class=HTMLResponse)
def index(request: Request) -> HTMLResponse:
    root = _root(request)
    runs = list_runs(root)
    left_out: list[str] = []
    context = {
        "runs": runs,
        "keys": TABLE1_KEYS,
        "labels": LABELS,
        "boards": leaderboards(root, left_out) if is_sweep(root, runs) else [],
        "left_out": left_out,
        "root_name": root.name,
        "markets": list_markets(root),
    }
    return templates.TemplateResponse(request, "dashboard.html", context)


@router.get("/runs/view", response_class=HTMLResponse)
def run_page(request: Request, path: str = Query(max_length=1000)) -> HTMLResponse:
    root = _root(request)
    run_dir = _run_dir(request, path)
    row = run_row(root, run_dir)
    meta = _meta(run_dir)
    hours = int(meta.get("scenario_config", {}).get("clock", {}).get("hours_per_window", 12))
    context = {
        "run": row,
        "keys": TABLE1_KEYS,
        "labels": LABELS,
        "series": window_series(run_dir, row.windows_done or row.windows_total, hours),
        "settings": (meta.get("agent") or {}).get("settings", {}),
        "windows": max(windows_recorded(run_dir), 1),
        "diagnosis": _diagnosis(run_dir),
        "takeovers": takeover_view(run_dir),
        "damaged": damaged_trace(run_dir),
    }
    return templates.TemplateResponse(request, "run.html", context)


@router.get("/runs/trace")
def run_trace(
    request: Request, path: str = Query(max_length=1000), window: int = Query(ge=0, le=100_000)
) -> dict[str, Any]:
    return window_view(_run_dir(request, path), window)


@router.get("/runs/progress")
def progress(request: Request) -> list[dict[str, Any]]:
    return [
        {k: v for k, v in asdict(r).items() if k != "metrics"} for r in list_runs(_root(request))
    ]


def _diagnosis(run_dir: Path) -> list[dict[str, Any]]:
    """The failure-mode detectors of a finished run's `metrics.json` (docs/diagnosis.md), as
    rows of name, flagged and onset day; none for a running run or older metrics."""
    found = read_json_or_empty(run_dir / METRICS_FILE).get("diagnosis")
    if not isinstance(found, dict):
        return []
    return [
        {"name": name.replace("_", " "), "flagged": bool(d.get("flagged")),
         "onset_day": d.get("onset_day")}
        for name, d in found.items() if isinstance(d, dict)
    ]  # fmt: skip


def _meta(run_dir: Path) -> dict[str, Any]:
    meta = read_json_or_empty(run_dir / RUN_FILE)
    return {k: v for k, v in meta.items() if k not in HIDDEN_KEYS}

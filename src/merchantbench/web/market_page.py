"""The dashboard's pages of markets with several merchants (arena records, docs/arena.md):

    GET /markets/view?path=REL       one market: its merchants side by side (net assets, rating
                                     and orders over time, shares of orders and GMV, contested
                                     products), each linking to its run page
    GET /markets/progress?path=REL   how far a market has got (JSON, polled while it runs)

Read-only, like the rest of the dashboard; the seed is not shown.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import HTMLResponse

from merchantbench.record.arena import ArenaError, read_arena
from merchantbench.web.markets import inside_market, market_row, market_view
from merchantbench.web.pages import templates

router = APIRouter(responses={404: {"description": "no market record at that path"}})


def _market_dir(request: Request, path: str) -> tuple[Path, Path]:
    root: Path | None = getattr(request.app.state, "runs_root", None)
    found = None if root is None else inside_market(root, path)
    if root is None or found is None:
        raise HTTPException(404, "no market record at that path")
    return root, found


@router.get("/markets/view", response_class=HTMLResponse)
def market_page(request: Request, path: str = Query(max_length=1000)) -> HTMLResponse:
    root, arena_dir = _market_dir(request, path)
    try:
        view = market_view(root, arena_dir)
    except ArenaError as exc:
        raise HTTPException(404, str(exc)) from None
    series = {m["id"]: m["series"] for m in view["merchants"]}
    return templates.TemplateResponse(request, "market.html", {**view, "series": series})


@router.get("/markets/progress")
def market_progress(request: Request, path: str = Query(max_length=1000)) -> dict[str, Any]:
    root, arena_dir = _market_dir(request, path)
    try:
        row = market_row(root, arena_dir, read_arena(arena_dir))
    except ArenaError as exc:
        raise HTTPException(404, str(exc)) from None
    found = asdict(row)
    return {k: found[k] for k in ("path", "status", "windows_done", "windows_total")}

"""The operator's view of a study: one row per participant, from the stores' own files.

    GET /study/{operator token}          the page (refreshes itself every 15 s)
    GET /study/{operator token}/data     the same rows as JSON

Each row: participant, window and day, net assets, rating and stars, last activity, active time
(seconds the page was visible and in use, each report capped: `web.store.ACTIVITY_REPORT_MAX`,
idle beyond the page's two minutes not counted, never more than the wall time that passed: a
report counts only the span no earlier report covered), paused, finished. A store nobody has
opened is read from its files without opening it (`not opened`). The operator token lives in the
directory's `operator.json` (mode 0600), apart from the participants' tokens; a wrong one
answers 404.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse

from merchantbench.web.pages import templates
from merchantbench.web.room import PlayRoom

router = APIRouter(prefix="/study", responses={404: {"description": "no such study"}})


def _room(request: Request, token: str) -> PlayRoom:
    room: PlayRoom | None = getattr(request.app.state, "play_room", None)
    if room is None or len(token) > 64 or not room.is_operator(token):
        raise HTTPException(404, "no such study: check your link")
    return room


def _when(seconds: float | None) -> str:
    if seconds is None:
        return "never"
    return dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


@router.get("/{token}/data")
def data(request: Request, token: str) -> dict[str, Any]:
    return {"participants": _room(request, token).overview()}


@router.get("/{token}", response_class=HTMLResponse)
def page(request: Request, token: str) -> HTMLResponse:
    rows = _room(request, token).overview()
    for row in rows:
        row["last_activity_text"] = _when(row["last_activity"])
        minutes, seconds = divmod(int(row["active_seconds"]), 60)
        row["active_text"] = f"{minutes // 60} h {minutes % 60:02d} min {seconds:02d} s"
    return templates.TemplateResponse(request, "study.html", {"rows": rows})

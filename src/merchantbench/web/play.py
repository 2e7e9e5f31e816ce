"""The playground's routes: a participant's page and the JSON it talks to.

    GET  /play/{token}                 the page (server-rendered)
    GET  /play/{token}/state           clock, store status, observation, charts' numbers
    POST /play/{token}/call/{tool}     one tool call through the agent surface (header
                                       `X-Window`: the window the action was made in)
    POST /play/{token}/forward         end windows until something needs the person (body:
                                       `triggers`, `most`; header `X-Window`)
    POST /play/{token}/activity        the page was in use for `seconds` (the study view's
                                       active time)
    POST /play/{token}/pause           save and come back later
    POST /play/{token}/resume          back at the store

A wrong token answers 404 and learns nothing. Every JSON answer says how long the server worked
on it (`Server-Timing: app;dur=MS`, what the browser's resource timing shows); a closed window
is checkpointed right after its answer has gone out (`PlayStore.settle`). Answers carry only
what the agent surface gives (tool results, the observation, the store status, the brief, the
schemas) and, in the page's config, which tools change the store (`web.forms.page_config`); the
seed and the run's files stay on the server.
"""

from __future__ import annotations

import time
from typing import Annotated, Any

from fastapi import APIRouter, Body, Header, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse
from starlette.background import BackgroundTask

from merchantbench.scenario import Scenario
from merchantbench.web.forms import page_config, panel_forms
from merchantbench.web.pages import templates
from merchantbench.web.room import PlayRoom, StoreDamaged
from merchantbench.web.store import FORWARD_MAX, PlayStore

# In the OpenAPI document the web app builds (not published; the tests fuzz the routes with it).
ANSWERS: dict[int | str, dict[str, Any]] = {
    400: {"description": "the body is not JSON"},
    404: {"description": "no such store"},
    409: {"description": "the store's record cannot be opened (a damaged file); says why"},
    413: {"description": "the body is over the server's limit"},
}
router = APIRouter(prefix="/play", responses=ANSWERS)


def _store(request: Request, token: str) -> PlayStore:
    room: PlayRoom | None = getattr(request.app.state, "play_room", None)
    try:
        store = room.store(token) if room is not None and len(token) <= 64 else None
    except StoreDamaged as exc:
        raise HTTPException(409, str(exc)) from None
    if store is None:
        raise HTTPException(404, "no such store: check your link")
    return store


FINE_WORDS = {"insufficient_balance_fen": "not procured (balance too low)",
              "return_refund_fen": "return and refund", "late_fen": "late shipment"}  # fmt: skip


def rules_config(scenario: Scenario) -> dict[str, Any]:
    """The rules the tour states (the brief states them too): each fine, the late rule, the
    starting deposit, in RMB."""
    fines = scenario.orders.fines
    return {
        "fines": {
            FINE_WORDS.get(name, name.removesuffix("_fen").replace("_", " ")): getattr(fines, name)
            / 100
            for name in type(fines).model_fields
            if getattr(fines, name)
        },
        "late_after_hours": scenario.orders.late_after_hours,
        "deposit": scenario.money.initial_deposit_fen / 100,
    }


def _answer(body: Any, started: float, after: BackgroundTask | None = None) -> JSONResponse:
    """A JSON answer with the server's time on it (`Server-Timing`), then `after`."""
    ms = 1000 * (time.perf_counter() - started)
    headers = {"Server-Timing": f"app;dur={ms:.1f}"}
    return JSONResponse(body, headers=headers, background=after)


@router.get("/{token}", response_class=HTMLResponse)
def page(request: Request, token: str) -> HTMLResponse:
    store = _store(request, token)
    state = store.state()
    config = {
        "token": token,
        "window": state["store"]["window"],
        "forward_max": FORWARD_MAX,
        **page_config(store.session.registry, store.session.scenario),
        **rules_config(store.session.scenario),
    }
    context = {
        "panels": panel_forms(store.tool_schemas()),
        "brief": store.brief(),
        "state": state,
        "config": config,
    }
    return templates.TemplateResponse(request, "play.html", context)


@router.get("/{token}/state")
def state(request: Request, token: str) -> JSONResponse:
    started = time.perf_counter()
    return _answer(_store(request, token).state(), started)


@router.post("/{token}/call/{tool}")
def call(
    request: Request,
    token: str,
    tool: str,
    arguments: Annotated[dict[str, Any] | None, Body()] = None,
    idempotency_key: Annotated[str | None, Header(max_length=200)] = None,
    x_window: Annotated[int | None, Header(ge=0, le=1_000_000)] = None,
) -> JSONResponse:
    started = time.perf_counter()
    store = _store(request, token)
    window = store.surface.window
    result = store.call(tool, arguments or {}, idempotency_key, x_window, settle=False)
    # The charts' history comes along only when the window changed.
    body = {"result": result, "state": store.state(store.surface.window != window)}
    return _answer(body, started, BackgroundTask(store.settle))


@router.post("/{token}/pause")
def pause(request: Request, token: str) -> JSONResponse:
    started = time.perf_counter()
    store = _store(request, token)
    store.pause()
    return _answer(store.state(), started)


@router.post("/{token}/resume")
def resume(request: Request, token: str) -> JSONResponse:
    started = time.perf_counter()
    store = _store(request, token)
    store.resume()
    return _answer(store.state(), started)


@router.post("/{token}/forward")
def forward(
    request: Request,
    token: str,
    triggers: Annotated[dict[str, Any] | None, Body()] = None,
    most: Annotated[int, Body(ge=1, le=FORWARD_MAX)] = FORWARD_MAX,
    x_window: Annotated[int | None, Header(ge=0, le=1_000_000)] = None,
) -> JSONResponse:
    started = time.perf_counter()
    store = _store(request, token)
    result = store.forward(triggers or {}, x_window, most, settle=False)
    body = {"result": result, "state": store.state()}
    return _answer(body, started, BackgroundTask(store.settle))


@router.post("/{token}/activity")
def activity(
    request: Request,
    token: str,
    seconds: Annotated[float, Body(ge=0, le=3600, embed=True)],
) -> dict[str, Any]:
    store = _store(request, token)
    store.note_activity(seconds)
    return store.activity()

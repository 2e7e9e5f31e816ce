"""Our own small JSON API, for people writing new clients: create and list runs (operator), call
one tool, read the observation, end the window, read a run's summary (agent)."""

from __future__ import annotations

import secrets
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Header, Request
from pydantic import BaseModel, ConfigDict, Field

from merchantbench.scenario import PRESETS, ScenarioError, load_scenario
from merchantbench.serve.act import ProtocolError
from merchantbench.serve.auth import require_admin, require_run
from merchantbench.serve.external import PROTOCOL
from merchantbench.serve.fastjson import JSONResponse, fast_json
from merchantbench.serve.host import RunHost
from merchantbench.serve.registry import Hosted, RunRegistry, new_run_id, run_env
from merchantbench.serve.settings import HostSettings, gone
from merchantbench.tools.toolset import END_OF_STEP

__all__ = ["CreateRun", "router"]

router = APIRouter(prefix="/api", tags=["json api"])
Run = Annotated[Hosted, Depends(require_run)]
Admin = [Depends(require_admin)]
MAX_SEED = 2**63 - 1
GONE: dict[int | str, dict[str, Any]] = {410: {"description": "the run is over"}}
CLOSED: dict[int | str, dict[str, Any]] = {
    **GONE,
    425: {"description": "no window is open (the run is paused)"},
}


class CreateRun(BaseModel):
    """A new run: a scenario preset, a seed (or `sealed`: the server draws one and never shows
    it), optionally fewer days, and how the server hosts it."""

    model_config = ConfigDict(extra="forbid")
    scenario: str = Field("smoke", description=f"preset: {', '.join(PRESETS)}")
    seed: int | None = Field(None, ge=0, le=MAX_SEED)
    sealed: bool = False
    days: int | None = Field(None, ge=1, le=365)
    label: str = Field("", max_length=80)
    agent_id: str = Field("agent_0", min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")
    turns_per_window: int | None = Field(None, ge=1, le=10_000)
    window_seconds: float | None = Field(None, gt=0, le=86_400)
    paused: bool = False


def _registry(request: Request) -> RunRegistry:
    registry: RunRegistry = request.app.state.registry
    return registry


def _base_url(request: Request) -> str:
    return str(request.base_url).rstrip("/")


def _seed(body: CreateRun) -> int:
    if body.sealed and body.seed is not None:
        raise ProtocolError(400, "invalid_run", "give a seed or ask for a sealed one, not both")
    if body.sealed:
        return secrets.randbelow(2**32)
    return 1 if body.seed is None else body.seed


@router.get("/health")
async def health() -> dict[str, Any]:
    """No token needed: is the server up, and which protocol it speaks."""
    return {"ok": True, "protocol": PROTOCOL}


@router.post("/runs", status_code=201, dependencies=Admin)
async def create_run(body: CreateRun, request: Request) -> dict[str, Any]:
    """Create a run (operator). The answer carries the agent's token and environment."""
    seed = _seed(body)
    overrides = [f"clock.days={body.days}"] if body.days is not None else []
    try:
        scenario = load_scenario(body.scenario, overrides=overrides)
    except ScenarioError as exc:
        raise ProtocolError(400, "invalid_scenario", str(exc)) from None
    settings = HostSettings(
        run_id=new_run_id(body.label or body.scenario),
        agent_id=body.agent_id,
        label=body.label,
        turns_per_window=body.turns_per_window or scenario.clock.calls_per_window,
        window_seconds=body.window_seconds,
        paused=body.paused,
        sealed=body.sealed,
    )
    host, token = await _registry(request).create(scenario, seed, settings)
    return {**host.summary(), "agent_token": token, "env": run_env(_base_url(request), host, token)}


@router.get("/runs", dependencies=Admin)
async def list_runs(request: Request) -> list[dict[str, Any]]:
    """Every run of the server (operator); a run found damaged at start is listed with
    `status: "damaged"` and the `reason`, and is not served."""
    registry = _registry(request)
    damaged = [
        {"run_id": run_id, "status": "damaged", "over": None, "reason": reason}
        for run_id, reason in registry.damaged.items()
    ]
    return [host.summary() for host in registry.hosts.values()] + damaged


@router.get("/runs/{run_id}")
async def summary(host: Run) -> dict[str, Any]:
    """Where the run stands; its metrics once it is over."""
    if isinstance(host, RunHost):
        async with host.cond:
            return host.summary()
    return host.summary()


@router.get("/runs/{run_id}/env", dependencies=Admin)
async def agent_env(host: Run, request: Request) -> dict[str, str]:
    """The environment an agent of this run needs, token included (operator)."""
    return run_env(_base_url(request), host, _registry(request).agent_token(host.run_id))


@router.get("/runs/{run_id}/observation", responses=GONE)
async def observation(host: Run) -> dict[str, Any]:
    """The open window's observation text and clock (no waiting)."""
    if not isinstance(host, RunHost):
        raise gone()
    async with host.cond:  # not while a window is being simulated in a worker thread
        if host.finished:
            raise gone()
        return {
            "text": host.surface.observation(),
            "tick": host.tick(),
            "status": host.status,
            "store": host.surface.status().to_json(),
        }


@router.get("/runs/{run_id}/store", responses=GONE)
async def store_status(host: Run) -> dict[str, Any]:
    """The store status: the public numbers of the open window (clock, accounts, net assets,
    rating, listings, orders, calls left; `merchantbench.surface.StoreStatus`), or where the
    store ended (`over: true`) once the run is over. Costs no call of the window."""
    if not isinstance(host, RunHost):
        raise gone()
    async with host.cond:
        return host.surface.status().to_json()


@router.post("/runs/{run_id}/tools/{tool}", responses=CLOSED)
async def call_tool(
    tool: str,
    host: Run,
    arguments: Annotated[dict[str, Any] | None, Body()] = None,
    idempotency_key: Annotated[str | None, Header(max_length=200)] = None,
) -> JSONResponse:
    """Call one tool with a JSON object of arguments; the answer is the tool's own JSON (a
    refusal is `{"ok": false, "error": ...}` with HTTP 200, as the agent would see it)."""
    return fast_json(await host.call_tool(tool, arguments or {}, idempotency_key))


@router.post("/runs/{run_id}/end-window", responses=CLOSED)
async def end_window(host: Run) -> dict[str, Any]:
    """Close the open window (`end_of_step`); the next one opens at once."""
    result = await host.call_tool(END_OF_STEP, {}, None)
    if isinstance(host, RunHost):
        async with host.cond:  # not while another request simulates a window
            return {
                "result": result,
                "tick": host.tick(),
                "status": host.status,
                "store": host.surface.status().to_json(),
            }
    return {"result": result}


@router.post("/runs/{run_id}/pause", dependencies=Admin, responses=GONE)
async def pause(host: Run) -> dict[str, Any]:
    """Stop opening windows (operator): observation long-polls wait, acts answer 425."""
    await host.set_paused(True)
    return host.summary()


@router.post("/runs/{run_id}/resume", dependencies=Admin, responses=GONE)
async def resume(host: Run) -> dict[str, Any]:
    """Open windows again (operator); the wall-clock limit restarts."""
    await host.set_paused(False)
    return host.summary()

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
from merchantbench.serve.host import Host
from merchantbench.serve.protocol import agent_side
from merchantbench.serve.registry import Hosted, RunRegistry, agent_environment, new_run_id
from merchantbench.serve.settings import HostSettings
from merchantbench.sim.marketplace import MERCHANT_ID
from merchantbench.tools.toolset import END_OF_STEP
from merchantbench.tools.window_bound import WINDOW_ENDED, WINDOW_HEADER

__all__ = ["CreateRun", "router"]

router = APIRouter(prefix="/api", tags=["json api"])
Run = Annotated[Hosted, Depends(require_run)]
Admin = [Depends(require_admin)]
# The window (0-based) a write was made for (tools/window_bound.py); absent: not bound.
WindowHeader = Annotated[int | None, Header(alias=WINDOW_HEADER, ge=0, le=1_000_000)]
MAX_SEED = 2**63 - 1
MAX_MERCHANTS = 16
GONE: dict[int | str, dict[str, Any]] = {410: {"description": "the run is over"}}
CLOSED: dict[int | str, dict[str, Any]] = {
    **GONE,
    425: {"description": "no window is open (the run is paused)"},
}
WINDOW_BOUND: dict[int | str, dict[str, Any]] = {
    **CLOSED,
    409: {"description": "`X-Window` names a window that has ended: nothing was done"},
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
    agents: list[str] | None = Field(
        None,
        min_length=1,
        max_length=MAX_MERCHANTS,
        description="a market of several merchants: one agent id each (lower case letters, "
        "digits, '-', '_'; at most 32); each gets its own token. `agent_id` is then not used",
    )


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
    """Create a run (operator). The answer carries the agent's token and environment; for a
    market (`agents`), each merchant's (give each agent its own, and nothing of the others')."""
    seed = _seed(body)
    overrides = [f"clock.days={body.days}"] if body.days is not None else []
    try:
        scenario = load_scenario(body.scenario, overrides=overrides)
    except ScenarioError as exc:
        raise ProtocolError(400, "invalid_scenario", str(exc)) from None
    agents = None if body.agents is None else _market_agents(body.agents)
    settings = HostSettings(
        run_id=new_run_id(body.label or body.scenario),
        agent_id=body.agent_id,
        label=body.label,
        turns_per_window=body.turns_per_window or scenario.clock.calls_per_window,
        window_seconds=body.window_seconds,
        paused=body.paused,
        sealed=body.sealed,
        agents=agents,
    )
    host, tokens = await _registry(request).create(scenario, seed, settings)
    base, run_id = _base_url(request), host.run_id
    if agents is None:
        token = tokens[body.agent_id]
        return {**host.summary(), "agent_token": token,
                "env": agent_environment(base, run_id, body.agent_id, token)}  # fmt: skip
    return {
        **host.summary(),
        "agent_tokens": tokens,
        "envs": {a: agent_environment(base, run_id, a, tokens[a]) for a in agents},
    }


def _market_agents(agents: list[str]) -> list[str]:
    """A market's agent ids, each the id of the merchant it plays."""
    bad = [a for a in agents if not MERCHANT_ID.fullmatch(a)]
    if bad or len(set(agents)) != len(agents):
        why = f"agent id {bad[0]!r} is not allowed" if bad else "an agent id is given twice"
        raise ProtocolError(400, "invalid_run", f"{why}: ids are lower case letters, digits, "
                            "'-' and '_', at most 32, each once")  # fmt: skip
    return list(agents)


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
async def summary(host: Run, request: Request) -> dict[str, Any]:
    """Where the run stands; its metrics once it is over. A market's merchant sees itself
    only; the operator sees every merchant."""
    if isinstance(host, Host):
        async with host.cond:
            return host.summary(request.state.viewer)
    return host.summary(request.state.viewer)


@router.get("/runs/{run_id}/env", dependencies=Admin)
async def agent_env(host: Run, request: Request) -> dict[str, Any]:
    """The environment an agent of this run needs, token included (operator); for a market,
    `agents`: each merchant's."""
    registry, base, run_id = _registry(request), _base_url(request), host.run_id
    envs = {
        a: agent_environment(base, run_id, a, registry.agent_token(run_id, a))
        for a in host.settings.merchants
    }
    return {"agents": envs} if host.settings.market else envs[host.settings.agent_id]


def _single(host: Hosted) -> str:
    """A store's agent, for the run-level routes; a market's need an agent id (404)."""
    if host.settings.market:
        raise ProtocolError(
            404, "unknown_agent",
            "this run is a market: use /api/runs/{run}/agents/{agent}/... with your agent id",
        )  # fmt: skip
    return host.settings.agent_id


async def _end_window(host: Hosted, agent_id: str, made_for: int | None) -> JSONResponse:
    result = await host.call_tool(agent_id, END_OF_STEP, {}, None, made_for)
    return _tool_answer({"result": result, **await host.view(agent_id)}, result)


def _tool_answer(body: dict[str, Any], result: dict[str, Any] | None = None) -> JSONResponse:
    """A tool's answer: HTTP 200, or 409 for a write refused because its window ended."""
    result = body if result is None else result
    error = result.get("error") if result.get("ok") is False else None
    ended = isinstance(error, dict) and error.get("code") == WINDOW_ENDED
    return fast_json(body, 409 if ended else 200)


@router.get("/runs/{run_id}/observation", responses=GONE)
async def observation(host: Run) -> dict[str, Any]:
    """The open window's observation text and clock (no waiting)."""
    return await host.view(_single(host), observation=True)


@router.get("/runs/{run_id}/store", responses=GONE)
async def store_status(host: Run) -> dict[str, Any]:
    """The store status: the public numbers of the open window (clock, accounts, net assets,
    rating, listings, orders, calls left; `merchantbench.surface.StoreStatus`), or where the
    store ended (`over: true`) once the run is over. Costs no call of the window."""
    return await host.store_status(_single(host))


@router.post("/runs/{run_id}/tools/{tool}", responses=WINDOW_BOUND)
async def call_tool(
    tool: str,
    host: Run,
    arguments: Annotated[dict[str, Any] | None, Body()] = None,
    idempotency_key: Annotated[str | None, Header(max_length=200)] = None,
    x_window: WindowHeader = None,
) -> JSONResponse:
    """Call one tool with a JSON object of arguments; the answer is the tool's own JSON (a
    refusal is `{"ok": false, "error": ...}` with HTTP 200, as the agent would see it). With
    `X-Window` (the 0-based window the write was made for), a write for a window that has
    ended is refused, changing nothing: HTTP 409, error code `window_ended`."""
    result = await host.call_tool(_single(host), tool, arguments or {}, idempotency_key, x_window)
    return _tool_answer(result)


@router.post("/runs/{run_id}/end-window", responses=WINDOW_BOUND)
async def end_window(host: Run, x_window: WindowHeader = None) -> JSONResponse:
    """Close the open window (`end_of_step`); the next one opens at once (`X-Window`: as for
    a tool call)."""
    return await _end_window(host, _single(host), x_window)


# --- one agent's JSON API (a market's merchants; a single run's agent too) -----------------------
AGENT = "/runs/{run_id}/agents/{agent_id}"


@router.get(AGENT + "/observation", responses=GONE)
async def agent_observation(agent_id: str, host: Run, request: Request) -> dict[str, Any]:
    """One agent's open window: observation text, clock and store status (no waiting); a
    merchant whose store closed answers 410 `agent_dead`."""
    return await host.view(agent_side(host, agent_id, request), observation=True)


@router.get(AGENT + "/store", responses=GONE)
async def agent_store(agent_id: str, host: Run, request: Request) -> dict[str, Any]:
    """One agent's store status (free; where the store ended once it is over)."""
    return await host.store_status(agent_side(host, agent_id, request))


@router.post(AGENT + "/tools/{tool}", responses=WINDOW_BOUND)
async def agent_call_tool(
    agent_id: str,
    tool: str,
    host: Run,
    request: Request,
    arguments: Annotated[dict[str, Any] | None, Body()] = None,
    idempotency_key: Annotated[str | None, Header(max_length=200)] = None,
    x_window: WindowHeader = None,
) -> JSONResponse:
    """One tool call of one agent (as `POST /api/runs/{run}/tools/{tool}`, `X-Window` too)."""
    agent = agent_side(host, agent_id, request)
    return _tool_answer(
        await host.call_tool(agent, tool, arguments or {}, idempotency_key, x_window)
    )


@router.post(AGENT + "/end-window", responses=WINDOW_BOUND)
async def agent_end_window(
    agent_id: str, host: Run, request: Request, x_window: WindowHeader = None
) -> JSONResponse:
    """Close one agent's window. In a market the hours run when every merchant still trading
    has closed it; until then this merchant's calls answer 425 `window_closed`."""
    return await _end_window(host, agent_side(host, agent_id, request), x_window)


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

"""The public MerchantBench artifact's agent protocol, so an agent written for it (with its SDK
`merchantbench_tool_client.py`) plays against this server unchanged. See docs/http.md."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from merchantbench.limits import ServerLimits, json_size, nests_deeper, too_large
from merchantbench.serve.act import ENV_ORIGIN, ProtocolError
from merchantbench.serve.auth import require_run, viewer_may_be
from merchantbench.serve.external import PROTOCOL
from merchantbench.serve.fastjson import JSONResponse, fast_json
from merchantbench.serve.host import Host
from merchantbench.serve.registry import Hosted
from merchantbench.serve.settings import gone
from merchantbench.tools.agent_input import MAX_DEPTH, scrub

__all__ = ["agent_side", "router"]

router = APIRouter(tags=["agent protocol"])
Run = Annotated[Hosted, Depends(require_run)]
MAX_POLL_SECONDS = 300.0


class RegisterBody(BaseModel):
    """Who the agent is; recorded in the run record."""

    model_config = ConfigDict(extra="ignore")
    agent_id: str = Field(min_length=1, max_length=200)
    framework: str = Field("unknown", max_length=200)
    model: str | None = Field(None, max_length=200)
    version: str | None = Field(None, max_length=200)
    prompt_template: str | None = Field(None, max_length=100_000)
    extra: dict[str, Any] = Field(default_factory=dict)


class ActBody(BaseModel):
    """One turn: an OpenAI messages batch; its `merchantbench_env` tool calls are run."""

    model_config = ConfigDict(extra="ignore")
    messages: list[Any] = Field(description="OpenAI-format messages (assistant tool calls run)")
    token_usage: dict[str, Any] | None = None
    context: dict[str, Any] | None = None


class UsageBody(BaseModel):
    """Token usage of a model call outside the turns (e.g. a delayed review)."""

    model_config = ConfigDict(extra="ignore")
    usage_id: str = Field(min_length=1, max_length=200)
    token_usage: dict[str, Any]
    source: str | None = Field(None, max_length=100)
    step: int | None = None
    model: str | None = Field(None, max_length=200)
    provider: str | None = Field(None, max_length=100)
    cost_usd: float | None = None
    cost_status: str | None = Field(None, max_length=100)
    cost_source: str | None = Field(None, max_length=200)


def agent_side(host: Hosted, agent_id: str, request: Request) -> str:
    """The agent id of a request's path, if its token may act as that agent: a store's agent,
    or a market's merchant. A merchant's token reaches its own agent id only (403 for another,
    whether it exists or not: a market's merchants are not told of each other); an agent id the
    run does not have is 404."""
    if host.settings.market:
        viewer_may_be(request, agent_id)
    if agent_id not in host.settings.merchants:
        raise ProtocolError(404, "unknown_agent", f"this run has no agent {agent_id}")
    return agent_id


@router.get("/runs/{run_id}/tools/schema", responses={410: {"description": "the run is over"}})
async def tools_schema(run_id: str, host: Run, request: Request) -> dict[str, Any]:
    """The environment tools (each with its OpenAI schema), their hash and protocol facts; a
    market's (the same tools for every merchant) name the agent id of the token that asks, or
    `<agent_id>` for the operator."""
    if not isinstance(host, Host):
        raise gone()
    settings, viewer = host.settings, request.state.viewer
    agent_id = (viewer or "<agent_id>") if settings.market else settings.agent_id
    channel = host.channels.get(agent_id) or next(iter(host.channels.values()))
    surface, spec = channel.surface, host.life.layout.spec
    scenario, clock = spec.scenario, spec.scenario.clock
    tools = [
        {
            "name": tool["function"]["name"],
            "description": tool["function"]["description"],
            "parameters": tool["function"]["parameters"],
            "openai": tool,
        }
        for tool in surface.tool_schemas()
    ]
    protocol: dict[str, Any] = {
        "name": PROTOCOL,
        "agent_id": agent_id,
        "env_tool_origin": ENV_ORIGIN,
        "windows_total": surface.windows_total,
        "hours_per_window": clock.hours_per_window,
        "calls_per_window": clock.calls_per_window,
        "turns_per_window": settings.turns_per_window,
        "window_seconds": settings.window_seconds,
    }
    if settings.market:
        protocol["merchants"] = len(host.channels)
    return {
        "tools": tools,
        "tool_schema_sha256": surface.tool_schema_sha256(),
        "scenario_id": scenario.name,
        "dataset": {"market": "synthetic" if spec.catalog is None else "catalog"},
        "base_path": f"/runs/{run_id}/agents/{agent_id}/act",
        "protocol": protocol,
    }


@router.post(
    "/runs/{run_id}/agent/register",
    responses={
        400: {"description": "`extra` nests too deep"},
        410: {"description": "the run is over"},
        413: {"description": "`extra` is over the server's limit"},
    },
)
async def register(host: Run, body: RegisterBody, request: Request) -> dict[str, Any]:
    """Say who the agent is (framework, model, version); may be repeated, the last one counts.
    `extra` is kept in the run record: at most the server's `max_extra_bytes` as JSON."""
    agent_id = agent_side(host, body.agent_id, request)
    limits: ServerLimits = request.app.state.limits
    if nests_deeper(body.extra, MAX_DEPTH):
        raise ProtocolError(400, "invalid_extra", f"extra nests deeper than {MAX_DEPTH} levels")
    size = json_size(body.extra)
    if size > limits.max_extra_bytes:
        answer = too_large("extra", size, limits.max_extra_bytes)
        raise ProtocolError(413, answer["error"], answer["message"], limit=answer["limit"])
    return await host.register(agent_id, scrub(body.model_dump()))  # text as it can be written


@router.get(
    "/runs/{run_id}/agents/{agent_id}/observation",
    responses={408: {"description": "no window opened in time: poll again"},
               410: {"description": "the run is over: no window will open again"}},
)  # fmt: skip
async def observation(
    agent_id: str,
    host: Run,
    request: Request,
    timeout: Annotated[float, Query(ge=0, le=MAX_POLL_SECONDS)] = 30.0,
    nowait: Annotated[str | None, Query(max_length=8)] = None,
) -> JSONResponse:
    """Long-poll for the open window: `text`, `tick` (step = hour since the start, day, hour),
    `turn_count`; the first packet also carries the `brief` (the system prompt)."""
    agent = agent_side(host, agent_id, request)
    return fast_json(await host.observation(agent, timeout, nowait in ("1", "true", "yes")))


@router.post(
    "/runs/{run_id}/agents/{agent_id}/act",
    responses={400: {"description": "malformed batch, or end_of_step not last"},
               409: {"description": "a tool call id reused with another call"},
               410: {"description": "the run is over"},
               425: {"description": "X-Agent-Step is stale, or no window is open"},
               429: {"description": "the window's turn cap is reached"}},
)  # fmt: skip
async def act(
    agent_id: str,
    host: Run,
    body: ActBody,
    request: Request,
    x_agent_step: Annotated[str | None, Header(max_length=32)] = None,
) -> JSONResponse:
    """Run the batch's env tool calls in order; returns their results, `step_done` and
    `hook_released` (the window closed with `end_of_step`)."""
    agent = agent_side(host, agent_id, request)
    return fast_json(await host.act(agent, body.messages, body.token_usage, x_agent_step))


@router.post(
    "/runs/{run_id}/agents/{agent_id}/usage",
    responses={
        409: {"description": "a usage_id recorded with other figures"},
        410: {"description": "the run was over when the server picked it up"},
    },
)
async def usage(agent_id: str, host: Run, body: UsageBody, request: Request) -> dict[str, Any]:
    """Record token usage idempotently by `usage_id` (also after the run ended)."""
    agent = agent_side(host, agent_id, request)
    return await host.record_usage(agent, body.model_dump(exclude_none=True))

"""Playing the front-end action script through an MCP client, and the checks every MCP transport
shares (tests only)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
from mcp import Client

from frontend_script import Call, InProcessRun, assert_status_states
from merchantbench.mcp_surface import BRIEF_PROMPT, OBSERVATION_URI, RULES_URI, STORE_URI
from merchantbench.session import Session
from merchantbench.tools.toolset import DECLARED

ADDED_BY_MCP = ("run_over", "observation", "summary")  # what end_of_step gains over MCP
CLIENT_TIMEOUT = 120  # seconds a whole client session may take
T = TypeVar("T")


def run_client(
    server: Any,
    body: Callable[[Client], Awaitable[T]],
    mode: str = "auto",
    timeout: float = CLIENT_TIMEOUT,
) -> T:
    """Connect the official SDK client to `server` (`StdioServerParameters`, a streamable HTTP
    URL, or an in-process server), run `body(client)` within `timeout` seconds, return its
    result. `mode="legacy"` talks the handshake-era protocol."""

    async def main() -> T:
        with anyio.fail_after(timeout):
            async with Client(server, mode=mode) as client:  # type: ignore[arg-type]
                return await body(client)

    return anyio.run(main)


class Transcript:
    """Every response an MCP client received, as JSON."""

    def __init__(self) -> None:
        self.responses: list[Any] = []

    def keep(self, response: Any) -> Any:
        self.responses.append(response.model_dump(mode="json", by_alias=True))
        return response


async def play(client: Any, script: list[list[Call]], transcript: Transcript) -> list[dict]:
    """Call every scripted tool; return each call's structured result."""
    results = []
    for calls in script:
        for tool, args in calls:
            result = transcript.keep(await client.call_tool(tool, args))
            assert json.loads(result.content[0].text) == result.structured_content
            assert result.is_error == (not result.structured_content["ok"])
            results.append(result.structured_content)
    return results


async def read_everything(client: Any, transcript: Transcript) -> dict[str, Any]:
    """The server's instructions, tools, prompt and resources."""
    tools = transcript.keep(await client.list_tools())
    prompts = transcript.keep(await client.list_prompts())
    brief = transcript.keep(await client.get_prompt(BRIEF_PROMPT))
    resources = transcript.keep(await client.list_resources())
    rules = transcript.keep(await client.read_resource(RULES_URI))
    observation = transcript.keep(await client.read_resource(OBSERVATION_URI))
    store = transcript.keep(await client.read_resource(STORE_URI))
    transcript.responses.append(client.instructions)
    return {
        "tools": tools.tools,
        "prompts": [p.name for p in prompts.prompts],
        "brief": brief.messages[0].content.text,
        "resources": sorted(r.uri for r in resources.resources),
        "rules": rules.contents[0].text,
        "observation": observation.contents[0].text,
        "store": store.contents[0],
        "instructions": client.instructions,
    }


def assert_same_as_in_process(results: list[dict], reference: InProcessRun) -> None:
    """The results over MCP are the in-process ones; end_of_step adds what comes next."""
    assert len(results) == len(reference.results)
    windows = iter(reference.observations)
    for got, expected in zip(results, reference.results, strict=True):
        assert {k: v for k, v in got.items() if k not in ADDED_BY_MCP} == expected
        if "run_over" not in got:
            continue
        observation = next(windows)
        if observation is None:
            assert got["run_over"] and "observation" not in got
            assert got["summary"]["ended"] == "completed"
        else:
            assert got == {**expected, "run_over": False, "observation": observation}


def assert_matches_surface(seen: dict[str, Any], reference: InProcessRun) -> None:
    """Tools, prompt and resources say what the in-process surface says (at the start)."""
    surface = reference.session.surface
    functions = [schema["function"] for schema in surface.tool_schemas()]
    assert [(t.name, t.description, t.input_schema) for t in seen["tools"]] == [
        (f["name"], f["description"], f["parameters"]) for f in functions
    ]
    assert len(seen["tools"]) == len(DECLARED.tools())
    assert seen["prompts"] == [BRIEF_PROMPT]
    assert seen["resources"] == sorted([OBSERVATION_URI, RULES_URI, STORE_URI])
    assert seen["rules"] == surface.brief() and seen["brief"].startswith(surface.brief())
    assert seen["instructions"].startswith(surface.brief())
    assert seen["observation"].startswith("Day 1 00:00, Sunday 2025-06-01: window 1 of 28.")
    assert seen["brief"].endswith(seen["observation"])
    # The store resource: the status of the run's first window, as JSON, stating its numbers.
    played = reference.session
    first = Session(played.scenario, played.market, played.seed, played.search_index)
    assert seen["store"].mime_type == "application/json"
    store = json.loads(seen["store"].text)
    assert store == first.surface.status().to_json()
    assert_status_states(store, seen["observation"], 0)

"""The OpenEnv environment, served over OpenEnv's HTTP/WebSocket protocol and driven by OpenEnv's
own MCP tool client through whole episodes: rewards, done, state, errors, and the same play as
the same episode played in process (same change in net assets)."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from requires import need

need("openenv", module=True)

import uvicorn  # noqa: E402
from openenv.core.env_server.mcp_types import CallToolAction  # noqa: E402
from openenv.core.generic_client import GenericEnvClient  # noqa: E402
from openenv.core.mcp_client import MCPToolClient  # noqa: E402

from merchantbench.money import fen  # noqa: E402
from merchantbench.rl.episode import Episode, EpisodeConfig  # noqa: E402
from merchantbench.rl.openenv_env import (  # noqa: E402
    MerchantBenchClient,
    MerchantBenchObservation,
    MerchantBenchToolObservation,
    make_app,
)
from merchantbench.rl.splits import SealedPool, episode_seed  # noqa: E402


@contextmanager
def serving(app: Any) -> Iterator[str]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        for _ in range(1000):  # bounded: 10 s
            if server.started:
                break
            threading.Event().wait(0.01)
        assert server.started
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@pytest.fixture(scope="module")
def pool_file(tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = tmp_path_factory.mktemp("pool") / "pool.json"
    SealedPool.create(path)
    return path


@pytest.fixture(scope="module")
def base_url(pool_file: Any) -> Iterator[str]:
    with serving(make_app("smoke", pool=pool_file)) as url:
        yield url


async def _play(url: str, **reset: Any) -> tuple[list[float], dict[str, Any], Any]:
    async with MerchantBenchClient(base_url=url) as env:
        first = (await env.reset(**reset)).observation
        assert isinstance(first, MerchantBenchObservation)
        assert "THIS EPISODE" in first.brief and first.text.startswith("Day ")
        assert first.store["net_assets"] == 3000.0 and "end_of_step" in first.tool_names
        assert {t.name for t in await env.list_tools()} == set(first.tool_names)
        found = await env.call_tool("search_products", sort="sales_30d", page_size=5)
        items = [{"product_id": r[0], "sale_price": round(r[3] * 1.6, 2)} for r in found["rows"]]
        assert (await env.call_tool("list_product", items=items))["ok"]
        refused = await env.call_tool("adjust_price", items="not a list")
        assert refused["ok"] is False and refused["error"]["code"] == "invalid_argument"
        rewards: list[float] = []
        done = False
        while not done:
            step = await env.step(CallToolAction(tool_name="end_of_step", arguments={}))
            observation = step.observation
            assert isinstance(observation, MerchantBenchToolObservation)
            rewards.append(step.reward or 0.0)
            done = step.done
            assert (observation.observation is None) == done  # the next window's text
        state = await env.state()
        return rewards, state.model_dump(), items


def test_openenv_client_plays_whole_episodes(base_url: str) -> None:
    reset = {"seed": 4, "split": "validation", "length": 3, "start_day": 150}
    rewards, state, items = asyncio.run(_play(base_url, **reset))
    assert state["split"] == "validation" and state["index"] == 4 and state["over"] is True
    # Windows are numbered as the observation text numbers them (the market's windows).
    assert state["first_window"] == 300 and state["window"] == 306 and state["step_count"] >= 9
    change = state["net_assets_change_fen"]
    assert change != 0 and sum(fen(r) for r in rewards) == change
    # The same play in process: the same episode, the same result.
    local = Episode(EpisodeConfig("smoke", length=3, start_day=150), episode_seed("validation", 4))
    local.call("search_products", {"sort": "sales_30d", "page_size": 5})
    local.call("list_product", {"items": items})
    while not local.over:
        local.call("end_of_step")
    assert local.change_fen == change


def test_sealed_test_split_and_bad_resets(base_url: str) -> None:
    rewards, state, _ = asyncio.run(_play(base_url, seed=2, split="test", length=2))
    assert (
        state["split"] == "test" and sum(fen(r) for r in rewards) == state["net_assets_change_fen"]
    )

    async def bad_reset(**kwargs: Any) -> str:
        async with MerchantBenchClient(base_url=base_url) as env:
            with pytest.raises(Exception) as refused:
                await env.reset(**kwargs)
            return str(refused.value)

    assert "passes the market's year" in asyncio.run(bad_reset(start_day=360, length="30d"))
    assert "unknown split" in asyncio.run(bad_reset(split="dev"))


def test_a_server_without_the_pool_refuses_the_test_split() -> None:
    async def reset() -> str:
        async with MerchantBenchClient(base_url=url) as env:
            with pytest.raises(Exception) as refused:
                await env.reset(seed=0, split="test", length=2)
            return str(refused.value)

    with serving(make_app("smoke")) as url:
        assert "sealed" in asyncio.run(reset())


def _local_change(items: list[dict[str, Any]], **reset: Any) -> int:
    """The change in net assets of the same play in process (list `items`, then close windows)."""
    config = EpisodeConfig("smoke", length=reset["length"], start_day=reset["start_day"])
    local = Episode(config, episode_seed(reset["split"], reset["seed"]))
    local.call("list_product", {"items": items})
    while not local.over:
        local.call("end_of_step")
    return local.change_fen


def test_openenv_stock_mcp_tool_client_plays_an_episode(base_url: str) -> None:
    """OpenEnv's own MCPToolClient, unchanged: reset (which once failed on a `tools` field of
    names), list_tools, call_tool and step, with rewards equal to the in-process play."""
    reset = {"seed": 4, "split": "train", "length": 3, "start_day": 150}

    async def play() -> tuple[list[float], list[dict[str, Any]], str]:
        async with MCPToolClient(base_url=base_url) as env:
            first = await env.reset(**reset)
            assert first.done is False
            names = {t.name for t in await env.list_tools(use_cache=False)}
            assert {"end_of_step", "get_observation", "list_product"} <= names
            text = (await env.call_tool("get_observation"))["observation"]
            found = await env.call_tool("search_products", sort="sales_30d", page_size=5)
            items = [
                {"product_id": r[0], "sale_price": round(r[3] * 1.6, 2)} for r in found["rows"]
            ]
            assert (await env.call_tool("list_product", items=items))["ok"]
            rewards, done = [], False
            while not done:
                step = await env.step(CallToolAction(tool_name="end_of_step", arguments={}))
                rewards.append(step.reward or 0.0)
                done = step.done
            return rewards, items, text

    rewards, items, text = asyncio.run(play())
    assert text.startswith("Day ") and len(rewards) == 6
    assert sum(fen(r) for r in rewards) == _local_change(items, **reset) != 0


def test_openenv_generic_env_client_plays_an_episode(base_url: str) -> None:
    """OpenEnv's GenericEnvClient (plain dicts): every reset field, tool calls as dict actions."""
    reset = {"seed": 4, "split": "validation", "length": 3, "start_day": 150}

    async def play() -> tuple[list[float], list[dict[str, Any]], dict[str, Any]]:
        async with GenericEnvClient(base_url=base_url) as env:
            first = (await env.reset(**reset)).observation
            assert "THIS EPISODE" in first["brief"] and first["text"].startswith("Day ")
            assert "end_of_step" in first["tool_names"] and "tools" not in first
            call = {"type": "call_tool", "tool_name": "search_products"}
            found = await env.step({**call, "arguments": {"sort": "sales_30d", "page_size": 5}})
            rows = found.observation["result"]["structured_content"]["rows"]
            items = [{"product_id": r[0], "sale_price": round(r[3] * 1.6, 2)} for r in rows]
            listed = await env.step(
                {**call, "tool_name": "list_product", "arguments": {"items": items}}
            )
            assert listed.observation["error"] is None
            rewards, done = [], False
            while not done:
                step = await env.step({**call, "tool_name": "end_of_step", "arguments": {}})
                rewards.append(step.reward or 0.0)
                done = step.done
            return rewards, items, await env.state()

    rewards, items, state = asyncio.run(play())
    assert sum(fen(r) for r in rewards) == state["net_assets_change_fen"]
    assert state["net_assets_change_fen"] == _local_change(items, **reset)

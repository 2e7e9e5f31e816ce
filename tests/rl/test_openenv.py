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
        assert first.store["net_assets"] == 3000.0 and "end_of_step" in first.tools
        assert {t.name for t in await env.list_tools()} == set(first.tools)
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
    assert state["window"] == 6 and state["step_count"] >= 9
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

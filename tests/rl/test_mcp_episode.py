"""An episode served over MCP stdio (`python -m merchantbench.rl.mcp_episode`, the verifiers
taskset's tool backend), driven by the official MCP SDK client: `end_of_step` answers carry the
window's reward, and they sum to the change in net assets; bad options exit 2 with a reason."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from typing import Any

from mcp import Client, StdioServerParameters

from merchantbench.rl.episode import Episode, EpisodeConfig
from merchantbench.rl.splits import episode_seed
from merchantbench.tools.toolset import DECLARED

ARGS = ["--scenario", "smoke", "--split", "validation", "--index", "1", "--length", "3",
        "--start-day", "60"]  # fmt: skip


def _server(*args: str) -> StdioServerParameters:
    command = ["-m", "merchantbench.rl.mcp_episode", *args]
    return StdioServerParameters(command=sys.executable, args=command, env=dict(os.environ))


async def _play() -> tuple[list[dict[str, Any]], list[str]]:
    async with Client(_server(*ARGS)) as client:
        tools = [tool.name for tool in (await client.list_tools()).tools]
        found = await client.call_tool("search_products", {"sort": "sales_30d", "page_size": 5})
        rows = found.structured_content["rows"]
        items = [{"product_id": r[0], "sale_price": round(r[3] * 1.6, 2)} for r in rows]
        assert (await client.call_tool("list_product", {"items": items})).structured_content["ok"]
        refused = await client.call_tool("adjust_price", {"items": "nope"})
        assert refused.is_error and "reward_fen" not in refused.structured_content
        answers: list[dict[str, Any]] = []
        while not answers or not answers[-1]["episode_over"]:
            answers.append((await client.call_tool("end_of_step", {})).structured_content)
        return answers, tools


def test_rewards_over_mcp_sum_to_the_change_in_net_assets() -> None:
    answers, tools = asyncio.run(_play())
    assert len(tools) == len(DECLARED.tools()) and "end_of_step" in tools
    assert len(answers) == 6 and all(a["observation"] for a in answers[:-1])
    assert answers[-1]["observation"] is None
    change = answers[-1]["net_assets_change_fen"]
    assert sum(a["reward_fen"] for a in answers) == change != 0
    episode = Episode(EpisodeConfig("smoke", length=3, start_day=60), episode_seed("validation", 1))
    found = episode.call("search_products", {"sort": "sales_30d", "page_size": 5}).result
    items = [{"product_id": r[0], "sale_price": round(r[3] * 1.6, 2)} for r in found["rows"]]
    episode.call("list_product", {"items": items})
    while not episode.over:
        episode.call("end_of_step")
    assert episode.change_fen == change


def test_bad_options_exit_2_with_a_reason() -> None:
    for args, reason in ((["--split", "dev"], "unknown split"),
                         (["--split", "test"], "sealed"),
                         (["--start-day", "400"], "market's year")):  # fmt: skip
        done = subprocess.run(
            [sys.executable, "-m", "merchantbench.rl.mcp_episode", *args],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 2 and reason in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1

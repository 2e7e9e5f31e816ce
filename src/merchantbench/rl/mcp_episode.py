"""One training episode as an MCP server over stdio: the tools of the `verifiers` taskset.

    python -m merchantbench.rl.mcp_episode --scenario smoke --split train --index 3 \
        --length 30d --start-day 120 [--pool pool.json]

serves the tools (the agent surface's schemas, `mcp_surface`) of episode 3 of the train split.
`end_of_step` answers also carry the episode's reward: `reward` (RMB, or normalised with
`--normalise`), `reward_fen`, `net_assets_change_fen` (since the episode began), `episode_over`,
and the next window's bounded observation. A bad option exits 2 with a one-line reason.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio

from merchantbench.mcp_surface import call_locked, serve_stdio
from merchantbench.rl.episode import Episode, EpisodeConfig, EpisodeError
from merchantbench.rl.splits import SealedPool, SplitError, episode_seed
from merchantbench.surface import AgentSurface
from merchantbench.tools.toolset import END_OF_STEP

__all__ = ["EpisodeRun", "main"]


class EpisodeRun:
    """An `mcp_surface.McpRun` of one episode: calls one at a time, rewards on `end_of_step`."""

    def __init__(self, episode: Episode) -> None:
        self.episode = episode
        self._lock = anyio.Lock()

    @property
    def surface(self) -> AgentSurface:
        return self.episode.surface

    @property
    def lock(self) -> AbstractAsyncContextManager[Any]:
        return self._lock

    def call(self, tool: str, args: dict[str, Any] | None, key: str | None) -> dict[str, Any]:
        episode = self.episode
        outcome = episode.call(tool, args)
        if tool != END_OF_STEP or not outcome.result.get("ok"):
            return outcome.result
        return {
            **outcome.result,
            "reward": outcome.reward,
            "reward_fen": outcome.reward_fen,
            "net_assets_change_fen": episode.change_fen,
            "episode_over": episode.over,
            "observation": None if episode.over else episode.observation(),
        }

    async def call_async(
        self, tool: str, args: dict[str, Any] | None, idempotency_key: str | None
    ) -> dict[str, Any]:
        return await call_locked(self._lock, self.call, tool, args, idempotency_key)


def _parse(argv: list[str] | None) -> tuple[EpisodeConfig, int]:
    parser = argparse.ArgumentParser(prog="python -m merchantbench.rl.mcp_episode")
    parser.add_argument("--scenario", default="smoke")
    parser.add_argument("--split", default="train")
    parser.add_argument("--index", type=int, default=0)
    parser.add_argument("--length", default="30d")
    parser.add_argument("--start-day", type=int, default=0)
    parser.add_argument("--reward", default="window", choices=("window", "end"))
    parser.add_argument("--normalise", action="store_true")
    parser.add_argument("--pool", type=Path, default=None, help="the operator's sealed pool")
    args = parser.parse_args(argv)
    config = EpisodeConfig(
        scenario=args.scenario,
        length=args.length,
        start_day=args.start_day,
        reward=args.reward,
        normalise=args.normalise,
    )
    config.check()
    pool = None if args.pool is None else SealedPool.load(args.pool)
    return config, episode_seed(args.split, args.index, pool)


def main(argv: list[str] | None = None) -> None:
    try:
        config, seed = _parse(argv)
    except (EpisodeError, SplitError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    anyio.run(serve_stdio, EpisodeRun(Episode(config, seed)))


if __name__ == "__main__":
    main()

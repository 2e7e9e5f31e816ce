"""Rollouts at scale: many training episodes in one process (asyncio), or in many (Ray).

A policy is an async callable `policy(episode)` that plays an `Episode` to its end, awaiting
whatever it waits for (a model's answer) between tool calls: in one process, `play_many` keeps
`concurrency` episodes in flight, so while one waits for its model the others' tools run, as the
harness does with agents (`runs.runner.run_agent_async`). `play_on_ray` spreads episodes over a
Ray cluster's worker processes (a local one by default), each of them playing its share with
`play_many`. `ScriptedPolicy` is the policy of the throughput figures (benchmarks/bench_rl.py).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from merchantbench.rl.episode import Episode, EpisodeConfig
from merchantbench.rl.splits import episode_seed

__all__ = ["Batch", "Policy", "ScriptedPolicy", "play_many", "play_on_ray"]

Policy = Callable[[Episode], Awaitable[None]]


@dataclass(frozen=True)
class ScriptedPolicy:
    """A fixed merchant: lists the best sellers at a markup, then each window reads its
    snapshot and open orders and closes the window. `think_seconds` is awaited before each
    call (a model's latency; 0 measures the environment alone)."""

    listings: int = 10
    markup: float = 1.6
    think_seconds: float = 0.0

    async def __call__(self, episode: Episode) -> None:
        await self._think()
        found = episode.call("search_products", {"sort": "sales_30d", "page_size": self.listings})
        rows = found.result.get("rows", [])
        items = [{"product_id": r[0], "sale_price": round(r[3] * self.markup, 2)} for r in rows]
        await self._think()
        episode.call("list_product", {"items": items})
        while not episode.over:
            for tool in ("get_store_snapshot", "query_open_orders", "end_of_step"):
                await self._think()
                episode.call(tool, {})

    async def _think(self) -> None:
        await asyncio.sleep(self.think_seconds)  # 0: still yields to the other episodes


@dataclass(frozen=True)
class Batch:
    """What a batch of episodes gave: their summaries, tool calls and wall time."""

    summaries: list[dict[str, Any]]
    calls: int
    seconds: float

    @property
    def episodes_per_hour(self) -> float:
        return len(self.summaries) * 3600 / self.seconds if self.seconds else 0.0

    @property
    def calls_per_second(self) -> float:
        return self.calls / self.seconds if self.seconds else 0.0


async def play_many(
    config: EpisodeConfig,
    split: str,
    indexes: Sequence[int],
    policy: Policy,
    concurrency: int = 16,
) -> Batch:
    """Play episodes `indexes` of `split` (public splits) with `policy`, `concurrency` at once."""
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(index: int) -> dict[str, Any]:
        async with gate:
            episode = Episode(config, episode_seed(split, index))
            await policy(episode)
            return {"split": split, "index": index, **episode.summary()}

    start = time.perf_counter()
    summaries = await asyncio.gather(*(one(i) for i in indexes))
    seconds = time.perf_counter() - start
    return Batch(list(summaries), sum(s["calls"] for s in summaries), seconds)


def _play_share(
    config: EpisodeConfig, split: str, indexes: list[int], policy: Policy, concurrency: int
) -> Batch:
    return asyncio.run(play_many(config, split, indexes, policy, concurrency))


def play_on_ray(
    config: EpisodeConfig,
    split: str,
    indexes: Sequence[int],
    policy: Policy,
    workers: int,
    concurrency: int = 16,
    address: str | None = None,
) -> Batch:
    """Play `indexes` over `workers` Ray tasks (one process each), `concurrency` episodes in
    flight in each; connects to `address`, or starts a local cluster (the `ray` extra)."""
    import ray

    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    remote = ray.remote(_play_share)
    shares = [list(indexes[i::workers]) for i in range(workers)]
    start = time.perf_counter()
    batches: list[Batch] = ray.get(
        [remote.remote(config, split, share, policy, concurrency) for share in shares if share]
    )
    seconds = time.perf_counter() - start
    summaries = sorted((s for b in batches for s in b.summaries), key=lambda s: s["index"])
    return Batch(summaries, sum(b.calls for b in batches), seconds)

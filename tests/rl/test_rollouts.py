"""Many episodes in one process (asyncio), and on a Ray cluster, give the results each gives
alone."""

from __future__ import annotations

import asyncio
import json
import subprocess

import pytest

from merchantbench.optional_parts import PARTS
from merchantbench.rl.episode import Episode, EpisodeConfig
from merchantbench.rl.rollouts import ScriptedPolicy, play_many
from merchantbench.rl.splits import episode_seed

if PARTS["ray"].locate() is not None:  # the one-node cluster of the sweep's Ray test
    from sweeps.test_sweep_ray import BIN, cluster  # noqa: F401

CONFIG = EpisodeConfig("smoke", length=3, start_day=30)
POLICY = ScriptedPolicy(listings=6)


def _alone(index: int) -> dict:
    episode = Episode(CONFIG, episode_seed("train", index))
    asyncio.run(POLICY(episode))
    return episode.summary()


def test_concurrent_episodes_play_as_they_do_alone() -> None:
    batch = asyncio.run(play_many(CONFIG, "train", range(4), POLICY, concurrency=4))
    assert [s["index"] for s in batch.summaries] == [0, 1, 2, 3]
    for summary in batch.summaries:
        alone = _alone(summary["index"])
        assert summary["state_hash"] == alone["state_hash"]
        assert summary["reward_total_fen"] == summary["net_assets_change_fen"]
        assert summary["over"] and summary["windows"] == 6
    assert batch.calls == sum(s["calls"] for s in batch.summaries) == 4 * (2 + 6 * 3)
    assert batch.episodes_per_hour > 0 and batch.calls_per_second > 0


DRIVER = """
import json, sys
from merchantbench.rl.episode import EpisodeConfig
from merchantbench.rl.rollouts import ScriptedPolicy, play_on_ray
config = EpisodeConfig("smoke", length=3, start_day=30)
batch = play_on_ray(config, "train", range(3), ScriptedPolicy(listings=6), workers=2,
                    concurrency=2, address=sys.argv[1])
print(json.dumps({"summaries": batch.summaries, "calls": batch.calls}))
"""


@pytest.mark.requires("ray")
def test_episodes_on_a_ray_cluster_play_as_they_do_alone(cluster) -> None:
    address, env = cluster
    done = subprocess.run(
        [str(BIN / "python"), "-c", DRIVER, address],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    batch = json.loads(done.stdout.strip().splitlines()[-1])
    assert [s["index"] for s in batch["summaries"]] == [0, 1, 2]
    for summary in batch["summaries"]:
        assert summary["state_hash"] == _alone(summary["index"])["state_hash"]
    assert batch["calls"] == 3 * (2 + 6 * 3)

"""`MerchantBench-v0` with the training options (`merchantbench.rl.episode`'s episodes): Gymnasium's
own checker passes with them; an episode starting on day 120 for 30 days plays that day's market,
step for step the same as the training episode in process; rewards sum to the change in net
assets fen-exactly in every reward mode; the budget bounds the observation; bad options are
refused with a one-line reason."""

from __future__ import annotations

import datetime as dt
import json
import warnings
from typing import Any

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

from merchantbench.gym import ENV_ID, MerchantBenchEnv
from merchantbench.money import fen
from merchantbench.rl.episode import Episode, EpisodeConfig

SEED = 5


def make(**options: Any) -> MerchantBenchEnv:
    return gym.make(ENV_ID, scenario="smoke", **options).unwrapped  # type: ignore[return-value]


def act(env: MerchantBenchEnv, tool: str, args: dict[str, Any] | None = None) -> tuple:
    return env.step({"tool": env.tool_names.index(tool), "args": json.dumps(args or {})})


def list_best_sellers(env: MerchantBenchEnv) -> list[dict[str, Any]]:
    found = act(env, "search_products", {"sort": "sales_30d", "page_size": 8})[4]["result"]
    items = [{"product_id": r[0], "sale_price": round(r[3] * 1.6, 2)} for r in found["rows"]]
    assert act(env, "list_product", {"items": items})[4]["result"]["ok"]
    return items


@pytest.mark.parametrize(
    "options",
    [
        {"length": "30d", "start_day": 120},
        {"length": 3, "start_day": 300, "reward": "end", "normalise": True,
         "observation_chars": 400, "memory_chars": 200},
    ],
)  # fmt: skip
def test_gymnasiums_checker_passes_with_the_training_options(options: dict[str, Any]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(make(**options))


def test_an_episode_from_day_120_for_30_days_is_that_days_market() -> None:
    env = make(length="30d", start_day=120)
    obs, info = env.reset(seed=SEED)
    assert obs in env.observation_space
    status = env.session.surface.status()
    assert status.date == (dt.date(2025, 6, 1) + dt.timedelta(days=120)).isoformat()
    assert status.day == 121 and status.net_assets == 3000.0
    assert "THIS EPISODE: your store opens on Day 121 (2025-09-29)" in info["brief"]
    # The training episode of the same seed (rl.episode, whose market on day 120 is the full
    # year's: tests/rl/test_episode.py), played with the same actions, step for step.
    episode = Episode(EpisodeConfig("smoke", length="30d", start_day=120), SEED)
    assert obs["text"] == episode.observation().split("\n\nYOUR MEMORY DOCUMENT")[0]
    report = act(env, "get_daily_report")[4]["result"]
    assert report == episode.call("get_daily_report").result
    items = list_best_sellers(env)
    episode.call("search_products", {"sort": "sales_30d", "page_size": 8})
    episode.call("list_product", {"items": items})
    steps, terminated = 0, False
    while not terminated:
        obs, reward, terminated, truncated, info = act(env, "end_of_step")
        outcome = episode.call("end_of_step")
        assert (info["reward_fen"], reward) == (outcome.reward_fen, outcome.reward)
        assert obs in env.observation_space and not truncated
        steps += 1
    assert steps == 60 and episode.over
    assert env.state_hash() == episode.session.state_hash()
    end = env.session.surface.status()  # the clock stops at the end of day 150
    assert (end.window, end.windows_total, end.at) == (300, 300, "Day 151 00:00")


@pytest.mark.parametrize(
    ("reward", "normalise"), [("window", False), ("end", False), ("window", True)]
)
def test_rewards_sum_to_the_change_in_net_assets_fen_exactly(reward: str, normalise: bool) -> None:
    env = make(length=6, reward=reward, normalise=normalise, observation_chars=300)
    env.reset(seed=SEED, options={"start_day": 40})  # the day moves per episode
    assert env.session.surface.status().day == 41
    start = fen(env.session.surface.status().net_assets)
    list_best_sellers(env)
    act(env, "adjust_price", None)  # bad input: an error, reward 0
    rewards, rewards_fen, terminated = [], [], False
    while not terminated:
        obs, value, terminated, _, info = act(env, "end_of_step")
        rewards.append(value)
        rewards_fen.append(info["reward_fen"])
        assert len(obs["text"]) <= 300 + 100  # the budget, and its note of what was cut
    change = fen(env.session.surface.status().net_assets) - start
    assert change != 0 and sum(rewards_fen) == change
    assert len(rewards) == 12
    if reward == "end":
        assert rewards_fen[:-1] == [0] * 11
    if normalise:
        assert sum(rewards) == pytest.approx(change / start)
    else:
        assert sum(fen(r) for r in rewards) == change


def test_the_memory_document_follows_the_observation_within_its_budget() -> None:
    env = make(length=2, observation_chars=200, memory_chars=50)
    env.reset(seed=SEED)
    act(env, "write_memory_doc", {"content": "plan: " + "x" * 80})
    text = env.step({"tool": env.tool_names.index("end_of_step"), "args": ""})[0]["text"]
    head, memory = text.split("\n\nYOUR MEMORY DOCUMENT (write_memory_doc changes it):\n")
    assert memory.startswith("plan: xxx") and "more characters cut" in memory
    assert "more characters cut" in head


def test_the_default_env_is_unchanged_and_bad_options_are_refused(tmp_path) -> None:
    plain = make()
    assert not plain.training and plain.scenario is plain.base_scenario
    with pytest.raises(ValueError, match="training env"):
        plain.reset(seed=1, options={"start_day": 5})
    with pytest.raises(ValueError, match="unknown episode preset"):
        make(length="45d")
    with pytest.raises(ValueError, match="passes the market's year"):
        make(length="90d", start_day=300)
    with pytest.raises(ValueError, match="record starts on day 0"):
        make(length=3, start_day=10, record_dir=tmp_path)
    with pytest.raises(ValueError, match="passes the market's year"):
        make(length="30d").reset(seed=1, options={"start_day": 350})
    with pytest.raises(ValueError, match="reward is 'window' or 'end'"):
        make(length=3, reward="sometimes")
    with pytest.raises(ValueError, match="observation_chars is None or a count"):
        make(length=3, observation_chars=-1)

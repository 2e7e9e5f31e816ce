"""Training episodes: rewards sum to the change in net assets (fen-exact) in every mode; an
episode starting on day d plays that calendar day's market; the observation keeps its budget."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from merchantbench.money import fen
from merchantbench.rl.episode import Episode, EpisodeConfig, EpisodeError, episode_scenario
from merchantbench.scenario import load_scenario
from merchantbench.session import Session

SEED = 5


def _list_best_sellers(episode: Episode, markup: float = 1.6) -> None:
    found = episode.call("search_products", {"sort": "sales_30d", "page_size": 8}).result
    items = [{"product_id": r[0], "sale_price": round(r[3] * markup, 2)} for r in found["rows"]]
    assert episode.call("list_product", {"items": items}).result["ok"]


def _play(episode: Episode) -> None:
    _list_best_sellers(episode)
    while not episode.over:
        if episode.windows_played % 6 == 3:
            episode.call("adjust_price", "{not json")  # bad input: an error, no reward
        episode.call("end_of_step")


@pytest.mark.parametrize(
    ("reward", "normalise"), [("window", False), ("end", False), ("window", True)]
)
def test_rewards_sum_to_the_change_in_net_assets(reward: str, normalise: bool) -> None:
    config = EpisodeConfig("smoke", length=6, start_day=40, reward=reward, normalise=normalise)
    episode = Episode(config, SEED)  # type: ignore[arg-type]
    start = fen(episode.status().net_assets)
    rewards: list[float] = []
    _list_best_sellers(episode)
    while not episode.over:
        rewards.append(episode.call("end_of_step").reward)
    change = fen(episode.status().net_assets) - start
    assert change != 0  # orders came in: the test measures something
    assert sum(episode.rewards_fen) == change == episode.change_fen
    assert episode.summary()["reward_total_fen"] == change
    if reward == "end":
        assert rewards[:-1] == [0.0] * (len(rewards) - 1) and fen(rewards[-1]) == change
    elif normalise:
        assert sum(rewards) == pytest.approx(change / start)
    else:
        assert sum(fen(r) for r in rewards) == change
    assert episode.windows_played == 12  # six days of two windows


def test_an_episode_starting_on_day_120_sees_that_days_market() -> None:
    episode = Episode(EpisodeConfig("smoke", length=30, start_day=120), SEED)
    status = episode.status()
    assert status.date == (dt.date(2025, 6, 1) + dt.timedelta(days=120)).isoformat()
    assert status.day == 121 and episode.windows_played == 0 and status.net_assets == 3000.0
    assert "Day 121 (2025-09-29)" in episode.brief()
    # The run of the same seed over the whole year (`merchantbench run --seed 5`), idle to day
    # 120, shows the same market: the same best sellers, prices, report and events.
    full = Session.open(load_scenario("smoke", overrides=["clock.days=365"]), SEED).surface
    while full.window < 240:
        full.call("end_of_step")
    queries = [
        ("search_products", {"sort": "sales_30d", "page_size": 20}),
        ("get_daily_report", {}),
    ]
    for tool, args in queries:
        assert episode.call(tool, args).result == full.call(tool, args)
    # ... and another day's market is another one (the season moved).
    day0 = Episode(EpisodeConfig("smoke", length=30, start_day=0), SEED)
    assert day0.call(*queries[1]).result != episode.call(*queries[1]).result
    # Played to its end, the episode lasts 30 days and stops on day 150.
    _play(episode)
    # Windows are numbered as the observation text numbers them: the market's windows.
    assert episode.first_window == 240 and episode.window == 300
    assert episode.windows_played == 60 and episode.summary()["windows"] == 60


def test_window_numbers_agree_with_the_observation_text() -> None:
    """Once "window 241 of 300" in the text while the episode said window 60 at its end."""
    episode = Episode(EpisodeConfig("smoke", length=2, start_day=120), SEED)
    assert f"window {episode.window + 1} of 244." in episode.observation()
    outcome = episode.call("end_of_step")
    assert outcome.window == episode.window == 241
    assert f"window {outcome.window + 1} of 244." in episode.observation()


def test_a_start_day_past_the_year_says_so() -> None:
    """Once refused as "an episode lasts at least one day" (the rest of the year was < 0)."""
    for config in (
        EpisodeConfig("smoke", length="30d", start_day=400),
        EpisodeConfig("smoke", length=365 - 400, start_day=400),  # gym's "rest of the year"
    ):
        with pytest.raises(EpisodeError, match="start_day 400 is past the market's year"):
            config.check()
    import gymnasium

    import merchantbench.gym  # noqa: F401  (registers the env)

    with pytest.raises(ValueError, match="start_day 400 is past"):
        gymnasium.make("MerchantBench-v0", scenario="smoke", start_day=400)


def test_the_observation_keeps_its_budget() -> None:
    config = EpisodeConfig("smoke", length=2, observation_chars=200, memory_chars=50)
    episode = Episode(config, SEED)
    episode.call("write_memory_doc", {"content": "x" * 500})
    text = episode.observation()
    assert len(text) < 200 + 50 + 300  # the cut notes and the heading
    assert "more characters cut" in text and "x" * 50 in text and "x" * 51 not in text
    whole = Episode(EpisodeConfig("smoke", length=2, observation_chars=None), SEED)
    assert whole.observation().startswith(whole.surface.observation())


@pytest.mark.parametrize(
    "config",
    [
        EpisodeConfig("smoke", length="45d"),
        EpisodeConfig("smoke", length=30, start_day=340),
        EpisodeConfig("smoke", length=0),
        EpisodeConfig("smoke", start_day=-1),
        EpisodeConfig("smoke", reward="dense"),  # type: ignore[arg-type]
        EpisodeConfig("nosuch"),
        EpisodeConfig("smoke", observation_chars=-5),
    ],
)
def test_bad_configs_are_refused_with_a_reason(config: EpisodeConfig) -> None:
    with pytest.raises(EpisodeError):
        config.check()


def test_presets_keep_the_market_of_the_seed() -> None:
    for length, days in (("30d", 30), ("90d", 90), ("365d", 365)):
        scenario = episode_scenario(EpisodeConfig("smoke", length=length))
        assert scenario.clock.days == days
        assert scenario.market == load_scenario("smoke").market
    assert EpisodeConfig("smoke", length="45").days == 45  # days as a JSON field gives them


def test_bad_tool_input_is_an_error_not_an_exception() -> None:
    episode = Episode(EpisodeConfig("smoke", length=2), SEED)
    for tool, args in (("no_such_tool", {}), ("list_product", "[1,2"), ("end_of_step", {"x": 1})):
        outcome = episode.call(tool, args)
        assert outcome.reward_fen == 0 and json.dumps(outcome.result)

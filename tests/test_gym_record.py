"""The Gymnasium environment writes run records on request: finished ones verify, an episode
left before its end is suspended, and the env still passes Gymnasium's own checker."""

from __future__ import annotations

import json

import pytest
from gymnasium.utils.env_checker import check_env

from merchantbench.gym import MerchantBenchEnv
from merchantbench.record.manifest import read_manifest
from merchantbench.replay import verify_record

DAYS = ["clock.days=2"]


def _play(env: MerchantBenchEnv, seed: int) -> dict:
    """Read, list two best sellers, then end windows until the run is over."""
    tools = env.tool_names
    _, started = env.reset(seed=seed)
    assert started["run_dir"] == str(env.run_dir)
    env.step({"tool": tools.index("query_balance"), "args": "{}"})
    _, _, _, _, found = env.step({
        "tool": tools.index("search_products"),
        "args": json.dumps({"query": "", "sort": "sales_30d", "page_size": 2}),
    })  # fmt: skip
    rows = found["result"].get("rows") or []
    items = [{"product_id": r[0], "sale_price": 99.0} for r in rows[:2]]
    env.step({"tool": tools.index("list_product"), "args": json.dumps({"items": items})})
    env.step({"tool": tools.index("list_product"), "args": "{not json"})  # refused, recorded
    over = False
    while not over:
        _, _, over, _, info = env.step({"tool": tools.index("end_of_step"), "args": "{}"})
    return info


def test_a_recorded_episode_is_a_run_record_that_verifies(tmp_path) -> None:
    env = MerchantBenchEnv("smoke", overrides=DAYS, record_dir=tmp_path)
    _play(env, seed=7)
    run_dir = tmp_path / "episode-0001"
    assert env.run_dir == run_dir
    manifest = read_manifest(run_dir)
    assert manifest.driver == "gym" and manifest.ended == "completed"
    assert (run_dir / "metrics.json").is_file()
    report = verify_record(run_dir)
    assert report.ok, report.summary()
    assert report.final_state_hash == env.state_hash()
    env.close()


def test_reset_and_close_suspend_an_unfinished_episode(tmp_path) -> None:
    env = MerchantBenchEnv("smoke", overrides=DAYS, record_dir=tmp_path)
    env.reset(seed=1)
    env.step({"tool": env.tool_names.index("end_of_step"), "args": "{}"})
    env.reset(seed=2)  # the first episode is left: suspended, resumable
    assert read_manifest(tmp_path / "episode-0001").ended == "interrupted"
    env.close()
    assert read_manifest(tmp_path / "episode-0002").ended == "interrupted"


def test_a_recorded_env_passes_gymnasiums_checker(tmp_path) -> None:
    env = MerchantBenchEnv("smoke", overrides=DAYS, record_dir=tmp_path)
    check_env(env, skip_render_check=True)
    env.close()


def test_market_seed_and_record_dir_are_refused_together(tmp_path) -> None:
    with pytest.raises(ValueError, match="record_dir"):
        MerchantBenchEnv("smoke", market_seed=3, record_dir=tmp_path)

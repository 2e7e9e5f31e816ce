"""The two training routes that learn (docs/rl.md): PPO with per-listing credit on the classic
store env (`rl.slot_ppo`, the sb3 environment's torch) and GRPO on one pricing decision
(`rl.trl_pricing`, TRL's environment), each end to end on a tiny budget; and the pricing
task's tool, here without TRL."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from merchantbench.rl.episode import Episode, EpisodeConfig
from merchantbench.rl.splits import episode_seed
from merchantbench.rl.trl_pricing import PricingEnv, markup_of, outcome_of
from merchantbench.rl.trl_tiny import environ
from merchantbench.training_envs import RECIPES, find_env
from requires import need

ROW = {"split": "train", "index": 3, "length": 2, "start_day": 100}


def test_the_pricing_tool_plays_the_episode_to_its_end() -> None:
    """`list_and_run(markup)` lists the best sellers at that markup and closes every window;
    the reward is the episode's change in net assets over the initial net assets."""
    env = PricingEnv()
    text = env.reset(**ROW)
    assert "day 100" in text and "2 days" in text
    answer = env.list_and_run(2.0)
    episode = env._open()
    assert episode.over and "net assets changed by" in answer
    assert env.get_reward() == episode.change_fen / episode.initial_fen
    assert "run_over" in env.list_and_run(2.0)  # a second call is refused, not replayed
    # The same decision played by hand through the tools gives the same store.
    by_hand = Episode(
        EpisodeConfig("small", length=2, start_day=100, normalise=True), episode_seed("train", 3)
    )
    found = by_hand.call("search_products", {"sort": "sales_30d", "page_size": 8}).result
    items = [{"product_id": r[0], "sale_price": round(r[3] * 2.0, 2)} for r in found["rows"]]
    by_hand.call("list_product", {"items": items})
    while not by_hand.over:
        by_hand.call("end_of_step")
    assert by_hand.session.state_hash() == episode.session.state_hash()
    assert outcome_of(ROW, 2.0)[0] == env.get_reward()
    assert markup_of('{"name": "list_and_run", "arguments": {"markup": 2.5}}') == 2.5
    assert markup_of('{"name": "use_tool"}') is None


def test_slot_ppo_trains_and_reports_the_held_out_table(tmp_path: Path) -> None:
    need("sb3")
    found = find_env(RECIPES["sb3"])
    assert found is not None
    command = [str(found.python), "-m", "merchantbench.rl.slot_ppo", "--scenario", "smoke",
               "--length", "3", "--minutes", "0.05", "--envs", "3", "--pool", "2", "--test", "2",
               "--tune", "1", "--horizon", "6", "--minibatch", "64",
               "--out", str(tmp_path)]  # fmt: skip
    done = subprocess.run(command, env=environ(), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads((tmp_path / "results.json").read_text())
    assert set(results["scores"]) == {"slot_ppo", "random", "best_constant", "rule_based"}
    assert all(len(scores) == 2 for scores in results["scores"].values())
    assert results["train_windows"] > 0 and results["slot_ppo_vs"]["random"]["n"] == 2
    curve = json.loads((tmp_path / "curve.json").read_text())
    assert curve[-1]["held_out_mean_rmb"] == results["means"]["slot_ppo"]
    assert (tmp_path / "slot_agent.pt").exists()


def test_grpo_on_the_pricing_decision_samples_groups(tmp_path: Path) -> None:
    """TRL's GRPOTrainer on the pricing task with sampled groups of 4: each step's rollouts are
    scored by `get_reward`, and a rollout's reward is the reward of the markup it chose."""
    need("trl")
    found = find_env(RECIPES["trl"])
    assert found is not None
    out = tmp_path / "grpo.json"
    command = [str(found.python), "-m", "merchantbench.rl.trl_pricing", str(out), "--steps", "2",
               "--generations", "4", "--teach-steps", "60", "--days", "2"]  # fmt: skip
    done = subprocess.run(
        command, env=environ(), capture_output=True, text=True, timeout=1800, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(out.read_text())
    assert len(result["mean_reward_by_step"]) == 2 and result["generations"] == 4
    assert result["temperature"] > 0
    assert len(result["reward_by_markup"]) == 6 and len(result["sampled_before"]) == 32
    for step in result["rewards_by_step"]:
        assert len(step) == 4

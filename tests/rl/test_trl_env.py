"""TRL's `environment_factory` contract: first checked here without TRL (the class is built
without arguments, `reset(**row)` returns the prompt's text, the public methods but `reset` and
`get_reward` are the tools, typed, every argument documented under `Args:`, and the reward sums
each rollout's rewards), then with TRL's own GRPO trainer in the TRL environment (torch on the
CPU, a tiny local model: `merchantbench.rl.trl_tiny`), whose rollouts' actions, replayed here,
give the same episodes and rewards."""

from __future__ import annotations

import inspect
import json
import subprocess
import typing
from pathlib import Path

import pytest

from merchantbench.rl import trl_tiny
from merchantbench.rl.episode import Episode, EpisodeConfig
from merchantbench.rl.splits import SplitError, episode_seed
from merchantbench.rl.trl_env import MerchantBenchTRLEnv, reward_net_assets
from merchantbench.training_envs import RECIPES, find_env
from requires import need

GRPO_SECONDS = 1800


def _tools(env: object) -> dict[str, typing.Callable[..., str]]:
    return {
        name: member
        for name, member in inspect.getmembers(env, callable)
        if not name.startswith("_") and name not in ("reset", "get_reward")
    }


def test_the_tools_are_typed_and_documented() -> None:
    env = MerchantBenchTRLEnv()
    tools = _tools(env)
    assert set(tools) == {"use_tool", "end_of_step"}
    for name, method in tools.items():
        hints = typing.get_type_hints(method)
        params = [p for p in inspect.signature(method).parameters if p != "self"]
        assert hints.pop("return") is str, name
        assert set(hints) == set(params), name
        doc = inspect.getdoc(method) or ""
        assert doc.splitlines()[0] and "Returns:" in doc, name
        for param in params:
            assert f"    {param}: " in doc, (name, param)


def test_a_rollout_through_the_tools_is_rewarded_with_its_change() -> None:
    rollouts = [MerchantBenchTRLEnv() for _ in range(2)]
    rows = [{"split": "train", "index": 3, "length": 3, "start_day": 200, "prompt": "x"}] * 2
    for env, row in zip(rollouts, rows, strict=True):
        text = env.reset(**row)
        assert "THIS EPISODE" in text and "use_tool" in text and "Day 201" in text
    env = rollouts[0]
    found = json.loads(env.use_tool("search_products", '{"sort": "sales_30d", "page_size": 6}'))
    items = [{"product_id": r[0], "sale_price": round(r[3] * 1.6, 2)} for r in found["rows"]]
    assert json.loads(env.use_tool("list_product", json.dumps({"items": items})))["ok"]
    assert json.loads(env.use_tool("adjust_price", "{oops"))["ok"] is False
    answers = [env.end_of_step() for _ in range(6)]
    assert answers[-1].startswith("The episode is over")
    assert json.loads(env.end_of_step())["error"]["code"] == "run_over"
    while not rollouts[1]._open().over:
        rollouts[1].use_tool("end_of_step")
    local = Episode(EpisodeConfig("smoke", length=3, start_day=200), episode_seed("train", 3))
    local.call("list_product", {"items": items})
    while not local.over:
        local.call("end_of_step")
    rewards = reward_net_assets(environments=rollouts, completions=["", ""])
    assert rewards == [local.change_fen / local.initial_fen, 0.0]
    assert local.change_fen != 0


def test_the_sealed_split_is_not_for_training() -> None:
    with pytest.raises(SplitError, match="sealed"):
        MerchantBenchTRLEnv().reset(split="test", index=0)


def test_grpo_trains_on_the_env_with_trl_own_trainer(tmp_path: Path) -> None:
    """TRL's GRPOTrainer, with our class as `environment_factory` and a tiny model taught to
    list six products then close every window, runs two optimiser steps on the CPU: it calls
    `reset(**row)` and our tools (3 rollouts' worth of calls, none failing), and scores each
    rollout with `get_reward`, which equals the same play's change in net assets here."""
    need("trl")
    env = find_env(RECIPES["trl"])
    assert env is not None
    out = tmp_path / "grpo.json"
    done = subprocess.run(
        trl_tiny.command(env, out, steps=2), env=trl_tiny.environ(), capture_output=True,
        text=True, timeout=GRPO_SECONDS, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["global_step"] == 2 and result["torch"].startswith("2.13.0")
    row = result["row"]
    config = EpisodeConfig(
        "smoke", length=row["length"], start_day=row["start_day"], normalise=True
    )
    seed = episode_seed("train", row["index"])
    found = Episode(config, seed).call(
        "search_products", {"sort": "sales_30d", "page_size": trl_tiny.LISTED}
    )
    items = [
        {"product_id": r[0], "sale_price": round(r[3] * trl_tiny.MARKUP, 2)}
        for r in found.result["rows"]
    ]
    local = Episode(config, seed)  # the rollout's calls: list, then close every window
    local.call("list_product", {"items": items})
    while not local.over:
        local.call("end_of_step")
    assert local.change_fen != 0
    expected = local.change_fen / local.initial_fen
    # Two rollouts a step (GRPO's group of 2), the environments pooled and reset between steps.
    assert [len(step["rewards"]) for step in result["steps"]] == [2, 2]
    for step in result["steps"]:
        assert step["rewards"] == [pytest.approx(expected)] * 2
        assert step["log"]["tools/call_frequency"] == pytest.approx(1 + local.summary()["windows"])
        assert step["log"]["tools/failure_frequency"] == 0
        for summary in step["episodes"]:
            assert summary["net_assets_change_fen"] == local.change_fen
            assert summary["state_hash"] == local.session.state_hash()
            assert summary["over"]

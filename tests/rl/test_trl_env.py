"""TRL's `environment_factory` contract, checked without TRL (it needs torch; docs/rl.md): the
class is built without arguments, `reset(**row)` returns the prompt's text, the public methods
but `reset` are the tools (typed, every argument documented under `Args:`, as TRL's schema
reader requires), and the reward function sums each rollout's rewards."""

from __future__ import annotations

import inspect
import json
import typing

import pytest

from merchantbench.rl.episode import Episode, EpisodeConfig
from merchantbench.rl.splits import SplitError, episode_seed
from merchantbench.rl.trl_env import MerchantBenchTRLEnv, reward_net_assets


def _tools(env: object) -> dict[str, typing.Callable[..., str]]:
    return {
        name: member
        for name, member in inspect.getmembers(env, callable)
        if not name.startswith("_") and name != "reset"
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

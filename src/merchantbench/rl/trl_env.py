"""TRL's `environment_factory`: a MerchantBench episode as a class of tools for GRPO.

TRL's `GRPOTrainer(environment_factory=MerchantBenchTRLEnv, ...)` makes one instance per rollout
(no arguments), calls `reset(**row)` with the dataset row before each rollout (the text it
returns joins the prompt), and exposes every public method but `reset` as a tool, its schema
read from the type hints and the docstring's `Args:`. The reward is the episode's: pass
`reward_net_assets` in `reward_funcs` (TRL hands it the rollouts' `environments`). The class has
no other public method, so the model sees exactly the two tools. docs/rl.md has the example.

Dataset rows name the episode: `split` (train or validation; the test split is sealed and is
not for training), `index`, `length` (`30d`, or days), `start_day`; the class attributes
`scenario`, `normalise` and the budget hold for every instance (subclass to change them).
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from merchantbench.rl.episode import Episode, EpisodeConfig
from merchantbench.rl.splits import SplitError, episode_seed

__all__ = ["MerchantBenchTRLEnv", "reward_net_assets"]


class MerchantBenchTRLEnv:
    """One MerchantBench store, played with two tools: `use_tool` and `end_of_step`."""

    scenario: ClassVar[str] = "smoke"
    normalise: ClassVar[bool] = True
    observation_chars: ClassVar[int | None] = 6000
    memory_chars: ClassVar[int | None] = 4000

    def __init__(self) -> None:
        self._episode: Episode | None = None

    def reset(
        self,
        split: str = "train",
        index: int = 0,
        length: str | int = "30d",
        start_day: int = 0,
        **row: Any,
    ) -> str:
        """Open episode `index` of `split` and return its brief and first observation."""
        if split == "test":
            raise SplitError("the test split is sealed: evaluate on it, never train")
        config = EpisodeConfig(
            scenario=self.scenario,
            length=length,
            start_day=start_day,
            reward="window",
            normalise=self.normalise,
            observation_chars=self.observation_chars,
            memory_chars=self.memory_chars,
        )
        self._episode = Episode(config, episode_seed(split, int(index)))
        names = ", ".join(s["function"]["name"] for s in self._episode.tool_schemas())
        return (
            f"{self._episode.brief()}\n\nSTORE TOOLS (call them with use_tool; "
            f"list_tools describes each): {names}\n\n{self._episode.observation()}"
        )

    def _open(self) -> Episode:
        if self._episode is None:
            raise RuntimeError("reset() first")
        return self._episode

    def use_tool(self, name: str, arguments: str = "{}") -> str:
        """Call one store tool (search, list, price, query, memory, ...).

        Args:
            name: The store tool's name, e.g. search_products or list_product.
            arguments: Its arguments as a JSON object, e.g. {"query": "mug", "page_size": 5}.

        Returns:
            The tool's JSON answer; a refused call answers {"ok": false, "error": ...}.
        """
        if name == "end_of_step":
            return self.end_of_step()
        return json.dumps(self._open().call(name, arguments).result, ensure_ascii=False)

    def end_of_step(self) -> str:
        """Close the decision window: the next 12 hours are simulated.

        Returns:
            The next window's observation (with the change in net assets), or the episode's
            result once it is over.
        """
        episode = self._open()
        if episode.over:
            return json.dumps({"ok": False, "error": {"code": "run_over"}})
        episode.call("end_of_step")
        if episode.over:
            change = episode.change_fen / 100
            return f"The episode is over: net assets changed by {change:.2f} RMB."
        return episode.observation()

    def get_reward(self) -> float:
        """The episode's reward: the sum of its window rewards (normalised by default). TRL
        (1.x) calls it once per finished rollout and never offers it as a tool."""
        if self._episode is None:
            return 0.0
        total = sum(self._episode.rewards_fen)
        initial = self._episode.initial_fen
        return total / initial if self.normalise and initial else total / 100


def reward_net_assets(environments: list[MerchantBenchTRLEnv], **kwargs: Any) -> list[float]:
    """A `reward_funcs` entry for GRPOTrainer: each rollout's reward (the sum of its window
    rewards: the change in net assets, divided by the initial net assets when `normalise`)."""
    return [env.get_reward() for env in environments]

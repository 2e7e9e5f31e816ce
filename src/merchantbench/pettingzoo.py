"""The PettingZoo front end: a market of several merchants as a `ParallelEnv` (docs/design.md §11).

`MerchantBenchParallelEnv(scenario="arena", merchants=["alice", "bob"])` is one market: one
PettingZoo agent per merchant, each a store with its own accounts, listings, orders, rating,
memory and call budget, all sharing the catalog, supplier stock and clock
(`merchantbench.session`). It is the PettingZoo API on the one env core,
`merchantbench.market_env.MarketEnv`, whose market of one merchant is the Gymnasium env
(`merchantbench.gym`): spaces, the order of a step's calls, rewards, seeds, sealed runs,
training options and `restore` are the core's, defined there once. What is PettingZoo's here:

- **step** takes one action per live merchant (a dict); a live merchant left out makes no
  call; actions for merchants no longer live (or unknown) are ignored. `end_of_step` closes
  the window for that merchant alone: its later calls answer `window_closed` and change
  nothing until every merchant still trading has closed the window; the last close runs the
  window's hours for the whole market.
- **rewards**: each merchant's change in net assets (RMB) since the previous step; it moves
  when the market's hours run, so the rewards are per window and sum to the merchant's final
  minus initial net assets (`infos[m]["reward_fen"]`: the same in integer fen).
- **terminations**: a merchant whose store closed (its deposit ran out) is terminated and
  leaves `agents`; the market goes on for the others. **truncations**: when the market reaches
  its horizon, every merchant still live is truncated.
- **reset(seed=N)** plays market N (the same market and outcomes as
  `merchantbench arena --seed N`); `reset()` without a seed draws one from the env's
  `np_random`, seeded by the last `reset(seed=…)`.

Host side: `state_hash()` (the market's: in a market of one, the single store's, so a
one-merchant env gives the Gymnasium env's hash for the same actions), `market` (the
`MarketSession`). A market of several writes no run record (use `merchantbench arena` for
recorded markets); the store alone (`merchants=["store"]`) records as the Gymnasium env does
(`record_dir`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from merchantbench.market_env import MarketEnv
from merchantbench.scenario import Scenario

__all__ = ["MerchantBenchParallelEnv", "parallel_env"]


class MerchantBenchParallelEnv(MarketEnv, ParallelEnv[str, dict[str, Any], dict[str, Any]]):
    """One market of several merchants; see the module docstring.

    Args:
        scenario: A scenario preset name (`arena`, `paper`, `small`, `smoke`) or a `Scenario`.
        merchants: The merchants' ids, or how many (`merchant-1`, `merchant-2`, …).
        overrides: `key=value` scenario overrides, as `--set` on the command line.
        catalog: A real catalog directory instead of the synthetic market.
        render_mode: `None` or `"ansi"` (render returns each merchant's observation text).
        **options: The core's (`MarketEnv`): `market_seed`, `sealed`, the training options.

    Raises:
        ValueError: No merchants, a bad or repeated merchant id, an unknown render mode, an
            option the core refuses.
    """

    metadata = {"name": "merchantbench_v0", "render_modes": ["ansi"], "is_parallelizable": True}

    def __init__(
        self,
        scenario: str | Scenario = "smoke",
        merchants: int | Sequence[str] = 2,
        overrides: Sequence[str] = (),
        catalog: str | Path | None = None,
        render_mode: str | None = None,
        **options: Any,
    ) -> None:
        super().__init__(scenario, merchants, overrides, catalog, render_mode, **options)

    # --- spaces (the same object every time, as PettingZoo asks) ---------------------------------
    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self.action_spaces[agent]

    @property
    def np_random(self) -> np.random.Generator:
        return self._rng()

    # --- the PettingZoo API ----------------------------------------------------------------------
    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
        """Open market `seed` (or one whose seed is drawn from `np_random`)."""
        return self._reset(seed, options)

    def step(self, actions: dict[str, dict[str, Any]]) -> tuple[
        dict[str, dict[str, Any]],
        dict[str, float],
        dict[str, bool],
        dict[str, bool],
        dict[str, dict[str, Any]],
    ]:  # fmt: skip
        """Every live merchant's tool call (see the module docstring)."""
        live = list(self.agents)
        given = {m: actions[m] for m in live if m in actions}
        observations, rewards, closed, over, infos = self._step(given, live)
        truncations = {m: not closed[m] and over[m] for m in live}
        return observations, rewards, closed, truncations, infos

    def render(self) -> str | None:  # type: ignore[override]
        """Each live merchant's observation text, in `ansi` mode."""
        if self.render_mode != "ansi" or self._market is None:
            return None
        return "\n\n".join(f"== {m} ==\n{self._text(m)}" for m in self.agents)


def parallel_env(**kwargs: Any) -> MerchantBenchParallelEnv:
    """A market as a PettingZoo `ParallelEnv` (the PettingZoo naming convention)."""
    return MerchantBenchParallelEnv(**kwargs)

"""The PettingZoo front end: a market of several merchants as a `ParallelEnv` (docs/design.md §11).

`MerchantBenchParallelEnv(scenario="arena", merchants=["alice", "bob"])` is one market: one
PettingZoo agent per merchant, each a store with its own accounts, listings, orders, rating,
memory and call budget, all sharing the catalog, supplier stock and clock
(`merchantbench.session`). Every merchant's spaces are the single-store Gymnasium env's
(`merchantbench.spaces`, docs/gym.md):

- **action** `{"tool": Discrete(number of tools), "args": Text}`: one tool call per merchant per
  step.
  Bad arguments, an unknown tool or garbage are never an exception: the tool answers a
  structured error and nothing changes. A live merchant left out of the step's action dict
  makes no call; actions for merchants no longer live (or unknown) are ignored.
- **observation** `{"text": the merchant's window observation, "store": its store status}`.
- **step** makes every merchant's call on the state at the step's start: first the calls of
  merchants already waiting, then every other call but `end_of_step`, then the `end_of_step`
  calls, each group in merchant-id order (the order of the action dict changes nothing).
  `end_of_step` closes the window for that merchant alone: its later calls answer
  `window_closed` and change nothing until every merchant still trading has closed the
  window; the last close runs the window's hours for the whole market.
- **reward**: each merchant's change in net assets (RMB) since the previous step; it moves
  when the market's hours run, so the rewards are per window and sum to the merchant's final
  minus initial net assets.
- **terminations**: a merchant whose store closed (its deposit ran out) is terminated and
  leaves `agents`; the market goes on for the others. **truncations**: when the market reaches
  its horizon, every merchant still live is truncated.
- **reset(seed=N)** plays market N (the same market and outcomes as
  `merchantbench arena --seed N`); `reset()` without a seed draws one from the env's
  `np_random`, seeded by the last `reset(seed=…)`.

Host side: `state_hash()` (the market's: in a market of one, the single store's, so a
one-merchant env gives the Gymnasium env's hash for the same actions), `market` (the
`MarketSession`). The env writes no run record (use `merchantbench arena` for recorded
markets).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from pettingzoo import ParallelEnv

from merchantbench.money import fen
from merchantbench.scenario import Scenario, load_scenario
from merchantbench.session import MarketSession
from merchantbench.sim.marketplace import MERCHANT_ID
from merchantbench.spaces import (
    COUNT_BOUND,
    action_space,
    call_action,
    observation_space,
    observe,
    tool_name,
)
from merchantbench.tools.toolset import END_OF_STEP, build_registry

__all__ = ["MerchantBenchParallelEnv", "parallel_env"]


def _merchant_ids(merchants: int | Sequence[str]) -> list[str]:
    if isinstance(merchants, int):
        if merchants < 1:
            raise ValueError("a market needs at least one merchant")
        width = len(str(merchants))
        return [f"merchant-{i:0{width}d}" for i in range(1, merchants + 1)]
    ids = list(merchants)
    if not ids:
        raise ValueError("a market needs at least one merchant")
    for merchant in ids:
        if not isinstance(merchant, str) or not MERCHANT_ID.fullmatch(merchant):
            raise ValueError(
                f"merchant id {merchant!r}: 1-32 of a-z 0-9 _ -, starting with a letter or digit"
            )
    if len(set(ids)) != len(ids):
        raise ValueError("two merchants have the same id")
    return sorted(ids)  # the market's order (sim.marketplace)


class MerchantBenchParallelEnv(ParallelEnv[str, dict[str, Any], dict[str, Any]]):
    """One market of several merchants; see the module docstring.

    Args:
        scenario: A scenario preset name (`arena`, `paper`, `small`, `smoke`) or a `Scenario`.
        merchants: The merchants' ids, or how many (`merchant-1`, `merchant-2`, …).
        overrides: `key=value` scenario overrides, as `--set` on the command line.
        catalog: A real catalog directory instead of the synthetic market.
        render_mode: `None` or `"ansi"` (render returns each merchant's observation text).

    Raises:
        ValueError: No merchants, a bad or repeated merchant id, or an unknown render mode.
    """

    metadata = {"name": "merchantbench_v0", "render_modes": ["ansi"], "is_parallelizable": True}

    def __init__(
        self,
        scenario: str | Scenario = "smoke",
        merchants: int | Sequence[str] = 2,
        overrides: Sequence[str] = (),
        catalog: str | Path | None = None,
        render_mode: str | None = None,
    ) -> None:
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be None or 'ansi', not {render_mode!r}")
        if isinstance(scenario, str):
            scenario = load_scenario(scenario, overrides=list(overrides))
        self.scenario = scenario
        self.catalog = None if catalog is None else Path(catalog)
        self.render_mode = render_mode
        self.possible_agents: list[str] = _merchant_ids(merchants)
        self.agents: list[str] = []
        schemas = build_registry(scenario).schema_list()
        self.tool_names: tuple[str, ...] = tuple(s["function"]["name"] for s in schemas)
        self.action_spaces = {
            m: action_space(scenario, self.tool_names) for m in self.possible_agents
        }
        self.observation_spaces = {m: observation_space(scenario) for m in self.possible_agents}
        self._market: MarketSession | None = None
        self._net_assets_fen: dict[str, int] = {}
        self._np_random: np.random.Generator | None = None

    # --- spaces (the same object every time, as PettingZoo asks) ---------------------------------
    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self.action_spaces[agent]

    # --- host side -------------------------------------------------------------------------------
    @property
    def market(self) -> MarketSession:
        """The market's host side (every merchant's session); reset() first."""
        if self._market is None:
            raise RuntimeError("call reset() before using the environment")
        return self._market

    def state_hash(self) -> str:
        """The market's state hash (in a market of one, its store's)."""
        return self.market.state_hash()

    @property
    def np_random(self) -> np.random.Generator:
        if self._np_random is None:
            self._np_random, _ = seeding.np_random()
        return self._np_random

    # --- the PettingZoo API ----------------------------------------------------------------------
    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
        """Open market `seed` (or one whose seed is drawn from `np_random`)."""
        if seed is not None:
            self._np_random, _ = seeding.np_random(seed)
        market_seed = seed if seed is not None else int(self.np_random.integers(COUNT_BOUND))
        self._market = MarketSession.open(
            self.scenario, market_seed, self.possible_agents, self.catalog
        )
        self.agents = [m for m in self.possible_agents if not self._market.sessions[m].over]
        observations, infos = {}, {}
        for merchant in self.agents:
            surface = self._market.sessions[merchant].surface
            status = surface.status()
            self._net_assets_fen[merchant] = fen(status.net_assets)
            observations[merchant] = observe(surface, status)
            infos[merchant] = {
                "brief": surface.brief(),
                "tool_schemas": surface.tool_schemas(),
                "window": status.window,
                "hour": status.hour,
            }
        return observations, infos

    def step(self, actions: dict[str, dict[str, Any]]) -> tuple[
        dict[str, dict[str, Any]],
        dict[str, float],
        dict[str, bool],
        dict[str, bool],
        dict[str, dict[str, Any]],
    ]:  # fmt: skip
        """Every live merchant's tool call (see the module docstring)."""
        market = self.market
        live = list(self.agents)
        given = {m: actions[m] for m in live if m in actions}
        calls: dict[str, tuple[str, Any]] = {}
        for merchant in self._call_order(given):
            surface = market.sessions[merchant].surface
            calls[merchant] = call_action(surface, self.tool_names, given[merchant])
        observations, rewards, terminations, truncations, infos = {}, {}, {}, {}, {}
        for merchant in live:
            session = market.sessions[merchant]
            status = session.surface.status()
            before = self._net_assets_fen[merchant]
            self._net_assets_fen[merchant] = fen(status.net_assets)
            observations[merchant] = observe(session.surface, status)
            rewards[merchant] = (self._net_assets_fen[merchant] - before) / 100
            closed = session.engine.state.closed
            terminations[merchant] = closed
            truncations[merchant] = not closed and session.over
            info: dict[str, Any] = {"window": status.window, "hour": status.hour}
            if merchant in calls:
                info = {"tool": calls[merchant][0], "result": calls[merchant][1], **info}
            infos[merchant] = info
        self.agents = [m for m in live if not (terminations[m] or truncations[m])]
        return observations, rewards, terminations, truncations, infos

    def _call_order(self, given: dict[str, Any]) -> list[str]:
        """The order in which a step's calls are made, so that each is made on the state at
        the step's start: first the merchants already waiting (their calls answer
        `window_closed`), then every other call but `end_of_step`, then the `end_of_step`
        calls (the last of which may run the window's hours); each group in merchant-id order,
        whatever the order of the action dict."""
        sessions = self.market.sessions
        waiting = [m for m in self.possible_agents if m in given and sessions[m].waiting]
        trading = [m for m in self.possible_agents if m in given and m not in waiting]
        closing = [m for m in trading if self._calls(given[m]) == END_OF_STEP]
        return waiting + [m for m in trading if m not in closing] + closing

    def _calls(self, action: Any) -> str:
        """The tool an action calls (`call_action` calls the same)."""
        return tool_name(self.tool_names, action.get("tool") if isinstance(action, dict) else None)

    def render(self) -> str | None:  # type: ignore[override]
        """Each live merchant's observation text, in `ansi` mode."""
        if self.render_mode != "ansi" or self._market is None:
            return None
        return "\n\n".join(
            f"== {m} ==\n{self._market.sessions[m].surface.observation()}" for m in self.agents
        )

    def close(self) -> None:
        """Nothing to release: the env holds no files or processes."""


def parallel_env(**kwargs: Any) -> MerchantBenchParallelEnv:
    """A market as a PettingZoo `ParallelEnv` (the PettingZoo naming convention)."""
    return MerchantBenchParallelEnv(**kwargs)

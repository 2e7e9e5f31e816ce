"""`random`: random valid-looking actions, seeded. A floor for any serious agent and a fuzzer of
the tool layer: it must never crash the run or break the ledger."""

from __future__ import annotations

import random
from typing import Any

from pydantic import Field

from merchantbench.agents.base import AgentSettings, BaseAgent
from merchantbench.agents.baselines.tables import rows_of
from merchantbench.surface import AgentSurface

WORDS = ("box", "bag", "cup", "lamp", "toy", "bottle", "mat", "brush", "case", "towel", "")


class RandomSettings(AgentSettings):
    seed: int = 0  # the agent's own generator (not the market's)
    actions_per_window: int = Field(default=3, ge=0, le=100)


class RandomAgent(BaseAgent[RandomSettings]):
    name = "random"
    Settings = RandomSettings

    def __init__(self, config: RandomSettings | None = None) -> None:
        super().__init__(config)
        self.actions_per_window = self.config.actions_per_window
        self.rng = random.Random(self.config.seed)

    def act(self, surface: AgentSurface) -> None:
        for _ in range(self.rng.randint(0, self.actions_per_window)):
            getattr(self, self.rng.choice(("list_one", "delist", "reprice", "look")))(surface)
        surface.call("end_of_step", {})

    def list_one(self, surface: AgentSurface) -> None:
        found = rows_of(surface.call("search_products", {"query": self.rng.choice(WORDS)}))
        if found:
            pick = self.rng.choice(found)
            price = round(pick["price"] * self.rng.uniform(0.8, 3.0), 2)
            surface.call(
                "list_product",
                {"items": [{"product_id": pick["product_id"], "sale_price": max(price, 0.01)}]},
            )

    def _listed(self, surface: AgentSurface) -> list[dict[str, Any]]:
        return rows_of(surface.call("query_my_listings", {}))

    def delist(self, surface: AgentSurface) -> None:
        listed = self._listed(surface)
        if listed:
            pid = self.rng.choice(listed)["product_id"]
            surface.call("delist_product", {"product_ids": [pid]})

    def reprice(self, surface: AgentSurface) -> None:
        listed = self._listed(surface)
        if listed:
            row = self.rng.choice(listed)
            price = round(row["sale_price"] * self.rng.uniform(0.7, 1.4), 2)
            surface.call("adjust_price", {"product_id": row["product_id"], "sale_price": price})

    def look(self, surface: AgentSurface) -> None:
        name = self.rng.choice(("query_balance", "get_daily_report", "query_open_orders"))
        surface.call(name, {})

"""`random`: random valid-looking actions, seeded. A floor for any serious agent and a fuzzer of
the tool layer: it must never crash the run or break the ledger."""

from __future__ import annotations

import random
from typing import Any

from merchantbench.agents.base import register_agent
from merchantbench.agents.baselines.tables import rows_of
from merchantbench.session import Session

WORDS = ("box", "bag", "cup", "lamp", "toy", "bottle", "mat", "brush", "case", "towel", "")


@register_agent("random")
class RandomAgent:
    name = "random"

    def __init__(self, seed: int = 0, actions_per_window: int = 3) -> None:
        self.seed = seed
        self.actions_per_window = actions_per_window
        self.rng = random.Random(seed)  # the agent's own generator, pickled with it

    def settings(self) -> dict[str, Any]:
        return {"seed": self.seed, "actions_per_window": self.actions_per_window}

    def act(self, session: Session) -> None:
        for _ in range(self.rng.randint(0, self.actions_per_window)):
            getattr(self, self.rng.choice(("list_one", "delist", "reprice", "look")))(session)
        session.call("end_of_step", {})

    def list_one(self, session: Session) -> None:
        found = rows_of(session.call("search_products", {"query": self.rng.choice(WORDS)}))
        if found:
            pick = self.rng.choice(found)
            price = round(pick["price"] * self.rng.uniform(0.8, 3.0), 2)
            session.call(
                "list_product",
                {"items": [{"product_id": pick["product_id"], "sale_price": max(price, 0.01)}]},
            )

    def _listed(self, session: Session) -> list[dict[str, Any]]:
        return rows_of(session.call("query_my_listings", {}))

    def delist(self, session: Session) -> None:
        listed = self._listed(session)
        if listed:
            pid = self.rng.choice(listed)["product_id"]
            session.call("delist_product", {"product_ids": [pid]})

    def reprice(self, session: Session) -> None:
        listed = self._listed(session)
        if listed:
            row = self.rng.choice(listed)
            price = round(row["sale_price"] * self.rng.uniform(0.7, 1.4), 2)
            session.call("adjust_price", {"product_id": row["product_id"], "sale_price": price})

    def look(self, session: Session) -> None:
        name = self.rng.choice(("query_balance", "get_daily_report", "query_open_orders"))
        session.call(name, {})

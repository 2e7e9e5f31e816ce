"""An agent of a user's own, outside the package, for tests/agents/test_own_agent.py and the
sweep tests: importable as `own_agent:Lister` (tests/ is on the test path), and copied into
temporary directories to be named by its file (`mine.py:Lister`)."""

from __future__ import annotations

from merchantbench.agents.base import AgentSettings, BaseAgent
from merchantbench.agents.baselines.tables import rows_of
from merchantbench.surface import AgentSurface


class ListerSettings(AgentSettings):
    markup: float = 1.8
    keywords: tuple[str, ...] = ("bag", "lamp", "mug")


class Lister(BaseAgent[ListerSettings]):
    """Lists the two cheapest in-stock products of one keyword a day at a fixed markup."""

    name = "lister"
    Settings = ListerSettings

    def __init__(self, config: ListerSettings | None = None) -> None:
        super().__init__(config)
        self.days = 0  # state a checkpoint must carry: which keyword comes next

    def act(self, surface: AgentSurface) -> None:
        if surface.window % 2 == 0:
            keyword = self.config.keywords[self.days % len(self.config.keywords)]
            self.days += 1
            found = surface.call("search_products", {"query": keyword, "sort": "price_asc"})
            items = [
                {
                    "product_id": row["product_id"],
                    "sale_price": round(row["price"] * self.config.markup, 2),
                }
                for row in rows_of(found)
                if row["stock"] == "in_stock"
            ][:2]
            if items:
                surface.call("list_product", {"items": items})
        surface.call("end_of_step", {})


class NotAnAgent:
    """A class that is no `BaseAgent`."""


class Peeker(Lister):
    """Claims the hidden market: only the built-in oracle may."""

    privileged = True

"""The sweep-wide budget and the gate every run passes to start.

Spending is read from files (the index of finished runs and the progress files of running ones),
so a gate works the same in the driver, in a worker process or on a Ray worker, as long as they
share the sweep directory. Once the budget is spent no new run starts; running runs go on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

from merchantbench.sweeps.index import read_index, write_index
from merchantbench.sweeps.plan import SweepRun
from merchantbench.sweeps.spec import Budget
from merchantbench.sweeps.state import PROGRESS_DIR, read_progress

Ending = Literal["finished", "failed", "not_started"]
Result = tuple[Ending, str | None]  # how a run ended and why (failure or budget)
OnEvent = Callable[[str, SweepRun], None]  # ("start" | "end", run): for a display


class Spending:
    """Cost and tokens of the sweep so far: finished runs (index) plus live progress files."""

    def __init__(self, sweep_dir: Path, budget: Budget) -> None:
        self.sweep_dir, self.budget = sweep_dir, budget

    def totals(self) -> tuple[float | None, int]:
        """Cost (None: some run's cost is unknown, a price not stated) and tokens so far."""
        cost: float | None = 0.0
        tokens = 0
        try:
            rows = read_index(self.sweep_dir)
        except OSError:
            rows = []
        finished = {row["run_dir"] for row in rows if row["status"] == "done"}
        for row in rows:
            if row["status"] == "done":
                cost = _add(cost, row.get("llm_cost"), bool(row.get("llm_calls")))
                tokens += row.get("llm_tokens") or 0
        for path in (self.sweep_dir / PROGRESS_DIR).glob("*/s*.json"):
            live = read_progress(path)
            if live and f"runs/{path.parent.name}/{path.stem}" not in finished:
                cost = _add(cost, live.get("cost", 0.0), True)
                tokens += live.get("tokens", 0)
        return cost, tokens

    def exceeded(self) -> str | None:
        """Why no new run may start, or `None`."""
        if self.budget.max_cost is None and self.budget.max_tokens is None:
            return None
        cost, tokens = self.totals()
        limit = self.budget.max_cost
        if limit is not None and cost is None:
            return f"sweep budget: cost unknown (a price is not stated), limit {limit:g}"
        if limit is not None and cost is not None and cost >= limit:
            return f"sweep budget: cost {cost:.4f} reached {limit:g}"
        if self.budget.max_tokens is not None and tokens >= self.budget.max_tokens:
            return f"sweep budget: {tokens} tokens reached {self.budget.max_tokens}"
        return None


def _add(total: float | None, cost: float | None, billed: bool) -> float | None:
    """A running cost plus one run's: unknown once a run that called a model has no cost."""
    if total is None or (cost is None and billed):
        return None
    return total + (cost or 0.0)


class RunGate:
    """Lets a run start unless the budget is spent, and rewrites the index as runs end."""

    def __init__(
        self,
        runs: Sequence[SweepRun],
        sweep_dir: Path,
        budget: Budget,
        on_event: OnEvent | None = None,
    ) -> None:
        self.runs, self.sweep_dir = list(runs), sweep_dir
        self.spending = Spending(sweep_dir, budget)
        self.on_event = on_event
        self.spent: str | None = None

    def may_start(self, run: SweepRun) -> str | None:
        """`None` if `run` may start, else the budget's reason."""
        self.spent = self.spent or self.spending.exceeded()
        if self.spent is None and self.on_event:
            self.on_event("start", run)
        return self.spent

    def ended(self, run: SweepRun) -> None:
        write_index(self.runs, self.sweep_dir)
        if self.on_event:
            self.on_event("end", run)

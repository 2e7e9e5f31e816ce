"""The live display of a sweep: every active run (window, net assets, cost so far) and totals.

It reads the progress files runs write (`merchantbench.sweeps.state`), so it shows runs in the
driver's event loop, in worker processes and on Ray workers alike.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table

from merchantbench.sweeps.budget import Spending
from merchantbench.sweeps.plan import SweepRun
from merchantbench.sweeps.state import progress_path, read_progress

REFRESH_SECONDS = 0.5


class SweepDisplay:
    """Tracks which runs are active (fed by the gate's events) and renders them."""

    def __init__(self, total: int, skipped: int, sweep_dir: Path, spending: Spending) -> None:
        self.total, self.done, self.sweep_dir, self.spending = total, skipped, sweep_dir, spending
        self.active: dict[str, SweepRun] = {}

    def on_event(self, event: str, run: SweepRun) -> None:
        if event == "start":
            self.active[run.name] = run
        else:
            self.active.pop(run.name, None)
            self.done += 1

    def render(self) -> Group:
        table = Table(title=None, expand=False, box=None, pad_edge=False)
        for header in ("run", "window", "net assets", "cost", "tokens"):
            table.add_column(header, justify="left" if header == "run" else "right")
        for name, run in sorted(self.active.items()):
            live = read_progress(progress_path(run, self.sweep_dir)) or {}
            window = f"{live.get('window', 0)}/{live.get('windows_total', '?')}"
            assets = live.get("net_assets")
            shown = "" if assets is None else f"¥{assets:,.2f}"
            if isinstance(live.get("merchants"), dict):  # an arena: every merchant's
                shown = " · ".join(f"{m} ¥{v.get('net_assets', 0):,.0f}"
                                   for m, v in live["merchants"].items())  # fmt: skip
            table.add_row(
                name, window, shown,
                _cost(live.get("cost", 0.0)), f"{live.get('tokens', 0):,}",
            )  # fmt: skip
        cost, tokens = self.spending.totals()
        totals = (
            f"[bold]{self.done}/{self.total} runs done · {len(self.active)} running · "
            f"cost {_cost(cost)} · {tokens:,} tokens"
        )
        return Group(table, totals)


def _cost(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.4f}"


async def show(display: SweepDisplay, console: Console, task: asyncio.Future[Any]) -> None:
    """Refresh the display until `task` is done."""
    with Live(display.render(), console=console, refresh_per_second=4, transient=False) as live:
        while not task.done():
            await asyncio.sleep(REFRESH_SECONDS)
            live.update(display.render())
        live.update(display.render())
    console.line()  # the summary that follows starts on its own line

"""`merchantbench catalog build`: generate (or load from the cache) a market and print its stats."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

import typer

from merchantbench.cli import common as opt  # the shared options and checks

if TYPE_CHECKING:  # the work is imported when the command runs (cli/common.py)
    from rich.table import Table


def _fmt(value: object) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.4g}"
    if isinstance(value, int):
        return f"{value:,d}"
    return str(value)


def _stats_table(stats: dict[str, object]) -> Table:
    from rich.table import Table

    table = Table(title="Market statistics", show_header=True, header_style="bold")
    table.add_column("statistic")
    table.add_column("value", justify="right")
    for key, value in stats.items():
        if key == "cache_dir":
            continue  # printed below the table in full
        if isinstance(value, dict):
            for sub, inner in value.items():
                if not isinstance(inner, dict):
                    table.add_row(f"{key}.{sub}", _fmt(inner))
        else:
            table.add_row(key, _fmt(value))
    return table


def build(
    scenario: opt.ScenarioName = "paper",
    seed: opt.SeedOption = 1,
    catalog: opt.CatalogOption = None,
    file: opt.ScenarioFile = None,
    set_: opt.SetOption = None,
    json_out: opt.JsonOption = False,
) -> None:
    """Build the scenario's synthetic market, or load a real catalog (--catalog), into the cache
    (or load it from there) and print statistics."""
    from rich.console import Console

    from merchantbench.catalog.cache import get_market, market_path
    from merchantbench.catalog.real_format import CatalogError
    from merchantbench.catalog.stats import market_stats
    from merchantbench.cli.progress import progress_display

    sc = opt.scenario_from_options(scenario, file, set_)
    path = market_path(sc, seed, catalog)
    cached = (path / "meta.json").exists()
    started = time.perf_counter()
    with progress_display(Console(stderr=True), "market", count=False, transient=True) as bar:
        task = bar.add_task("loading" if cached else "building", total=1.0)

        def progress(stage: str, done: float) -> None:
            bar.update(task, description=stage, completed=done)

        try:
            market = get_market(sc, seed, progress, catalog)
        except CatalogError as exc:
            opt.fail(str(exc))
    seconds = time.perf_counter() - started
    stats = market_stats(market, sc.clock.start_date)
    stats.update(seconds=round(seconds, 3), from_cache=cached, cache_dir=str(path))
    if json_out:
        typer.echo(json.dumps(stats))
        return
    console = Console()
    console.print(_stats_table(stats))
    console.print(
        f"{'loaded' if cached else 'built'} {sc.name} seed {seed} in {seconds:.2f} s → {path}"
    )

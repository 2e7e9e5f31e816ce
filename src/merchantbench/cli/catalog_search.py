"""`merchantbench catalog search`: search a market's catalog on a given day, as an agent's
`search_products` would."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import typer

from merchantbench.catalog.sort_keys import SORT_KEYS
from merchantbench.cli.common import (
    CatalogOption,
    JsonOption,
    ScenarioFile,
    ScenarioName,
    SeedOption,
    SetOption,
    fail,
    scenario_from_options,
)

if TYPE_CHECKING:  # the work is imported when the command runs (cli/common.py)
    from merchantbench.catalog.market import CatalogView, Market
    from merchantbench.catalog.search import SearchPage

COLUMNS = (
    "product_id", "title", "category", "price", "supplier_rating", "rating", "ship_h",
    "logistics_h", "stock", "sales_30d",
)  # fmt: skip
HEADERS = ("id", "title", "category", "price", "shop", "rating", "ship h", "log h", "stock",
           "30d sales")  # fmt: skip


def _rows(market: Market, view: CatalogView, found: SearchPage) -> list[list[object]]:
    from merchantbench.money import rmb

    rows: list[list[object]] = []
    for i in found.products:
        rows.append(
            [
                str(market.product_ids[i]),
                str(market.titles[i]),
                market.categories[int(market.category[i])],
                rmb(int(view.price_fen[i])),
                round(float(market.shop_rating[market.supplier[i]]), 1),
                round(float(market.historical_avg_rating[i]), 1),
                int(view.ship_hours[i]),
                int(market.logistics_hours[i]),
                int(view.stock[i]),
                int(view.sales_30d[i]),
            ]
        )
    return rows


def _print_table(rows: list[list[object]], found: SearchPage, title: str) -> None:
    from rich import box
    from rich.console import Console, JustifyMethod
    from rich.table import Table

    table = Table(
        title=title, header_style="bold", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True
    )
    for name, header in zip(COLUMNS, HEADERS, strict=True):
        # Only the title wraps, so narrow terminals still show whole ids and numbers.
        numeric = name not in ("product_id", "title", "category")
        justify: JustifyMethod = "right" if numeric else "left"
        wraps = name == "title"
        table.add_column(
            header, justify=justify, no_wrap=not wraps, min_width=16 if wraps else None
        )
    for row in rows:
        cells = zip(COLUMNS, row, strict=True)
        table.add_row(*(f"{v:.2f}" if c == "price" else str(v) for c, v in cells))
    console = Console()
    if not console.is_terminal:  # piped or captured: no screen width to respect
        console = Console(width=160)
    console.print(table)
    console.print(f"page {found.page} of {found.pages} · {found.total:,d} matches")


def search(
    query: str = typer.Argument("", help="keywords; empty browses every product on sale"),
    scenario: ScenarioName = "paper",
    seed: SeedOption = 1,
    catalog: CatalogOption = None,
    file: ScenarioFile = None,
    set_: SetOption = None,
    min_price: float | None = typer.Option(None, "--min-price", help="RMB, procurement price"),
    max_price: float | None = typer.Option(None, "--max-price", help="RMB, procurement price"),
    min_supplier_rating: float | None = typer.Option(None, "--min-supplier-rating"),
    min_rating: float | None = typer.Option(None, "--min-rating", help="product rating, 1-5"),
    max_ship_hours: int | None = typer.Option(None, "--max-ship-hours"),
    max_logistics_hours: int | None = typer.Option(None, "--max-logistics-hours"),
    min_stock: int | None = typer.Option(None, "--min-stock"),
    category: str | None = typer.Option(None, "--category"),
    sort: str = typer.Option("relevance", "--sort", help=" | ".join(SORT_KEYS)),
    page: int = typer.Option(1, "--page", min=1),
    page_size: int = typer.Option(20, "--page-size", min=1),
    day: int = typer.Option(1, "--day", min=1, help="day of the run to look at, from 1"),
    json_out: JsonOption = False,
) -> None:
    """Search the catalog of a scenario's market on one day, with filters, sort and paging."""
    from merchantbench.catalog.cache import get_market, get_search_index
    from merchantbench.catalog.real_format import CatalogError
    from merchantbench.catalog.search import SearchFilters
    from merchantbench.catalog.view import catalog_view_at

    sc = scenario_from_options(scenario, file, set_)
    if day > sc.clock.days:
        fail(f"--day must be at most {sc.clock.days} for scenario {sc.name}")
    try:
        market = get_market(sc, seed, catalog=catalog)
    except CatalogError as exc:
        fail(str(exc))
    index = get_search_index(sc, seed, market, catalog)
    view = catalog_view_at(market, (day - 1) * 24)
    filters = SearchFilters(
        min_price, max_price, min_supplier_rating, min_rating,
        max_ship_hours, max_logistics_hours, min_stock, category,
    )  # fmt: skip
    try:
        found = index.search(query, view, filters, sort, page, page_size)  # type: ignore[arg-type]
    except ValueError as exc:
        fail(str(exc))
    rows = _rows(market, view, found)
    if json_out:
        meta = {"query": query, "day": day, "page": found.page, "pages": found.pages}
        typer.echo(json.dumps({**meta, "total": found.total, "columns": COLUMNS, "rows": rows}))
        return
    _print_table(rows, found, f"{query or 'all products'!r} on day {day} ({sc.name}, seed {seed})")

"""`merchantbench catalog …`: build, inspect and search the market catalog."""

from __future__ import annotations

import typer

from merchantbench.cli import catalog_build, catalog_search

app = typer.Typer(help="Build, inspect and search the market catalog.", no_args_is_help=True)
app.command("build")(catalog_build.build)
app.command("search")(catalog_search.search)

"""Shared CLI plumbing: one-line errors and scenario options."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, NoReturn

import typer

from merchantbench.scenario import Scenario, ScenarioError, load_scenario

ScenarioName = Annotated[str, typer.Option("--scenario", "-s", help="preset: paper, small, smoke")]
ScenarioFile = Annotated[
    str | None, typer.Option("--scenario-file", help="YAML file of overrides (key `base` = preset)")
]
SetOption = Annotated[
    list[str] | None,
    typer.Option("--set", help="override one parameter, e.g. --set market.n_products=5000"),
]
SeedOption = Annotated[int, typer.Option("--seed", help="market and outcome seed")]
CatalogOption = Annotated[
    Path | None,
    typer.Option("--catalog", help="a real catalog directory (docs/catalog.md) instead of the "
                 "synthetic market", exists=True, file_okay=False),
]  # fmt: skip


def fail(message: str, code: int = 2) -> NoReturn:
    """Print a one-line reason to stderr and exit non-zero."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def scenario_from_options(name: str, file: str | None, overrides: list[str] | None) -> Scenario:
    try:
        return load_scenario(name, overrides=overrides, file=file)
    except ScenarioError as exc:
        fail(str(exc))

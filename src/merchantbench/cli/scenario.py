"""`merchantbench scenario …`: inspect scenario presets."""

from __future__ import annotations

import typer

from merchantbench.cli.common import ScenarioFile, SetOption, scenario_from_options

app = typer.Typer(help="Inspect scenario presets and overrides.", no_args_is_help=True)


@app.command("show")
def show(name: str = typer.Argument("paper"), file: ScenarioFile = None, set_: SetOption = None):
    """Print a scenario (a preset with any overrides) as YAML, with its version and hash."""
    scenario = scenario_from_options(name, file, set_)
    typer.echo(f"# content_hash: {scenario.content_hash}")
    typer.echo(scenario.to_yaml(), nl=False)


@app.command("list")
def list_presets():
    """List the preset scenarios."""
    from merchantbench.scenario import PRESETS

    for name, sc in PRESETS.items():
        m = sc.market
        typer.echo(
            f"{name:6s} {m.n_products:>7,d} products {sc.clock.days:>4d} days  {sc.content_hash}"
        )

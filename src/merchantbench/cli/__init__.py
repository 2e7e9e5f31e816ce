"""The `merchantbench` command. Each group lives in its own module of this package."""

from __future__ import annotations

import typer

from merchantbench.cli import calibrate as calibrate_cmd
from merchantbench.cli import catalog as catalog_cmd
from merchantbench.cli import mcp as mcp_cmd
from merchantbench.cli import report as report_cmd
from merchantbench.cli import run as run_cmd
from merchantbench.cli import scenario as scenario_cmd
from merchantbench.cli import scripted as scripted_cmd
from merchantbench.cli import tools as tools_cmd

app = typer.Typer(
    name="merchantbench",
    help="MerchantBench: a 365-day drop-shipping benchmark for LLM agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(scenario_cmd.app, name="scenario")
app.add_typer(catalog_cmd.app, name="catalog")
app.add_typer(tools_cmd.app, name="tools")
app.command("report")(report_cmd.report)
app.command("compare")(report_cmd.compare)
app.command("run")(run_cmd.run)
app.command("mcp")(mcp_cmd.mcp)
app.command("scripted-server")(scripted_cmd.scripted_server)
app.command("calibrate")(calibrate_cmd.calibrate)


def main() -> None:
    app()

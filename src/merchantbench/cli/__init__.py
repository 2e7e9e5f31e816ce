"""The `merchantbench` command. Each group lives in its own module of this package."""

from __future__ import annotations

import os
import sys
from typing import Any

import typer

from merchantbench.cli import arena as arena_cmd
from merchantbench.cli import calibrate as calibrate_cmd
from merchantbench.cli import catalog as catalog_cmd
from merchantbench.cli import check as check_cmd
from merchantbench.cli import counterfactual as counterfactual_cmd
from merchantbench.cli import doctor as doctor_cmd
from merchantbench.cli import keys as keys_cmd
from merchantbench.cli import mcp as mcp_cmd
from merchantbench.cli import play as play_cmd
from merchantbench.cli import report as report_cmd
from merchantbench.cli import reveal as reveal_cmd
from merchantbench.cli import run as run_cmd
from merchantbench.cli import scenario as scenario_cmd
from merchantbench.cli import scripted as scripted_cmd
from merchantbench.cli import serve as serve_cmd
from merchantbench.cli import site as site_cmd
from merchantbench.cli import sweep as sweep_cmd
from merchantbench.cli import tools as tools_cmd
from merchantbench.cli import verify as verify_cmd


class _Group(typer.core.TyperGroup):
    """A command group whose `--help` defaults to False rather than None: typer coerces a
    non-bool value with pydantic (typer._adapters, about as long as the rest of a subcommand's
    `--help`), and a group's help option is read on every command line below it."""

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)
        if option is not None:
            option.default = False
        return option


app = typer.Typer(
    name="merchantbench",
    cls=_Group,
    help="MerchantBench: a 365-day drop-shipping benchmark for LLM agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain help (click's): typer's Rich help imports Rich's Markdown, Syntax and Traceback,
    # about as long again as the rest of `--help` (docs/performance.md, "Start-up").
    rich_markup_mode=None,
)
_DEBUG = {"on": bool(os.environ.get("MERCHANTBENCH_DEBUG"))}


@app.callback()
def _root(
    debug: bool = typer.Option(
        False, "--debug", help="show the full traceback of an unexpected error"
    ),
) -> None:
    """MerchantBench: a 365-day drop-shipping benchmark for LLM agents."""
    if debug:
        _DEBUG["on"] = True


app.add_typer(scenario_cmd.app, name="scenario", cls=_Group)
app.add_typer(catalog_cmd.app, name="catalog", cls=_Group)
app.add_typer(tools_cmd.app, name="tools", cls=_Group)
app.add_typer(keys_cmd.app, name="keys", cls=_Group)
app.command("report")(report_cmd.report)
app.command("compare")(report_cmd.compare)
app.command("run")(run_cmd.run)
app.command("arena")(arena_cmd.arena)
app.command("mcp")(mcp_cmd.mcp)
app.command("scripted-server")(scripted_cmd.scripted_server)
app.command("calibrate")(calibrate_cmd.calibrate)
app.command("check")(check_cmd.check)
app.command("reveal")(reveal_cmd.reveal)
app.command("verify")(verify_cmd.verify)
app.command("serve")(serve_cmd.serve)
app.command("play")(play_cmd.play)
app.add_typer(play_cmd.study_app, name="study", cls=_Group)
app.command("dashboard")(play_cmd.dashboard)
app.command("sweep")(sweep_cmd.sweep)
app.command("leaderboard")(sweep_cmd.leaderboard)
app.command("site")(site_cmd.site)
app.command("doctor")(doctor_cmd.doctor)
app.command("fork")(counterfactual_cmd.fork)
app.command("counterfactual")(counterfactual_cmd.counterfactual)


def main() -> None:
    """The command: every failure ends in one line on stderr and a non-zero exit, unless
    `--debug` (or MERCHANTBENCH_DEBUG=1) asks for the traceback."""
    if len(sys.argv) == 1:
        app()  # no arguments: the help, as typer shows it
    try:
        code = app(standalone_mode=False)
    except typer.TyperException as exc:  # a usage error: the bad option, in one line
        if type(exc).__name__ == "NoArgsIsHelpError":  # a group given no command: its help
            print(exc.format_message(), file=sys.stderr)
            sys.exit(exc.exit_code)
        print(f"error: {' '.join(exc.format_message().split())}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except (KeyboardInterrupt, typer.Abort):
        print("error: interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception as exc:
        if _DEBUG["on"]:
            raise
        reason = " ".join(str(exc).split())[:300] or "no details"
        print(
            f"error: {type(exc).__name__}: {reason} (--debug shows the traceback)",
            file=sys.stderr,
        )
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)

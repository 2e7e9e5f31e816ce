"""`merchantbench tools …`: the agent's tools as a scenario offers them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from merchantbench.cli.common import (
    ScenarioFile,
    ScenarioName,
    SetOption,
    fail,
    scenario_from_options,
)

if TYPE_CHECKING:  # the work is imported when the command runs (cli/common.py)
    from merchantbench.tools.registry import ToolRegistry

app = typer.Typer(
    help="Inspect the agent's tools: schemas, list, descriptions.", no_args_is_help=True
)

AllOption = Annotated[
    bool, typer.Option("--all", help="include optional tools the scenario leaves off")
]


def _registry(name: str, file: str | None, overrides: list[str] | None) -> ToolRegistry:
    from merchantbench.tools.toolset import build_registry

    return build_registry(scenario_from_options(name, file, overrides))


@app.command("schema")
def schema(scenario: ScenarioName = "paper", file: ScenarioFile = None, set_: SetOption = None):
    """Print the tool schemas the agent is shown (OpenAI function-calling format) and their
    SHA-256, as JSON."""
    registry = _registry(scenario, file, set_)
    document = {"sha256": registry.schema_sha256(), "tools": registry.schema_list()}
    typer.echo(json.dumps(document, indent=2, ensure_ascii=False))


@app.command("list")
def list_tools(
    scenario: ScenarioName = "paper",
    file: ScenarioFile = None,
    set_: SetOption = None,
    all_: AllOption = False,
):
    """List the tools: name, group, kind (read or write) and summary."""
    registry = _registry(scenario, file, set_)
    tools = registry.tools(include_optional=all_)
    width = max(len(t.name) for t in tools)
    typer.echo(f"{'name':<{width}}  {'group':<10}  {'kind':<5}  summary")
    for t in tools:
        off = "" if registry.is_active(t.name) else " (optional, off)"
        typer.echo(f"{t.name:<{width}}  {t.group:<10}  {t.kind:<5}  {t.summary}{off}")


@app.command("describe")
def describe(
    name: str = typer.Argument(..., help="tool name"),
    scenario: ScenarioName = "paper",
    file: ScenarioFile = None,
    set_: SetOption = None,
):
    """Describe one tool in Markdown: what it does and its parameters."""
    registry = _registry(scenario, file, set_)
    if name not in registry:
        known = ", ".join(t.name for t in registry.tools(include_optional=True))
        fail(f"no tool named {name!r}; choose from {known}")
    typer.echo(registry.describe(name).as_markdown(), nl=False)


@app.command("docs")
def docs(
    path: Annotated[Path, typer.Argument(help="a Markdown file with generated tables")],
    write: Annotated[
        bool, typer.Option("--write", help="rewrite the file instead of checking it")
    ] = False,
):
    """Check (or, with --write, rewrite) the tables of a Markdown file that are generated from
    the tool declarations and the refusal codes (`<!-- generated: NAME -->` blocks)."""
    from merchantbench.tools.doc_tables import GeneratedBlockError, update_generated

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"{path}: cannot be read ({exc})")
    try:
        updated = update_generated(text)
    except GeneratedBlockError as exc:
        fail(f"{path}: {exc}")
    if updated == text:
        typer.echo(f"{path}: generated tables are up to date")
        return
    if not write:
        fail(
            f"{path}: generated tables are out of date; run `merchantbench tools docs {path} "
            "--write`"
        )
    path.write_text(updated, encoding="utf-8")
    typer.echo(f"{path}: generated tables rewritten")

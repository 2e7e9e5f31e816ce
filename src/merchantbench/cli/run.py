"""`merchantbench run`: one agent, one scenario, one seed, a whole run with its record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from merchantbench.agents.base import agent_names
from merchantbench.cli.common import (
    ScenarioFile,
    ScenarioName,
    SeedOption,
    SetOption,
    fail,
    scenario_from_options,
)
from merchantbench.runs.runner import RunError, RunSpec, default_run_dir, run_agent
from merchantbench.session import Session


def _progress_line(session: Session) -> str:
    engine = session.engine
    a = engine.state.ledger.accounts
    day = min(engine.t, engine.horizon) // 24
    return (
        f"day {day:>3d} · net ¥{a.net_assets / 100:>10,.2f} · "
        f"{engine.state.rating.stars}★ {engine.state.rating.published:.2f} · "
        f"{len(engine.state.listings):>2d} listings"
    )


def run(
    agent: Annotated[str, typer.Option("--agent", "-a", help="agent (see --list-agents)")] = "",
    scenario: ScenarioName = "paper",
    seed: SeedOption = 1,
    days: Annotated[int | None, typer.Option(help="simulate fewer days")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="run directory")] = None,
    resume: Annotated[bool, typer.Option("--resume", help="continue a killed run")] = False,
    report: Annotated[bool, typer.Option("--report", help="write the report when done")] = False,
    progress: Annotated[bool, typer.Option(help="show a progress bar")] = True,
    file: ScenarioFile = None,
    set_: SetOption = None,
    list_agents: Annotated[bool, typer.Option("--list-agents", help="list agents")] = False,
) -> None:
    """Run an agent for a whole year (or --days) and write a run record to --out."""
    if list_agents:
        typer.echo("\n".join(agent_names()))
        return
    if not agent:
        fail(f"--agent is required; choose from {', '.join(agent_names())}")
    if agent not in agent_names():
        fail(f"unknown agent {agent!r}; choose from {', '.join(agent_names())}")
    overrides = list(set_ or []) + ([f"clock.days={days}"] if days is not None else [])
    sc = scenario_from_options(scenario, file, overrides)
    spec = RunSpec(agent=agent, scenario=sc, seed=seed)
    if resume and out is None:
        fail("--resume needs --out DIR, the run directory to continue")
    run_dir = out or default_run_dir(spec)
    console = Console(stderr=True)
    try:
        metrics = _run_with_progress(spec, run_dir, resume, progress, console)
    except RunError as exc:
        fail(str(exc))
    console.print(f"run record: {run_dir}")
    typer.echo(json.dumps({k: metrics[k] for k in _HEADLINE}, ensure_ascii=False))
    if report:
        from merchantbench.report import write_report

        path = write_report(run_dir)
        console.print(f"report: {path}")


_HEADLINE = ("final_net_assets", "gmv", "orders", "net_profit_margin", "fines", "swr")


def _run_with_progress(
    spec: RunSpec, run_dir: Path, resume: bool, show: bool, console: Console
) -> dict:
    total = spec.scenario.clock.windows
    with Progress(
        TextColumn("[bold]{task.fields[agent]}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=console,
        disable=not show,
        transient=False,
    ) as bar:
        task = bar.add_task("starting", total=total, agent=spec.agent)

        def on_window(session: Session) -> None:
            done = min(session.memory.windows_closed, total)
            bar.update(task, completed=done, description=_progress_line(session))

        return run_agent(spec, run_dir, resume=resume, on_window=on_window)

"""`merchantbench run`: one agent, one scenario, one seed, a whole run with its record."""

from __future__ import annotations

import gc
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from merchantbench.cli.common import (
    CatalogOption,
    DaysOption,
    RunSeedOption,
    ScenarioFile,
    ScenarioName,
    SealedOption,
    SetOption,
    fail,
    run_seed,
    scenario_from_options,
    writable_dir,
)

if TYPE_CHECKING:  # the work is imported when the command runs (cli/common.py)
    from rich.console import Console

    from merchantbench.runs.lifecycle import CheckpointPolicy
    from merchantbench.runs.spec import RunSpec
    from merchantbench.session import Session


def _progress_line(session: Session) -> str:
    from merchantbench.money import rmb

    engine = session.engine
    a = engine.state.ledger.accounts
    day = min(engine.t, engine.horizon) // 24
    return (
        f"day {day:>3d} · net ¥{rmb(a.net_assets):>10,.2f} · "
        f"{engine.state.rating.stars}★ {engine.state.rating.published:.2f} · "
        f"{len(engine.state.listings):>2d} listings"
    )


PROGRESS_HZ = 10  # progress bar updates a second, at most
_LLM = "LLM agents (react, hermes)"
ModelOption = Annotated[
    str | None, typer.Option("--model", help="model id to request", rich_help_panel=_LLM)
]
BaseUrlOption = Annotated[
    str | None,
    typer.Option("--base-url", help="OpenAI-compatible endpoint, e.g. …/v1", rich_help_panel=_LLM),
]
KeyEnvOption = Annotated[
    str | None,
    typer.Option(
        "--api-key-env", help="environment variable holding the key", rich_help_panel=_LLM
    ),
]
ModelsFileOption = Annotated[
    Path | None,
    typer.Option("--models-file", help="TOML/YAML file of model entries", rich_help_panel=_LLM),
]
EntryOption = Annotated[
    str | None,
    typer.Option("--model-entry", help="entry of --models-file to use", rich_help_panel=_LLM),
]
MaxTokensOption = Annotated[
    int | None, typer.Option("--max-tokens", help="run budget: tokens", rich_help_panel=_LLM)
]
MaxCostOption = Annotated[
    float | None, typer.Option("--max-cost", help="run budget: cost", rich_help_panel=_LLM)
]
MaxWallOption = Annotated[
    float | None,
    typer.Option("--max-wall-seconds", help="run budget: wall seconds", rich_help_panel=_LLM),
]
ParamOption = Annotated[
    list[str] | None,
    typer.Option(
        "--param", help="extra request parameter, e.g. reasoning_effort=high", rich_help_panel=_LLM
    ),
]
AgentOptOption = Annotated[
    list[str] | None,
    typer.Option(
        "--agent-opt", help="any agent setting, e.g. max_model_calls=20", rich_help_panel=_LLM
    ),
]


def _key_values(pairs: list[str] | None, option: str) -> dict[str, Any]:
    """`KEY=VALUE` pairs; values are read as YAML so numbers and booleans keep their type."""
    import yaml

    parsed = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            fail(f"{option} wants KEY=VALUE, got {pair!r}")
        parsed[key] = yaml.safe_load(value)
    return parsed


def _agent_settings(
    agent: str,
    options: dict[str, Any],
    params: list[str] | None,
    extra: list[str] | None,
    where: str = "",
) -> dict[str, Any]:
    """The settings given on the command line, checked by building the agent once; an error
    starts with `where` (an arena's merchant)."""
    from merchantbench.agents.registry import (
        AgentConfigError,
        agent_entry,
        check_settings,
        make_agent,
    )

    settings = {
        k: str(v) if isinstance(v, Path) else v for k, v in options.items() if v is not None
    }
    settings.update(_key_values(extra, "--agent-opt"))
    if params:
        settings["params"] = _key_values(params, "--param")
    try:
        check_settings(agent, settings)
        if not agent_entry(agent).privileged:
            make_agent(agent, settings)  # e.g. a missing API key fails now, not at window 1
    except AgentConfigError as exc:
        fail(f"{where}{exc}")
    except (TypeError, ValueError) as exc:
        fail(f"{where}agent {agent!r}: {exc}")
    except Exception as exc:  # an agent of your own may raise anything when it is built
        fail(f"{where}agent {agent!r}: building it failed: {type(exc).__name__}: {exc}")
    return settings


def run(
    agent: Annotated[
        str,
        typer.Option(
            "--agent",
            "-a",
            help="agent (see --list-agents), or your own: MODULE:CLASS or FILE.py:CLASS",
        ),
    ] = "",
    scenario: ScenarioName = "paper",
    seed: RunSeedOption = None,
    sealed: SealedOption = False,
    catalog: CatalogOption = None,
    days: DaysOption = None,
    out: Annotated[Path | None, typer.Option("--out", help="run directory")] = None,
    resume: Annotated[bool, typer.Option("--resume", help="continue a killed run")] = False,
    allow_code_change: Annotated[
        bool,
        typer.Option(
            "--allow-code-change",
            help="--resume: continue even though the code changed (recorded in run.json)",
        ),
    ] = False,
    transcript: Annotated[
        bool,
        typer.Option(help="write transcript.jsonl: each window's observation, each call's answer"),
    ] = True,
    checkpoint_seconds: Annotated[
        float,
        typer.Option(
            "--checkpoint-seconds",
            min=0,
            help="checkpoint after a window once S seconds passed since the last (0: every one)",
        ),
    ] = 2.0,
    report: Annotated[bool, typer.Option("--report", help="write the report when done")] = False,
    progress: Annotated[bool, typer.Option(help="show a progress bar")] = True,
    file: ScenarioFile = None,
    set_: SetOption = None,
    list_agents: Annotated[bool, typer.Option("--list-agents", help="list agents")] = False,
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    api_key_env: KeyEnvOption = None,
    models_file: ModelsFileOption = None,
    model_entry: EntryOption = None,
    max_tokens: MaxTokensOption = None,
    max_cost: MaxCostOption = None,
    max_wall_seconds: MaxWallOption = None,
    param: ParamOption = None,
    agent_opt: AgentOptOption = None,
    unsafe_code_exec: Annotated[
        bool,
        typer.Option(
            "--unsafe-code-exec",
            help="hermes: where no sandbox can be made, run code unsandboxed (unsafe)",
            rich_help_panel=_LLM,
        ),
    ] = False,
    serve: Annotated[
        bool, typer.Option("--serve", help="--agent external: host the run over HTTP")
    ] = False,
    serve_host: Annotated[str, typer.Option("--host", help="--serve: address")] = "127.0.0.1",
    serve_port: Annotated[int, typer.Option("--port", help="--serve: TCP port")] = 8000,
) -> None:
    """Run an agent for a whole year (or --days) and write a run record to --out."""
    from rich.console import Console

    from merchantbench.agents.load import resolve_agent_name
    from merchantbench.agents.registry import AgentConfigError, agent_entry, agent_names
    from merchantbench.catalog.errors import CatalogError
    from merchantbench.record.manifest import read_manifest
    from merchantbench.runs.lifecycle import CheckpointPolicy
    from merchantbench.runs.spec import RunError, RunSpec, default_run_dir

    if list_agents:
        for name in agent_names():
            typer.echo(f"{name:<12} {agent_entry(name).summary}")
        return
    if not agent:
        fail(f"--agent is required; choose from {', '.join(agent_names())}")
    if agent == "external" or serve:  # an agent outside this process, over HTTP
        if agent != "external" or not serve:
            fail("--serve goes with --agent external (and --agent external needs --serve)")
        sc = scenario_from_options(scenario, file, set_, days)
        run_seed_, secret = run_seed(seed, sealed, resume, out)
        spec = RunSpec(agent, sc, run_seed_, catalog=catalog, sealed=secret)
        _run_external(spec, out, resume, serve_host, serve_port)
        return
    try:
        agent = resolve_agent_name(agent)  # your own agent: loaded and checked here
        agent_entry(agent)
    except AgentConfigError as exc:
        fail(str(exc))
    sc = scenario_from_options(scenario, file, set_, days)
    llm_options = {
        "model": model,
        "base_url": base_url,
        "api_key_env": api_key_env,
        "models_file": models_file,
        "model_entry": model_entry,
        "max_tokens": max_tokens,
        "max_cost": max_cost,
        "max_wall_seconds": max_wall_seconds,
        "unsafe_code_exec": True if unsafe_code_exec else None,
    }
    settings = _agent_settings(agent, llm_options, param, agent_opt)
    if resume and out is None:
        fail("--resume needs --out DIR, the run directory to continue")
    run_seed_, secret = run_seed(seed, sealed, resume, out)
    spec = RunSpec(agent, sc, run_seed_, settings, catalog, sealed=secret)
    run_dir = out or default_run_dir(spec)
    writable_dir(run_dir, "--out")
    console = Console(stderr=True)
    # This process plays one run and exits: what it has loaded so far (modules, schemas, the
    # tool declarations) lives to the end, so the cyclic garbage collector need not walk it
    # again at each full collection (~0.1-0.2 s of a baseline year); and a run allocates
    # hundreds of thousands of short-lived containers (answers, trace entries), so the
    # youngest generation is collected every 10,000 allocations rather than every 700.
    gc.freeze()
    gc.set_threshold(10_000, *gc.get_threshold()[1:])
    try:
        metrics = _run_with_progress(
            spec, run_dir, resume, progress, console, allow_code_change, transcript,
            CheckpointPolicy(seconds=checkpoint_seconds), report,
        )  # fmt: skip
    except (RunError, CatalogError) as exc:
        fail(str(exc))
    except Exception as exc:
        # The LLM client is imported only to recognise its failure (a baseline never loads it).
        from merchantbench.agents.llm.client import ModelCallFailed

        if not isinstance(exc, ModelCallFailed):
            raise
        fail(f"{exc}; the run stopped with an error: continue it with --resume --out {run_dir}", 1)
    console.print(f"run record: {run_dir}")
    stop_reason = read_manifest(run_dir).stop_reason
    if stop_reason:
        console.print(f"stopped early: {stop_reason}")
    from merchantbench.metrics.table1 import HEADLINE_METRICS

    typer.echo(json.dumps({k: metrics[k] for k in HEADLINE_METRICS}, ensure_ascii=False))
    if report:
        from merchantbench.report.markdown import REPORT_FILE

        console.print(f"report: {run_dir / REPORT_FILE}")


def _run_external(spec: RunSpec, out: Path | None, resume: bool, host: str, port: int) -> None:
    from merchantbench.cli.serve import serve_run
    from merchantbench.runs.spec import default_run_dir

    if resume and out is None:
        fail("--resume needs --out DIR, the run directory to continue")
    run_dir = out or default_run_dir(spec)
    writable_dir(run_dir, "--out")
    serve_run(spec, run_dir, resume, host, port)


def _run_with_progress(
    spec: RunSpec,
    run_dir: Path,
    resume: bool,
    show: bool,
    console: Console,
    allow_code_change: bool = False,
    transcript: bool = True,
    checkpoints: CheckpointPolicy | None = None,
    report: bool = False,
) -> dict:
    from merchantbench.cli.progress import progress_display
    from merchantbench.runs.runner import run_agent

    total = spec.scenario.clock.windows
    with progress_display(console, spec.agent, show=show) as bar:
        task = bar.add_task("starting", total=total)

        last = [0.0]

        def on_window(session: Session) -> None:
            # At most PROGRESS_HZ updates a second: a baseline closes hundreds of windows a
            # second, and updating the bar at each cost a year ~0.5 s.
            now = time.monotonic()
            done = min(session.memory.windows_closed, total)
            if now - last[0] >= 1 / PROGRESS_HZ or done >= total:
                last[0] = now
                bar.update(task, completed=done, description=_progress_line(session))

        return run_agent(
            spec, run_dir, resume=resume, on_window=on_window, allow_code_change=allow_code_change,
            transcript=transcript, checkpoints=checkpoints, report=report,
        )  # fmt: skip

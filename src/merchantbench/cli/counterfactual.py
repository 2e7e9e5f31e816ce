"""`merchantbench fork RUN --window W` and `merchantbench counterfactual RUN|SWEEP --policy P`
(docs/counterfactual.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from merchantbench.cli.common import fail, writable_dir

if TYPE_CHECKING:  # the work is imported when the command runs (cli/common.py)
    from merchantbench.counterfactual.takeover import Policy

MAX_JOBS = 256

SeedForkOption = Annotated[
    int | None,
    typer.Option("--seed", help="a sealed run's seed (after `merchantbench reveal`); checked"),
]
AgentOpt = Annotated[
    list[str] | None,
    typer.Option("--agent-opt", help="a setting of the continuing agent, KEY=VALUE (repeatable)"),
]


def _settings(pairs: list[str] | None) -> dict[str, Any] | None:
    from merchantbench.cli.run import _key_values

    return _key_values(pairs, "--agent-opt") if pairs else None


def _agent(name: str) -> str:
    from merchantbench.agents.load import resolve_agent_name
    from merchantbench.agents.registry import AgentConfigError, agent_entry

    try:
        resolved = resolve_agent_name(name)
        agent_entry(resolved)
    except AgentConfigError as exc:
        fail(str(exc))
    return resolved


def fork(
    run_dir: Annotated[Path, typer.Argument(help="the run record to fork")],
    window: Annotated[
        int | None, typer.Option("--window", "-w", help="fork at the opening of this window")
    ] = None,
    day: Annotated[
        int | None, typer.Option("--day", help="… or of this run day's first window (0-based)")
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option("--agent", "-a", help="the continuing agent (default: the run's own)"),
    ] = None,
    agent_opt: AgentOpt = None,
    fresh_agent: Annotated[
        bool,
        typer.Option(
            "--fresh-agent",
            help="the run's own agent starts with no memory instead of being rebuilt",
        ),
    ] = False,
    out: Annotated[Path | None, typer.Option("--out", help="the fork's run directory")] = None,
    seed: SeedForkOption = None,
    transcript: Annotated[bool, typer.Option(help="continue the transcript, if any")] = True,
    progress: Annotated[bool, typer.Option(help="show a progress bar")] = True,
) -> None:
    """Restore a run record at a window and continue it with an agent under the same seed: a
    new run record naming its parent and fork window."""
    from rich.console import Console

    from merchantbench.agents.registry import AgentConfigError
    from merchantbench.cli.progress import progress_display
    from merchantbench.counterfactual.fork import fork_run, fork_spec
    from merchantbench.counterfactual.parent import ForkError, Parent
    from merchantbench.runs.spec import RunError

    if (window is None) == (day is None):
        fail("give the fork point: --window W or --day D (one of them)")
    try:
        parent = Parent.read(run_dir, seed)
        at = window if window is not None else parent.window_of_day(day or 0)
        parent.check_window(at)
    except ForkError as exc:
        fail(str(exc))
    spec = fork_spec(parent, None if agent is None else _agent(agent), _settings(agent_opt))
    target = out or run_dir.with_name(f"{run_dir.name}-fork-w{at}-{spec.agent.replace(':', '_')}")
    writable_dir(target, "--out")
    console = Console(stderr=True)
    total = parent.scenario.clock.windows
    with progress_display(console, f"fork w{at} · {spec.agent}", show=progress,
                          elapsed=False) as bar:  # fmt: skip
        task = bar.add_task("fork", total=total, completed=at)
        try:
            metrics = fork_run(
                parent, at, spec, target, fresh_agent=fresh_agent, transcript=transcript,
                on_window=lambda s: bar.update(task, completed=s.memory.windows_closed),
            )  # fmt: skip
        except (ForkError, RunError, AgentConfigError) as exc:
            fail(str(exc))
    console.print(f"fork record: {target}")
    typer.echo(json.dumps({"final_net_assets": metrics["final_net_assets"], "window": at}))


def _policies(names: list[str]) -> list[Policy]:
    from merchantbench.counterfactual.takeover import Policy

    policies, seen = [], set()
    for name in names:
        resolved = _agent(name)
        if resolved in seen:
            fail(f"--policy {name} is named twice")
        seen.add(resolved)
        policies.append(Policy(resolved))
    return policies


def counterfactual(
    target: Annotated[Path, typer.Argument(help="a finished run record, or a sweep directory")],
    policy: Annotated[
        list[str] | None,
        typer.Option(
            "--policy",
            "-p",
            help="takeover policy: expert, rule-based, idle or any agent (repeatable) "
            "[default: idle and expert]",
        ),
    ] = None,  # fmt: skip
    every: Annotated[str, typer.Option("--every", help="days between fork points")] = "30d",
    margin: Annotated[
        float | None,
        typer.Option(
            "--margin",
            help="RMB for the onset of damage [default: per policy, 3 × the store's "
            "takeover noise, docs/counterfactual.md]",
        ),
    ] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="worker processes")] = 1,
    executor: Annotated[str, typer.Option("--executor", help="local (default) or ray")] = "local",
    address: Annotated[
        str | None, typer.Option("--address", help="--executor ray: the cluster's address")
    ] = None,
    seed: SeedForkOption = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="write the analysis here instead of the run directory"),
    ] = None,
    progress: Annotated[bool, typer.Option(help="show a progress bar")] = True,
) -> None:
    """Takeover curves: for each fork day, the final net assets had a policy run the store
    from that day on (same seed); value built, damage done, onset of damage, regret by period.
    Written beside the run (counterfactual.json, counterfactual.svg, the report's section) or,
    for a sweep, aggregated by configuration (counterfactual_sweep.*)."""
    from rich.console import Console

    from merchantbench.agents.registry import AgentConfigError
    from merchantbench.cli.progress import progress_display
    from merchantbench.counterfactual.analysis import analyse
    from merchantbench.counterfactual.execute import executor_of
    from merchantbench.counterfactual.output import write_run, write_sweep
    from merchantbench.counterfactual.parent import ForkError, Parent, parse_every
    from merchantbench.counterfactual.sweep import aggregate, is_sweep, sweep_runs

    if not 1 <= jobs <= MAX_JOBS:
        fail(f"--jobs must lie between 1 and {MAX_JOBS}, not {jobs}")
    if executor not in ("local", "ray"):
        fail(f"unknown executor {executor!r}; choose local or ray")
    if address is not None and executor != "ray":
        fail("--address goes with --executor ray")
    if executor == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            fail("--executor ray needs Ray: install the extra, e.g. uv sync --extra ray")
    policies = _policies(policy or ["idle", "expert"])
    console = Console(stderr=True)
    try:
        every_days = parse_every(every)
        sweep = is_sweep(target)
        if sweep:
            labelled, left_out = sweep_runs(target)
            for note in left_out:
                console.print(f"left out: {note}")
        else:
            labelled = [("", target)]
        parents = [Parent.read(run_dir, seed) for _, run_dir in labelled]
    except ForkError as exc:
        fail(str(exc))
    writable_dir(out or target, "--out")
    with progress_display(console, "counterfactual", show=progress, elapsed=False) as bar:
        task = bar.add_task("replaying", total=None)

        def advance(done: int, total: int, last: Any) -> None:
            bar.update(task, completed=done, total=total,
                       description=f"{last.policy.label} from day {last.day}")  # fmt: skip

        try:
            analyses = analyse(
                parents, policies, every_days, executor_of(executor, jobs, address),
                margin=margin, progress=advance,
            )  # fmt: skip
        except (ForkError, AgentConfigError) as exc:
            fail(str(exc))
    if sweep:
        for (_, run_dir), analysis in zip(labelled, analyses, strict=True):
            write_run(analysis, None if out is None else out / run_dir.relative_to(target))
        data = aggregate([(label, a) for (label, _), a in zip(labelled, analyses, strict=True)],
                         target)  # fmt: skip
        files = write_sweep(data, out or target)
        from merchantbench.sweeps.report import REPORT_DIR, write_sweep_report

        if out is None and (target / REPORT_DIR / "report.md").is_file():
            # A sweep report already there is written again so that it shows the takeovers.
            files.append(write_sweep_report(target))
    else:
        files = write_run(analyses[0], out)
        data = analyses[0].to_json()
    for path in files:
        console.print(f"wrote {path}")
    if not sweep:
        summary = {
            c["label"]: {"from_start": c["from_start"], "total_regret": c["total_regret"],
                         "onset_day": c["onset_day"]}
            for c in data["curves"]
        }  # fmt: skip
        typer.echo(json.dumps({"continuing": data["continuing"], "policies": summary}))

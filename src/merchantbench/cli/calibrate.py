"""`merchantbench calibrate`: run the calibration grid and write docs/calibration.md.

The document's hand-written prose stays; the command rewrites only its generated blocks, each
between `<!-- calibrate:NAME -->` and `<!-- /calibrate:NAME -->` (a new file gets a skeleton
with every block). So `merchantbench calibrate` on a fresh clone reproduces the tables.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from merchantbench.cli.common import (
    ScenarioName,
    SetOption,
    fail,
    scenario_from_options,
    writable_dir,
)
from merchantbench.runs.calibrate_defaults import DEFAULT_AGENTS, DEFAULT_ROOT

if TYPE_CHECKING:  # the work is imported when the command runs (cli/common.py)
    from rich.console import Console

    from merchantbench.runs.calibrate import GridRun
    from merchantbench.scenario import Scenario

MAX_SEEDS = 1000  # more is a typo: each seed is a run per agent
MAX_JOBS = 256  # worker processes (each holds a market)


def calibrate(
    seeds: Annotated[
        int, typer.Option(help="seeds per agent (1 … seeds)", min=1, max=MAX_SEEDS)
    ] = 3,
    scenario: ScenarioName = "paper",
    agents: Annotated[
        str, typer.Option(help="comma-separated agents (yours too: MODULE:CLASS, FILE.py:CLASS)")
    ] = ",".join(DEFAULT_AGENTS),
    out: Annotated[Path, typer.Option(help="the calibration document")] = Path(
        "docs/calibration.md"
    ),
    jobs: Annotated[int, typer.Option(help="runs in parallel processes", min=1, max=MAX_JOBS)] = 2,
    ablation_seeds: Annotated[
        int, typer.Option(help="seeds of each expert ablation", min=0, max=MAX_SEEDS)
    ] = 1,
    root: Annotated[Path, typer.Option(help="where run records go")] = DEFAULT_ROOT,
    fresh: Annotated[bool, typer.Option(help="re-run even finished runs")] = False,
    set_: SetOption = None,
) -> None:
    """Run agents × seeds (and the expert's ablations) and write the calibration document."""
    from rich.console import Console

    from merchantbench.agents.load import AgentConfigError, resolve_agent_name
    from merchantbench.agents.registry import agent_entry
    from merchantbench.cli.calibration_doc import render_blocks, write_document
    from merchantbench.runs.calibrate import (
        check_targets,
        grid_decisions,
        mean_decisions,
        plan_grid,
        summarize,
    )

    names = []
    for given in (a.strip() for a in agents.split(",") if a.strip()):
        try:
            name = resolve_agent_name(given)  # your own agent: loaded and checked here
            agent_entry(name)
        except AgentConfigError as exc:
            fail(str(exc))
        names.append(name)
    if not names:
        fail("--agents names no agent")
    if len(set(names)) != len(names):
        fail(f"--agents repeats an agent: {agents}")
    sc = scenario_from_options(scenario, None, set_)
    if out.is_dir():
        fail(f"--out {out} is a directory; give the calibration document's file name")
    writable_dir(out.parent, "--out")
    writable_dir(root, "--root")
    runs = plan_grid(names, range(1, seeds + 1), range(1, ablation_seeds + 1))
    console = Console(stderr=True)
    results = _run_with_progress(sc, runs, root, jobs, fresh, console)
    decisions = mean_decisions(grid_decisions(sc, runs, root))
    summary = summarize(results)
    blocks = render_blocks(sc, summary, decisions, check_targets(summary, decisions))
    write_document(out, blocks)
    console.print(f"calibration: {out} (run records under {root / sc.name})")


def _run_with_progress(
    sc: Scenario, runs: list[GridRun], root: Path, jobs: int, fresh: bool, console: Console
) -> dict[GridRun, dict[str, Any]]:
    from merchantbench.cli.progress import progress_display
    from merchantbench.runs.calibrate import run_grid

    with progress_display(console, "calibrate") as bar:
        task = bar.add_task("starting", total=len(runs))

        def done(run: GridRun, reused: bool) -> None:
            how = "reused" if reused else "done"
            bar.update(task, advance=1, description=f"{run.label} s{run.seed} {how}")

        def moved(run: GridRun, where: Path) -> None:
            bar.console.print(f"notice: {run.label} s{run.seed}: record moved aside to {where}",
                              markup=False)  # fmt: skip

        return run_grid(sc, runs, root, jobs, fresh, on_done=done, on_set_aside=moved)

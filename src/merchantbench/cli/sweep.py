"""`merchantbench sweep FILE` and `merchantbench leaderboard SWEEP_OR_FOLDER` (docs/sweeps.md)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from merchantbench.cli.common import fail, writable_dir

if TYPE_CHECKING:  # the work is imported when the command runs (cli/common.py)
    from rich.console import Console

    from merchantbench.sweeps.execute import Executor, SweepOutcome

DEFAULT_ROOT = Path("sweeps")
MAX_JOBS = 256  # worker processes; more is a typo (each worker holds a market, ~130 MB idle)


def _executor(kind: str, jobs: int, address: str | None) -> Executor:
    from merchantbench.sweeps.execute import LocalExecutor

    if kind == "local":
        if address is not None:
            fail("--address goes with --executor ray")
        return LocalExecutor(jobs)
    if kind != "ray":
        fail(f"unknown executor {kind!r}; choose local or ray")
    try:
        from merchantbench.sweeps.ray_executor import RayExecutor
    except ImportError:
        fail("--executor ray needs Ray: install the extra, e.g. uv sync --extra ray")
    return RayExecutor(address)


def _summary(outcome: SweepOutcome, console: Console) -> None:
    console.print(
        f"finished {len(outcome.finished)} · skipped (done before) {len(outcome.skipped)} · "
        f"failed {len(outcome.failed)} · not retried {len(outcome.not_retried)} · "
        f"damaged {len(outcome.damaged)} · not started {len(outcome.not_started)}"
    )
    for name, reason in {**outcome.not_retried, **outcome.failed}.items():
        console.print(f"failed: {name}: {reason}", markup=False)
    for name, reason in outcome.damaged.items():
        console.print(f"damaged (kept as it is): {name}: {reason}", markup=False)
    if outcome.not_retried or outcome.damaged:
        console.print("run again with --retry-failed to retry the failed runs and set damaged "
                      "records aside")  # fmt: skip
    if outcome.budget_reason:
        console.print(f"stopped starting runs: {outcome.budget_reason}", markup=False)


def sweep(
    file: Annotated[Path, typer.Argument(help="sweep file (YAML or TOML)")],
    out: Annotated[Path | None, typer.Option("--out", help="sweep directory")] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="processes for CPU agents")] = 1,
    executor: Annotated[str, typer.Option("--executor", help="local (default) or ray")] = "local",
    address: Annotated[
        str | None, typer.Option("--address", help="--executor ray: the cluster's address")
    ] = None,
    retry_failed: Annotated[
        bool, typer.Option("--retry-failed", help="run failed runs again")
    ] = False,
    progress: Annotated[bool, typer.Option(help="show live progress")] = True,
) -> None:
    """Run a grid of agents × models × harnesses × scenarios × seeds; resumable."""
    from rich.console import Console

    from merchantbench.sweeps.driver import run_sweep
    from merchantbench.sweeps.index import INDEX_FILE
    from merchantbench.sweeps.plan import SweepPlanError
    from merchantbench.sweeps.spec import SweepFileError, load_sweep_file

    if not 1 <= jobs <= MAX_JOBS:
        fail(f"--jobs must lie between 1 and {MAX_JOBS}, not {jobs}")
    try:
        spec = load_sweep_file(file)
    except SweepFileError as exc:
        fail(str(exc))
    sweep_dir = out or DEFAULT_ROOT / spec.name
    writable_dir(sweep_dir, "--out")
    chosen = _executor(executor, jobs, address)
    console = Console(stderr=True)
    try:
        outcome = run_sweep(spec, file.parent, sweep_dir, chosen, retry_failed,
                            console if progress else None, on_set_aside=_notice)  # fmt: skip
    except SweepPlanError as exc:
        fail(str(exc))
    _summary(outcome, console)
    console.print(f"sweep: {sweep_dir} (index: {sweep_dir / INDEX_FILE})")
    if outcome.failed or outcome.not_retried or outcome.damaged:
        raise typer.Exit(1)


def _notice(name: str, target: Path, reason: str) -> None:
    """A record moved aside, said at once on stderr (the summary repeats it)."""
    typer.echo(f"notice: {name}: record moved aside to {target} ({reason})", err=True)


def _sweep_dirs(root: Path) -> list[Path]:
    """The sweep directories (those with a plan) at or under `root`."""
    from merchantbench.sweeps.plan import PLAN_FILE

    return sorted(path.parent for path in root.rglob(PLAN_FILE) if path.is_file())


def leaderboard(
    sweep_dir: Annotated[
        Path, typer.Argument(help="a sweep directory, or a folder of sweeps and runs")
    ],
    by: Annotated[str, typer.Option("--by", help="metric to rank by")] = "final_net_assets",
) -> None:
    """Rank configurations by the mean of a metric: one table per setting (scenario, days,
    market, tools, code), never pooling runs of different settings."""
    from rich.console import Console
    from rich.table import Table

    from merchantbench.record.comparable import (
        counted,
        finished_runs,
        left_out_lines,
        provenance_lines,
    )
    from merchantbench.replay.evidence import checker
    from merchantbench.sweeps.index import record_rows
    from merchantbench.sweeps.leaderboard import HEADERS, rankings
    from merchantbench.sweeps.plan import SweepPlanError

    if not sweep_dir.is_dir():
        fail(f"{sweep_dir} is not a directory of sweeps or runs")
    unfinished = 0
    try:
        for found in _sweep_dirs(sweep_dir):
            unfinished += sum(row["status"] != "done" for row in record_rows(found))
    except SweepPlanError as exc:
        fail(str(exc))
    runs, left_out = counted(finished_runs(sweep_dir, checker()))
    try:
        tables = rankings(runs, by)
    except ValueError as exc:
        fail(str(exc))
    console = Console(width=None if sys.stdout.isatty() else 220)  # piped: not cut to 80
    for line in left_out_lines(left_out):
        console.print(f"left out (does not verify): {line}", markup=False, highlight=False)
    if not tables:
        console.print(f"{sweep_dir}: no finished run to rank ({unfinished} planned runs not "
                      "finished)", markup=False)  # fmt: skip
        return
    for ranking in tables:
        table = Table(title=f"{ranking.setting.label}: ranked by mean {by}", title_justify="left")
        for header in HEADERS:
            table.add_column(header, justify="left" if header in HEADERS[:3] else "right")
        for row in ranking.rows:
            table.add_row(*row)
        console.print(table)
        for label, text in provenance_lines(ranking.provenance):
            console.print(f"  {label}: {text}", markup=False, highlight=False)
        console.print()
    if len(tables) > 1:
        console.print(f"{len(tables)} settings: runs of different settings are ranked apart, "
                      "never pooled", markup=False)  # fmt: skip
    if unfinished:
        console.print(f"{unfinished} planned runs not finished (not counted)", markup=False)


def sweep_report(sweep_dir: Path, out: Path | None, humans: list[Path] | None = None) -> None:
    """`merchantbench report SWEEP [--humans STUDY]`: the sweep's report (with human rows)."""
    from merchantbench.sweeps.index import SweepIndexError
    from merchantbench.sweeps.plan import PLAN_FILE, SweepPlanError
    from merchantbench.sweeps.report import write_sweep_report

    if not (sweep_dir / PLAN_FILE).is_file() and not any(sweep_dir.rglob(PLAN_FILE)):
        fail(f"{sweep_dir} has no {PLAN_FILE}, nor any sweep beneath: plan or run a sweep first")
    if out is not None:
        writable_dir(out, "--out")
    try:
        path = write_sweep_report(sweep_dir, out, humans or [])
    except (SweepIndexError, SweepPlanError, ValueError) as exc:
        fail(str(exc))
    typer.echo(f"report: {path} (and report.md, table1.csv, runs.csv beside it)")

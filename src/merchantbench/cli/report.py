"""`merchantbench report` and `merchantbench compare`: reports of one run or of several."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from merchantbench.cli.common import fail, writable_dir


def report(
    run_dir: Path = typer.Argument(
        ...,
        help="a run directory written by `merchantbench run`, an arena directory "
        "(`merchantbench arena`), or a sweep directory",
    ),
    out: Path | None = typer.Option(
        None, "--out", help="directory for report.md, metrics.json and figures (default: run_dir)"
    ),
    humans: list[Path] | None = typer.Option(
        None,
        "--humans",
        help="a sweep's report only: a playground or study folder whose finished runs join the "
        "report as Human (n=K) rows (repeatable)",
    ),
) -> None:
    """Write report.md, metrics.json and SVG figures of a run, and print its Table-1 line; of an
    arena, the market's report (and each merchant's Table-1 line); for a sweep directory or a
    folder of sweeps, the report (HTML, Markdown, CSV: docs/sweeps.md)."""
    if (run_dir / "sweep.json").is_file() or _folder_of_sweeps(run_dir):
        from merchantbench.cli.sweep import sweep_report

        sweep_report(run_dir, out, humans)
        return
    if humans:
        fail("--humans is for a sweep's report: give a sweep directory")
    from merchantbench.metrics import RunRecordError, load_run_record, metrics_of
    from merchantbench.record.arena import ARENA_FILE, ArenaError, read_arena
    from merchantbench.report import table1_line, write_report

    target = out if out is not None else run_dir
    if (run_dir / ARENA_FILE).is_file():
        writable_dir(target, "--out")
        try:
            path = write_report(run_dir, target)
        except (ArenaError, RunRecordError) as exc:
            fail(str(exc))
        except (OSError, ValueError, KeyError) as exc:  # a damaged merchant's record
            fail(f"{run_dir}: a merchant's record cannot be read: {type(exc).__name__}: {exc}")
        manifest = read_arena(run_dir)
        for entry in manifest.merchants:
            metrics_file = manifest.merchant_dir(run_dir, entry.id) / "metrics.json"
            typer.echo(f"{entry.id}: {table1_line(json.loads(metrics_file.read_text()))}")
        typer.echo(f"report: {path}")
        return
    try:
        record = load_run_record(run_dir)
    except RunRecordError as exc:
        fail(str(exc))
    writable_dir(target, "--out")
    from merchantbench.report import write_run_report

    metrics = metrics_of(record)
    path = write_run_report(record, metrics, target)
    typer.echo(table1_line(metrics))
    typer.echo(f"report: {path}")


def _folder_of_sweeps(path: Path) -> bool:
    """A folder (no run record itself) with sweeps beneath it."""
    return (
        path.is_dir()
        and not (path / "run.json").exists()
        and any(p.is_file() for p in path.rglob("sweep.json"))
    )


def compare(
    run_dirs: list[Path] = typer.Argument(..., help="run directories (several seeds, agents)"),
    out: Path | None = typer.Option(None, "--out", help="directory to write compare.md into"),
) -> None:
    """Summarise several runs per agent (mean, std, CV) and pair agents by seed; only runs whose
    record verifies (replayed, or found in the check cache) are counted."""
    from merchantbench.metrics import RunRecordError, RunResult, compute_metrics
    from merchantbench.replay.evidence import checker
    from merchantbench.report import render_comparison, table1_line

    if out is not None:
        writable_dir(out, "--out")
    _one_setting(run_dirs)
    runs = []
    check = checker()
    for run_dir in run_dirs:
        verdict = check(run_dir)
        if not verdict.ok:  # only records that verify are compared; the others are named
            typer.echo(f"left out (does not verify): {run_dir}: {verdict.status}: "
                       f"{verdict.detail}", err=True)  # fmt: skip
            continue
        try:
            runs.append(RunResult.of(run_dir, compute_metrics(run_dir)))
        except RunRecordError as exc:
            fail(str(exc))
    if not runs:
        fail("no run to compare: none of the records verifies")
    try:
        text = render_comparison(runs)
    except ValueError as exc:
        fail(str(exc))
    for run in runs:
        typer.echo(table1_line(run.metrics))
    if out is None:
        typer.echo(text, nl=False)
        return
    out.mkdir(parents=True, exist_ok=True)
    (out / "compare.md").write_text(text, encoding="utf-8")
    typer.echo(f"comparison: {out / 'compare.md'}")


def _one_setting(run_dirs: list[Path]) -> None:
    """Refuse to pool runs of different settings (scenario, days, market, tools, code)."""
    from merchantbench.record.comparable import Setting, setting_of
    from merchantbench.record.manifest import ManifestError, read_manifest

    settings: dict[Setting, Path] = {}
    for run_dir in run_dirs:
        try:
            settings.setdefault(setting_of(read_manifest(run_dir)), run_dir)
        except ManifestError as exc:
            fail(str(exc))
    if len(settings) > 1:
        shown = "; ".join(f"{s.label} ({d})" for s, d in settings.items())
        fail(
            f"these runs are of {len(settings)} settings, which are never pooled: {shown}; "
            "compare runs of one setting, or rank them apart with merchantbench leaderboard"
        )

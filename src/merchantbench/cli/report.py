"""`merchantbench report` and `merchantbench compare`: reports of one run or of several."""

from __future__ import annotations

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
    """Write report.md, metrics.json and SVG figures of a run, and print its Table-1 line; for
    an arena directory, the market's report (report.md, market_metrics.json, figures:
    docs/arena.md); for a sweep directory, the sweep's report (HTML, Markdown, CSV:
    docs/sweeps.md)."""
    from merchantbench.record.arena import ARENA_FILE

    if (run_dir / ARENA_FILE).is_file():
        if humans:
            fail("--humans is for a sweep's report: give a sweep directory")
        _arena_report(run_dir, out)
        return
    if (run_dir / "sweep.json").is_file():
        from merchantbench.cli.sweep import sweep_report

        sweep_report(run_dir, out, humans)
        return
    if humans:
        fail("--humans is for a sweep's report: give a sweep directory")
    from merchantbench.metrics import RunRecordError, load_run_record, metrics_of
    from merchantbench.report import table1_line, write_run_report

    try:
        record = load_run_record(run_dir)
    except RunRecordError as exc:
        fail(str(exc))
    writable_dir(out if out is not None else run_dir, "--out")
    metrics = metrics_of(record)
    path = write_run_report(record, metrics, out if out is not None else run_dir)
    typer.echo(table1_line(metrics))
    typer.echo(f"report: {path}")


def _arena_report(arena_dir: Path, out: Path | None) -> None:
    from merchantbench.metrics import RunRecordError
    from merchantbench.record.arena import ArenaError, read_arena
    from merchantbench.report.arena import write_arena_report

    try:
        manifest = read_arena(arena_dir)
    except ArenaError as exc:
        fail(str(exc))
    if manifest.ended != "completed":
        fail(f"{arena_dir} is not finished ({manifest.ended or 'under way'}): nothing to report")
    writable_dir(out if out is not None else arena_dir, "--out")
    try:
        path = write_arena_report(arena_dir, out)
    except (RunRecordError, ArenaError, OSError) as exc:
        fail(str(exc))
    typer.echo(f"report: {path}")


def compare(
    run_dirs: list[Path] = typer.Argument(..., help="run directories (several seeds, agents)"),
    out: Path | None = typer.Option(None, "--out", help="directory to write compare.md into"),
) -> None:
    """Summarise several runs per agent (mean, std, CV) and pair agents by seed."""
    from merchantbench.metrics import RunRecordError, RunResult, compute_metrics
    from merchantbench.report import render_comparison, table1_line

    if out is not None:
        writable_dir(out, "--out")
    _one_setting(run_dirs)
    runs = []
    for run_dir in run_dirs:
        try:
            runs.append(RunResult.of(run_dir, compute_metrics(run_dir)))
        except RunRecordError as exc:
            fail(str(exc))
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

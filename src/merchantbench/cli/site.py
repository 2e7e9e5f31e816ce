"""`merchantbench site`: a static leaderboard site of runs and sweeps (docs/site.md)."""

from __future__ import annotations

from pathlib import Path

import typer

from merchantbench.cli.common import fail


def site(
    inputs: list[Path] = typer.Argument(
        ..., help="run directories, sweep directories or folders holding them"
    ),
    out: Path = typer.Option(
        ...,
        "--out",
        help="folder to write the site into (new, empty, or "
        "a site this command made before, which is replaced)",
    ),  # fmt: skip
    verify: bool = typer.Option(
        True,
        "--verify/--no-verify",
        help="replay every finished run not in the check cache (--no-verify: the cache only; "
        "a run not in it is left out of the ranking)",
    ),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="progress on stderr"),
) -> None:
    """Write a self-contained static site: a ranking per comparable group with provenance, and
    a page per run with its charts and trace viewer. Open OUT/index.html, or publish OUT."""
    from merchantbench.site import SiteError, build_site

    def say(line: str) -> None:
        if progress:
            typer.echo(f"site: {line}", err=True)

    try:
        summary = build_site(inputs, out, verify=verify, progress=say)
    except (SiteError, OSError) as exc:
        fail(str(exc))
    groups = f"{summary.groups} comparable group" + ("s" if summary.groups != 1 else "")
    typer.echo(
        f"site: {summary.out / 'index.html'} ({summary.runs} runs, {groups}, "
        f"{summary.verified} verified"
        + (f", {summary.skipped} left out" if summary.skipped else "")
        + ")"
    )

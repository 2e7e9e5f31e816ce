"""`merchantbench verify DIR…`: replay run records and check them (docs/verify.md)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from merchantbench.cli.common import JsonOption

if TYPE_CHECKING:  # the work is imported when the command runs (cli/common.py)
    from merchantbench.session import Session

PROGRESS_SECONDS = 2.0  # a long record reports its progress on stderr this often


def verify(
    run_dirs: Annotated[
        list[Path], typer.Argument(help="run directories to verify", metavar="DIR...")
    ],
    seed: Annotated[
        int | None,
        typer.Option("--seed", help="a sealed run's seed, as `merchantbench reveal` prints it"),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Replay each run's actions in a fresh session and check every answer, window close, the
    final state hash, the tables and every metric against the record. Exit 0 only when all
    match; 1 when a record differs (one line naming where); 2 when one cannot be replayed."""
    from merchantbench.replay import ReplayError, verify_record

    code = 0
    for run_dir in run_dirs:
        try:
            report = verify_record(run_dir, seed=seed, on_window=_progress(run_dir))
        except ReplayError as exc:
            message = " ".join(str(exc).split())
            if as_json:
                typer.echo(json.dumps({"run_dir": str(run_dir), "ok": False, "error": message}))
            typer.echo(f"error: {message}", err=True)
            code = 2
            continue
        typer.echo(report.to_json() if as_json else report.summary())
        if not report.ok:
            code = max(code, 1)
    if code:
        raise typer.Exit(code)


def _progress(run_dir: Path) -> Callable[[Session], None]:
    """A window hook that says, every few seconds, how far the replay of `run_dir` is."""
    last = [time.monotonic()]

    def report(session: Session) -> None:
        now = time.monotonic()
        if now - last[0] >= PROGRESS_SECONDS:
            last[0] = now
            total = session.scenario.clock.windows
            typer.echo(
                f"verify {run_dir}: window {session.memory.windows_closed} of {total}", err=True
            )

    return report

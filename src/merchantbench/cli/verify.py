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
        list[Path],
        typer.Argument(
            help="run directories to verify; a directory that is no run (a sweep, a folder of "
            "runs): every run record beneath it",
            metavar="DIR...",
        ),
    ],
    seed: Annotated[
        int | None,
        typer.Option("--seed", help="a sealed run's seed, as `merchantbench reveal` prints it"),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Replay each run's actions in a fresh session and check every answer, window close, the
    final state hash, the tables and every metric against the record. Exit 0 only when all
    match; 1 when a record differs (one line naming where); 2 when one cannot be replayed.
    The result is kept in each run's `verified.json`, which the leaderboards, the sweep report,
    the dashboard and the site read (a record changed since counts as not verified)."""
    from merchantbench.record.verification import write_verification
    from merchantbench.replay import ReplayError, verify_record

    code = 0
    for run_dir in _records(run_dirs):
        if _market(run_dir) == run_dir:
            code = max(code, _verify_market(run_dir, as_json))
            continue
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
        try:
            write_verification(run_dir, report.ok, report.summary())
        except OSError as exc:  # a read-only record is still verified; it just cannot say so
            typer.echo(f"notice: {run_dir}: verified.json not written ({exc.strerror})", err=True)
        if not report.ok:
            code = max(code, 1)
    if code:
        raise typer.Exit(code)


def _verify_market(arena_dir: Path, as_json: bool) -> int:
    """Verify a market (all its merchants at once: none can be replayed alone); the exit
    code's share (0, 1 or 2)."""
    from merchantbench.record.verification import write_verification
    from merchantbench.replay import ReplayError
    from merchantbench.replay.market import verify_market

    try:
        report = verify_market(arena_dir)
    except ReplayError as exc:
        message = " ".join(str(exc).split())
        if as_json:
            typer.echo(json.dumps({"run_dir": str(arena_dir), "ok": False, "error": message}))
        typer.echo(f"error: {message}", err=True)
        return 2
    if as_json:
        merchants = {m: r.to_dict() for m, r in report.merchants.items()}
        typer.echo(json.dumps({"arena_dir": str(arena_dir), "ok": report.ok,
                               "final_state_hash": report.final_state_hash,
                               "merchants": merchants}))  # fmt: skip
    else:
        typer.echo(report.summary())
    for merchant in report.merchants.values():
        try:
            write_verification(merchant.run_dir, merchant.ok, merchant.summary())
        except OSError as exc:
            typer.echo(f"notice: {merchant.run_dir}: verified.json not written ({exc.strerror})",
                       err=True)  # fmt: skip
    return 0 if report.ok else 1


def _records(paths: list[Path]) -> list[Path]:
    """The run directories to verify: each path that is a run record (it has `run.json`), and
    for any other directory every run record beneath it, in path order. A path with neither
    stays, so its one-line refusal is printed. A market (`arena.json`) is verified whole: a
    merchant's record, or a market found beneath, stands for its market once."""
    found: list[Path] = []
    for path in paths:
        beneath = (
            sorted(p.parent for p in path.rglob("run.json"))
            if path.is_dir() and not (path / "run.json").exists() and not _market(path)
            else []
        )
        for run_dir in beneath or [path]:
            market = _market(run_dir)
            unit = market or run_dir
            if unit not in found:
                found.append(unit)
    return found


def _market(path: Path) -> Path | None:
    """The market `path` is, or whose merchant's record it is; None otherwise."""
    from merchantbench.record.arena import ARENA_FILE, MERCHANTS_DIR

    if (path / ARENA_FILE).is_file():
        return path
    arena = path.parent.parent
    if path.parent.name == MERCHANTS_DIR and (arena / ARENA_FILE).is_file():
        return arena
    return None


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

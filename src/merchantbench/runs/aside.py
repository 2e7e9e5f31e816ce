"""Never delete a run record: a directory a sweep or calibration will not reuse is moved aside.

A record of another identity becomes `<dir>.stale-N/`, one that cannot be read (a damaged or
missing `run.json`, a completed run without `metrics.json`) `<dir>.damaged-N/`, one replaced on
request (`calibrate --fresh`) `<dir>.replaced-N/`; its identity file moves with it. Only an
empty directory, or one holding nothing but the notes a sweep itself left (`failure.json`), is
removed. Deleting a moved-aside record is the owner's decision.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Literal

from merchantbench.runs.identity import identity_path

Why = Literal["stale", "damaged", "replaced"]
OWN_NOTES = frozenset({"failure.json"})  # written by the sweep, not by a run


def move_aside(run_dir: Path, why: Why) -> Path:
    """Move `run_dir` (and its identity file) to the first free `<dir>.<why>-N`; return it."""
    n = 1
    while (target := run_dir.with_name(f"{run_dir.name}.{why}-{n}")).exists() or identity_path(
        target
    ).exists():
        n += 1
    if run_dir.exists():
        shutil.move(run_dir, target)
    if identity_path(run_dir).exists():
        shutil.move(identity_path(run_dir), identity_path(target))
    return target


def holds_a_record(run_dir: Path) -> bool:
    """Whether `run_dir` holds anything besides the sweep's own notes."""
    return run_dir.is_dir() and any(p.name not in OWN_NOTES for p in run_dir.iterdir())


def clear_for_start(run_dir: Path, why: Why = "damaged") -> Path | None:
    """Make `run_dir` ready for a fresh start without deleting a record: an empty directory (or
    one of the sweep's own notes only) is removed; anything else is moved aside (returned)."""
    if run_dir.is_symlink() or (run_dir.exists() and not run_dir.is_dir()):
        return move_aside(run_dir, why)
    if holds_a_record(run_dir):
        return move_aside(run_dir, why)
    if run_dir.is_dir():
        for name in OWN_NOTES:
            (run_dir / name).unlink(missing_ok=True)
        run_dir.rmdir()
    return None

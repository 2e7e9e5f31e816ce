"""Atomic file writes: a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def is_cut_write(path: Path) -> bool:
    """A temporary file an atomic write left behind when its process was killed mid-write (it
    never replaced its target: nothing of the record is in it)."""
    return path.name.startswith(".") and path.name.endswith(".tmp") and path.is_file()


def remove_cut_writes(folder: Path) -> None:
    """Delete what killed atomic writes left in a record folder and its subfolders (a resume
    does, before it writes anything)."""
    for path in [*folder.glob(".*.tmp"), *folder.glob("*/.*.tmp")]:
        if is_cut_write(path):
            path.unlink(missing_ok=True)


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_bytes(path, (json.dumps(obj, indent=2, sort_keys=True) + "\n").encode())


def json_value(text: str | bytes) -> Any:
    """`json.loads` for what a record file holds: a value nested too deeply for the parser
    raises a ValueError, as any other unreadable JSON does (the parser's own RecursionError is
    not one, and would pass every reader that skips or refuses damaged lines)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply to read") from None


def read_json(path: Path) -> Any:
    return json_value(path.read_text())


def write_cut(path: Path, kept: bytes) -> None:
    """Replace a record file by `kept`, a prefix of it cut back to a checkpoint (atomically; a
    prefix of the same size is the same file, left alone)."""
    if path.stat().st_size != len(kept):
        atomic_write_bytes(path, kept)

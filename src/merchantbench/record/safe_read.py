"""Reading a run record that may be hostile: only regular files inside the record are read.

A record may come from anyone. Every reader of a record's files for verification, signing or a
table goes through here (docs/verify.md, "Hostile records"):

- `open_record_file(run_dir, name)`: the file is opened without following a link
  (`O_NOFOLLOW`, and no folder of its path may be a link either), without blocking on a FIFO
  (`O_NONBLOCK`), and refused unless what was opened is a regular file no larger than its cap
  (`FILE_CAPS`): a link to `/dev/zero`, a FIFO, a device or a folder in a file's place is a
  `RecordFileError`, never read.
- `read_record_bytes`: the whole file, for the small JSON files (a cap of `JSON_CAP`).
- `record_files(run_dir)`: every file of the record (sorted relative paths) for a manifest of
  digests; a link, FIFO, device or socket anywhere in it is refused.
- `file_sha256`: a digest read in blocks (memory bounded, whatever the size).

What it does not cover: a file replaced between the check and the read by its owner (the
descriptor checked is the one read, so the read is of the checked file, but a later read by
another tool may see other bytes); the caps bound memory, not time.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

MiB = 1 << 20
JSON_CAP = 64 * MiB  # run.json, metrics.json, verified files read whole
STREAM_CAP = 8 << 30  # a trace, transcript or table: read in blocks, never whole
FILE_CAPS = {"run.json": 16 * MiB, "metrics.json": JSON_CAP}
BLOCK = 1 << 20
MAX_FILES = 10_000  # files of one record (checkpoints included)
MAX_DEPTH = 4


class RecordFileError(OSError):
    """A record file that is refused (a link, a FIFO, a device, a folder in its place, too
    large, outside the record); the message says which and why in one line."""


def _cap(name: str) -> int:
    return FILE_CAPS.get(Path(name).name, STREAM_CAP)


def _inside(run_dir: Path, name: str) -> Path:
    parts = Path(name).parts
    if Path(name).is_absolute() or ".." in parts or not parts:
        raise RecordFileError(f"{name!r} is not a file of the record")
    folder = run_dir
    for part in parts[:-1]:  # no folder of the path may be a link out of the record
        folder = folder / part
        try:
            mode = os.lstat(folder).st_mode
        except FileNotFoundError:
            raise FileNotFoundError(f"{run_dir / name}: no such file") from None
        if not stat.S_ISDIR(mode):
            raise RecordFileError(f"{folder} is not a folder of the record (a link or a file)")
    return run_dir / name


def _kind(mode: int) -> str:
    for test, word in ((stat.S_ISLNK, "a link"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"),
                       (stat.S_ISDIR, "a folder"), (stat.S_ISSOCK, "a socket")):  # fmt: skip
        if test(mode):
            return word
    return "not a regular file"


@contextmanager
def open_record_file(run_dir: Path, name: str, cap: int | None = None) -> Iterator[BinaryIO]:
    """The record file `name` (a path relative to `run_dir`), open for binary reading.

    Raises:
        FileNotFoundError: there is no such file.
        RecordFileError: it is a link, FIFO, device, socket or folder, or larger than its cap.
    """
    path = _inside(Path(run_dir), name)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such file") from None
    except OSError as exc:  # ELOOP: a link (O_NOFOLLOW); ENXIO: a FIFO with no writer
        try:
            kind = _kind(os.lstat(path).st_mode)
        except OSError:
            kind = "unreadable"
        raise RecordFileError(f"{path} is {kind}, not a regular file of the record") from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise RecordFileError(f"{path} is {_kind(info.st_mode)}, not a regular file")
        limit = _cap(name) if cap is None else cap
        if info.st_size > limit:
            raise RecordFileError(
                f"{path} is {info.st_size:,} bytes, over the {limit:,} a record file may have"
            )
        os.set_blocking(fd, True)
        handle = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with handle:
        yield handle


def read_record_bytes(run_dir: Path, name: str, cap: int = JSON_CAP) -> bytes:
    """A small record file's bytes (at most `cap`, or its own cap if smaller)."""
    with open_record_file(run_dir, name, min(cap, _cap(name))) as handle:
        return handle.read(cap + 1)[:cap]


def is_record_file(run_dir: Path, name: str) -> bool:
    """`name` is there as a regular file (not a link) inside the record."""
    try:
        return stat.S_ISREG(os.lstat(_inside(Path(run_dir), name)).st_mode)
    except OSError:
        return False


def file_sha256(run_dir: Path, name: str) -> str:
    """SHA-256 of a record file, read in blocks."""
    digest = hashlib.sha256()
    with open_record_file(run_dir, name) as handle:
        while block := handle.read(BLOCK):
            digest.update(block)
    return digest.hexdigest()


def record_files(run_dir: Path, skip: frozenset[str] = frozenset()) -> list[str]:
    """Every file of the record, as sorted relative POSIX paths (names in `skip`, at any
    depth, left out with what is beneath them).

    Raises:
        RecordFileError: a link, FIFO, device or socket is in the record; a name is not text;
            the record is deeper or holds more files than a record does.
    """
    run_dir = Path(run_dir)
    found: list[str] = []
    pending = [(run_dir, 0)]
    while pending:
        folder, depth = pending.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError as exc:
            raise RecordFileError(f"{folder}: cannot be listed ({exc.strerror})") from None
        for entry in entries:
            if entry.name in skip:
                continue
            relative = Path(entry.path).relative_to(run_dir).as_posix()
            try:
                relative.encode("utf-8")
            except UnicodeEncodeError:
                shown = relative.encode("utf-8", "replace")
                raise RecordFileError(
                    f"{run_dir}: a file name is not UTF-8 text ({shown!r})"
                ) from None
            mode = entry.stat(follow_symlinks=False).st_mode
            if stat.S_ISDIR(mode) and depth < MAX_DEPTH:
                pending.append((Path(entry.path), depth + 1))
            elif stat.S_ISREG(mode):
                found.append(relative)
            else:
                raise RecordFileError(f"{entry.path} is {_kind(mode)}: refused in a record")
            if len(found) > MAX_FILES:
                raise RecordFileError(f"{run_dir} holds more than {MAX_FILES} files")
    return sorted(found)

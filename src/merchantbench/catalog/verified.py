"""Content hashes for cached directories (the market cache, its search index).

`seal(directory)` writes `manifest.json`: the SHA-256 of every file. `check(directory)` raises
`DamagedCache` when a file is missing, extra, truncated or altered. Hashing a paper-scale market
(~400 MB) takes about a second, so a successful check leaves a stamp (`verified.json`: each
file's size and modification time); later checks re-hash only when a file's stamp moved, which
any rewrite of a file does. Both files are written atomically.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

MANIFEST = "manifest.json"
STAMP = "verified.json"
_OWN = frozenset({MANIFEST, STAMP})


class DamagedCache(ValueError):
    """A cached directory does not match its manifest; the message says which file and how."""


def seal(directory: Path) -> None:
    """Record the SHA-256 of every file directly in `directory`."""
    digests = {name: _digest(directory / name) for name in _files(directory)}
    _write_json(directory / MANIFEST, {"sha256": digests})
    _write_json(directory / STAMP, _stamps(directory, digests))


def check(directory: Path) -> None:
    """Raise `DamagedCache` unless every file matches the manifest."""
    try:
        manifest = json.loads((directory / MANIFEST).read_text())
        expected: dict[str, str] = manifest["sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        raise DamagedCache(f"{directory.name}: no readable manifest") from None
    present = set(_files(directory))
    if present != set(expected):
        odd = sorted(present ^ set(expected))[:3]
        raise DamagedCache(f"{directory.name}: files missing or unexpected: {', '.join(odd)}")
    if _stamp_matches(directory, expected):
        return
    for name, digest in expected.items():
        if _digest(directory / name) != digest:
            raise DamagedCache(f"{directory.name}: {name} does not match its content hash")
    try:
        _write_json(directory / STAMP, _stamps(directory, expected))
    except OSError:
        pass  # a read-only cache stays valid; it is only checked in full every time


def notice(message: str) -> None:
    """One line on stderr, for a damaged cache that is being rebuilt."""
    print(f"notice: {message}; rebuilding it", file=sys.stderr)


def _files(directory: Path) -> list[str]:
    # Flat: a sealed subdirectory (the market's search index) has a manifest of its own.
    return sorted(p.name for p in directory.iterdir() if p.is_file() and p.name not in _OWN)


def _digest(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _stamps(directory: Path, digests: dict[str, str]) -> dict[str, list[int]]:
    stamps = {}
    for name in digests:
        stat = (directory / name).stat()
        stamps[name] = [stat.st_size, stat.st_mtime_ns, stat.st_ino]
    return stamps


def _stamp_matches(directory: Path, expected: dict[str, str]) -> bool:
    try:
        recorded = json.loads((directory / STAMP).read_text())
        return bool(recorded == _stamps(directory, expected))
    except (OSError, ValueError):
        return False


def _write_json(path: Path, value: object) -> None:
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_text(json.dumps(value, sort_keys=True))
    os.replace(temp, path)

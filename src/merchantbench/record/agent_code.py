"""Agents named by where their class lives, and the hash of their code (for `--resume` pins).

A built-in agent has a name from the table (`rule-based`); any other agent is named by a
*target*: `package.module:Class` (an importable module) or `path/to/file.py:Class` (a file,
recorded by its absolute path). Built-in agents are part of the package, so the package's
source hash (`record.code_version`) covers their code; an agent outside the package is covered
by `agent_source_sha256`: the SHA-256 of its file (a file target), or of every `.py` file of the
top-level package (or module) it is imported from. A resume that finds that hash changed is
refused like one with changed package code (record/pins.py).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

_PACKAGE = "merchantbench"


class TargetError(ValueError):
    """A target that is not `MODULE:CLASS` or `FILE.py:CLASS`; the message is one line."""


@dataclass(frozen=True)
class AgentTarget:
    """Where an agent class lives.

    Attributes:
        source: A dotted module name, or the absolute path of a `.py` file.
        attr: The class's name in it (dotted for a nested class).
        is_file: `source` is a file path.
    """

    source: str
    attr: str
    is_file: bool

    def __str__(self) -> str:
        return f"{self.source}:{self.attr}"

    @property
    def top_module(self) -> str | None:
        """The top-level package (or module) a module target is imported from."""
        return None if self.is_file else self.source.split(".", 1)[0]


def is_target(name: str) -> bool:
    """Whether `name` names an agent by where its class lives (built-in names have no ':')."""
    return ":" in name


def parse_target(name: str, base: Path | None = None) -> AgentTarget:
    """`MODULE:CLASS` or `FILE.py:CLASS`; a relative file is taken from `base` (by default
    the current directory) and made absolute.

    Raises:
        TargetError: Neither form.
    """
    source, _, attr = name.rpartition(":")
    usage = f"agent {name!r}: give a built-in name, MODULE:CLASS or FILE.py:CLASS"
    if not source or not attr or not all(part.isidentifier() for part in attr.split(".")):
        raise TargetError(usage)
    if source.endswith(".py") or "/" in source or os.sep in source:
        path = Path(source).expanduser()
        if not path.is_absolute():
            path = (base if base is not None else Path.cwd()) / path
        return AgentTarget(os.path.abspath(path), attr, True)
    if not all(part.isidentifier() for part in source.split(".")):
        raise TargetError(usage)
    return AgentTarget(source, attr, False)


def _python_files(root: Path) -> list[Path]:
    return sorted(
        path
        for path in root.rglob("*.py")
        if path.is_file() and "__pycache__" not in path.relative_to(root).parts
    )


def _hash_files(files: list[tuple[str, Path]]) -> str:
    digest = hashlib.sha256()
    for name, path in files:
        data = path.read_bytes()
        digest.update(name.encode() + b"\0" + b"%d\0" % len(data) + data)
    return digest.hexdigest()


def _module_files(top: str) -> list[tuple[str, Path]]:
    """Every `.py` file of the top-level package `top` (or its one file), by relative name."""
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        raise TargetError(f"no module named {top!r}: its code cannot be pinned")
    if spec.submodule_search_locations:  # a package (a namespace package has several roots)
        roots = [Path(location) for location in spec.submodule_search_locations]
        return [
            (f"{top}/{path.relative_to(root).as_posix()}", path)
            for root in roots
            for path in _python_files(root)
        ]
    if spec.origin is None or not Path(spec.origin).is_file():
        raise TargetError(f"module {top!r} has no source file: its code cannot be pinned")
    return [(Path(spec.origin).name, Path(spec.origin))]


def agent_source_sha256(name: str) -> str | None:
    """SHA-256 of the code of an agent outside the package; None for a built-in agent (or a
    target inside the package), whose code the package's source hash covers.

    Raises:
        TargetError: The target is malformed, or its file or module cannot be found.
    """
    if not is_target(name):
        return None
    target = parse_target(name)
    if target.is_file:
        path = Path(target.source)
        try:
            return _hash_files([(path.name, path)])
        except OSError as exc:
            raise TargetError(f"agent {name!r}: cannot read {path} ({exc.strerror})") from None
    top = target.top_module
    if top == _PACKAGE:
        return None
    assert top is not None
    return _hash_files(_module_files(top))

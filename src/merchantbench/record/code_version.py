"""Which code a run ran: the package version and a hash of the package's own files.

Git may be absent (an installed wheel, a copied tree), so the code is identified by its content:
every file of the `merchantbench` package except byte-code caches, hashed with its relative path.
Any edit to the package changes the hash, which is what `--resume` compares (record/pins.py). An
agent from outside the package (`--agent module:Class`, `--agent file.py:Class`) adds the hash of
its own code (record/agent_code.py).
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer

import merchantbench
from merchantbench.record.agent_code import agent_source_sha256

_SKIPPED_DIRS = frozenset({"__pycache__"})
_SKIPPED_SUFFIXES = frozenset({".pyc", ".pyo"})


class CodeVersion(BaseModel):
    """The package version, the SHA-256 of the package source (`source_sha256`) and, for an
    agent from outside the package, the SHA-256 of its code (`agent_source_sha256`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    package_version: str
    source_sha256: str | None  # None only in records written before code was pinned
    agent_source_sha256: str | None = None  # None for built-in agents: not written

    @model_serializer(mode="wrap")
    def _without_builtin_agent(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict) and data.get("agent_source_sha256") is None:
            data.pop("agent_source_sha256", None)  # records of built-in agents stay as they were
        return data

    def short(self) -> str:
        """`merchantbench 0.1.0, source 1a2b3c4d5e6f` (for one-line messages), and
        `, agent 0f9e8d7c6b5a` for an agent from outside the package."""
        source = self.source_sha256[:12] if self.source_sha256 else "unknown"
        agent = f", agent {self.agent_source_sha256[:12]}" if self.agent_source_sha256 else ""
        return f"merchantbench {self.package_version}, source {source}{agent}"


def _package_files(root: Path) -> list[Path]:
    return sorted(
        path
        for path in root.rglob("*")
        if path.is_file()
        and path.suffix not in _SKIPPED_SUFFIXES
        and not _SKIPPED_DIRS.intersection(path.relative_to(root).parts)
    )


@functools.cache
def source_sha256() -> str:
    """SHA-256 over every file of the installed `merchantbench` package (path and content)."""
    root = Path(merchantbench.__file__).parent
    digest = hashlib.sha256()
    for path in _package_files(root):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        data = path.read_bytes()
        digest.update(b"%d\0" % len(data) + data)  # the length keeps file boundaries unambiguous
    return digest.hexdigest()


def current_code(agent: str | None = None) -> CodeVersion:
    """The code running now; with `agent`, that agent's own code if it is not built in."""
    return CodeVersion(
        package_version=merchantbench.__version__,
        source_sha256=source_sha256(),
        agent_source_sha256=None if agent is None else agent_source_sha256(agent),
    )

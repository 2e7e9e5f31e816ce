"""The record of an arena (a market with several merchants, docs/design.md §11): `arena.json` and
where each merchant's own run record lies (`merchants/<id>/`). Written by `runs/arena.py`; read by
the arena report (`report/arena.py`). Keys and meaning: docs/arena.md."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from merchantbench.record.files import atomic_write_json
from merchantbench.record.manifest import SeedCommitment

__all__ = [
    "ARENA_FILE",
    "MERCHANTS_DIR",
    "ArenaError",
    "ArenaManifest",
    "MerchantEntry",
    "read_arena",
]

ARENA_FILE = "arena.json"
MERCHANTS_DIR = "merchants"


OPTIONAL = ("seed_commitment", "front_end")  # keys of arena.json written only when set


class ArenaError(ValueError):
    """An arena directory that cannot be read; the message says why in one line."""


class MerchantEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    agent: str
    settings: dict[str, Any] = {}


class ArenaManifest(BaseModel):
    """The content of `arena.json` (docs/arena.md)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    format: Literal[1] = 1
    scenario: str
    scenario_hash: str
    scenario_config: dict[str, Any]
    seed: int | None  # None for a sealed market: its secret is in the merchants' `sealed/`
    seed_commitment: SeedCommitment | None = None
    seller_substitution: float
    catalog: str | None = None
    merchants: list[MerchantEntry]
    tool_schema_sha256: str
    package_version: str
    git_commit: str | None
    started: str
    pins: dict[str, Any]
    windows: int = 0
    ended: Literal["completed", "error", "interrupted"] | None = None
    finished: str | None = None
    state_hash: str | None = None
    error: str | None = None
    # How a server hosts the market (`merchantbench serve`: agent ids, turn cap …); None
    # for `merchantbench arena`.
    front_end: dict[str, Any] | None = None

    def write(self, arena_dir: Path) -> None:
        # Written only when set: a public arena of `merchantbench arena` writes what it always did.
        unset = {key for key in OPTIONAL if getattr(self, key) is None}
        atomic_write_json(arena_dir / ARENA_FILE, self.model_dump(mode="json", exclude=unset))

    def merchant_dir(self, arena_dir: Path, merchant: str) -> Path:
        """The run record of one merchant."""
        return arena_dir / MERCHANTS_DIR / merchant


def read_arena(arena_dir: Path) -> ArenaManifest:
    """`arena.json` of a recorded arena; ArenaError if it is missing or damaged."""
    path = arena_dir / ARENA_FILE
    if not path.is_file():
        raise ArenaError(f"{arena_dir} is not an arena directory (no {ARENA_FILE})")
    try:
        return ArenaManifest.model_validate(json.loads(path.read_text()))
    except (OSError, ValueError, ValidationError) as exc:
        raise ArenaError(f"{path} is damaged: {str(exc).splitlines()[0]}") from None

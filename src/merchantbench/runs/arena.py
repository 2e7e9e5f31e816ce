"""An arena: several in-process agents, one merchant each, in one market (docs/design.md §11), with
a record that resumes to the same bytes after a kill.

    ARENA/arena.json                  the market: scenario, seed, β, merchants and their agents,
                                      progress, how it ended, the market's state hash
    ARENA/checkpoint/state.pkl        the whole market (every merchant's store and session
                                      memory) and every agent, pinned to arena.json
    ARENA/merchants/<id>/             each merchant's own run record, as `merchantbench run`
                                      writes it (run.json naming the market as its front end,
                                      trace, transcript, model calls, tables, metrics.json)

`ArenaSpec` says what an arena runs; the one lifecycle (`RunLifecycle.open_market`, runs/
lifecycle.py, with the market's layout of runs/layout.py) plays and records it: in each window,
every merchant still trading acts on the window's opening state (LLM agents concurrently: they
wait on their models), a merchant that did not close its window has it closed for it (recorded
as forced), and the hours run once all have closed. Checkpoints are taken between windows (by
wall time, `CheckpointPolicy`); a resume cuts every merchant's trace, transcript and model-call
log back to what the checkpoint covers and plays the rest identically.

A market of one merchant writes, in `merchants/<id>/`, exactly the trace, transcript, tables and
metrics that `merchantbench run` writes for that agent (the equivalence test holds it to that).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import merchantbench
from merchantbench.record.arena import (
    ARENA_FILE,
    MERCHANTS_DIR,
    ArenaError,
    ArenaManifest,
    read_arena,
)
from merchantbench.record.sealed import SealedError, SealedSeed, read_sealed
from merchantbench.runs.layout import ARENA_FRONT_END
from merchantbench.runs.lifecycle import CheckpointPolicy, RunLifecycle
from merchantbench.runs.spec import RunError
from merchantbench.scenario import Scenario
from merchantbench.session import MarketSession
from merchantbench.sim.marketplace import MERCHANT_ID

__all__ = [
    "ARENA_FILE",
    "ARENA_FRONT_END",
    "MERCHANTS_DIR",
    "ArenaManifest",
    "ArenaSpec",
    "Entrant",
    "merchant_ids",
    "merchant_name",
    "read_arena",
    "market_secret",
    "run_arena",
    "sealed_of",
]

ArenaProgress = Callable[[MarketSession], None]


@dataclass(frozen=True)
class Entrant:
    """One merchant of an arena: its id and the agent (with settings) that runs it."""

    merchant: str
    agent: str
    settings: dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclass(frozen=True)
class ArenaSpec:
    """What an arena runs: a scenario, a seed and its merchants (ids unique)."""

    scenario: Scenario
    seed: int
    entrants: tuple[Entrant, ...]
    catalog: Path | None = None
    sealed: SealedSeed | None = None  # a sealed market (docs/design.md §10): `seed` is its secret

    @classmethod
    def of_agents(
        cls,
        agents: Sequence[str],
        scenario: Scenario,
        seed: int,
        settings: Sequence[dict[str, Any]] | None = None,
        **options: Any,
    ) -> ArenaSpec:
        """Merchants named after their agents (`merchant_ids`), with these settings."""
        given = settings if settings is not None else [{} for _ in agents]
        entrants = tuple(
            Entrant(merchant, agent, dict(config))
            for merchant, agent, config in zip(merchant_ids(agents), agents, given, strict=True)
        )
        return cls(scenario, seed, entrants, **options)

    def pins(self, schema_sha256: str) -> dict[str, Any]:
        """What a resume must find unchanged (the checkpoint carries them too)."""
        pins: dict[str, Any] = {
            "scenario_hash": self.scenario.content_hash,
            "seed": None if self.sealed is not None else self.seed,
            "catalog": None if self.catalog is None else str(self.catalog),
            "merchants": [[e.merchant, e.agent, e.settings] for e in self.entrants],
            "tool_schema_sha256": schema_sha256,
            "package_version": merchantbench.__version__,
        }
        if self.sealed is not None:  # a public arena's pins are as they always were
            pins["seed_commitment"] = self.sealed.commitment.sha256
        return pins

    def with_secret(self, secret: SealedSeed | None) -> ArenaSpec:
        """This arena on `secret` (a sealed market: its seed is the secret's), or as it is."""
        if secret is None:
            return self
        return dataclasses.replace(self, seed=secret.seed, sealed=secret)


def market_secret(arena_dir: Path, resume: bool, sealed: bool) -> SealedSeed | None:
    """The secret of a market about to be played: a resumed market's is read back from its
    record (`sealed_of`: never drawn again), a new sealed market draws its own, a new public
    one has none.

    Raises:
        RunError: a resumed market's secret cannot be read.
    """
    if resume:
        return sealed_of(arena_dir)
    return SealedSeed.draw() if sealed else None


def sealed_of(arena_dir: Path) -> SealedSeed | None:
    """The secret seed of a recorded sealed market (None for a public one), read from its
    first merchant's record and checked against that record's commitment.

    Raises:
        RunError: the arena or its secret cannot be read.
    """
    try:
        manifest = read_arena(arena_dir)
    except ArenaError as exc:
        raise RunError(str(exc)) from None
    if manifest.seed_commitment is None or not manifest.merchants:
        return None
    first = manifest.merchant_dir(arena_dir, manifest.merchants[0].id)
    try:
        return read_sealed(first)
    except SealedError as exc:
        raise RunError(f"cannot read the sealed seed of {arena_dir}: {exc}") from None


def merchant_ids(labels: Sequence[str]) -> list[str]:
    """A merchant id for each label (an agent as given on the command line): `merchant_name`
    of it, and `-2`, `-3` … for the second and later merchants of the same name."""
    seen: dict[str, int] = {}
    ids = []
    for label in labels:
        base = merchant_name(label)
        seen[base] = seen.get(base, 0) + 1
        ids.append(base if seen[base] == 1 else f"{base}-{seen[base]}")
    return ids


def merchant_name(agent: str) -> str:
    """A merchant id from an agent name: lower case, other characters as '-', at most 32."""
    name = "".join(c if c.isalnum() or c in "-_" else "-" for c in agent.lower()).strip("-_")
    name = (name or "merchant")[:28]
    return name if MERCHANT_ID.fullmatch(name) else "merchant"


def run_arena(
    spec: ArenaSpec,
    arena_dir: Path,
    resume: bool = False,
    on_window: ArenaProgress | None = None,
    checkpoints: CheckpointPolicy | None = None,
    transcript: bool = True,
) -> dict[str, dict[str, Any]]:
    """Run (or resume) a whole arena and return each merchant's metrics (blocking)."""
    life = RunLifecycle.open_market(
        spec, arena_dir, resume=resume, checkpoints=checkpoints, transcript=transcript
    )
    asyncio.run(life.play(on_window))
    assert life.results is not None
    return life.results

"""An arena of a sweep (a market of several merchants, docs/arena.md), run where the sweep's
runs run: its record is the one `merchantbench arena` writes (`arena.json`, `merchants/<id>/`),
resumed from its checkpoint after a kill, with a progress file naming each merchant. A sealed
slot's market draws its secret when it first starts and reads it back to resume (`market_secret`,
as `merchantbench arena --sealed`)."""

from __future__ import annotations

from pathlib import Path

from merchantbench.runs.arena import ArenaSpec, Entrant, market_secret
from merchantbench.runs.lifecycle import CheckpointPolicy, RunLifecycle
from merchantbench.sweeps.plan import SweepRun
from merchantbench.sweeps.state import ArenaProgressWriter

ARENA_CHECKPOINT_SECONDS = 10.0  # as `merchantbench arena`: a checkpoint pickles the market


def arena_spec(run: SweepRun, arena_dir: Path | None = None, resume: bool = False) -> ArenaSpec:
    """The arena a sweep run plays; a sealed slot's on its secret (drawn for a new market,
    read back from `arena_dir` to resume).

    Raises:
        RunError: a resumed sealed market's secret cannot be read.
    """
    assert run.entrants is not None
    entrants = tuple(
        Entrant(str(e["merchant"]), str(e["agent"]), dict(e["settings"])) for e in run.entrants
    )
    spec = ArenaSpec(run.scenario, run.seed, entrants)
    if not run.sealed:
        return spec
    assert arena_dir is not None, "a sealed market needs its directory"
    return spec.with_secret(market_secret(arena_dir, resume, sealed=True))


async def execute_arena_async(run: SweepRun, arena_dir: Path, resume: bool, progress: Path) -> None:
    """Play (or resume) the arena to its end in this event loop (its agents act concurrently)."""
    life = RunLifecycle.open_market(
        arena_spec(run, arena_dir, resume),
        arena_dir,
        resume=resume,
        checkpoints=CheckpointPolicy(seconds=ARENA_CHECKPOINT_SECONDS),
        transcript=run.transcript,
    )
    await life.play(ArenaProgressWriter(arena_dir, progress))

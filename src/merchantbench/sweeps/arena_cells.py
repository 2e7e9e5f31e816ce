"""An arena of a sweep (a market of several merchants, docs/arena.md), run where the sweep's
runs run: its record is the one `merchantbench arena` writes (`arena.json`, `merchants/<id>/`),
resumed from its checkpoint after a kill, with a progress file naming each merchant."""

from __future__ import annotations

from pathlib import Path

from merchantbench.runs.arena import ArenaLifecycle, ArenaSpec, Entrant
from merchantbench.runs.lifecycle import CheckpointPolicy
from merchantbench.sweeps.plan import SweepRun
from merchantbench.sweeps.state import ArenaProgressWriter

ARENA_CHECKPOINT_SECONDS = 10.0  # as `merchantbench arena`: a checkpoint pickles the market


def arena_spec(run: SweepRun) -> ArenaSpec:
    """The arena a sweep run plays."""
    assert run.entrants is not None
    entrants = tuple(
        Entrant(str(e["merchant"]), str(e["agent"]), dict(e["settings"])) for e in run.entrants
    )
    return ArenaSpec(run.scenario, run.seed, entrants)


async def execute_arena_async(run: SweepRun, arena_dir: Path, resume: bool, progress: Path) -> None:
    """Play (or resume) the arena to its end in this event loop (its agents act concurrently)."""
    life = ArenaLifecycle.open(
        arena_spec(run),
        arena_dir,
        resume=resume,
        checkpoints=CheckpointPolicy(seconds=ARENA_CHECKPOINT_SECONDS),
        transcript=run.transcript,
    )
    await life.play_async(ArenaProgressWriter(arena_dir, progress))

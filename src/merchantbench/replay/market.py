"""`verify_market`: replay a finished market (an arena record, docs/design.md §11) and compare every
merchant's record with the replay.

A merchant's record cannot be replayed alone: its answers show the other sellers' offers and
its procurement shares the supplier stock with them. So the market is rebuilt
(`MarketSession.open` of the recorded scenario, seed and merchants) and every merchant's trace
is replayed into its own session, window by window: each merchant replays its calls of the open
window until its `end_of_step` leaves it waiting for the others, and the last close runs the
hours, as in the run. The order in which merchants are replayed within a window changes nothing
(what one does shows to the others from the next window only). Each merchant gets the report
`verify_record` gives a single store (every call's trace entry and answer, every observation,
run.json's final figures, the tables, the metrics); the market's state hash is compared with
arena.json's.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from merchantbench.record.arena import ARENA_FILE, ArenaError, read_arena
from merchantbench.replay.replayer import Replayer
from merchantbench.replay.source import RecordSource, ReplayError
from merchantbench.replay.verify import VerifyReport, _recorded_metrics, verdict
from merchantbench.session import MarketSession
from merchantbench.tools.toolset import END_OF_STEP

__all__ = ["MarketReport", "verify_market"]


@dataclass
class MarketReport:
    """What `verify_market` found: each merchant's report and the market's state hash."""

    arena_dir: Path
    merchants: dict[str, VerifyReport]
    final_state_hash: str | None
    recorded_state_hash: str | None

    @property
    def ok(self) -> bool:
        same = self.final_state_hash == self.recorded_state_hash
        return same and all(r.ok for r in self.merchants.values())

    def summary(self) -> str:
        lines = [f"{m}: {r.summary()}" for m, r in self.merchants.items()]
        if self.final_state_hash != self.recorded_state_hash:
            lines.append(
                f"{ARENA_FILE}: the market's state hash is {self.recorded_state_hash}, the "
                f"replay's {self.final_state_hash}"
            )
        return "\n".join(lines)


def is_market(path: Path) -> bool:
    return (Path(path) / ARENA_FILE).is_file()


def verify_market(arena_dir: Path) -> MarketReport:
    """Replay a finished market and compare each merchant's record (see the module docstring).

    Raises:
        ReplayError: the market cannot be replayed (unfinished, damaged, a sealed market
            without its secret, merchants' records of another market).
    """
    began = time.perf_counter()
    try:
        manifest = read_arena(arena_dir)
    except ArenaError as exc:
        raise ReplayError(str(exc)) from None
    if manifest.ended != "completed":
        state = manifest.ended or "still running"
        raise ReplayError(f"{arena_dir} has not finished ({state}): nothing to verify against")
    ids = [m.id for m in manifest.merchants]
    sources = {m: RecordSource.open(manifest.merchant_dir(arena_dir, m)) for m in ids}
    first = sources[ids[0]]
    if any(s.seed != first.seed or s.catalog != first.catalog for s in sources.values()):
        raise ReplayError(f"{arena_dir}: the merchants' records are not of one market")
    metrics = {m: _recorded_metrics(s.run_dir) for m, s in sources.items()}
    emitted: dict[str, list[dict[str, Any]]] = {m: [] for m in ids}
    market = MarketSession.open(
        first.scenario,
        first.seed,
        ids,
        first.catalog,
        trace_sinks={m: emitted[m].append for m in ids},
    )
    replayers = {m: Replayer(sources[m], merchant=(market.session(m), emitted[m])) for m in ids}
    try:
        _replay_windows(market, replayers)
    finally:
        for replayer in replayers.values():
            replayer.close()
    reports = {m: verdict(sources[m], r, metrics[m], began) for m, r in replayers.items()}
    return MarketReport(
        arena_dir=Path(arena_dir),
        merchants=reports,
        final_state_hash=market.state_hash() if market.over else None,
        recorded_state_hash=manifest.state_hash,
    )


def _replay_windows(market: MarketSession, replayers: dict[str, Replayer]) -> None:
    """Each merchant replays until it waits for the others (or its trace ends), in turn,
    until every trace is replayed or one diverges."""
    pending: dict[str, Iterator[int]] = {m: r.windows() for m, r in replayers.items()}
    waited_in = {m: _calls_while_waiting(r.source) for m, r in replayers.items()}
    while pending:
        moved = False
        # A merchant that called while it waited closed before the last closer: it goes first.
        for merchant in sorted(pending, key=lambda m: market.window not in waited_in[m]):
            replayer = replayers[merchant]
            if replayer.session.waiting:
                continue
            moved = True
            try:
                next(pending[merchant])
            except StopIteration:
                del pending[merchant]
            if replayer.divergence is not None:
                return
        if not moved:
            waiting = ", ".join(sorted(pending))
            raise ReplayError(
                f"the traces of {waiting} end in window {market.window} waiting for merchants "
                "whose traces do not close it: the market's record is truncated"
            )


def _calls_while_waiting(source: RecordSource) -> set[int]:
    """The windows in which the merchant called after it had closed the window (answered
    `window_closed` while it waited for the others: an env that lets a waiting merchant call,
    as the PettingZoo env does, records them; the HTTP host refuses them unrecorded)."""
    windows: set[int] = set()
    closed: int | None = None
    for line in source.trace():
        entry = line.entry
        if entry.window == closed:
            windows.add(entry.window)
        elif entry.tool == END_OF_STEP and entry.ok:
            closed = entry.window
    return windows

"""Where each run of a sweep stands, read from disk, and the live progress files of running runs.

A run is `done` (a finished record of the same identity), `killed` (a record that broke off
without an error: resumed from its checkpoint), `failed` (it ended with an error, or could not
start: skipped unless retried), `damaged` (a directory whose record cannot be read: kept as it
is and skipped unless retried, then moved aside, never deleted), `stale` (a record of another
identity: set aside and re-run) or `new`. Running runs write
`SWEEP_DIR/progress/<label>/s<seed>.json` every few windows (window, net assets, tokens and cost
so far) so the driver can show them wherever they run. An arena's state is read from its
`arena.json` (done once it completed and every merchant has its metrics), and its progress
file names each merchant's net assets.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from merchantbench.money import rmb
from merchantbench.record.arena import MERCHANTS_DIR, ArenaError, read_arena
from merchantbench.record.files import atomic_write_json
from merchantbench.record.manifest import ManifestError, read_manifest
from merchantbench.record.schema import METRICS_FILE, MODEL_CALLS_FILE, RUN_FILE
from merchantbench.runs.aside import holds_a_record
from merchantbench.runs.identity import identity_path, same_identity
from merchantbench.session import MarketSession, Session
from merchantbench.sweeps.plan import SweepRun

Status = Literal["done", "killed", "failed", "damaged", "stale", "new"]
FINISHED = ("completed", "closed", "stopped")
FAILURE_FILE = "failure.json"  # beside run.json when a run could not even start
PROGRESS_DIR = "progress"
SET_ASIDE_FILE = "set-aside.jsonl"  # one line per record moved aside, never rewritten
PROGRESS_EVERY = 5  # windows between progress writes


@dataclass(frozen=True)
class RunState:
    status: Status
    reason: str | None = None


def run_state(run: SweepRun, sweep_dir: Path) -> RunState:
    """Where `run` stands on disk."""
    run_dir = run.run_dir(sweep_dir)
    if not run_dir.exists() and not identity_path(run_dir).exists():
        return RunState("new")
    if not same_identity(run_dir, run.identity()):
        return RunState("stale")
    failure = _failure(run_dir)
    if failure is not None:
        return RunState("failed", failure)
    if not holds_a_record(run_dir):
        return RunState("new")  # killed before its record was started
    if run.is_arena:
        return _arena_state(run_dir)
    if not (run_dir / RUN_FILE).is_file():
        return RunState("damaged", f"{run_dir} has files but no {RUN_FILE}")
    try:
        meta = read_manifest(run_dir)
    except ManifestError as exc:
        return RunState("damaged", str(exc))
    if meta.ended in FINISHED:
        if (run_dir / METRICS_FILE).is_file():
            return RunState("done")
        return RunState("damaged", f"{run_dir} ended {meta.ended} but has no {METRICS_FILE}")
    if meta.ended == "error":
        return RunState("failed", meta.error)
    return RunState("killed")


def _arena_state(arena_dir: Path) -> RunState:
    try:
        arena = read_arena(arena_dir)
    except ArenaError as exc:
        return RunState("damaged", str(exc))
    if arena.ended == "completed":
        for entry in arena.merchants:
            if not (arena.merchant_dir(arena_dir, entry.id) / METRICS_FILE).is_file():
                return RunState("damaged", f"{arena_dir} completed but {entry.id} has no metrics")
        return RunState("done")
    if arena.ended == "error":
        return RunState("failed", arena.error)
    return RunState("killed")


def _failure(run_dir: Path) -> str | None:
    """Why a run could not start, from its `failure.json` (`None` if it has none)."""
    path = run_dir / FAILURE_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return f"{path} cannot be read"
    error = data.get("error") if isinstance(data, dict) else None
    return str(error) if error else "unknown"


def note_set_aside(sweep_dir: Path, run: SweepRun, target: Path, reason: str) -> None:
    """Append to the sweep's log of records moved aside (read by the report)."""
    entry = {
        "time": datetime.now(UTC).isoformat(timespec="seconds"),
        "run": run.name,
        "moved_to": str(target.relative_to(sweep_dir)),
        "reason": reason,
    }
    with open(sweep_dir / SET_ASIDE_FILE, "a", encoding="utf-8") as log:
        log.write(json.dumps(entry) + "\n")
        log.flush()
        os.fsync(log.fileno())


def read_set_aside(sweep_dir: Path) -> list[dict[str, Any]]:
    """The records this sweep moved aside, oldest first (a damaged line is skipped)."""
    try:
        lines = (sweep_dir / SET_ASIDE_FILE).read_text(encoding="utf-8").splitlines()
    except (OSError, ValueError):
        return []
    entries = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            entries.append(entry)
    return entries


def record_failure(run_dir: Path, error: str, record_file: str = RUN_FILE) -> None:
    """Note why a run failed when the runner could not record it in its run.json (an
    arena: its arena.json)."""
    if (run_dir / record_file).is_file():
        return  # the runner wrote the failure there
    atomic_write_json(run_dir / FAILURE_FILE, {"error": error})


def progress_path(run: SweepRun, sweep_dir: Path) -> Path:
    return sweep_dir / PROGRESS_DIR / run.label / f"{run.slot}.json"


class _CallCounter:
    """Cost, tokens and calls of one `model_calls.jsonl`, read incrementally (flushed at each
    checkpoint)."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self._offset, self.tokens, self.calls = 0, 0, 0
        self.cost: float | None = 0.0  # None once a call's cost is unknown (a price not stated)

    def read(self) -> None:
        log = self.run_dir / MODEL_CALLS_FILE
        try:
            with open(log, "rb") as fh:
                fh.seek(self._offset)
                chunk = fh.read()
        except OSError:
            return
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self._offset += len(complete)
        for line in complete.splitlines():
            entry = json.loads(line)
            cost = entry.get("cost", 0.0)
            self.cost = None if cost is None or self.cost is None else self.cost + float(cost)
            self.tokens += int(entry.get("input_tokens", 0)) + int(entry.get("output_tokens", 0))
            self.calls += 1


class ArenaProgressWriter:
    """An arena's `on_window` hook: its progress file (window, each merchant's net assets and
    whether it closed, and the model use of all merchants together)."""

    def __init__(self, arena_dir: Path, path: Path, every: int = PROGRESS_EVERY) -> None:
        self.arena_dir, self.path, self.every = arena_dir, path, every
        self._calls: dict[str, _CallCounter] = {}

    def __call__(self, market: MarketSession) -> None:
        if market.window % self.every and not market.over:
            return
        merchants: dict[str, dict[str, Any]] = {}
        cost: float | None = 0.0
        tokens = calls = 0
        for merchant, session in market.sessions.items():
            counter = self._calls.setdefault(
                merchant, _CallCounter(self.arena_dir / MERCHANTS_DIR / merchant)
            )
            counter.read()
            tokens, calls = tokens + counter.tokens, calls + counter.calls
            cost = None if cost is None or counter.cost is None else cost + counter.cost
            state = session.engine.state
            merchants[merchant] = {"net_assets": rmb(state.ledger.accounts.net_assets),
                                   "closed": bool(state.closed)}  # fmt: skip
        best = max((m["net_assets"] for m in merchants.values()), default=None)
        atomic_write_json(self.path, {
            "window": market.window, "windows_total": market.scenario.clock.windows,
            "net_assets": best, "merchants": merchants,
            "cost": None if cost is None else round(cost, 6), "tokens": tokens,
            "model_calls": calls,
        })  # fmt: skip


class ProgressWriter:
    """An `on_window` hook writing a run's progress file; costs are read incrementally from
    `model_calls.jsonl` (flushed at each checkpoint)."""

    def __init__(self, run_dir: Path, path: Path, every: int = PROGRESS_EVERY) -> None:
        self.run_dir, self.path, self.every = run_dir, path, every
        self._calls = _CallCounter(run_dir)

    def __call__(self, session: Session) -> None:
        if session.window % self.every and not session.over:
            return
        calls = self._calls
        calls.read()
        accounts = session.engine.state.ledger.accounts
        atomic_write_json(self.path, {
            "window": session.memory.windows_closed,
            "windows_total": session.scenario.clock.windows,
            "net_assets": rmb(accounts.net_assets),
            "cost": None if calls.cost is None else round(calls.cost, 6),
            "tokens": calls.tokens, "model_calls": calls.calls,
        })  # fmt: skip


def read_progress(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None

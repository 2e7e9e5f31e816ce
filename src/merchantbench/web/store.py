"""One participant's store at the playground: a normal run record played by a person.

The store opens its run as a `RunLifecycle` (so the record is a normal one: run.json,
trace.jsonl, checkpoint, tables and metrics at the end) driven by the `human` driver, and
marks the session's environment calls with origin `human`. Everything the pages get goes
through the run's agent surface; the clock is logical, so a store waits for its participant:
every closed window is checkpointed (a person's windows take longer than the checkpoint
policy's seconds), and a restarted server continues where the person stopped.
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from merchantbench.metrics.table1 import HEADLINE_METRICS
from merchantbench.record.files import atomic_write_json, read_json
from merchantbench.record.manifest import read_manifest
from merchantbench.record.schema import METRICS_FILE
from merchantbench.record.sealed import read_sealed
from merchantbench.runs.lifecycle import CheckpointPolicy, RunLifecycle
from merchantbench.runs.spec import RunSpec
from merchantbench.scenario import Scenario
from merchantbench.session import Session
from merchantbench.surface import StoreStatus
from merchantbench.tools.toolset import END_OF_STEP
from merchantbench.web.human import HUMAN_ORIGIN, HumanDriver

HISTORY_FILE = "web-history.json"  # what the pages drew so far (public numbers only)


@dataclass(frozen=True)
class WindowPoint:
    """The public numbers at the opening of one window, from its store status."""

    window: int
    day: int
    hour: int
    net_assets: float
    rating: float
    orders: int  # customer orders placed so far

    @classmethod
    def of(cls, status: StoreStatus) -> WindowPoint:
        return cls(
            status.window,
            status.day,
            status.hour_of_day,
            status.net_assets,
            status.rating,
            status.orders_placed,
        )


def stale_window(window: int, open_window: int) -> dict[str, Any]:
    """The answer to closing a window that is not the open one."""
    message = (f"that action was for window {window + 1}, which is not open: window "
               f"{open_window + 1} is (nothing was done)")  # fmt: skip
    return {"ok": False, "error": {"code": "window_closed", "message": message}}


def clock_of(status: StoreStatus) -> dict[str, Any]:
    """The page's clock: its numbers and the line it shows (the page draws nothing itself)."""
    window = min(status.window, status.windows_total) + 1
    left = status.windows_left
    text = (
        f"Day {status.day}, {status.hour_of_day:02d}:00 · window {window} of "
        f"{status.windows_total} · {left} window{'' if left == 1 else 's'} left"
    )
    return {
        "day": status.day,
        "hour": status.hour_of_day,
        "window": window,
        "windows_total": status.windows_total,
        "windows_left": status.windows_left,
        "text": text,
    }


class PlayStore:
    """A person's store (see the module docstring). Thread-safe: one call at a time."""

    def __init__(self, spec: RunSpec, run_dir: Path, resume: bool) -> None:
        self.run_dir = run_dir
        human = HumanDriver.from_settings(spec.agent_settings)
        # Every window: a person's click is never lost to a restart.
        every_window = CheckpointPolicy(seconds=0)
        self.life = RunLifecycle.open(
            spec, run_dir, resume=resume, driver=human, checkpoints=every_window
        )
        self.life.session.env_origin = HUMAN_ORIGIN
        self.surface = self.life.surface
        self.lock = threading.Lock()
        saved = read_json(run_dir / HISTORY_FILE) if (run_dir / HISTORY_FILE).is_file() else {}
        self.history = [WindowPoint(**p) for p in saved.get("history", [])]
        self.paused: bool = bool(saved.get("paused", False))
        self.metrics: dict[str, Any] | None = None
        if not resume:
            self.life.checkpoint()
        if self.surface.over:
            self._finish()
        else:
            self._note_window()

    @classmethod
    def create(
        cls, scenario: Scenario, seed: int | None, run_dir: Path, participant: str
    ) -> PlayStore:
        """A new store; `seed` None makes it a sealed run (merchantbench.record.sealed)."""
        settings = {"participant": participant}
        if seed is None:
            spec = RunSpec.sealed_run("human", scenario, agent_settings=settings)
        else:
            spec = RunSpec("human", scenario, seed, settings)
        return cls(spec, run_dir, resume=False)

    @classmethod
    def reopen(cls, run_dir: Path) -> PlayStore:
        """A store of an earlier server: resumed from its checkpoint, or its finished record."""
        meta = read_manifest(run_dir)
        secret = read_sealed(run_dir) if meta.seed_commitment is not None else None
        seed = secret.seed if secret is not None else meta.seed
        if seed is None:
            raise ValueError(f"{run_dir}: the run records neither a seed nor a sealed secret")
        spec = RunSpec("human", meta.scenario_model(), seed, meta.agent.settings, sealed=secret)
        return cls(spec, run_dir, resume=meta.resumable)

    # --- what the pages read --------------------------------------------------------------------
    @property
    def session(self) -> Session:
        """The host-side session (for tests and the conformance check, never the pages)."""
        return self.life.session

    @property
    def over(self) -> bool:
        return self.metrics is not None or self.surface.over

    def state(self) -> dict[str, Any]:
        """Everything the page shows besides tool answers: clock, store status, observation,
        history."""
        with self.lock:
            status = self.surface.status()
            observation = "" if self.over else self.surface.observation()
            net_assets = None if self.over else status.net_assets
            if self.over and self.metrics:
                net_assets = self.metrics.get("final_net_assets")
            return {
                "clock": clock_of(status),
                "store": status.to_json(),
                "net_assets": net_assets,
                "observation": observation,
                "history": [asdict(p) for p in self.history],
                "paused": self.paused,
                "over": self.over,
                "final": self._public_final(),
            }

    def brief(self) -> str:
        return self.surface.brief()

    def tool_schemas(self) -> list[dict[str, Any]]:
        return self.surface.tool_schemas()

    # --- what the person does ---------------------------------------------------------------------
    def call(
        self, tool: str, args: Any, key: str | None = None, window: int | None = None
    ) -> dict[str, Any]:
        """One tool call through the surface; `end_of_step` closes the window. `window`: the
        window (0-based) the person's action was made in; closing a window that is no longer
        open (a double click, a retry after a lost answer) is refused and changes nothing."""
        with self.lock:
            if self.over:
                return {"ok": False, "error": {"code": "run_over", "message": "the run has ended"}}
            if tool == END_OF_STEP and window is not None and window != self.surface.window:
                return stale_window(window, self.surface.window)
            self.paused = False
            window = self.surface.window
            result = self.surface.call(tool, args, key)
            if self.surface.over or self.surface.window != window:
                self._after_window()
            return result

    def end_window(self) -> dict[str, Any]:
        return self.call(END_OF_STEP, {})

    def pause(self) -> None:
        """Come back later: save where the store stands (mid-window is fine)."""
        with self.lock:
            if self.over:
                return
            self.paused = True
            self.life.checkpoint()
            self._save_history()

    def resume(self) -> None:
        with self.lock:
            self.paused = False
            self._save_history()

    # --- windows, records --------------------------------------------------------------------
    def _after_window(self) -> None:
        if self.surface.over:
            self._finish()
            return
        self._note_window()
        self.life.after_window()

    def _note_window(self) -> None:
        window = self.surface.window
        if self.history and self.history[-1].window >= window:
            return
        self.history.append(WindowPoint.of(self.surface.status()))
        self._save_history()

    def _save_history(self) -> None:
        body = {"history": [asdict(p) for p in self.history], "paused": self.paused}
        atomic_write_json(self.run_dir / HISTORY_FILE, body)

    def _finish(self) -> None:
        metrics_file = self.run_dir / METRICS_FILE
        if self.life.manifest.ended is None:
            self.metrics = self.life.finish()
        elif metrics_file.is_file():
            self.metrics = read_json(metrics_file)
        else:
            self.metrics = {}

    def _public_final(self) -> dict[str, Any] | None:
        """The Table-1 headline of a finished store (the seed stays on disk)."""
        if self.metrics is None:
            return None
        return {k: self.metrics.get(k) for k in HEADLINE_METRICS}

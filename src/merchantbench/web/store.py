"""One participant's store at the playground: a normal run record played by a person.

The store opens its session through the runner's `RunWriter` (so the record is a normal one:
run.json, trace.jsonl, checkpoint, tables and metrics at the end) with the `human` agent, and
marks the session's environment calls with origin `human`. Everything the pages get goes
through the run's agent surface; the clock is logical, so a store waits for its participant:
every closed window is checkpointed, and a restarted server continues where the person stopped.
"""

from __future__ import annotations

import re
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from merchantbench.metrics.table1 import HEADLINE_METRICS
from merchantbench.record.files import atomic_write_json, read_json
from merchantbench.record.manifest import read_manifest
from merchantbench.record.schema import METRICS_FILE
from merchantbench.record.sealed import read_sealed
from merchantbench.runs.runner import RunSpec, RunWriter
from merchantbench.scenario import Scenario
from merchantbench.tools.toolset import END_OF_STEP
from merchantbench.web.human import HUMAN_ORIGIN, HumanAgent, HumanSettings

HISTORY_FILE = "web-history.json"  # what the pages drew so far (public numbers only)
_NET = re.compile(r"Net assets: (-?[\d,]+\.\d\d) RMB")
_RATING = re.compile(r"Store rating: (\d+\.\d\d)")
_PLACED = re.compile(r"(\d+) placed")


@dataclass(frozen=True)
class WindowPoint:
    """The public numbers at the opening of one window, as its observation states them."""

    window: int
    day: int
    hour: int
    net_assets: float
    rating: float
    orders: int  # orders placed so far


def read_observation_numbers(text: str) -> tuple[float, float, int]:
    """Net assets, rating and orders placed since the last window, read off an observation."""
    net = _NET.search(text)
    rating = _RATING.search(text)
    placed = _PLACED.search(text.split("\n\n")[0])
    return (
        float(net.group(1).replace(",", "")) if net else 0.0,
        float(rating.group(1)) if rating else 0.0,
        int(placed.group(1)) if placed else 0,
    )


class PlayStore:
    """A person's store (see the module docstring). Thread-safe: one call at a time."""

    def __init__(self, spec: RunSpec, run_dir: Path, resume: bool) -> None:
        self.run_dir = run_dir
        self.writer = RunWriter(spec, run_dir, checkpoint_every=1)
        human = HumanAgent(HumanSettings.model_validate(spec.agent_settings))
        self.session, self.agent, self.manifest = self.writer.open_session(resume, agent=human)
        self.session.env_origin = HUMAN_ORIGIN
        self.surface = self.session.surface
        self.lock = threading.Lock()
        saved = read_json(run_dir / HISTORY_FILE) if (run_dir / HISTORY_FILE).is_file() else {}
        self.history = [WindowPoint(**p) for p in saved.get("history", [])]
        self.paused: bool = bool(saved.get("paused", False))
        self.metrics: dict[str, Any] | None = None
        if not resume:
            self.writer.checkpoint(self.session, self.agent)
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
    def over(self) -> bool:
        return self.metrics is not None or self.surface.over

    def clock(self) -> dict[str, int]:
        hour, total = self.surface.hour, self.surface.windows_total
        window = min(self.surface.window, total)
        return {
            "day": hour // 24 + 1,
            "hour": hour % 24,
            "window": window + 1,
            "windows_total": total,
            "windows_left": max(total - window, 0),
        }

    def state(self) -> dict[str, Any]:
        """Everything the page shows besides tool answers: clock, observation, history."""
        with self.lock:
            observation = "" if self.over else self.surface.observation()
            net_assets = read_observation_numbers(observation)[0] if observation else None
            if self.over and self.metrics:
                net_assets = self.metrics.get("final_net_assets")
            return {
                "clock": self.clock(),
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
    def call(self, tool: str, args: Any, key: str | None = None) -> dict[str, Any]:
        """One tool call through the surface; `end_of_step` closes the window."""
        with self.lock:
            if self.over:
                return {"ok": False, "error": {"code": "run_over", "message": "the run has ended"}}
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
            self.writer.checkpoint(self.session, self.agent)
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
        self.writer.checkpoint(self.session, self.agent)

    def _note_window(self) -> None:
        window = self.surface.window
        if self.history and self.history[-1].window >= window:
            return
        net, rating, placed = read_observation_numbers(self.surface.observation())
        before = self.history[-1].orders if self.history else 0
        hour = self.surface.hour
        point = WindowPoint(window, hour // 24 + 1, hour % 24, net, rating, before + placed)
        self.history.append(point)
        self._save_history()

    def _save_history(self) -> None:
        body = {"history": [asdict(p) for p in self.history], "paused": self.paused}
        atomic_write_json(self.run_dir / HISTORY_FILE, body)

    def _finish(self) -> None:
        metrics_file = self.run_dir / METRICS_FILE
        if self.manifest.ended is None:
            self.metrics = self.writer.finish(self.session, self.agent, self.manifest)
        elif metrics_file.is_file():
            self.metrics = read_json(metrics_file)
        else:
            self.metrics = {}

    def _public_final(self) -> dict[str, Any] | None:
        """The Table-1 headline of a finished store (the seed stays on disk)."""
        if self.metrics is None:
            return None
        return {k: self.metrics.get(k) for k in HEADLINE_METRICS}

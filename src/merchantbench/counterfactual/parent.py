"""The run a fork starts from (`Parent`) and the windows it can be forked at."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from merchantbench.record.manifest import ManifestError, RunManifest, read_manifest
from merchantbench.record.schema import MODEL_CALLS_FILE, TRACE_FILE
from merchantbench.scenario import Scenario


class ForkError(Exception):
    """A fork or a counterfactual analysis that cannot be made; the message says why in one
    line."""


@dataclass(frozen=True)
class Parent:
    """A recorded run, read for forking.

    Attributes:
        run_dir: Its directory.
        manifest: Its `run.json`.
        scenario: The scenario exactly as it ran.
        seed: Its seed (a sealed run's only when given, checked by the replay).
        catalog: The real catalog it ran on, or None (synthetic market).
    """

    run_dir: Path
    manifest: RunManifest
    scenario: Scenario
    seed: int
    catalog: Path | None

    @classmethod
    def read(cls, run_dir: Path, seed: int | None = None) -> Parent:
        """Read `run_dir` as a parent.

        Raises:
            ForkError: not a readable run record, or a sealed one without its seed.
        """
        if not (run_dir / TRACE_FILE).is_file():
            raise ForkError(f"{run_dir} is not a run record (no {TRACE_FILE})")
        try:
            manifest = read_manifest(run_dir)
        except ManifestError as exc:
            raise ForkError(str(exc)) from None
        if manifest.seed is not None:
            if seed is not None and seed != manifest.seed:
                raise ForkError(f"{run_dir} ran with seed {manifest.seed}, not {seed}")
            seed = manifest.seed
        elif seed is None:
            raise ForkError(
                f"{run_dir} is a sealed run: give its seed (--seed, after `merchantbench reveal`)"
            )
        catalog = None if manifest.market.catalog is None else Path(manifest.market.catalog)
        return cls(run_dir, manifest, manifest.scenario_model(), seed, catalog)

    @property
    def agent(self) -> str:
        return self.manifest.agent.name

    @property
    def agent_settings(self) -> dict[str, Any]:
        return dict(self.manifest.agent.settings)

    @property
    def windows_closed(self) -> int:
        """Windows the record has closed (as its `run.json` last said)."""
        return self.manifest.windows or 0

    @property
    def finished(self) -> bool:
        return self.manifest.final_accounts is not None

    @property
    def final_net_assets(self) -> float:
        """Where the parent itself ended (net assets after draining, RMB)."""
        if self.manifest.final_accounts is None:
            raise ForkError(f"{self.run_dir} has not finished: its own end is not known")
        return self.manifest.final_accounts.net_assets

    @property
    def plays_a_model(self) -> bool:
        """Whether its agent called a model (its state cannot be rebuilt by playing it again)."""
        return (
            self.manifest.llm_usage is not None
            or self.manifest.driver is not None
            or (self.run_dir / MODEL_CALLS_FILE).is_file()
        )

    def windows_per_day(self) -> int:
        return 24 // self.scenario.clock.hours_per_window

    def window_of_day(self, day: int) -> int:
        """The first window of run day `day` (0-based)."""
        return day * self.windows_per_day()

    def check_window(self, window: int) -> None:
        """Refuse a fork window the record cannot be continued from."""
        last = min(self.windows_closed, self.scenario.clock.windows - 1)
        if not 0 <= window <= last:
            raise ForkError(
                f"window {window} is outside {self.run_dir}'s record: forks are made at windows "
                f"0-{last}"
            )


def fork_days(every_days: int, days: int) -> list[int]:
    """The fork days of an analysis: day 0, then every `every_days` days while a whole period
    is left before the end (a paper year at 30 days: 0, 30, …, 330, 12 fork points; the last
    period runs to the end, 35 days). A period longer than the run gives day 0 alone."""
    if every_days < 1:
        raise ForkError(f"--every must be at least 1 day, got {every_days}")
    return list(range(0, max(days - every_days, 0) + 1, every_days))


def parse_every(text: str) -> int:
    """`30d`, `30` or `2w` as a number of days."""
    raw = text.strip().lower()
    unit = {"d": 1, "w": 7}.get(raw[-1:])
    number = raw[:-1] if unit is not None else raw
    try:
        value = int(number) * (unit or 1)
    except ValueError:
        raise ForkError(f"--every wants days such as 30d or 2w, got {text!r}") from None
    if value < 1:
        raise ForkError(f"--every must be at least 1 day, got {text!r}")
    return value

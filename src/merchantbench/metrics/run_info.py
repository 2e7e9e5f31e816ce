"""What the metrics need to know about a run, taken from `run.json` (docs/metrics.md, "Inputs").

`run.json` is a `RunManifest` (docs/run-record.md): the scenario comes from its full dump
(`scenario_config`), the window count, final accounts and state hash from what `finish` recorded.
"""

from __future__ import annotations

from dataclasses import dataclass

from merchantbench.metrics.calendar import RunCalendar
from merchantbench.metrics.record import RunRecord
from merchantbench.record.manifest import RunManifest
from merchantbench.scenario import Scenario

ACCOUNTS = ("balance", "deposit", "in_transit", "receivable", "net_assets")


@dataclass(frozen=True)
class RunInfo:
    """The run-level facts the metrics use.

    Attributes:
        scenario: The scenario the run used.
        calendar: Hours, windows, days and months of the run.
        windows: Number of decision windows opened.
        scheduled_windows: Windows the scenario schedules (730 on `paper`), whether or not they
            opened: SWR and the monthly rates are counted over these (docs/design.md §9).
        initial_net_assets: Net assets at the start (RMB).
        final_accounts: The post-drain accounts (RMB) when `run.json` records them.
        seed: The run's seed; None for a sealed run (its seed is committed to, not recorded).
        agent: A label for the agent (name, and model when recorded).
        state_hash: The engine's final state hash, if recorded.
        last_day: Last day of the horizon: the timeseries' last day, else the last window's.
    """

    scenario: Scenario
    calendar: RunCalendar
    windows: int
    scheduled_windows: int
    initial_net_assets: float
    final_accounts: dict[str, float] | None
    seed: int | None
    agent: str
    state_hash: str | None
    last_day: int

    @property
    def months(self) -> int:
        """Calendar months the monthly series cover (at least 12)."""
        last = self.scheduled_windows - 1
        last_window_day = int(self.calendar.day_of_window(last)) if last >= 0 else 0
        return self.calendar.month_count(max(self.last_day, last_window_day))


def agent_label(run: RunManifest) -> str:
    """`name` or `name / model` of the recorded agent."""
    model = run.agent.settings.get("model")
    return f"{run.agent.name} / {model}" if model else run.agent.name


def _final_accounts(run: RunManifest) -> dict[str, float] | None:
    if run.final_accounts is None:
        return None
    accounts = run.final_accounts.model_dump()
    return {key: round(float(accounts[key]), 2) for key in ACCOUNTS}


def _windows(run: RunManifest, record: RunRecord) -> int:
    if run.windows is not None:
        return run.windows
    window = record.trace["window"]
    return int(window.max()) + 1 if len(window) else 0


def _last_day(record: RunRecord, calendar: RunCalendar, windows: int) -> int:
    days = record.timeseries["day"]
    if len(days):
        return int(days.max())
    return int(calendar.day_of_window(windows - 1)) if windows else 0


def run_info(record: RunRecord) -> RunInfo:
    """Interpret `run.json` (with the trace as a fallback for the window count)."""
    run = record.run
    scenario = run.scenario_model()
    calendar = RunCalendar.from_clock(scenario.clock)
    windows = _windows(run, record)
    return RunInfo(
        scenario=scenario,
        calendar=calendar,
        windows=windows,
        scheduled_windows=scenario.clock.windows,
        initial_net_assets=round(run.initial_net_assets, 2),
        final_accounts=_final_accounts(run),
        seed=run.seed,
        agent=agent_label(run),
        state_hash=run.state_hash,
        last_day=_last_day(record, calendar, windows),
    )

"""What the metrics need to know about a run, taken from `run.json` (docs/metrics.md, "Inputs").

The scenario's clock (window length, start date) and order rules (hours before an order is
late, initial capital) come from the full scenario dump in `run.json` when it is there
(`scenario_config`, or `scenario` itself when it holds a `clock` section), else from the preset
named by `scenario.name`, else from the `paper` defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from merchantbench.metrics.calendar import RunCalendar
from merchantbench.metrics.record import RunRecord
from merchantbench.scenario import PRESETS, Scenario

ACCOUNTS = ("balance", "deposit", "in_transit", "receivable", "net_assets")


@dataclass(frozen=True)
class RunInfo:
    """The run-level facts the metrics use.

    Attributes:
        scenario: The scenario the run used (or the best available stand-in, see module doc).
        calendar: Hours, windows, days and months of the run.
        windows: Number of decision windows opened.
        initial_net_assets: Net assets at the start (RMB).
        final_accounts: The post-drain accounts (RMB) when `run.json` records them.
        seed: The run's seed, if recorded.
        agent: A label for the agent (name, and model when recorded).
        state_hash: The engine's final state hash, if recorded.
        last_day: Last day of the horizon: the timeseries' last day, else the last window's.
    """

    scenario: Scenario
    calendar: RunCalendar
    windows: int
    initial_net_assets: float
    final_accounts: dict[str, float] | None
    seed: int | None
    agent: str
    state_hash: str | None
    last_day: int

    @property
    def months(self) -> int:
        """Calendar months the monthly series cover (at least 12)."""
        last_window_day = int(self.calendar.day_of_window(self.windows - 1)) if self.windows else 0
        return self.calendar.month_count(max(self.last_day, last_window_day))


def scenario_name(run: dict[str, Any]) -> str:
    """The scenario's name as recorded in `run.json` (`scenario` or `scenario.name`)."""
    recorded = run.get("scenario")
    if isinstance(recorded, dict):
        return str(recorded.get("name", "unknown"))
    return str(recorded) if recorded else str(run.get("scenario_name", "unknown"))


def run_scenario(run: dict[str, Any]) -> Scenario:
    """The run's scenario: the recorded one, else its preset, else `paper`."""
    for recorded in (run.get("scenario_config"), run.get("scenario")):
        if isinstance(recorded, dict) and "clock" in recorded:
            fields = {k: v for k, v in recorded.items() if k in Scenario.model_fields}
            try:
                return Scenario.model_validate(fields)
            except ValidationError:
                continue
    return PRESETS.get(scenario_name(run), Scenario())


def agent_label(run: dict[str, Any]) -> str:
    """`name` or `name / model` of the recorded agent."""
    agent = run.get("agent")
    if isinstance(agent, dict):
        settings = agent.get("settings")
        settings = settings if isinstance(settings, dict) else {}
        name = str(agent.get("name", "agent"))
        model = agent.get("model") or settings.get("model")
        return f"{name} / {model}" if model else name
    return str(agent) if agent else "unknown"


def _final_accounts(run: dict[str, Any]) -> dict[str, float] | None:
    accounts = run.get("final_accounts")
    if not isinstance(accounts, dict) or "net_assets" not in accounts:
        return None
    return {key: round(float(accounts[key]), 2) for key in ACCOUNTS if key in accounts}


def _windows(run: dict[str, Any], record: RunRecord) -> int:
    if isinstance(run.get("windows"), int):
        return int(run["windows"])
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
    scenario = run_scenario(run)
    money = scenario.money
    default_initial = (money.initial_balance_fen + money.initial_deposit_fen) / 100
    seed = run.get("seed")
    calendar = RunCalendar.from_clock(scenario.clock)
    windows = _windows(run, record)
    return RunInfo(
        scenario=scenario,
        calendar=calendar,
        windows=windows,
        initial_net_assets=round(float(run.get("initial_net_assets", default_initial)), 2),
        final_accounts=_final_accounts(run),
        seed=int(seed) if isinstance(seed, int) else None,
        agent=agent_label(run),
        state_hash=run.get("state_hash"),
        last_day=_last_day(record, calendar, windows),
    )

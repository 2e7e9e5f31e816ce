"""Decision-window activity: effective windows, the SWR and monthly effective-window rates.

A window is *effective* when the trace holds at least one `env` call in it other than
`end_of_step`. Framework calls never count; env calls that returned an error do count (the
agent acted, even if badly). Windows without any trace line are idle.

Windows are counted over the scenario's **scheduled** windows (docs/design.md §9): windows a closed
store or a stopped agent never had are not effective, so a store closed on its first day has SWR 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from merchantbench.metrics.calendar import RunCalendar
from merchantbench.metrics.record import Table, is_one_of
from merchantbench.record.trace import ENV_ORIGINS
from merchantbench.tools.toolset import END_OF_STEP


@dataclass(frozen=True)
class WindowActivity:
    """Per-window counts of a run.

    Attributes:
        env_calls: Env calls other than `end_of_step`, per scheduled window (index = window).
        effective: Whether each window is effective.
        day: Day on which each window opens.
    """

    env_calls: np.ndarray
    effective: np.ndarray
    day: np.ndarray

    @property
    def total(self) -> int:
        """Number of scheduled windows."""
        return len(self.effective)


def env_mask(trace: Table) -> np.ndarray:
    """Rows of the trace that are environment calls (including `end_of_step`)."""
    return is_one_of(trace["origin"], ENV_ORIGINS)


def action_mask(trace: Table) -> np.ndarray:
    """Rows that are environment calls other than `end_of_step`."""
    return env_mask(trace) & (trace["tool"] != END_OF_STEP)


def window_activity(trace: Table, scheduled: int, calendar: RunCalendar) -> WindowActivity:
    """Count each scheduled window's actions.

    Args:
        trace: The run's trace.
        scheduled: Windows the scenario schedules; trace windows beyond it extend it.
        calendar: The run's calendar.
    """
    acting = trace["window"][action_mask(trace)]
    total = max(scheduled, int(trace["window"].max()) + 1 if len(trace) else 0)
    env_calls = np.bincount(acting, minlength=total).astype(np.int64)
    day = calendar.day_of_window(np.arange(total))
    return WindowActivity(env_calls=env_calls, effective=env_calls > 0, day=day)


def sustained_window_rate(effective: np.ndarray, period: int) -> float:
    """Minimum share of effective windows over all rolling periods of `period` windows.

    With fewer than `period` windows it is the share over all windows; with none it is 0.
    """
    if len(effective) == 0:
        return 0.0
    if len(effective) < period:
        return float(effective.mean())
    running = np.concatenate(([0], np.cumsum(effective, dtype=np.int64)))
    shares = (running[period:] - running[:-period]) / period
    return float(shares.min())


def monthly_rates(
    activity: WindowActivity, calendar: RunCalendar, months: int
) -> list[float | None]:
    """Share of effective windows per calendar month; `None` for months without windows."""
    month = calendar.month_of_day(activity.day)
    opened = np.bincount(month, minlength=months)[:months]
    effective = np.bincount(month, weights=activity.effective, minlength=months)[:months]
    return [float(e / n) if n else None for e, n in zip(effective, opened, strict=True)]


def idle_streaks(effective: np.ndarray) -> tuple[int, int | None]:
    """Longest run of consecutive non-effective windows, and the window where it starts."""
    best, best_start, run, start = 0, None, 0, 0
    for window, is_effective in enumerate(effective):
        if is_effective:
            run = 0
            continue
        if run == 0:
            start = window
        run += 1
        if run > best:
            best, best_start = run, start
    return best, best_start


def abandonment_day(activity: WindowActivity) -> int | None:
    """First day from which no window is ever effective again; `None` if there is none.

    It is the day after the last effective window's day, provided windows open on that day
    (a run that is still acting on its last day has not abandoned). A run that never acts
    abandons on day 0.
    """
    if activity.total == 0:
        return None
    acted = np.flatnonzero(activity.effective)
    day = 0 if len(acted) == 0 else int(activity.day[acted[-1]]) + 1
    return day if day <= int(activity.day[-1]) else None

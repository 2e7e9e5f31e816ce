"""The calendar of a run: hours, decision windows, days and calendar months (docs/design.md §1).

Day `d` is `t // 24`; window `w` opens at hour `w · hours_per_window`, so it belongs to day
`w · hours_per_window // 24`. Months are calendar months counted from the month of day 0
(2025-06-01 on `paper`): month 0 is June 2025, month 11 is May 2026.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from merchantbench.scenario import ClockConfig

HOURS_PER_DAY = 24
DAYS_PER_ROLLING_PERIOD = 30
MIN_MONTHS = 12


@dataclass(frozen=True)
class RunCalendar:
    """Maps simulation hours and window indices to days and calendar months.

    Attributes:
        start_date: ISO date of day 0.
        hours_per_window: Hours between two window openings.
    """

    start_date: str
    hours_per_window: int

    @classmethod
    def from_clock(cls, clock: ClockConfig) -> RunCalendar:
        """The calendar of a scenario's clock."""
        return cls(start_date=clock.start_date, hours_per_window=clock.hours_per_window)

    @property
    def windows_per_rolling_period(self) -> int:
        """Windows in a rolling 30-day period of the SWR (60 on `paper`)."""
        return DAYS_PER_ROLLING_PERIOD * HOURS_PER_DAY // self.hours_per_window

    def day_of_hour(self, t: np.ndarray | int) -> np.ndarray:
        """Day index of each simulation hour."""
        return np.asarray(t, dtype=np.int64) // HOURS_PER_DAY

    def day_of_window(self, window: np.ndarray | int) -> np.ndarray:
        """Day index on which each window opens."""
        return np.asarray(window, dtype=np.int64) * self.hours_per_window // HOURS_PER_DAY

    def month_of_day(self, day: np.ndarray | int) -> np.ndarray:
        """Calendar-month index (0 = the month of day 0) of each day index."""
        start = np.datetime64(self.start_date, "D")
        dates = start + np.asarray(day, dtype=np.int64).astype("timedelta64[D]")
        months = dates.astype("datetime64[M]") - start.astype("datetime64[M]")
        return months.astype(np.int64)

    def month_count(self, last_day: int) -> int:
        """Months to report for a run whose last day is `last_day`: at least 12."""
        return max(MIN_MONTHS, int(self.month_of_day(max(last_day, 0))) + 1)

    def month_labels(self, count: int) -> list[str]:
        """`YYYY-MM` labels of the first `count` months."""
        first = np.datetime64(self.start_date, "M")
        return [str(first + np.timedelta64(i, "M")) for i in range(count)]

    def month_start_days(self, count: int) -> list[int]:
        """Day index of the first day of each of the first `count` months (0 for month 0)."""
        start = np.datetime64(self.start_date, "D")
        first = np.datetime64(self.start_date, "M")
        starts = [(first + np.timedelta64(i, "M")).astype("datetime64[D]") for i in range(count)]
        return [max(0, int((s - start).astype(np.int64))) for s in starts]

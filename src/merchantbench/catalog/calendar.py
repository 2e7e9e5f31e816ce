"""The Chinese e-commerce calendar as arrays over days (docs/design.md §3, §4).

Day 0 of a run is the scenario's start date (2025-06-01 on `paper`); per-day matrices also carry
`HISTORY_DAYS` rows before it. A festival is a peak date and a shape: (days from the peak, demand
lift) points, linearly interpolated, scaled per category. Lifts add up; the calendar factor of a
category on a day is 1 + the sum of lifts (troughs are negative lifts), times a weekday factor.

The shapes follow the platforms' own schedules: 618 opens on May 31 and peaks on June 18;
Double 11's pre-sale opens on October 20, its first payment window on October 31, the peak on
November 11; Double 12 is a short echo. Around the Spring Festival, couriers and factories stop
for about two weeks, so demand falls and suppliers ship slower (`ship_extra_hours`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

HISTORY_DAYS = 30

# Chinese New Year's Day (month, day) by year.
LUNAR_NEW_YEAR: dict[int, tuple[int, int]] = {
    2020: (1, 25), 2021: (2, 12), 2022: (2, 1), 2023: (1, 22), 2024: (2, 10), 2025: (1, 29),
    2026: (2, 17), 2027: (2, 6), 2028: (1, 26), 2029: (2, 13), 2030: (2, 3), 2031: (1, 23),
    2032: (2, 11), 2033: (1, 31), 2034: (2, 19), 2035: (2, 8),
}  # fmt: skip


def _fixed(month: int, day: int) -> Callable[[int], dt.date]:
    return lambda year: dt.date(year, month, day)


def _lunar_new_year(year: int) -> dt.date:
    if year not in LUNAR_NEW_YEAR:
        raise ValueError(f"no Spring Festival date known for {year}")
    return dt.date(year, *LUNAR_NEW_YEAR[year])


@dataclass(frozen=True)
class Festival:
    """A demand shape around a yearly peak date, scaled per category (default 1)."""

    key: str
    peak: Callable[[int], dt.date]
    shape: tuple[tuple[int, float], ...]  # (days from peak, lift at sensitivity 1)
    sensitivity: dict[str, float] = field(default_factory=dict)
    default_sensitivity: float = 1.0


FESTIVALS: tuple[Festival, ...] = (
    Festival("618", _fixed(6, 18),
             ((-19, 0.0), (-18, 0.2), (-17, 0.3), (-14, 0.12), (-6, 0.15), (-2, 0.4),
              (-1, 0.65), (0, 1.3), (1, 0.3), (2, 0.05), (3, 0.0)),
             {"appliances": 1.3, "sports": 1.1, "office": 0.8, "pet_garden": 0.8,
              "home_decor": 0.9, "cleaning": 0.9, "toys": 0.9}),
    Festival("double11", _fixed(11, 11),
             ((-23, 0.0), (-22, 0.15), (-12, 0.2), (-11, 0.55), (-10, 0.45), (-9, 0.2),
              (-4, 0.2), (-1, 0.7), (0, 2.0), (1, 0.35), (2, 0.1), (4, 0.0)),
             {"womenswear": 1.3, "appliances": 1.3, "bags": 1.1, "toys": 0.9,
              "home_decor": 0.9, "pet_garden": 0.8, "office": 0.7, "sports": 0.8}),
    Festival("double12", _fixed(12, 12),
             ((-5, 0.0), (-2, 0.12), (-1, 0.25), (0, 0.8), (1, 0.15), (2, 0.0)),
             {"womenswear": 1.2, "appliances": 1.1, "office": 0.7, "sports": 0.7}),
    Festival("spring_festival", _lunar_new_year,
             ((-30, 0.0), (-16, -0.05), (-10, -0.22), (-6, -0.4), (-2, -0.52), (0, -0.55),
              (5, -0.5), (8, -0.32), (12, -0.15), (18, -0.04), (25, 0.0)),
             {"pet_garden": 0.8, "cleaning": 0.85, "home_decor": 0.9}),
    Festival("new_year_shopping", _lunar_new_year,
             ((-42, 0.0), (-28, 0.15), (-18, 0.3), (-12, 0.2), (-9, 0.0)),
             {"home_decor": 1.0, "cleaning": 0.8, "womenswear": 0.7, "home_goods": 0.5,
              "toys": 0.5}, default_sensitivity=0.15),
    Festival("womens_day", _fixed(3, 8),
             ((-7, 0.0), (-3, 0.1), (-1, 0.2), (0, 0.5), (1, 0.0)),
             {"womenswear": 1.0, "bags": 0.7, "home_decor": 0.2}, default_sensitivity=0.0),
    Festival("back_to_school", _fixed(9, 1),
             ((-25, 0.0), (-14, 0.2), (-5, 0.3), (3, 0.1), (8, 0.0)),
             {"office": 1.0, "bags": 0.8, "toys": 0.2, "sports": 0.2}, default_sensitivity=0.0),
    Festival("national_day", _fixed(10, 1),
             ((-2, 0.0), (1, -0.12), (5, -0.12), (7, 0.0)), {}),
)  # fmt: skip

# Public dates for the daily report: (name, festival key, days from that festival's peak).
ANNOUNCED: tuple[tuple[str, str, int], ...] = (
    ("618 pre-sale opens", "618", -18),
    ("618 Shopping Festival", "618", 0),
    ("Back-to-school season", "back_to_school", 0),
    ("National Day Golden Week", "national_day", 0),
    ("Double 11 pre-sale opens", "double11", -22),
    ("Double 11 (Singles' Day)", "double11", 0),
    ("Double 12", "double12", 0),
    ("Spring Festival logistics pause begins", "spring_festival", -8),
    ("Spring Festival (Chinese New Year)", "spring_festival", 0),
    ("Logistics back to normal after Spring Festival", "spring_festival", 13),
    ("Women's Day (3.8 festival)", "womens_day", 0),
)

# Weekly rhythm: a zero-mean pattern (Mon … Sun) scaled by each category's weekend tilt. Office
# supplies sell on workdays; clothing and toys on weekends.
_WEEK_PATTERN = np.array([0.0, -0.03, -0.04, -0.04, -0.02, 0.05, 0.08])
_WEEKEND_TILT = {"office": -1.2, "womenswear": 1.3, "toys": 1.2, "sports": 1.1, "appliances": 0.8}

# Hourly shape: (morning, lunch, afternoon, evening, evening centre hour, late night) weights.
_HOURLY = {
    "office": (1.0, 0.5, 0.9, 0.5, 20.5, 0.05),
    "womenswear": (0.4, 0.5, 0.4, 1.3, 21.5, 0.35),
    "pet_garden": (0.8, 0.3, 0.5, 0.9, 20.5, 0.10),
    "appliances": (0.5, 0.4, 0.5, 1.1, 21.0, 0.15),
    "home_decor": (0.5, 0.4, 0.6, 1.0, 21.0, 0.20),
    "home_goods": (0.6, 0.5, 0.5, 1.0, 20.5, 0.15),
    "cleaning": (0.9, 0.4, 0.6, 0.8, 20.0, 0.05),
    "toys": (0.4, 0.3, 0.4, 1.2, 20.0, 0.10),
    "bags": (0.5, 0.5, 0.5, 1.1, 21.5, 0.25),
    "sports": (0.6, 0.3, 0.4, 1.1, 21.5, 0.20),
}

# Spring Festival supplier slowdown: full extra ship hours from 8 days before to 7 after New
# Year's Day, half of it in the shoulder weeks around.
_SHIP_SLOW_FULL = (-8, 7)
_SHIP_SLOW_HALF = (-14, 12)


@dataclass(frozen=True)
class CalendarEvent:
    """An upcoming date of the e-commerce calendar, as the daily report shows it."""

    name: str
    date: dt.date
    days_away: int


def run_dates(start_date: str, days: int, history_days: int = HISTORY_DAYS) -> np.ndarray:
    """Dates (datetime64[D]) of every per-day row: history_days before day 0, then the run."""
    first = np.datetime64(start_date, "D") - history_days
    return first + np.arange(history_days + days)


def _years(dates: np.ndarray) -> range:
    years = dates.astype("datetime64[Y]").astype(int) + 1970
    return range(int(years.min()) - 1, int(years.max()) + 2)


def festival_lift(dates: np.ndarray, festival: Festival) -> np.ndarray:
    """Lift of one festival at sensitivity 1 on each date (float64, zero outside its shape)."""
    offsets = np.array([p[0] for p in festival.shape], dtype=np.float64)
    lifts = np.array([p[1] for p in festival.shape])
    day_numbers = dates.astype("datetime64[D]").astype(np.int64)
    lift = np.zeros(len(dates))
    for year in _years(dates):
        try:
            peak = np.datetime64(festival.peak(year), "D").astype(np.int64)
        except ValueError:
            continue  # a year far outside the run (only its shoulders could reach it)
        lift += np.interp(day_numbers - peak, offsets, lifts, left=0.0, right=0.0)
    return lift


def festival_factor(dates: np.ndarray, categories: Sequence[str]) -> np.ndarray:
    """Festival demand factor [n_categories, n_dates] (float32): 1 + Σ sensitivity · lift."""
    total = np.ones((len(categories), len(dates)))
    for festival in FESTIVALS:
        lift = festival_lift(dates, festival)
        for c, name in enumerate(categories):
            total[c] += festival.sensitivity.get(name, festival.default_sensitivity) * lift
    return np.maximum(total, 0.1).astype(np.float32)


def weekday_factor(dates: np.ndarray, categories: Sequence[str]) -> np.ndarray:
    """Weekly rhythm [n_categories, n_dates] (float32), mean 1 over a week for each category."""
    weekday = (dates.astype("datetime64[D]").astype(np.int64) + 3) % 7  # 1970-01-01 was Thursday
    rows = np.array([1.0 + _WEEKEND_TILT.get(c, 1.0) * _WEEK_PATTERN for c in categories])
    rows /= rows.mean(axis=1, keepdims=True)
    return rows[:, weekday].astype(np.float32)


def _bump(hours: np.ndarray, centre: float, width: float) -> np.ndarray:
    gap = np.minimum(np.abs(hours - centre), 24 - np.abs(hours - centre))  # wraps at midnight
    return np.exp(-0.5 * (gap / width) ** 2)


def hourly_weights(categories: Sequence[str]) -> np.ndarray:
    """Share of a day's demand in each hour, [n_categories, 24] float64, rows summing to 1.

    Night trough around 4 am, a morning peak near 10:30, lunch and afternoon shoulders and an
    evening peak whose height and hour differ by category.
    """
    hours = np.arange(24) + 0.5
    rows = []
    for name in categories:
        morning, lunch, afternoon, evening, evening_at, late = _HOURLY.get(
            name, _HOURLY["home_goods"]
        )
        w = (
            0.04
            + morning * _bump(hours, 10.5, 1.6)
            + lunch * _bump(hours, 13.0, 1.0)
            + afternoon * _bump(hours, 15.5, 1.8)
            + evening * _bump(hours, evening_at, 1.5)
            + late * _bump(hours, 0.5, 1.2)
        )
        rows.append(w / w.sum())
    return np.array(rows)


def ship_extra_hours(start_date: str, days: int, extra_hours: int) -> np.ndarray:
    """Extra supplier ship hours on each run day (int16 [days]): the Spring Festival slowdown."""
    dates = run_dates(start_date, days, 0)
    day_numbers = dates.astype(np.int64)
    extra = np.zeros(days, dtype=np.int16)
    for year in _years(dates):
        if year not in LUNAR_NEW_YEAR:
            continue
        away = day_numbers - np.datetime64(_lunar_new_year(year), "D").astype(np.int64)
        half = (away >= _SHIP_SLOW_HALF[0]) & (away <= _SHIP_SLOW_HALF[1])
        full = (away >= _SHIP_SLOW_FULL[0]) & (away <= _SHIP_SLOW_FULL[1])
        extra[half] = extra_hours // 2
        extra[full] = extra_hours
    return extra


def festival_day(start_date: str, key: str, first_day: int = 0) -> int:
    """Run day index of a festival's first peak on or after `first_day` (may exceed the run)."""
    festival = next(f for f in FESTIVALS if f.key == key)
    start = dt.date.fromisoformat(start_date)
    earliest = start + dt.timedelta(days=first_day)
    for year in range(earliest.year, earliest.year + 2):
        peak = festival.peak(year)
        if peak >= earliest:
            return (peak - start).days
    raise ValueError(f"no {key} peak found after {earliest}")


def upcoming_events(start_date: str, day: int, within_days: int = 45) -> list[CalendarEvent]:
    """Calendar events from run day `day` (today, 0 days away) up to `within_days` ahead.

    Args:
        start_date: ISO date of run day 0.
        day: the run day the list is for (0-based).
        within_days: how far ahead to look.

    Returns:
        Events sorted by date, each with its name, date and days away from `day`.
    """
    today = dt.date.fromisoformat(start_date) + dt.timedelta(days=day)
    by_key = {f.key: f for f in FESTIVALS}
    found = []
    for name, key, offset in ANNOUNCED:
        for year in (today.year - 1, today.year, today.year + 1):
            try:
                date = by_key[key].peak(year) + dt.timedelta(days=offset)
            except ValueError:
                continue  # Spring Festival of a year outside the known table
            away = (date - today).days
            if 0 <= away <= within_days:
                found.append(CalendarEvent(name, date, away))
    return sorted(found, key=lambda e: (e.date, e.name))

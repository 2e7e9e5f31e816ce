"""The e-commerce calendar: festival peaks, the Spring Festival trough, weekly and hourly rhythm."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

from merchantbench.catalog import calendar
from merchantbench.scenario import CATEGORIES

START = "2025-06-01"


@pytest.fixture(scope="module")
def factor() -> np.ndarray:
    dates = calendar.run_dates(START, 365)
    return calendar.festival_factor(dates, CATEGORIES)


def _row(day: int) -> int:
    return day + calendar.HISTORY_DAYS


def _day(iso: str) -> int:
    return (dt.date.fromisoformat(iso) - dt.date.fromisoformat(START)).days


def test_run_dates_start_history_days_before_day_zero():
    dates = calendar.run_dates(START, 365)
    assert len(dates) == 395
    assert str(dates[0]) == "2025-05-02" and str(dates[_row(0)]) == START
    assert str(dates[-1]) == "2026-05-31"


def test_618_ramps_through_early_june_and_peaks_on_june_18(factor):
    peak = _day("2025-06-18")
    for c in range(len(CATEGORIES)):
        series = factor[c]
        assert series[_row(peak)] == series[_row(0) : _row(30)].max()
        assert series[_row(peak)] > 1.8 * series[_row(_day("2025-07-15"))]
        assert series[_row(0)] > series[_row(_day("2025-07-15"))]  # June 1 warm-up


def test_double_11_has_a_pre_sale_from_late_october_and_the_year_s_highest_peak(factor):
    peak, presale = _day("2025-11-11"), _day("2025-10-21")
    for c in range(len(CATEGORIES)):
        series = factor[c]
        assert series[_row(peak)] == series[_row(0) :].max()
        assert series[_row(presale)] > series[_row(_day("2025-10-15"))] + 0.1
    assert factor[:, _row(_day("2025-12-12"))].min() > 1.4  # Double 12


def test_spring_festival_is_the_trough_of_the_year(factor):
    new_year = _row(_day("2026-02-17"))
    assert factor[:, new_year].max() < 0.65
    assert (factor[:, new_year] <= factor[:, _row(0) :].min(axis=1) + 1e-6).all()
    np.testing.assert_allclose(factor[:, _row(_day("2026-04-01"))], 1.0)


def test_festival_sensitivity_differs_by_category(factor):
    peak = factor[:, _row(_day("2025-11-11"))]
    by_name = dict(zip(CATEGORIES, peak, strict=True))
    assert by_name["womenswear"] > by_name["office"] + 0.5


def test_weekday_rhythm_averages_one_per_week_and_differs_by_category():
    dates = calendar.run_dates(START, 28, history_days=0)
    week = calendar.weekday_factor(dates, CATEGORIES)
    np.testing.assert_allclose(week.mean(axis=1), 1.0, atol=1e-6)
    office, womenswear = CATEGORIES.index("office"), CATEGORIES.index("womenswear")
    sunday = _day("2025-06-01")  # 2025-06-01 was a Sunday
    assert week[office, sunday] < 1.0 < week[womenswear, sunday]


def test_hourly_weights_sum_to_one_with_a_night_trough_and_distinct_shapes():
    w = calendar.hourly_weights(CATEGORIES)
    assert w.shape == (10, 24)
    np.testing.assert_allclose(w.sum(axis=1), 1.0)
    assert (w[:, 3:6].max(axis=1) < 0.3 * w.max(axis=1)).all()
    night = w[:, 4]
    assert (w[:, 9:12].max(axis=1) > 2 * night).all()
    assert (w[:, 19:23].max(axis=1) > 2 * night).all()
    assert np.abs(w[0] - w[1]).sum() > 0.1


def test_suppliers_ship_slower_around_the_spring_festival():
    extra = calendar.ship_extra_hours(START, 365, 24)
    assert extra.dtype == np.int16 and extra.shape == (365,)
    assert extra[_day("2026-02-17")] == 24 and extra[_day("2026-02-05")] == 12
    assert extra[: _day("2026-01-15")].max() == 0 and extra[_day("2026-03-15") :].max() == 0


def test_upcoming_events_list_names_dates_and_days_away():
    events = calendar.upcoming_events(START, 0, within_days=30)
    by_name = {e.name: e for e in events}
    assert by_name["618 Shopping Festival"].days_away == 17
    assert by_name["618 Shopping Festival"].date == dt.date(2025, 6, 18)
    october = calendar.upcoming_events(START, _day("2025-10-19"), within_days=45)
    names = [e.name for e in october]
    assert names.index("Double 11 pre-sale opens") < names.index("Double 11 (Singles' Day)")
    assert all(0 <= e.days_away <= 45 for e in october)
    assert [e.date for e in october] == sorted(e.date for e in october)
    assert "618 Shopping Festival" not in names


def test_festival_day_finds_the_next_peak():
    assert calendar.festival_day(START, "618") == 17
    assert calendar.festival_day(START, "double11") == _day("2025-11-11")
    assert calendar.festival_day(START, "spring_festival") == _day("2026-02-17")
    assert calendar.festival_day(START, "618", first_day=30) == _day("2026-06-18")

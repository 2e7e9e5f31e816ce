"""Daily reports kept beside a cached market: the same answers as built on demand, tied to
their market and start date, rebuilt when damaged."""

from __future__ import annotations

import pytest

from merchantbench.catalog import cache, daily_report
from merchantbench.catalog.view import catalog_view_at
from merchantbench.scenario import PRESETS

SMOKE = PRESETS["smoke"]
START = SMOKE.clock.start_date


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv(cache.CACHE_ENV, str(root))
    return root


def _on_demand(market, day):
    return daily_report._build(market, day, catalog_view_at(market, day * 24), START)


def test_kept_reports_equal_reports_built_on_demand(cache_dir):
    market = cache.get_market(SMOKE, 3)
    first = [daily_report.daily_report(market, d, catalog_view_at(market, d * 24), start_date=START)
             for d in range(market.days)]  # fmt: skip
    kept = cache.market_path(SMOKE, 3) / cache.DAILY_REPORTS_DIR
    assert (kept / "manifest.json").is_file()
    assert first == [_on_demand(market, d) for d in range(market.days)]
    assert daily_report._load(kept, market, START) == first  # as saved, read back


def test_reports_of_another_start_date_are_not_served(cache_dir):
    market = cache.get_market(SMOKE, 3)
    daily_report.daily_report(market, 0, catalog_view_at(market, 0), start_date=START)
    kept = cache.market_path(SMOKE, 3) / cache.DAILY_REPORTS_DIR
    with pytest.raises(ValueError, match="another market or start date"):
        daily_report._load(kept, market, "2025-07-01")


def test_a_damaged_report_file_is_rebuilt_with_a_notice(cache_dir, capsys):
    market = cache.get_market(SMOKE, 3)
    view = catalog_view_at(market, 24)
    before = daily_report.daily_report(market, 1, view, start_date=START)
    kept = cache.market_path(SMOKE, 3) / cache.DAILY_REPORTS_DIR
    path = kept / "daily_reports.json"
    path.write_text(path.read_text().replace('"orders_7d": ', '"orders_7d": 1', 1))
    daily_report._REPORTS.pop(market)
    assert daily_report.daily_report(market, 1, view, start_date=START) == before
    assert "daily reports" in capsys.readouterr().err
    assert daily_report._load(kept, market, START)[1] == before

"""The event log kept beside a cached market: read back equal to a fresh build, tied to its
market, rebuilt when damaged, and never needed for correctness."""

from __future__ import annotations

import numpy as np
import pytest

from merchantbench.catalog import cache, event_log
from merchantbench.catalog.market import CHANNELS
from merchantbench.scenario import PRESETS

SMOKE = PRESETS["smoke"]


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv(cache.CACHE_ENV, str(root))
    return root


def _assert_same_logs(a: dict, b: dict) -> None:
    assert set(a) == set(b) == set(CHANNELS)
    for channel in CHANNELS:
        assert a[channel].min_length == b[channel].min_length
        np.testing.assert_array_equal(a[channel].neutral, b[channel].neutral)
        for part in ("ends", "starts"):
            x, y = getattr(a[channel], part).arrays(), getattr(b[channel], part).arrays()
            for name in x:
                assert x[name].dtype == y[name].dtype, (channel, part, name)
                np.testing.assert_array_equal(x[name], y[name], err_msg=f"{channel}.{part}.{name}")


def test_a_cached_market_keeps_its_logs_and_reads_them_back_equal(cache_dir):
    market = cache.get_market(SMOKE, 3)
    first = event_log.channel_logs(market)  # built and saved
    kept = cache.market_path(SMOKE, 3) / cache.EVENT_LOG_DIR
    assert (kept / "manifest.json").is_file()
    again = event_log.load_logs(kept, market)
    _assert_same_logs(first, again)
    _assert_same_logs(event_log.build_logs(market), again)
    # what a view sees through either is the same
    changes = event_log.changes_between(market, np.arange(market.n_products), 0, 24 * 30)
    event_log._LOGS.pop(market)
    assert event_log.changes_between(market, np.arange(market.n_products), 0, 24 * 30) == changes


def test_logs_of_another_market_are_refused(cache_dir):
    one, other = cache.get_market(SMOKE, 3), cache.get_market(SMOKE, 4)
    event_log.channel_logs(one)
    kept = cache.market_path(SMOKE, 3) / cache.EVENT_LOG_DIR
    assert len(other.events["delay"].start) != len(one.events["delay"].start)  # seeds 3, 4
    with pytest.raises(ValueError, match="another market"):
        event_log.load_logs(kept, other)


def test_a_damaged_log_is_rebuilt_with_a_notice(cache_dir, capsys):
    market = cache.get_market(SMOKE, 3)
    built = event_log.channel_logs(market)
    kept = cache.market_path(SMOKE, 3) / cache.EVENT_LOG_DIR
    victim = kept / "price_change.starts.hour.npy"
    data = bytearray(victim.read_bytes())
    data[-1] ^= 0xFF
    victim.write_bytes(bytes(data))
    event_log._LOGS.pop(market)
    _assert_same_logs(built, event_log.channel_logs(market))
    assert "event log" in capsys.readouterr().err
    _assert_same_logs(built, event_log.load_logs(kept, market))  # and the copy is sound again


def test_an_unwritable_cache_still_gives_the_logs(cache_dir, monkeypatch):
    market = cache.get_market(SMOKE, 3)

    def refuse(*args, **kwargs):
        raise OSError("read-only file system")

    monkeypatch.setattr(event_log.tempfile, "mkdtemp", refuse)
    _assert_same_logs(event_log.build_logs(market), event_log.channel_logs(market))

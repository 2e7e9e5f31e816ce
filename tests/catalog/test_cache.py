"""The market cache: keys, round trip, memory maps, atomic publication, the cache root."""

from __future__ import annotations

import json
import os
import time
from dataclasses import fields

import numpy as np
import pytest

from merchantbench.catalog import cache, verified
from merchantbench.catalog.market import CHANNELS, Market
from merchantbench.scenario import PRESETS, load_scenario

SMOKE = PRESETS["smoke"]


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv(cache.CACHE_ENV, str(root))
    return root


def _no_generation(*args, **kwargs):
    raise AssertionError("the market should have come from the cache")


def _assert_same_market(a: Market, b: Market) -> None:
    for f in fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype, f.name
            np.testing.assert_array_equal(x, y, err_msg=f.name)
    for name in ("n_products", "n_suppliers", "days", "history_days", "categories", "index_of"):
        assert getattr(a, name) == getattr(b, name)
    for channel in CHANNELS:
        for name in ("product", "start", "end", "value", "offsets"):
            x, y = getattr(a.events[channel], name), getattr(b.events[channel], name)
            assert x.dtype == y.dtype
            np.testing.assert_array_equal(x, y)


def test_key_covers_the_generator_inputs_and_nothing_else():
    key = cache.market_cache_key(SMOKE, 1)
    assert len(key) == 16 and key == cache.market_cache_key(SMOKE, 1)
    assert cache.market_cache_key(SMOKE, 2) != key
    for override in (
        "market.trap_fraction=0.1",
        "suppliers.delay_hazard=[0.001, 0.002]",
        "market.days=200",
        "clock.start_date='2025-07-01'",
        "orders.logistics_hours=[24, 72]",
    ):
        assert cache.market_cache_key(load_scenario("smoke", [override]), 1) != key, override
    # A shorter run uses the first days of the same market year.
    unrelated = ("money.initial_balance_fen=1", "rating.prior_weight=5", "name=other")
    unrelated += ("clock.days=7",)
    for override in unrelated:
        assert cache.market_cache_key(load_scenario("smoke", [override]), 1) == key, override


def test_round_trip_gives_identical_read_only_arrays(tmp_path):
    market = cache.generate_market(SMOKE, 5)
    cache.save_market(market, tmp_path / "m")
    loaded = cache.load_market(tmp_path / "m")
    _assert_same_market(market, loaded)
    # the matrices stay memory-mapped (a read-only view of the file), not read into memory
    assert isinstance(loaded.demand.base, np.memmap) and not loaded.demand.flags.writeable
    assert not loaded.demand.flags.owndata


def test_get_market_builds_once_under_the_configured_root(cache_dir, monkeypatch):
    built = cache.get_market(SMOKE, 1)
    entries = [p.name for p in cache_dir.iterdir()]
    assert entries == [cache.market_path(SMOKE, 1).name]
    monkeypatch.setattr(cache, "generate_market", _no_generation)
    _assert_same_market(built, cache.get_market(SMOKE, 1))


def test_default_root_is_the_user_cache_dir(monkeypatch):
    monkeypatch.delenv(cache.CACHE_ENV, raising=False)
    assert cache.cache_root().name == "merchantbench"


def test_an_interrupted_build_leaves_nothing_readable_and_is_redone(cache_dir, monkeypatch):
    real_save = cache.save_market

    def save_then_die(market, directory):
        real_save(market, directory)
        raise KeyboardInterrupt  # killed after writing, before publishing

    monkeypatch.setattr(cache, "save_market", save_then_die)
    with pytest.raises(KeyboardInterrupt):
        cache.get_market(SMOKE, 1)
    assert not cache.market_path(SMOKE, 1).exists()
    assert list(cache_dir.iterdir()) == []  # the temporary build was cleaned up
    monkeypatch.setattr(cache, "save_market", real_save)
    _assert_same_market(cache.get_market(SMOKE, 1), cache.generate_market(SMOKE, 1))


def test_a_leftover_temporary_directory_is_ignored(cache_dir):
    final = cache.market_path(SMOKE, 1)
    leftover = cache_dir / f".tmp-{final.name}-killed"
    leftover.mkdir(parents=True)
    (leftover / "demand.npy").write_bytes(b"partial")
    market = cache.get_market(SMOKE, 1)
    _assert_same_market(market, cache.generate_market(SMOKE, 1))
    assert leftover.exists()  # fresh: it might belong to a build still running


def test_old_leftovers_are_swept(cache_dir):
    leftover = cache_dir / ".tmp-market-seed9-abc"
    leftover.mkdir(parents=True)
    old = time.time() - 2 * cache._STALE_TEMP_SECONDS
    os.utime(leftover, (old, old))
    cache.get_market(SMOKE, 1)
    assert not leftover.exists()


def test_a_directory_without_metadata_is_rebuilt(cache_dir):
    final = cache.market_path(SMOKE, 1)
    final.mkdir(parents=True)
    (final / "demand.npy").write_bytes(b"garbage")
    market = cache.get_market(SMOKE, 1)
    assert (final / "meta.json").exists()
    _assert_same_market(market, cache.generate_market(SMOKE, 1))


def test_losing_a_publication_race_keeps_the_winner(cache_dir, tmp_path):
    final = cache.market_path(SMOKE, 1)
    cache.get_market(SMOKE, 1)
    stamp = (final / "meta.json").stat().st_mtime_ns
    other = tmp_path / "other-build"
    cache.save_market(cache.generate_market(SMOKE, 1), other)
    cache._publish(other, final)
    assert not other.exists() and (final / "meta.json").stat().st_mtime_ns == stamp


def test_a_cache_of_another_format_is_refused(tmp_path):
    cache.save_market(cache.generate_market(SMOKE, 1), tmp_path / "m")
    meta = json.loads((tmp_path / "m" / "meta.json").read_text())
    meta["format"] = cache.FORMAT_VERSION + 1
    (tmp_path / "m" / "meta.json").write_text(json.dumps(meta))
    verified.seal(tmp_path / "m")  # a consistent directory of another format
    with pytest.raises(ValueError, match="format"):
        cache.load_market(tmp_path / "m")


def test_catalog_build_command_prints_json_stats(cache_dir):
    from typer.testing import CliRunner

    from merchantbench.cli import app

    args = ["catalog", "build", "--scenario", "smoke", "--seed", "2", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    stats = json.loads(result.stdout.strip().splitlines()[-1])
    assert stats["n_products"] == 200 and stats["n_suppliers"] == 74
    assert set(stats["categories"]) == set(SMOKE.market.categories)
    assert {"mean_daily_demand", "top10pct_demand_share", "seconds"} <= set(stats)
    assert stats["from_cache"] is False
    again = CliRunner().invoke(app, args)
    assert json.loads(again.stdout.strip().splitlines()[-1])["from_cache"] is True

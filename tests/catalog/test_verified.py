"""Verified inputs: a damaged or tampered market cache or search index is rebuilt (with a
one-line notice), never used; a damaged checkpoint is refused (issue 9, item 2)."""

from __future__ import annotations

import numpy as np
import pytest

from merchantbench.catalog import cache, verified
from merchantbench.catalog.cache import get_market, get_search_index, market_path
from merchantbench.record.checkpoint import (
    CHECKPOINT,
    CheckpointError,
    load_checkpoint,
    save_checkpoint,
)
from merchantbench.scenario import load_scenario

SMOKE = load_scenario("smoke")


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    return tmp_path / "cache"


def _fresh_prices() -> np.ndarray:
    return np.array(get_market(SMOKE, 1).p_ref_fen)


def test_a_tampered_market_is_rebuilt_not_used(private_cache, capsys):
    honest = _fresh_prices()
    path = market_path(SMOKE, 1) / "p_ref_fen.npy"
    np.save(path, np.load(path) * 3)  # reference prices × 3, same scenario hash and seed
    again = _fresh_prices()
    assert np.array_equal(again, honest)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "does not match its content hash" in err and "rebuilding" in err


@pytest.mark.parametrize("damage", ["truncate", "garbage", "delete", "meta"])
def test_a_damaged_market_cache_is_rebuilt(private_cache, capsys, damage):
    honest = _fresh_prices()
    directory = market_path(SMOKE, 1)
    victim = directory / ("meta.json" if damage == "meta" else "p_ref_fen.npy")
    if damage == "truncate":
        victim.write_bytes(victim.read_bytes()[:40])
    elif damage == "delete":
        victim.unlink()
    else:
        victim.write_bytes(b"\x00not what it was")
    assert np.array_equal(_fresh_prices(), honest)  # no traceback, the same market
    assert "rebuilding" in capsys.readouterr().err
    assert np.array_equal(_fresh_prices(), honest)  # and the rebuilt one loads quietly
    assert capsys.readouterr().err == ""


def test_the_stamp_skips_rehashing_until_a_file_changes(private_cache, monkeypatch):
    get_market(SMOKE, 1)
    hashed: list[str] = []
    real = verified._digest
    monkeypatch.setattr(verified, "_digest", lambda p: hashed.append(p.name) or real(p))
    get_market(SMOKE, 1)
    assert hashed == []  # stamps matched: nothing re-hashed
    (market_path(SMOKE, 1) / "verified.json").unlink()
    get_market(SMOKE, 1)
    assert "p_ref_fen.npy" in hashed


def test_a_damaged_search_index_is_rebuilt(private_cache, capsys):
    market = get_market(SMOKE, 1)
    first = get_search_index(SMOKE, 1, market)
    directory = market_path(SMOKE, 1) / "search"
    victim = next(p for p in sorted(directory.iterdir()) if p.suffix in (".npy", ".json")
                  and p.name not in ("manifest.json", "verified.json", "meta.json"))  # fmt: skip
    victim.write_bytes(b"{}")
    rebuilt = get_search_index(SMOKE, 1, market)
    assert "search index" in capsys.readouterr().err
    assert rebuilt.relevance("bag") is not None
    assert np.array_equal(rebuilt.relevance("bag")[0], first.relevance("bag")[0])


def test_a_bit_flipped_checkpoint_is_refused(tmp_path):
    save_checkpoint(tmp_path, b"session bytes", {"agent": 1})
    assert load_checkpoint(tmp_path)["agent"] == {"agent": 1}
    path = tmp_path / CHECKPOINT
    data = bytearray(path.read_bytes())
    data[-5] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="damaged"):
        load_checkpoint(tmp_path)
    path.write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="not a checkpoint"):
        load_checkpoint(tmp_path)


def test_runs_holding_a_market_share_it_until_its_cache_changes(private_cache, capsys):
    market = get_market(SMOKE, 1)
    index = get_search_index(SMOKE, 1, market)
    assert get_market(SMOKE, 1) is market  # a second run while the first holds it
    assert get_search_index(SMOKE, 1, market) is index
    path = market_path(SMOKE, 1) / "p_ref_fen.npy"
    np.save(path, np.load(path) * 3)
    rebuilt = get_market(SMOKE, 1)  # the damage is seen, not served from memory
    assert rebuilt is not market and np.array_equal(rebuilt.p_ref_fen, market.p_ref_fen)
    assert "does not match its content hash" in capsys.readouterr().err
    assert get_search_index(SMOKE, 1, rebuilt) is not index  # an index of this market only

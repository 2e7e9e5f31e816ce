"""On-disk cache of generated markets: `get_market(scenario, seed)` builds once, then loads.

A market is saved as one directory: one `.npy` file per array (strings as fixed-width unicode)
and `meta.json` for the scalars. Loading memory-maps every array read-only, so a paper-scale
market opens in well under a second and is shared by the page cache across processes.

The directory name holds a hash of everything the generator reads (scenario version, market,
supplier and logistics parameters, run length and start date, seed), of the generator's source
files and of the format version. It is written into a temporary sibling directory and renamed
into place, so a reader never sees a partial market: an interrupted build leaves only a
temporary directory, which is ignored (and swept once it is old).

The cache root is `$MERCHANTBENCH_CACHE`, else the platform's user cache directory.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import tempfile
import threading
import time
import weakref
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np
import platformdirs

from merchantbench import random_streams, seeds
from merchantbench.catalog import (
    calendar,
    daily_report,
    event_log,
    events,
    market_demand,
    offers,
    parts,
    population,
    synthetic,
    trajectories,
    trust_signals,
    verified,
    vocab,
)
from merchantbench.catalog import market as market_module
from merchantbench.catalog.market import CHANNELS, Market, SupplierEvents
from merchantbench.catalog.search import SearchIndex
from merchantbench.catalog.synthetic import Progress, generate_market
from merchantbench.scenario import Scenario
from merchantbench.seeds import is_sealed_range, keyed_digest

CACHE_ENV = "MERCHANTBENCH_CACHE"
FORMAT_VERSION = 2  # bump when the directory layout changes (2: content hashes)
SEARCH_INDEX_DIR = "search"  # the market's keyword index, a sealed directory of its own
EVENT_LOG_DIR = "event_log"  # its supplier events sorted by hour (catalog.event_log)
DAILY_REPORTS_DIR = "daily_reports"  # every day's market report (catalog.daily_report)
# The generator's source is part of the key, so editing it can never serve a stale market.
_GENERATOR_MODULES = (
    synthetic, parts, population, offers, trust_signals, trajectories, market_demand, vocab,
    calendar, events, random_streams, market_module, seeds,
)  # fmt: skip
_SCALARS = ("n_products", "n_suppliers", "days", "history_days", "categories")
_EVENT_ARRAYS = ("product", "start", "end", "value", "offsets")
_STALE_TEMP_SECONDS = 6 * 3600  # a build never takes this long; older temp dirs are leftovers


def cache_root() -> Path:
    """The cache directory: $MERCHANTBENCH_CACHE if set, else the user cache dir."""
    configured = os.environ.get(CACHE_ENV)
    return Path(configured) if configured else Path(platformdirs.user_cache_dir("merchantbench"))


@functools.cache
def generator_fingerprint() -> str:
    """Hash of the source files the generated market depends on."""
    digest = hashlib.sha256()
    for module in _GENERATOR_MODULES:
        digest.update(Path(str(module.__file__)).read_bytes())
    return digest.hexdigest()[:16]


def market_cache_key(scenario: Scenario, seed: int) -> str:
    """Hash (16 hex chars) of every input of the generator for this scenario and seed.

    A sealed-range seed goes in as its keyed hash (`seeds.keyed_digest`), so that the key
    cannot be brute-forced back to the seed."""
    inputs = {
        "version": scenario.version,
        "market": scenario.market.generator_inputs,
        "suppliers": scenario.suppliers.model_dump(mode="json"),
        "logistics_hours": list(scenario.orders.logistics_hours),
        "start_date": scenario.clock.start_date,
        "seed": keyed_digest(seed, "cache-key").hex() if is_sealed_range(seed) else seed,
        "generator": generator_fingerprint(),
        "format": FORMAT_VERSION,
    }
    blob = json.dumps(inputs, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def real_catalog_key(scenario: Scenario, seed: int, catalog: Path) -> str:
    """Hash of a real catalog's files (name, size, modification time), the loader's source and
    the scenario parts the loader reads."""
    from merchantbench.catalog import loader, real_format

    files = sorted(catalog.glob("*.parquet"))
    inputs = {
        "files": [(f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in files],
        "path": str(catalog.resolve()),
        "loader": [hashlib.sha256(Path(str(m.__file__)).read_bytes()).hexdigest()
                   for m in (loader, real_format, trust_signals, offers, events, calendar,
                             random_streams)],
        "scenario": market_cache_key(scenario, seed),
    }  # fmt: skip
    blob = json.dumps(inputs, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def market_path(scenario: Scenario, seed: int, catalog: Path | None = None) -> Path:
    """Where the market of (scenario, seed) — or of a real catalog directory — is cached."""
    # A sealed seed is named by its hash alone ("market-sealed-<key>"), never by its value.
    label = "sealed" if is_sealed_range(seed) else f"seed{seed}"
    if catalog is not None:
        return cache_root() / f"catalog-{label}-{real_catalog_key(scenario, seed, catalog)}"
    return cache_root() / f"market-{label}-{market_cache_key(scenario, seed)}"


def _storable(array: np.ndarray) -> np.ndarray:
    # Object arrays of str would need pickling; fixed-width unicode memory-maps instead.
    return array.astype(str) if array.dtype == object else array


def save_market(market: Market, directory: Path) -> None:
    """Write a market into an empty or new `directory` (not atomic by itself; see get_market)."""
    directory.mkdir(parents=True, exist_ok=True)
    arrays = []
    for f in fields(market):
        value = getattr(market, f.name)
        if isinstance(value, np.ndarray):
            np.save(directory / f"{f.name}.npy", _storable(value))
            arrays.append(f.name)
    for channel in CHANNELS:
        for name in _EVENT_ARRAYS:
            array = getattr(market.events[channel], name)
            np.save(directory / f"events.{channel}.{name}.npy", array)
    meta = {name: getattr(market, name) for name in _SCALARS}
    meta.update(format=FORMAT_VERSION, arrays=arrays, categories=list(market.categories))
    (directory / "meta.json").write_text(json.dumps(meta, indent=1))
    verified.seal(directory)


def load_market(directory: Path) -> Market:
    """Open a saved market. The per-day matrices stay read-only memory maps (most rows are
    never touched); per-product vectors are read into memory, because the engine and the tools
    index them one element at a time and a memmap's item access costs microseconds.

    Raises:
        DamagedCache: a file is missing, truncated or does not match its content hash.
    """
    verified.check(directory)
    meta = json.loads((directory / "meta.json").read_text())
    if meta.get("format") != FORMAT_VERSION:
        raise ValueError(f"market cache {directory} has format {meta.get('format')}")
    arrays: dict[str, Any] = {n: _load_array(directory / f"{n}.npy") for n in meta["arrays"]}
    by_channel = {
        channel: SupplierEvents(
            **{
                name: _load_array(directory / f"events.{channel}.{name}.npy")
                for name in _EVENT_ARRAYS
            }
        )
        for channel in CHANNELS
    }
    scalars: dict[str, Any] = {name: meta[name] for name in _SCALARS}
    scalars["categories"] = tuple(scalars["categories"])
    return Market(**scalars, **arrays, events=by_channel)


def _load_array(path: Path) -> np.ndarray:
    mapped = np.load(path, mmap_mode="r")
    # A matrix stays mapped, seen as a plain array: every slice of a `np.memmap` builds another
    # memmap object (its `__array_finalize__` cost a run ~0.1 s), a plain view's slices do not.
    return np.asarray(mapped) if mapped.ndim > 1 else np.array(mapped)


def get_search_index(
    scenario: Scenario, seed: int, market: Market, catalog: Path | None = None
) -> SearchIndex:
    """The keyword index of a cached market, built once and kept beside it (and shared with
    the process's other runs on the same market object while one holds it)."""
    directory = market_path(scenario, seed, catalog) / SEARCH_INDEX_DIR
    with _OPEN_LOCK:
        known = _OPEN_INDEXES.get(directory)
    if known is not None and known.market is market and _still_sound(directory):
        return known
    index = SearchIndex.load_or_build(directory, market)
    with _OPEN_LOCK:
        _OPEN_INDEXES[directory] = index
    return index


def _sweep_stale_temps(root: Path) -> None:
    now = time.time()
    for leftover in root.glob(".tmp-market-*"):
        try:
            if now - leftover.stat().st_mtime > _STALE_TEMP_SECONDS:
                shutil.rmtree(leftover, ignore_errors=True)
        except FileNotFoundError:
            continue  # another process swept it first


def _publish(built: Path, final: Path) -> None:
    """Rename a finished build into place; if another process won the race, keep theirs."""
    if final.exists() and not (final / "meta.json").exists():
        shutil.rmtree(final, ignore_errors=True)  # not written by us: renames are atomic
    try:
        os.rename(built, final)
    except OSError:
        if not (final / "meta.json").exists():
            raise
        shutil.rmtree(built, ignore_errors=True)


# Markets and search indexes open in this process, by cache directory, while some run holds
# them: concurrent runs on one (scenario, seed), as in a sweep, then share one Market object and
# with it every per-market memo (catalog checkpoints, report totals, search memos) instead of
# loading and warming their own. A hit is re-checked against the directory's content stamp
# (`verified.check`: a few stat calls), so a damaged or rebuilt cache is never served from
# memory.
_OPEN_MARKETS: weakref.WeakValueDictionary[Path, Market] = weakref.WeakValueDictionary()
_OPEN_INDEXES: weakref.WeakValueDictionary[Path, SearchIndex] = weakref.WeakValueDictionary()
_OPEN_LOCK = threading.Lock()


def _still_sound(directory: Path) -> bool:
    try:
        verified.check(directory)
    except (verified.DamagedCache, OSError):
        return False
    return True


def get_market(
    scenario: Scenario, seed: int, progress: Progress | None = None, catalog: Path | None = None
) -> Market:
    """The market of (scenario, seed): loaded from the cache, or built and cached.

    Args:
        scenario: the scenario.
        seed: the market seed.
        progress: passed to the generator on a cache miss (progress(stage, fraction)).
        catalog: a real catalog directory (docs/catalog.md) to load instead of generating.

    Returns:
        The market, its per-day matrices memory-mapped from the cache directory.

    Raises:
        CatalogError: the real catalog is not valid; the message names table, column and row.
    """
    final = market_path(scenario, seed, catalog)
    with _OPEN_LOCK:
        known = _OPEN_MARKETS.get(final)
    if known is not None and _still_sound(final):
        return known
    for attempt in range(2):
        if not (final / "meta.json").exists():
            _build(scenario, seed, progress, catalog, final)
        try:
            market = load_market(final)
            event_log.keep_logs_in(market, final / EVENT_LOG_DIR)
            daily_report.keep_reports_in(market, final / DAILY_REPORTS_DIR)
            with _OPEN_LOCK:
                _OPEN_MARKETS[final] = market
            return market
        except (ValueError, OSError, EOFError, KeyError) as exc:  # damaged, truncated, tampered
            if attempt:
                raise
            verified.notice(f"market cache {final.name} is damaged ({exc})")
            _discard(final)
    raise AssertionError("unreachable")


def _build(
    scenario: Scenario, seed: int, progress: Progress | None, catalog: Path | None, final: Path
) -> None:
    final.parent.mkdir(parents=True, exist_ok=True)
    _sweep_stale_temps(final.parent)
    if catalog is None:
        market = generate_market(scenario, seed, progress)
    else:
        from merchantbench.catalog.loader import load_catalog

        market = load_catalog(catalog, scenario, seed)
    built = Path(tempfile.mkdtemp(prefix=f".tmp-{final.name}-", dir=final.parent))
    try:
        save_market(market, built)
        _publish(built, final)
    finally:
        if built.exists():
            shutil.rmtree(built, ignore_errors=True)


def _discard(directory: Path) -> None:
    """Move a damaged cache directory aside (atomic) and delete it."""
    aside = directory.with_name(f".tmp-damaged-{directory.name}-{os.getpid()}")
    try:
        os.rename(directory, aside)
    except OSError:
        return  # another process moved it already
    shutil.rmtree(aside, ignore_errors=True)

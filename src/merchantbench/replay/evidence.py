"""`check_run`: the one check every table makes of a run record before it counts a number of it
(record/verification.py says what a `RunCheck` holds and where checks are cached).

The replay's verdict is cached by the hash of every file of the record (outside the record);
the attestation is checked each time, against the keys the caller trusts (by default
`record.attest.trusted_keys()`: the host's own key and the keys in its `trusted/` folder).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from merchantbench.record.arena import ARENA_FILE
from merchantbench.record.attest import AttestationCheck, check_attestation, trusted_keys
from merchantbench.record.safe_read import file_sha256
from merchantbench.record.verification import (
    CANNOT,
    DIFFERS,
    VERIFIED,
    RunCheck,
    cache_check,
    cached_check,
    record_key,
)
from merchantbench.replay.source import ReplayError
from merchantbench.replay.verify import VerifyReport, verify_record


def one_line(text: object, width: int = 240) -> str:
    """A message as one line of printable text (a non-UTF-8 name shown escaped)."""
    flat = " ".join(str(text).split())
    return flat.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")[:width]


def replay_check(report: VerifyReport) -> RunCheck:
    """A verify report as a table's check (without the attestation)."""
    if report.ok:
        return RunCheck(VERIFIED, f"replayed: {report.calls} calls, {report.windows} windows, "
                        f"{report.metrics_checked} metrics", sealed=report.sealed)  # fmt: skip
    if report.first_divergence is None:
        return RunCheck(CANNOT, one_line(report.summary()))
    return RunCheck(DIFFERS, one_line(report.first_divergence.describe()))


def _replayed(run_dir: Path, key: str | None, replay: bool) -> RunCheck:
    cached = cached_check(key) if key is not None else None
    if cached is not None:
        return cached
    if not replay:
        return RunCheck(CANNOT, "not replayed (the check was skipped) and not in the cache")
    try:
        check = replay_check(verify_record(run_dir))
    except ReplayError as exc:
        check = RunCheck(CANNOT, one_line(exc))
    except (OSError, ValueError, RecursionError, MemoryError) as exc:
        check = RunCheck(CANNOT, one_line(f"{type(exc).__name__}: {exc}"))
    if key is not None:
        cache_check(key, check)
    return check


def check_market(
    arena_dir: Path, trusted: Sequence[Any] | None = None, replay: bool = True
) -> dict[str, RunCheck]:
    """Each merchant's check of a finished market, by merchant id: found in the cache when
    every merchant record's files are there, else one replay of the whole market (a merchant
    cannot be replayed alone: `replay.market.verify_market`), cached per merchant record; a
    market whose state hash differs from `arena.json`'s differs for every merchant."""
    from merchantbench.record.arena import ArenaError, read_arena

    try:
        arena = read_arena(arena_dir)
        dirs = {e.id: arena.merchant_dir(arena_dir, e.id) for e in arena.merchants}
        keys_of = market_keys(Path(arena_dir), dirs)
    except (ArenaError, OSError):
        return {}  # not a market that can be read: nothing of it is counted
    cached = {m: cached_check(k) for m, k in keys_of.items()}
    checks = {m: c for m, c in cached.items() if c is not None}
    if len(checks) < len(dirs):
        skipped = RunCheck(CANNOT, "not replayed (the check was skipped) and not in the cache")
        checks = dict.fromkeys(dirs, skipped)
        if replay:
            checks = _market_replayed(Path(arena_dir), list(dirs))
            for merchant, check in checks.items():
                cache_check(keys_of[merchant], check)
    keys = trusted_keys() if trusted is None else list(trusted)
    return {m: with_attestation(c, check_attestation(dirs[m], keys)) for m, c in checks.items()}


def market_keys(arena_dir: Path, dirs: dict[str, Path]) -> dict[str, str]:
    """Each merchant's key in the check cache: its record's files, every other merchant's and
    `arena.json` (a change to any file of the market is a new state of every merchant).

    Raises:
        OSError: a file is hostile or unreadable.
    """
    own = {m: record_key(d) for m, d in dirs.items()}
    market = hashlib.sha256(file_sha256(arena_dir, ARENA_FILE).encode())
    for merchant in sorted(own):
        market.update(f"{merchant}\0{own[merchant]}\n".encode())
    return {m: hashlib.sha256(f"{k}\n{market.hexdigest()}".encode()).hexdigest()
            for m, k in own.items()}  # fmt: skip


def keep_market(report: Any) -> None:
    """Cache what `merchantbench verify` found of a market (`replay.market.MarketReport`), by
    the keys `check_market` looks up."""
    try:
        keys = market_keys(report.arena_dir, {m: r.run_dir for m, r in report.merchants.items()})
    except OSError:
        return
    for merchant, check in market_checks(report).items():
        cache_check(keys[merchant], check)


def market_checks(report: Any) -> dict[str, RunCheck]:
    """A market's verify report as each merchant's check (without the attestation): a market
    whose state hash is not `arena.json`'s differs for every merchant."""
    if report.final_state_hash != report.recorded_state_hash:
        why = f"the market's state hash is not arena.json's ({report.recorded_state_hash})"
        return dict.fromkeys(report.merchants, RunCheck(DIFFERS, why))
    return {m: replay_check(r) for m, r in report.merchants.items()}


def _market_replayed(arena_dir: Path, merchants: list[str]) -> dict[str, RunCheck]:
    from merchantbench.replay.market import verify_market

    try:
        report = verify_market(arena_dir)
    except ReplayError as exc:
        return dict.fromkeys(merchants, RunCheck(CANNOT, one_line(exc)))
    except (OSError, ValueError, RecursionError, MemoryError) as exc:
        return dict.fromkeys(merchants, RunCheck(CANNOT, one_line(f"{type(exc).__name__}: {exc}")))
    return market_checks(report)


def with_attestation(check: RunCheck, attestation: AttestationCheck) -> RunCheck:
    return RunCheck(check.status, check.detail, check.sealed, attestation.status,
                    attestation.key_id, attestation.assurance)  # fmt: skip


def check_run(run_dir: Path, trusted: Sequence[Any] | None = None, replay: bool = True) -> RunCheck:
    """Replay `run_dir` (or find its verdict in the cache) and check its attestation.

    Args:
        run_dir: The run record.
        trusted: Public keys whose signature counts (None: `record.attest.trusted_keys()`).
        replay: Replay a record whose state is not in the cache (False: such a record is
            `cannot verify`, "not replayed").
    """
    run_dir = Path(run_dir)
    arena_dir = run_dir.parent.parent
    if run_dir.parent.name == "merchants" and (arena_dir / ARENA_FILE).is_file():
        # a merchant of a market is checked with its market (never replayed alone)
        found = check_market(arena_dir, trusted, replay).get(run_dir.name)
        return found or RunCheck(CANNOT, f"not a merchant of {arena_dir.name}'s arena.json")
    try:
        key: str | None = record_key(run_dir)
    except OSError as exc:
        return RunCheck(CANNOT, one_line(exc))
    check = _replayed(run_dir, key, replay)
    keys = trusted_keys() if trusted is None else list(trusted)
    return with_attestation(check, check_attestation(run_dir, keys))


def keep(report: VerifyReport) -> None:
    """Cache what `merchantbench verify` found of a record (its state now)."""
    try:
        cache_check(record_key(report.run_dir), replay_check(report))
    except OSError:
        return


def checker(
    trusted: Sequence[Any] | None = None, replay: bool = True
) -> Callable[[Path], RunCheck]:
    """`check_run` with its keys and replay choice fixed (what a table is given)."""
    keys = trusted_keys() if trusted is None else list(trusted)
    return lambda run_dir: check_run(run_dir, keys, replay)

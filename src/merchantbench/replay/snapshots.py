"""The state of a recorded run at any window, by replay: `snapshots` (several windows, one
pass) and `restore` (one window). Each session handed out is an independent copy, on the
record's market, that a caller may continue with any actions (a fork)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from merchantbench.replay.replayer import Replayer
from merchantbench.replay.source import RecordSource, ReplayError
from merchantbench.session import Session


def copy_session(session: Session) -> Session:
    """An independent session in the state of `session`: same scenario, market, search index
    and seed (shared, they are never changed), its own engine and memory. Its trace collects in
    its `trace` list and it has no recorder: the caller gives it a record if it wants one."""
    copy = Session(session.scenario, session.market, session.seed, session.search_index)
    copy.restore(session.snapshot())
    copy.env_origin = session.env_origin
    return copy


def snapshots(
    run_dir: Path, windows: Sequence[int], *, seed: int | None = None, fast: bool = False
) -> Iterator[tuple[int, Session]]:
    """Replay the record once and yield, in window order, `(window, session)` as each requested
    window opens (before its first call). Every call replayed on the way is checked against the
    record, as `verify_record` does; with `fast`, only the store is rebuilt: reads the record
    says succeeded are counted rather than made, the other calls' trace entries are checked,
    and the transcript is not read (`Replayer(check_reads=False)`; the same sessions, about
    three times faster on a rule-based year).

    Args:
        run_dir: The run directory; a finished record or one still under way.
        windows: Window indexes (0-based; repeats are yielded once).
        seed: A sealed run's seed (see `verify_record`).
        fast: Check the calls that change the store only (above).

    Raises:
        ReplayError: the record cannot be replayed, differs from its replay before a requested
            window, or ends before one.
    """
    for window, replayed in _replay_to(run_dir, windows, seed, fast):
        yield window, copy_session(replayed)


def snapshot_blobs(
    run_dir: Path, windows: Sequence[int], *, seed: int | None = None, fast: bool = False
) -> Iterator[tuple[int, bytes]]:
    """As `snapshots`, but each window's session as its `Session.snapshot()` (what a process
    is sent, and what a session of the record's scenario, market and seed restores): one
    pickling per window, no copy made here."""
    for window, replayed in _replay_to(run_dir, windows, seed, fast):
        yield window, replayed.snapshot()


def _replay_to(
    run_dir: Path, windows: Sequence[int], seed: int | None, fast: bool
) -> Iterator[tuple[int, Session]]:
    """The replay's own session as each requested window opens (see `snapshots`); it moves on
    as soon as the caller asks for the next."""
    wanted = sorted(set(windows))
    for window in wanted:
        if isinstance(window, bool) or not isinstance(window, int) or window < 0:
            raise ReplayError(f"window {window!r} is not a window index (0, 1, 2, …)")
    if not wanted:
        return
    source = RecordSource.open(Path(run_dir), seed)
    replayer = Replayer(source, check_reads=not fast)
    try:
        for window in replayer.windows():
            if window == wanted[0]:
                wanted.pop(0)
                yield window, replayer.session
                if not wanted:
                    return
        if replayer.divergence is not None:
            raise ReplayError(
                f"{source.run_dir}: the record does not replay at {replayer.divergence.describe()}"
            )
    finally:
        replayer.close()
    session = replayer.session
    last = session.memory.windows_closed - 1 if session.over else session.window
    raise ReplayError(
        f"{source.run_dir}: window {wanted[0]} is past the record (it opens windows 0-{last})"
    )


def restore(run_dir: Path, window: int, *, seed: int | None = None, fast: bool = False) -> Session:
    """The session of the record as `window` opened (see `snapshots`)."""
    for _, session in snapshots(run_dir, [window], seed=seed, fast=fast):
        return session
    raise ReplayError(f"{run_dir}: window {window} was not reached")  # snapshots raised already

"""`verify_record`: replay a finished run record and compare everything it states — each call's
trace entry and answer, each window's observation and close, the final state and accounts, the
tables and every metric — with what the replay produces (`VerifyReport`)."""

from __future__ import annotations

import dataclasses
import json
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from merchantbench.record.code_version import current_code
from merchantbench.record.manifest import FinalAccounts, RunManifest
from merchantbench.record.safe_read import open_record_file, read_record_bytes
from merchantbench.record.schema import (
    METRICS_FILE,
    PARQUET_SCHEMAS,
    RUN_FILE,
    TRACE_FILE,
    TRANSCRIPT_FILE,
)
from merchantbench.record.tables import final_accounts, write_tables
from merchantbench.replay.consistency import consistency_difference
from merchantbench.replay.divergence import Divergence, first_difference
from merchantbench.replay.replayer import Replayer
from merchantbench.replay.source import RecordSource, ReplayError
from merchantbench.session import Session


@dataclass
class VerifyReport:
    """What `verify_record` found.

    Attributes:
        run_dir: The record.
        ok: Everything matched.
        first_divergence: Where the replay first differs from the record (None if `ok`).
        windows: Windows the replay closed.
        calls: Trace entries replayed.
        seconds: Wall time of the verification.
        final_state_hash: The replay's final state hash (None if it stopped early).
        recorded_state_hash: The state hash `run.json` records.
        answers_checked: Whether the record has a transcript, so every answer and observation
            was compared (without one, only the trace, the final state and the metrics are,
            and the record is never `ok`: `status` is "cannot verify").
        transcript_lines: Transcript lines compared.
        metrics_checked: Metrics compared (leaves of `metrics.json`).
        tables_checked: Parquet tables compared.
        hostile_refusals: Calls refused before any tool saw them: the trace keeps only a short
            text of their input, so their answers are taken from the record, not replayed.
        sealed: The run is sealed (replayed with its revealed or given seed).
        same_code: The record was written by this code (`source_sha256`); a record of other
            code may still replay, but a divergence may then be the code's.
        run_seconds: The run's own wall time, from `run.json` (started to finished).
    """

    run_dir: Path
    ok: bool
    first_divergence: Divergence | None
    windows: int
    calls: int
    seconds: float
    final_state_hash: str | None
    recorded_state_hash: str | None = None
    answers_checked: bool = False
    transcript_lines: int = 0
    metrics_checked: int = 0
    tables_checked: list[str] = field(default_factory=list)
    hostile_refusals: int = 0
    sealed: bool = False
    same_code: bool = True
    run_seconds: float | None = None

    @property
    def status(self) -> str:
        """`verified`, `differs`, or `cannot verify` (nothing differed, but the record has no
        transcript: its answers and observations were not there to check)."""
        if self.ok:
            return "verified"
        return "differs" if self.first_divergence is not None else "cannot verify"

    def summary(self) -> str:
        """One line: verified, the first divergence, or why it cannot be fully verified."""
        if self.status == "cannot verify":
            return (
                f"{self.run_dir}: CANNOT FULLY VERIFY: no {TRANSCRIPT_FILE}, so no answer or "
                f"observation was checked (the trace, state hash, {len(self.tables_checked)} "
                f"tables and {self.metrics_checked} metrics matched)"
            )
        if self.ok:
            checked = "answers, " if self.answers_checked else "trace (no transcript), "
            return (
                f"{self.run_dir}: verified ({self.calls} calls, {self.windows} windows: "
                f"{checked}state hash, {len(self.tables_checked)} tables, "
                f"{self.metrics_checked} metrics) in {self.seconds:.1f} s"
            )
        assert self.first_divergence is not None
        return f"{self.run_dir}: DIFFERS at {self.first_divergence.describe()}"

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-able data."""
        return {
            "run_dir": str(self.run_dir),
            "ok": self.ok,
            "status": self.status,
            "first_divergence": (
                None if self.first_divergence is None else self.first_divergence.to_dict()
            ),
            "windows": self.windows,
            "calls": self.calls,
            "seconds": round(self.seconds, 3),
            "final_state_hash": self.final_state_hash,
            "recorded_state_hash": self.recorded_state_hash,
            "answers_checked": self.answers_checked,
            "transcript_lines": self.transcript_lines,
            "metrics_checked": self.metrics_checked,
            "tables_checked": self.tables_checked,
            "hostile_refusals": self.hostile_refusals,
            "sealed": self.sealed,
            "same_code": self.same_code,
            "run_seconds": self.run_seconds,
        }

    def to_json(self) -> str:
        """The report as one line of JSON text."""
        return json.dumps(self.to_dict(), ensure_ascii=False)


def verify_record(
    run_dir: Path,
    *,
    seed: int | None = None,
    on_window: Callable[[Session], None] | None = None,
    salt: str | None = None,
) -> VerifyReport:
    """Replay a finished run record and compare it with the replay.

    Args:
        run_dir: The run directory.
        seed: A sealed run's seed (revealed by `merchantbench reveal`); read from the record's
            sealed seed file when it is there and the run finished.
        salt: The salt of a sealed run's commitment, given with `seed` (both are checked
            against the commitment in `run.json`; record/sealed.py).
        on_window: Called with the replayed session after each window (progress).

    Returns:
        The report; `ok` only if every call, window, final figure, table and metric matches.

    Raises:
        ReplayError: the record cannot be replayed (unfinished, damaged or truncated files, a
            sealed run without its seed, other tools than this code's); `CannotVerify` when
            it could be replayed but not wholly checked (no transcript).
    """
    began = time.perf_counter()
    source = RecordSource.open(Path(run_dir), seed, salt)
    meta = source.manifest
    if not source.finished:
        state = meta.ended or "still running"
        raise ReplayError(f"{source.run_dir} has not finished ({state}): nothing to verify against")
    recorded_metrics = _recorded_metrics(source.run_dir)
    inconsistent = consistency_difference(source, lambda: _known_tools(source))
    if inconsistent is not None:
        return _report(source, inconsistent, began)
    replayer = Replayer(source, on_window)
    try:
        replayer.run()
    finally:
        replayer.close()
    return verdict(source, replayer, recorded_metrics, began)


def _known_tools(source: RecordSource) -> frozenset[str]:
    """The run's own tools: a model's call of one of them reaches the trace (a harness's own
    tools, e.g. Hermes' memory or code, are not held to the words rule: replay/consistency.py)."""
    from merchantbench.tools.toolset import build_registry

    return frozenset(tool.name for tool in build_registry(source.scenario).tools(True))


def _report(source: RecordSource, divergence: Divergence, began: float) -> VerifyReport:
    """The report of a record refused before its replay (its files disagree with each other)."""
    meta = source.manifest
    return VerifyReport(
        run_dir=source.run_dir,
        ok=False,
        first_divergence=divergence,
        windows=0,
        calls=0,
        seconds=time.perf_counter() - began,
        final_state_hash=None,
        recorded_state_hash=meta.state_hash,
        sealed=source.sealed,
        same_code=meta.code().source_sha256 == current_code().source_sha256,
        run_seconds=_run_seconds(meta),
    )


def verdict(
    source: RecordSource, replayer: Replayer, recorded_metrics: Any, began: float
) -> VerifyReport:
    """The report of a replay that has run: the first divergence of its calls, or else of the
    finished record (run.json's final figures, the tables, the metrics)."""
    meta = source.manifest
    session = replayer.session
    divergence = replayer.divergence
    tables: list[str] = []
    metrics_checked = 0
    if divergence is None:
        if not session.over:
            raise ReplayError(
                f"{source.run_dir / TRACE_FILE} ends in window {session.window} with call "
                f"{session.memory.seq}, before the run did: the record is truncated"
            )
        replayed = _finished_manifest(meta, session)
        divergence = _manifest_difference(meta, replayed)
        if divergence is None:
            with tempfile.TemporaryDirectory(prefix="merchantbench-verify-") as tmp:
                divergence, tables, metrics_checked = _compare_outputs(
                    source, replayer, replayed, recorded_metrics, Path(tmp)
                )
    return VerifyReport(
        run_dir=source.run_dir,
        ok=divergence is None and replayer.has_transcript,  # else: cannot fully verify
        first_divergence=divergence,
        windows=session.memory.windows_closed,
        calls=replayer.calls,
        seconds=time.perf_counter() - began,
        final_state_hash=session.state_hash() if session.over else None,
        recorded_state_hash=meta.state_hash,
        answers_checked=replayer.has_transcript,
        transcript_lines=replayer.transcript_lines,
        metrics_checked=metrics_checked,
        tables_checked=tables,
        hostile_refusals=replayer.hostile,
        sealed=source.sealed,
        same_code=meta.code().source_sha256 == current_code().source_sha256,
        run_seconds=_run_seconds(meta),
    )


def _recorded_metrics(run_dir: Path) -> Any:
    path = run_dir / METRICS_FILE
    try:
        return json.loads(read_record_bytes(run_dir, METRICS_FILE).decode("utf-8"))
    except FileNotFoundError:
        raise ReplayError(f"{run_dir} has no {METRICS_FILE}: nothing to verify against") from None
    except (OSError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
        reason = " ".join(str(exc).split())[:120]
        raise ReplayError(f"{path} is not readable JSON ({reason})") from None


def _finished_manifest(meta: RunManifest, session: Session) -> RunManifest:
    """`run.json` as the replay would finish it (the run's own stop reason kept)."""
    engine = session.engine
    replayed = meta.model_copy(deep=True)
    replayed.finish(
        ended="closed" if engine.state.closed else "completed",
        windows=session.memory.windows_closed,
        closed=engine.state.closed,
        final_accounts=FinalAccounts(**final_accounts(engine)),
        state_hash=session.state_hash(),
    )
    replayed.finished = meta.finished
    return replayed


def _manifest_difference(meta: RunManifest, replayed: RunManifest) -> Divergence | None:
    recorded, produced = meta.model_dump(mode="json"), replayed.model_dump(mode="json")
    for key in ("state_hash", "ended", "windows", "closed", "final_accounts"):
        found = first_difference(recorded[key], produced[key], key)
        if found is not None:
            path, expected, actual = found
            return Divergence(RUN_FILE, path, expected, actual)
    return None


def _compare_outputs(
    source: RecordSource,
    replayer: Replayer,
    replayed: RunManifest,
    recorded_metrics: Any,
    tmp: Path,
) -> tuple[Divergence | None, list[str], int]:
    """Write the replay's tables, trace and manifest into `tmp`, compare the tables with the
    record's, and recompute the metrics from the replayed record and compare them."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    # Imported here: the metrics (numpy tables) are needed once, at the end.
    from merchantbench.metrics import load_run_record, metrics_of

    write_tables(replayer.session.engine, tmp)
    checked: list[str] = []
    for name in PARQUET_SCHEMAS:
        try:
            with open_record_file(source.run_dir, name) as handle:
                recorded = pq.read_table(handle)
        except (OSError, pa.ArrowException) as exc:
            reason = " ".join(str(exc).split())[:120]
            raise ReplayError(
                f"{source.run_dir / name} is not a readable table ({reason})"
            ) from None
        produced = pq.read_table(tmp / name)
        checked.append(name)
        if not recorded.equals(produced):
            return _table_difference(name, recorded, produced), checked, 0
    (tmp / TRACE_FILE).write_text("".join(line + "\n" for line in replayer.trace_lines))
    replayed.write(tmp)
    metrics = metrics_of(dataclasses.replace(load_run_record(tmp), run=replayed))
    produced_metrics = json.loads(json.dumps(metrics, ensure_ascii=False))
    same_code = source.manifest.code().source_sha256 == current_code().source_sha256
    if not same_code and isinstance(recorded_metrics, dict):
        # A record of other code is held to what it states: a metric added since (one this
        # code computes and the record never had) is not a divergence; every stated one is.
        produced_metrics = {
            key: value for key, value in produced_metrics.items() if key in recorded_metrics
        }
    found = first_difference(recorded_metrics, produced_metrics)
    if found is not None:
        path, expected, actual = found
        return Divergence(METRICS_FILE, path, expected, actual), checked, _leaves(produced_metrics)
    return None, checked, _leaves(produced_metrics)


def _table_difference(name: str, recorded: Any, produced: Any) -> Divergence:
    """The first column and row where two tables differ."""
    left, right = recorded.to_pydict(), produced.to_pydict()
    found = first_difference(left, right)
    if found is None:  # same values, other schema (types, metadata)
        return Divergence(name, "(schema)", str(recorded.schema), str(produced.schema))
    path, expected, actual = found
    return Divergence(name, path, expected, actual)


def _leaves(value: Any) -> int:
    if isinstance(value, dict):
        return sum(_leaves(v) for v in value.values())
    if isinstance(value, list):
        return sum(_leaves(v) for v in value) or 1
    return 1


def _run_seconds(meta: RunManifest) -> float | None:
    if meta.finished is None:
        return None
    try:
        began = datetime.fromisoformat(meta.started)
        ended = datetime.fromisoformat(meta.finished)
    except ValueError:
        return None
    return (ended - began).total_seconds()

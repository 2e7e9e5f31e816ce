"""The one writer of a merchant's run record, `MerchantRecord`, whatever hosted the run.

A merchant's record is the run directory of `merchantbench run` (a store alone), or
`ARENA/merchants/<id>/` of a market: the same files either way (docs/run-record.md) — the
trace, the transcript, the model-call log with the model's words split out into
`model_words.jsonl.gz`, the tables, `metrics.json` and the finished `run.json`. The one
lifecycle (`runs/lifecycle.py`) keeps one per merchant, for a store alone and a market alike:

    record = MerchantRecord(run_dir, kill)
    record.open(session, noted)      # trace and transcript open for appending
    record.write(entry)              # the session's trace sink: every recorded call, one place
    record.sync(player)              # before a checkpoint: files synced, model calls appended
    record.cut(seq, model_calls)     # resume / rewind: back to what a checkpoint covers
    record.finish(session, player)   # tables, metrics.json, then the finished run.json
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import merchantbench
from merchantbench.agents.base import Player
from merchantbench.record.attest import ATTESTATION_FILE, attest_finished
from merchantbench.record.checkpoint import cut_trace
from merchantbench.record.files import remove_cut_writes, write_cut
from merchantbench.record.manifest import FinalAccounts, RunManifest, read_manifest
from merchantbench.record.schema import (
    MODEL_CALLS_FILE,
    MODEL_WORDS_FILE,
    TRACE_FILE,
    TRANSCRIPT_FILE,
)
from merchantbench.record.tables import final_accounts, write_tables
from merchantbench.record.words import WORDS_KEY, append_words, cut_words
from merchantbench.runs.journal import Journal, LoggedCalls
from merchantbench.runs.kill_points import KillPoints
from merchantbench.runs.spec import RunError
from merchantbench.runs.transcript import TranscriptFile, cut_transcript, json_line
from merchantbench.tools.agent_input import scrub

if TYPE_CHECKING:
    from merchantbench.metrics import RunRecord
    from merchantbench.session import Session
    from merchantbench.sim.engine import Engine

__all__ = ["MerchantRecord", "TraceWriter", "finish_store_record", "git_commit"]


def git_commit() -> str | None:
    """The commit of the checkout the package runs from, or None (no git, not a checkout)."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(merchantbench.__file__).parent,
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


class TraceWriter:
    """An open trace, a session's trace sink: strict JSON lines, appended, buffered until
    `sync` (flush and fsync, before a checkpoint that covers them)."""

    def __init__(self, path: Path, kill: KillPoints) -> None:
        self._file: TextIO | None = open(path, "a")  # noqa: SIM115 (closed in close)
        self._kill = kill

    def write(self, entry: dict[str, Any]) -> None:
        if self._file is None:
            raise RunError("the run record is closed; no more trace entries")
        # Strict JSON: the surface checked every agent string and number (no NaN, no surrogate).
        self._file.write(json_line(entry))
        self._kill.passed("trace")

    def flush(self) -> None:
        """Hand what was written to the OS (no fsync): a killed process loses none of it."""
        if self._file is not None:
            self._file.flush()

    def sync(self) -> None:
        if self._file is not None:
            self._file.flush()
            os.fsync(self._file.fileno())

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def finish_store_record(
    engine: Engine,
    windows: int,
    state_hash: str,
    meta: RunManifest,
    run_dir: Path,
    tables_written: Callable[[], None] = lambda: None,
) -> tuple[RunRecord, dict[str, Any]]:
    """Write a drained store's tables (then call `tables_written`: a kill point), mark `meta`
    finished, compute the metrics from the record and write `metrics.json`. The caller writes
    `run.json` after it, so that a kill before leaves a record `--resume` completes."""
    # Imported here: the metrics (pyarrow, numpy tables) are needed once, at the end.
    from merchantbench.metrics import load_run_record, metrics_of, write_metrics

    write_tables(engine, run_dir)
    tables_written()
    meta.finish(
        ended="closed" if engine.state.closed else "completed",
        windows=windows,
        closed=engine.state.closed,
        final_accounts=FinalAccounts(**final_accounts(engine)),
        state_hash=state_hash,
    )
    # The metrics read the finished manifest from memory: on disk it is not finished yet.
    record = dataclasses.replace(load_run_record(run_dir), run=meta)
    metrics = metrics_of(record)
    write_metrics(metrics, run_dir)
    return record, metrics


class MerchantRecord:
    """One merchant's run record from open to finish (see the module docstring).

    Attributes:
        run_dir: The merchant's run directory.
        manifest: `run.json` as the record keeps it (set by its lifecycle).
        transcribe: The record has (or starts) a transcript.
        keep_words: The model's words go to `model_words.jsonl.gz` (off for a record made
            before they were kept, so that it goes on as it began).
        journal: The record's own journal of acknowledged calls (runs/journal.py; a run
            played from outside), removed once `run.json` says finished, before signing.
        replaying: While a resume makes acknowledged calls again: their logged lines, each
            new entry is checked against (the trace already holds them).
        in_market: A merchant of a market: another merchant's call may open its windows, so
            `cut` drops the observation after its last kept answer (`cut_transcript`,
            `trailing=False`) and the resume writes the open window's observation again.
    """

    def __init__(
        self, run_dir: Path, kill: KillPoints, transcribe: bool = True, *, in_market: bool = False
    ) -> None:
        self.run_dir = run_dir
        self.transcribe = transcribe
        self.in_market = in_market
        self.keep_words = True
        self._kill = kill
        self._trace: TraceWriter | None = None
        self._transcript: TranscriptFile | None = None
        self.journal: Journal | None = None
        self.replaying: LoggedCalls | None = None
        self.manifest: RunManifest

    @property
    def is_open(self) -> bool:
        return self._trace is not None

    def write(self, entry: dict[str, Any]) -> None:
        """The session's trace sink: every recorded call of this merchant passes here."""
        if self.replaying is not None:
            self.replaying.check(entry)  # a logged call made again: its line is there
            return
        if self._trace is None:
            # The record is finished, suspended or closed: no entry may reach a closed trace.
            raise RunError(f"{self.run_dir}: the run record is closed; no more trace entries")
        self._trace.write(entry)

    def open(self, session: Session, noted: int | None, replay: bool = False) -> None:
        """Open the trace and the transcript for appending; the transcript notes the open
        window's observation unless it holds it already (`noted`), or a replay of logged
        calls is to come (`replay`: it notes it then)."""
        self._trace = TraceWriter(self.run_dir / TRACE_FILE, self._kill)
        if self.transcribe:
            self._transcript = TranscriptFile(self.run_dir / TRANSCRIPT_FILE)
            session.recorder = self._transcript
            if noted != session.window and not replay:
                self._transcript.window_opened(session)

    def cut(self, seq: int, model_calls: int | None, transcribed: int | None = None) -> int | None:
        """Cut the trace, the model-call log and the words (unless `model_calls` is None) and
        the transcript back to `seq` trace entries (the transcript to `transcribed` answers,
        default `seq`: it may lag the trace after a kill between the two files' writes) and
        `model_calls` model calls; every file is checked before any is changed. Returns the
        last window whose observation the transcript keeps; a record without a transcript
        that is already under way goes on without one.

        Raises:
            CheckpointError: a record is damaged within what the checkpoint covers.
        """
        path = self.run_dir / TRANSCRIPT_FILE
        keep = seq if transcribed is None else transcribed
        trailing = not self.in_market
        kept, noted = (
            cut_transcript(path, keep, trailing=trailing) if path.is_file() else (None, None)
        )
        cuts = [(self.run_dir / TRACE_FILE, cut_trace(self.run_dir / TRACE_FILE, seq))]
        if model_calls is not None:  # LLM agents log their model calls; keep the checkpointed
            calls = self.run_dir / MODEL_CALLS_FILE
            cuts.append((calls, cut_trace(calls, model_calls)))
            words = self.run_dir / MODEL_WORDS_FILE
            if model_calls and not words.exists():
                self.keep_words = False  # recorded before the words were kept: go on without
            else:
                cuts.append((words, cut_words(words, model_calls)))
        for record, data in [*cuts, (path, kept)]:
            if data is not None:
                write_cut(record, data)
        if kept is not None:
            self.transcribe = True
        elif seq:
            self.transcribe = False
        return noted

    def flush(self) -> None:
        """Hand the files written so far to the operating system (no disk sync)."""
        if self._trace is not None:
            self._trace.flush()
        if self._transcript is not None:
            self._transcript.flush()

    def acknowledge(self) -> None:
        """A host answers a call from outside: the trace synced, the transcript handed to the
        OS (what a power loss takes of it, a resume's replay writes again; runs/journal.py)."""
        if self._transcript is not None:
            self._transcript.flush()
        if self._trace is not None:
            self._trace.sync()

    def sync(self, player: Player[Any]) -> None:
        """Before a checkpoint: the trace and the transcript on disk, and the model calls the
        player made since the last sync appended (synced; their words split out), so that a
        checkpointed player never holds unwritten calls."""
        if self._trace is not None:
            self._trace.sync()
        if self._transcript is not None:
            self._transcript.sync()
        drained = player.drain_model_calls()
        if not drained:
            return
        records = [{k: v for k, v in r.items() if k != WORDS_KEY} for r in drained]
        with open(self.run_dir / MODEL_CALLS_FILE, "a") as log:
            log.writelines(
                json.dumps(scrub(r), separators=(",", ":"), allow_nan=False) + "\n" for r in records
            )
            log.flush()
            os.fsync(log.fileno())
        if self.keep_words:
            append_words(self.run_dir, [_words_line(r) for r in drained])

    def close(self, session: Session) -> None:
        """Close the trace and the transcript (idempotent); later entries are refused."""
        if self._trace is not None:
            self._trace.close()
            self._trace = None
        if self._transcript is not None:
            self._transcript.close()
            self._transcript = None
        session.recorder = None

    def record_outcome(self, player: Player[Any]) -> None:
        """What the agent or driver reports: usage totals and why it stopped early, if it did."""
        outcome = player.outcome()
        self.manifest.record_agent(outcome.usage, outcome.stop_reason)

    def finish(self, session: Session, player: Player[Any]) -> tuple[RunRecord, dict[str, Any]]:
        """The merchant's drained store: records closed, the tables, `metrics.json`, and only
        then `run.json` saying the run ended (a kill at any step before leaves a record its
        lifecycle's resume completes: runs/kill_points.py names the steps)."""
        self.sync(player)
        self.close(session)
        self.record_outcome(player)
        self._kill.passed("finish")
        record, metrics = finish_store_record(
            session.engine,
            session.memory.windows_closed,
            session.state_hash(),
            self.manifest,
            self.run_dir,
            lambda: self._kill.passed("tables"),
        )
        self._kill.passed("metrics")
        self.manifest.write(self.run_dir)
        self._kill.passed("finished")
        if self.journal is not None:
            self.journal.remove()  # finished: nothing is left to replay
        attest_finished(self.run_dir, self.manifest)  # the one signing hook (record/attest.py)
        return record, metrics


def complete_finished(run_dir: Path) -> None:
    """The steps after `run.json` says finished, for a record a kill cut between them (kill
    point `finished`): its journal removed, the record signed if it is not. A resume of a
    finished record calls it before refusing, so the record ends as if never killed."""
    from merchantbench.runs.journal import Journal

    Journal(run_dir).remove()
    if not (run_dir / ATTESTATION_FILE).is_file():
        remove_cut_writes(run_dir)  # never signed among the record's files
        attest_finished(run_dir, read_manifest(run_dir))


def _words_line(record: dict[str, Any]) -> dict[str, Any]:
    """The words file's line for a drained model-call record (record/words.py): its seq and
    window, then the model's words, or the call's error (a call that failed said nothing)."""
    words = record.get(WORDS_KEY)
    line: dict[str, Any] = {"seq": record.get("seq"), "window": record.get("window")}
    if isinstance(words, dict):
        line.update(scrub(words))
    else:
        line.update(content=None, reasoning=None, tool_calls=[], error=record.get("error"))
    return line

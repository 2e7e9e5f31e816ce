"""The life of one run record, from open to finish: `RunLifecycle`.

Every host of a run uses it and keeps only its transport: the CLI runner and the sweep worker
(`runs/runner.py`, an in-process agent), the HTTP server (`serve/host.py`), the MCP run
(`serve/mcp_run.py`), the playground (`web/store.py`) and the Inspect solver
(`inspect_eval/solver.py`), the last four with the `Driver` of a run played from outside
(`runs/driver.py`). The lifecycle owns the run directory, the session, the agent or driver,
the manifest (`run.json`) and the record files (trace, transcript, model-call log):

    life = RunLifecycle.open(spec, run_dir)                     # a new run of spec's agent
    life = RunLifecycle.open(spec, run_dir, resume=True)        # ... or its resumption
    life = RunLifecycle.open(spec, run_dir, driver=McpDriver()) # a run played from outside

    life.surface          # what the agent (or the front end, for its client) calls
    life.after_window()   # a window closed: finish the record if the run is over, else
                          # checkpoint when the policy says so; returns the metrics or None
    life.checkpoint()     # checkpoint now (a pause)
    life.flush()          # hand the records written so far to the OS (no sync, no checkpoint)
    life.suspend()        # the driver went away: checkpoint, mark interrupted, close
    life.fail(exc)        # the run broke off: record why (resumable), close
    life.finish()         # the run is over: tables, metrics.json, run.json; the metrics

Checkpoints (`CheckpointPolicy`) are taken by elapsed wall time, not by window count: an LLM
window takes seconds, so such a run checkpoints about every window, and a baseline year (730
windows in about a second) a few times. `suspend` always checkpoints; `finish` checkpoints the
drained state before writing the tables, so a kill while finishing resumes at once. The record's
bytes never depend on when checkpoints were taken: a resume cuts every record file back to what
its checkpoint covers and replays the rest identically. Before a checkpoint, the files it covers
are flushed and synced to disk.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from merchantbench.agents.base import BaseAgent, Player
from merchantbench.agents.registry import agent_entry, make_agent
from merchantbench.record.attest import attest_finished
from merchantbench.record.checkpoint import (
    CheckpointError,
    cut_trace,
    load_checkpoint,
    read_checkpoint_pins,
    save_checkpoint,
)
from merchantbench.record.files import atomic_write_bytes, write_cut
from merchantbench.record.manifest import (
    AgentRef,
    ForkRef,
    ManifestError,
    MarketRef,
    RunManifest,
    read_manifest,
)
from merchantbench.record.pins import (
    PinMismatch,
    RunPins,
    check_resume,
    pins_of_checkpoint,
    pins_of_record,
    pins_of_run,
    request_difference,
)
from merchantbench.record.schema import (
    METRICS_FILE,
    MODEL_CALLS_FILE,
    MODEL_WORDS_FILE,
    RUN_FILE,
    TRACE_FILE,
    TRANSCRIPT_FILE,
)
from merchantbench.record.words import WORDS_KEY, append_words, cut_words
from merchantbench.runs.driver import PLAYED_BY, Driver, encode_state
from merchantbench.runs.journal import Journal, LoggedCalls
from merchantbench.runs.kill_points import KillPoints
from merchantbench.runs.record_writer import TraceWriter, finish_store_record, git_commit
from merchantbench.runs.spec import RunError, RunSpec
from merchantbench.runs.transcript import TranscriptFile, answers_held, cut_transcript
from merchantbench.session import Session
from merchantbench.surface import AgentSurface
from merchantbench.tools.answer_log import AnswerLog

if TYPE_CHECKING:
    from merchantbench.metrics.record import RunRecord
from merchantbench.tools.agent_input import scrub

__all__ = ["CheckpointPolicy", "ForkStart", "RunLifecycle"]


@dataclass(frozen=True)
class CheckpointPolicy:
    """When a run checkpoints between windows (it always does at `suspend` and `finish`).

    Attributes:
        seconds: Wall time since the last checkpoint after which the next closed window is
            checkpointed (0: every window).
        windows: Instead of wall time, every window whose index is a multiple of this (for
            tests that need checkpoints at known windows).
    """

    seconds: float = 2.0
    windows: int | None = None

    def due(self, window: int, elapsed: float) -> bool:
        if self.windows is not None:
            return window % self.windows == 0
        return elapsed >= self.seconds


@dataclass(frozen=True)
class ForkStart:
    """Where a new run starts when it is a fork (runs/fork.py): the session at the opening of
    the fork window, the parent record whose trace and transcript up to there begin the new
    record, what `run.json` says of the parent, and the continuing agent when it was rebuilt
    (None: the spec's agent is built fresh and handed the store with `take_over`)."""

    session: bytes  # a `Session.snapshot()` at the opening of `ref.window`
    parent_dir: Path
    ref: ForkRef
    agent: BaseAgent | None = None


class RunLifecycle:
    """One run record from open to finish (see the module docstring). Build it with `open`.

    Attributes:
        spec: What runs.
        run_dir: The run directory.
        session: The host-side session (the engine's only door).
        agent: The in-process agent, or None for a run played by a `driver`.
        driver: The front end's driver of a run played from outside, or None.
        manifest: `run.json` as the lifecycle keeps it.
        metrics: The metrics once the record is finished, else None.
    """

    def __init__(
        self,
        spec: RunSpec,
        run_dir: Path,
        checkpoints: CheckpointPolicy,
        allow_code_change: bool,
        transcript: bool,
    ) -> None:
        self.spec = spec
        self.run_dir = run_dir
        self.checkpoints = checkpoints
        self.allow_code_change = allow_code_change
        self.transcribe = transcript
        self.keep_words = True  # the model's words (record/words.py); off for older records
        self.agent: BaseAgent | None = None
        self.driver: Driver[Any] | None = None
        self.metrics: dict[str, Any] | None = None
        self.record: RunRecord | None = None  # the finished record as read back, for a report
        self._kill = KillPoints.from_env()  # test-only (runs/kill_points.py)
        self._trace: TraceWriter | None = None
        self._transcript: TranscriptFile | None = None
        self._last_checkpoint = time.monotonic()
        self._created = False  # this lifecycle made the run directory
        # A run played from outside acknowledges each call durably (runs/journal.py).
        self._journal: Journal | None = None
        self._answers: AnswerLog | None = None
        self._logged: tuple[LoggedCalls, int] | None = None  # replayed once the files are open
        self._replaying: LoggedCalls | None = None
        self.session: Session  # set by open
        self.manifest: RunManifest  # set by open
        self.pins: RunPins  # set by open; saved with every checkpoint

    # --- open -----------------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        spec: RunSpec,
        run_dir: Path,
        *,
        resume: bool = False,
        driver: Driver[Any] | None = None,
        checkpoints: CheckpointPolicy | None = None,
        allow_code_change: bool = False,
        transcript: bool = True,
        fork: ForkStart | None = None,
    ) -> RunLifecycle:
        """Open a new run, or resume the one recorded in `run_dir` from its last checkpoint.

        Args:
            spec: What to run; `spec.agent` names the agent (built here, or restored from the
                checkpoint), or the driver's name when `driver` is given.
            run_dir: The run directory: absent or empty for a new run.
            resume: Continue the recorded run.
            driver: The driver of a run played from outside (no agent is built).
            checkpoints: When to checkpoint between windows (default: `CheckpointPolicy()`).
            allow_code_change: Let a resume continue with code other than the code that wrote
                the run (recorded in `run.json` as `code_changes`); refused otherwise.
            transcript: Write `transcript.jsonl` for a new run. On resume the record decides:
                a transcript it has is continued, one it lacks is not started part-way.
            fork: A new run that is a fork: it starts from `fork.session` with the parent's
                record up to there (and its transcript, if the parent has one), checkpoints at
                once, and a fresh agent is handed the store (`BaseAgent.take_over`). A resumed
                fork hands it over again (a no-op once the agent has taken it).

        Raises:
            RunError: the run cannot start or resume; the message says why in one line.
        """
        life = cls(spec, run_dir, checkpoints or CheckpointPolicy(), allow_code_change, transcript)
        if fork is not None and (resume or driver is not None):
            raise RunError("a fork starts as a new run of an in-process agent")
        life._open(resume, driver, fork)
        if fork is not None:
            life.checkpoint()  # a killed fork resumes at its fork window, never at window 0
        if life.manifest.fork is not None and life.manifest.fork.fresh_agent and life.agent:
            life.agent.take_over(life.surface)
        return life

    def _open(self, resume: bool, driver: Driver[Any] | None, fork: ForkStart | None) -> None:
        spec, run_dir = self.spec, self.run_dir
        if run_dir.exists() and not run_dir.is_dir():
            raise RunError(f"{run_dir} is a file, not a run directory; choose another --out")
        if resume:
            meta = self._recorded_run()
        elif run_dir.exists() and any(run_dir.iterdir()):
            raise RunError(f"{run_dir} exists; use --resume to continue it or choose another --out")
        if driver is not None and driver.name != spec.agent:
            raise RunError(f"the run names {spec.agent!r} but is driven by {driver.name!r}")
        if driver is None and spec.agent in PLAYED_BY:
            how = PLAYED_BY[spec.agent]  # type: ignore[index]
            raise RunError(f"agent {spec.agent!r} plays through {how}, not `run`")
        session = Session.open(spec.scenario, spec.seed, spec.catalog, trace_sink=self._write)
        player: Player[Any]
        hidden = None
        if driver is not None:
            player = self.driver = driver
            configured = driver.settings()
        else:
            # A privileged agent (the oracle) is handed the hidden market here, in the open.
            hidden = session.market if agent_entry(spec.agent).privileged else None
            rebuilt = None if fork is None else fork.agent
            player = self.agent = rebuilt or make_agent(
                spec.agent, spec.agent_settings, hidden_market=hidden
            )
            configured = {
                k: v for k, v in player.settings().items() if k not in player.runtime_settings
            }
        self.pins = pins_of_run(
            spec.scenario, spec.seed, spec.agent, configured, spec.catalog,
            session.registry.schema_sha256(), spec.commitment,
        )  # fmt: skip
        self.session = session
        if driver is not None and driver.acknowledges:
            self._journal, self._answers = Journal(run_dir), session.answered
        noted: int | None = None  # the last window whose observation the transcript holds
        if resume:
            noted = self._restore(meta, hidden)
        else:
            meta = self._start_manifest(player, None if fork is None else fork.ref)
            run_dir.mkdir(parents=True, exist_ok=True)  # only now: nothing before inputs passed
            self._created = True
            if spec.sealed is not None:  # the secret first: a record never lacks its seed
                spec.sealed.write(run_dir)
            meta.write(run_dir)
            if fork is not None:
                noted = self._start_fork(fork)
        self.manifest = meta
        self._open_records(noted)

    def _recorded_run(self) -> RunManifest:
        """`run.json` of the run to resume, refused if it is finished or asks for another
        scenario, seed, agent or catalog (before any market is built for it)."""
        run_dir = self.run_dir
        if not (run_dir / RUN_FILE).is_file():
            raise RunError(f"{run_dir} is not a run directory: nothing to resume")
        try:
            meta = read_manifest(run_dir)
        except ManifestError as exc:
            raise RunError(str(exc)) from exc
        # A record whose metrics are missing was killed while finishing (by a version that
        # marked it completed first): it resumes from its last checkpoint like any other.
        if not meta.resumable and (run_dir / METRICS_FILE).is_file():
            raise RunError(f"{run_dir} already finished ({meta.ended}); nothing to resume")
        spec = self.spec
        reason = request_difference(
            spec.scenario, spec.seed, spec.agent, spec.catalog, meta, spec.commitment
        )
        if reason is not None:
            raise RunError(f"cannot resume: {reason}")
        return meta

    def _start_fork(self, fork: ForkStart) -> int | None:
        """Restore the fork's session and begin its record with the parent's up to there.
        Returns the last window whose observation the transcript holds."""
        self.session.restore(fork.session)
        seq = self.session.memory.seq
        parent_transcript = fork.parent_dir / TRANSCRIPT_FILE
        try:
            trace = cut_trace(fork.parent_dir / TRACE_FILE, seq)
            kept, noted = (
                cut_transcript(parent_transcript, seq)
                if parent_transcript.is_file() and self.transcribe
                else (None, None)
            )
        except CheckpointError as exc:
            raise RunError(f"cannot fork {fork.parent_dir}: {exc}") from None
        atomic_write_bytes(self.run_dir / TRACE_FILE, trace or b"")
        if kept is not None:
            atomic_write_bytes(self.run_dir / TRANSCRIPT_FILE, kept)
        elif seq:
            self.transcribe = False  # a transcript is never started part-way
        return noted

    def _start_manifest(self, player: Player[Any], fork: ForkRef | None = None) -> RunManifest:
        spec, session = self.spec, self.session
        market = MarketRef(
            source="synthetic" if spec.catalog is None else "catalog",
            catalog=None if spec.catalog is None else str(spec.catalog),
            n_products=session.market.n_products,
        )
        privileged = isinstance(player, BaseAgent) and player.privileged
        return RunManifest.start(
            spec.scenario,
            None if spec.sealed is not None else spec.seed,
            market,
            AgentRef(name=spec.agent, settings=player.settings(), privileged=privileged),
            session.registry.schema_sha256(),
            git_commit(),
            seed_commitment=None if spec.sealed is None else spec.sealed.commitment,
            driver=None if self.driver is None else self.driver.name,
            fork=fork,
        )

    def _restore(self, meta: RunManifest, hidden: Any) -> int | None:
        """Continue the recorded run: check every pin (record/pins.py) against `run.json` and the
        checkpoint, restore the checkpoint, and cut the records back to what it covers. Returns
        the last window the transcript has the observation of."""
        runtime = frozenset() if self.agent is None else self.agent.runtime_settings
        try:
            found, saved = read_checkpoint_pins(self.run_dir)
            continued = check_resume(
                self.pins,
                pins_of_record(meta, runtime),
                pins_of_checkpoint(saved) if found else None,
                self.allow_code_change,
            )
            checkpoint = load_checkpoint(self.run_dir)
        except (CheckpointError, PinMismatch) as exc:
            raise RunError(f"cannot resume: {exc}") from None
        if checkpoint is not None:
            self.session.restore(checkpoint["session"])
            if self.driver is None:
                restored: BaseAgent = checkpoint["agent"]
                self.agent = restored
                if hidden is not None:
                    restored.attach_hidden_market(hidden)  # type: ignore[attr-defined]
            elif checkpoint.get("driver") is not None:
                self.driver.restore(json.loads(checkpoint["driver"]))
        seq, transcribed = self.session.memory.seq, None
        try:
            if self._journal is not None:
                seq, transcribed = self._acknowledged(seq)
            noted = self._cut_records(seq, self._player.model_calls_seq, transcribed)
        except CheckpointError as exc:
            raise RunError(f"cannot resume: {exc}") from None
        if continued is not None:
            meta.record_code_change(continued, self.pins.code, self.session.memory.windows_closed)
            meta.write(self.run_dir)
        return noted

    def _acknowledged(self, seq: int) -> tuple[int, int]:
        """A run played from outside resumes at its last acknowledged call, not at its
        checkpoint (trace entry `seq`): the driver takes back its journaled state, and the
        calls between are replayed once the files are open (`_open_records`). Returns the
        trace entries to keep and the transcript answers to keep (it may lag: a kill between
        the two files' writes; the replay writes the rest)."""
        assert self._journal is not None and self._answers is not None and self.driver
        acknowledged, driver, saved = self._journal.load()
        if driver is not None:
            self.driver.restore(driver)
        if saved is not None:
            self._answers.take(AnswerLog.from_json(saved))
        if not isinstance(acknowledged, int):
            raise CheckpointError(f"{self._journal.path.name} is not a single run's journal")
        if acknowledged <= seq:
            return seq, seq
        logged = LoggedCalls.between(self.run_dir / TRACE_FILE, seq, acknowledged)
        transcript = self.run_dir / TRANSCRIPT_FILE
        transcribed = min(acknowledged, answers_held(transcript)) if transcript.is_file() else seq
        self._logged = (logged, max(seq, transcribed))
        return acknowledged, max(seq, transcribed)

    def _cut_records(
        self, seq: int, model_calls: int | None, transcribed: int | None = None
    ) -> int | None:
        """Cut the trace, the model-call log (unless `model_calls` is None) and the transcript
        back to `seq` trace entries (the transcript to `transcribed` answers, default `seq`)
        and `model_calls` model calls; every file is checked before any is changed. Returns
        the last window whose observation the transcript keeps; a record without a transcript
        that is already under way goes on without one.

        Raises:
            CheckpointError: a record is damaged within what the session covers.
        """
        path = self.run_dir / TRANSCRIPT_FILE
        transcribed = seq if transcribed is None else transcribed
        kept, noted = cut_transcript(path, transcribed) if path.is_file() else (None, None)
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

    def _open_records(self, noted: int | None) -> None:
        """Open the trace and the transcript for appending; the transcript notes the open
        window's observation unless it holds it already."""
        self._trace = TraceWriter(self.run_dir / TRACE_FILE, self._kill)
        if self.transcribe:
            self._transcript = TranscriptFile(self.run_dir / TRANSCRIPT_FILE)
            self.session.recorder = self._transcript
            if noted != self.session.window and self._logged is None:
                self._transcript.window_opened(self.session)
        if self._logged is not None:
            self._replay_logged(noted)

    def _replay_logged(self, noted: int | None) -> None:
        """Make the acknowledged calls after the checkpoint again (runs/journal.py), each
        checked against its trace line, which stays as it is."""
        assert self._logged is not None and self._answers is not None
        (logged, transcribed), self._logged = self._logged, None
        self._answers.replaying = True
        self._replaying = logged
        origin = self.session.env_origin
        try:
            logged.replay(self.session, transcribed, noted)
        finally:
            self._replaying = None
            self._answers.replaying = False
            self.session.env_origin = origin

    def _write(self, entry: dict[str, Any]) -> None:
        if self._replaying is not None:
            self._replaying.check(entry)  # a logged call made again: its line is there
            return
        if self._trace is None:
            # The record is finished, suspended or closed: no entry may reach a closed trace.
            raise RunError(f"{self.run_dir}: the run record is closed; no more trace entries")
        self._trace.write(entry)

    # --- what hosts read ------------------------------------------------------------------------
    @property
    def surface(self) -> AgentSurface:
        """The session's agent surface: all an agent (or a front end's client) may use."""
        return self.session.surface

    @property
    def over(self) -> bool:
        """The run's last window has closed (the record may not be finished yet)."""
        return self.session.over

    @property
    def finished(self) -> bool:
        """The record is finished (`metrics` set)."""
        return self.metrics is not None

    @property
    def _player(self) -> Player[Any]:
        player = self.agent if self.driver is None else self.driver
        assert player is not None
        return player

    # --- the run goes on ------------------------------------------------------------------------
    def after_window(self) -> dict[str, Any] | None:
        """A window closed: finish the record if the run is over (returns the metrics), else
        checkpoint if the policy says so (returns None)."""
        if self.session.over:
            return self.finish()
        elapsed = time.monotonic() - self._last_checkpoint
        if self.checkpoints.due(self.session.window, elapsed):
            self.checkpoint()
        return None

    def flush(self) -> None:
        """Hand the record files written so far to the operating system (no disk sync, no
        checkpoint): a reader of the run directory sees every entry up to now."""
        if self._trace is not None:
            self._trace.flush()
        if self._transcript is not None:
            self._transcript.flush()

    def acknowledge(self) -> None:
        """A host is about to answer a request from outside its process: make the calls
        recorded so far durable first (the trace, then the journal's line with the driver's
        state; runs/journal.py). The transcript is handed to the OS, not synced: what a power
        loss takes of it, the resume's replay writes again. A run whose driver answers no one
        outside (an in-process agent) syncs at its checkpoints only: this is a no-op."""
        if self._journal is None or self._trace is None:
            return
        if self._transcript is not None:
            self._transcript.flush()
        self._trace.sync()
        assert self.driver is not None
        self._journal.note(self.session.memory.seq, encode_state(self.driver))
        self._kill.passed("acknowledge")

    def checkpoint(self) -> None:
        """Save the session and the agent (or the driver's state) where they stand, mid-window
        too. Every record file the checkpoint covers is on disk first."""
        if self._trace is None:
            raise RunError(f"{self.run_dir}: the run record is closed; nothing to checkpoint")
        self._trace.sync()
        if self._transcript is not None:
            self._transcript.sync()
        self._flush_model_calls()
        if self._journal is not None:  # first: a kill before the checkpoint replays from it
            assert self._answers is not None and self.driver is not None
            state = encode_state(self.driver)
            self._journal.rebase(self.session.memory.seq, state, self._answers.to_json())
        save_checkpoint(
            self.run_dir,
            self.session.snapshot(),
            self.agent,
            self.pins.model_dump(mode="json"),
            driver_state=None if self.driver is None else encode_state(self.driver),
        )
        if self._journal is not None:
            self._journal.compact()
        self._last_checkpoint = time.monotonic()
        self._kill.passed("checkpoint")
        self.manifest.progress(self.session.memory.windows_closed)
        self.manifest.write(self.run_dir)

    def _flush_model_calls(self) -> None:
        """Append the model calls made since the last flush to model_calls.jsonl (synced):
        a checkpointed agent never holds unwritten calls."""
        drained = self._player.drain_model_calls()
        if drained:
            records = [{k: v for k, v in r.items() if k != WORDS_KEY} for r in drained]
            with open(self.run_dir / MODEL_CALLS_FILE, "a") as log:
                log.writelines(
                    json.dumps(scrub(r), separators=(",", ":"), allow_nan=False) + "\n"
                    for r in records
                )
                log.flush()
                os.fsync(log.fileno())
            if self.keep_words:
                append_words(self.run_dir, [_words_line(r) for r in drained])

    def _record_outcome(self) -> None:
        """What the agent or driver reports: usage totals and why it stopped early, if it did."""
        outcome = self._player.outcome()
        self.manifest.record_agent(outcome.usage, outcome.stop_reason)

    def write_manifest(self) -> None:
        """Write `run.json` as it stands (after a host changed it, e.g. a registration)."""
        self.manifest.write(self.run_dir)

    # --- the run stops --------------------------------------------------------------------------
    def suspend(self) -> None:
        """The driver went away mid-run (a client left, a server stops): checkpoint where the
        run stands (mid-window is fine), mark the record interrupted (resumable), close. A
        finished or closed record is left as it is."""
        if self.finished or self._trace is None:
            return
        self.checkpoint()
        self._record_outcome()
        self.manifest.interrupt()
        self.manifest.write(self.run_dir)
        self.close()

    def fail(self, exc: BaseException) -> None:
        """The run broke off: what was recorded reaches the disk, `run.json` says why (the run
        stays resumable). A new run that recorded nothing at all (its settings were refused as
        it started) leaves no directory behind, so the same command can be run again."""
        self.close()
        if self._created and self.session.memory.seq == 0 and not self._player.model_calls_seq:
            shutil.rmtree(self.run_dir, ignore_errors=True)
            return
        self.manifest.fail(exc)
        self._flush_model_calls()
        self._record_outcome()
        self.manifest.write(self.run_dir)

    def finish(self) -> dict[str, Any]:
        """Checkpoint the drained state, write the tables and `metrics.json`, and only then
        `run.json` saying the run ended: a kill at any step before leaves a record that
        `--resume` completes (runs/kill_points.py names the steps). Idempotent."""
        if self.metrics is not None:
            return self.metrics
        if self._trace is not None:
            self.checkpoint()
        self.close()
        self._flush_model_calls()
        self._record_outcome()
        self._kill.passed("finish")
        session, meta = self.session, self.manifest
        record, metrics = finish_store_record(
            session.engine,
            session.memory.windows_closed,
            session.state_hash(),
            meta,
            self.run_dir,
            lambda: self._kill.passed("tables"),
        )
        self._kill.passed("metrics")
        meta.write(self.run_dir)
        if self._journal is not None:
            self._journal.remove()  # finished: nothing is left to replay
        attest_finished(self.run_dir, meta)  # the one signing hook (record/attest.py)
        self.metrics, self.record = metrics, record
        return metrics

    def write_report(self) -> Path:
        """The finished run's report (`report.md` and its figures) in the run directory, from
        the record and metrics `finish` just read and computed: nothing is read or computed a
        second time (`merchantbench run --report`)."""
        from merchantbench.report.markdown import write_run_report

        self.finish()
        assert self.record is not None and self.metrics is not None
        return write_run_report(self.record, self.metrics, self.run_dir)

    def rewind(self, blob: bytes) -> None:
        """Restore the session to `blob` (a `session.snapshot()`, taken host side: the
        conformance check's), cut the trace and the transcript back to it and make a finished
        record live again."""
        self.close()
        self.session.restore(blob)
        noted = self._cut_records(self.session.memory.seq, None)
        self._open_records(noted)
        if self._journal is not None and self._answers is not None and self.driver is not None:
            self._answers.window, self._answers.calls = -1, {}
            state = encode_state(self.driver)
            self._journal.rebase(self.session.memory.seq, state, self._answers.to_json())
            self._journal.compact()  # the rewound session is the base (the check's host side)
        self.metrics = self.record = None
        self.manifest.reopen()
        self.manifest.write(self.run_dir)

    def close(self) -> None:
        """Close the trace and the transcript (idempotent); later trace entries are refused
        with `RunError`."""
        if self._trace is not None:
            self._trace.close()
            self._trace = None
        if self._transcript is not None:
            self._transcript.close()
            self._transcript = None
        if self._journal is not None:
            self._journal.close()
        self.session.recorder = None


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

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
    life.call(tool, args) # a front end's call: an `Answer` (result, window_closed); a call
                          # that closed the window comes back with the after-window work
                          # done (finished if the run is over, else checkpointed when due)
    life.end_window()     # the front end closes the window for its player (forced)
    await life.play_window()  # one window of the in-process agent
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
import shutil
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from merchantbench.agents.base import BaseAgent, Player
from merchantbench.agents.registry import agent_entry, make_agent
from merchantbench.record.checkpoint import (
    CheckpointError,
    cut_trace,
    load_checkpoint,
    read_checkpoint_pins,
    save_checkpoint,
)
from merchantbench.record.files import (
    atomic_write_bytes,
    is_cut_write,
    read_json,
    remove_cut_writes,
)
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
    RUN_FILE,
    TRACE_FILE,
    TRANSCRIPT_FILE,
)
from merchantbench.runs.driver import PLAYED_BY, Driver, encode_state
from merchantbench.runs.journal import Journal, LoggedCalls
from merchantbench.runs.kill_points import KillPoints
from merchantbench.runs.record_writer import MerchantRecord, complete_finished, git_commit
from merchantbench.runs.spec import RunError, RunSpec
from merchantbench.runs.transcript import answers_held, cut_transcript
from merchantbench.session import Session
from merchantbench.surface import AgentSurface
from merchantbench.tools.answer_log import AnswerLog

if TYPE_CHECKING:
    from merchantbench.metrics.record import RunRecord

__all__ = ["Answer", "CheckpointPolicy", "ForkStart", "RunLifecycle"]


@dataclass(frozen=True)
class Answer:
    """What one call through a lifecycle did, as Gymnasium's `step` reports `terminated`: hosts
    read these flags and never compare window numbers themselves.

    Attributes:
        result: The tool's JSON-able answer.
        window_closed: The call closed the open window for its caller (a merchant of a market
            then waits for the others; a store alone: the hours ran).
        hours_run: The window's hours ran and the next window opened (or the run is over):
            the lifecycle has done its after-window work (finished the record when the run is
            over, else checkpointed when its policy says so).
    """

    result: dict[str, Any]
    window_closed: bool
    hours_run: bool


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
        self._kill = KillPoints.from_env()  # test-only (runs/kill_points.py)
        self.writer = MerchantRecord(run_dir, self._kill, transcript)  # the record's files
        self.agent: BaseAgent | None = None
        self.driver: Driver[Any] | None = None
        self.metrics: dict[str, Any] | None = None
        self.record: RunRecord | None = None  # the finished record as read back, for a report
        self._last_checkpoint = time.monotonic()
        self._created = False  # this lifecycle made the run directory
        # A run played from outside acknowledges each call durably (runs/journal.py).
        self._journal: Journal | None = None
        self._answers: AnswerLog | None = None
        self._logged: tuple[LoggedCalls, int] | None = None  # replayed once the files are open
        self.session: Session  # set by open
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

    @classmethod
    def read_finished(
        cls, spec: RunSpec, run_dir: Path, driver: Driver[Any] | None = None
    ) -> RunLifecycle:
        """A finished record read back, for a host that shows it again after a restart: the
        session at the record's checkpoint (`finish` took it on the drained state; checked
        against the state hash `run.json` records) and the metrics of `metrics.json`. Nothing
        more is recorded: a trace entry is refused (`RunError`). What a kill after `run.json`
        said finished cut off is done first (`complete_finished`: the journal removed, the
        record signed without the temporary files of cut writes).

        Raises:
            RunError: the record is not finished, or a file it needs is damaged (one line).
        """
        life = cls(spec, run_dir, CheckpointPolicy(), False, False)
        life.driver = driver
        try:
            meta = read_manifest(run_dir)
            checkpoint = load_checkpoint(run_dir)
            metrics = read_json(run_dir / METRICS_FILE)
        except (ManifestError, CheckpointError, OSError, ValueError) as exc:
            raise RunError(f"cannot read the finished record: {exc}") from None
        if meta.resumable or checkpoint is None or not isinstance(metrics, dict):
            raise RunError("cannot read the finished record: it is not finished")
        session = Session.open(spec.scenario, spec.seed, spec.catalog, trace_sink=life.writer.write)
        session.restore(checkpoint["session"])
        if session.state_hash() != meta.state_hash:
            raise RunError("cannot read the finished record: its checkpoint is not its end")
        complete_finished(run_dir)
        life.session, life.manifest, life.metrics = session, meta, metrics
        return life

    def _open(self, resume: bool, driver: Driver[Any] | None, fork: ForkStart | None) -> None:
        spec, run_dir = self.spec, self.run_dir
        if run_dir.exists() and not run_dir.is_dir():
            raise RunError(f"{run_dir} is a file, not a run directory; choose another --out")
        if resume:
            meta = self._recorded_run()
            remove_cut_writes(run_dir)
        elif run_dir.exists() and not all(is_cut_write(p) for p in run_dir.iterdir()):
            raise RunError(f"{run_dir} exists; use --resume to continue it or choose another --out")
        if driver is not None and driver.name != spec.agent:
            raise RunError(f"the run names {spec.agent!r} but is driven by {driver.name!r}")
        if driver is None and spec.agent in PLAYED_BY:
            how = PLAYED_BY[spec.agent]  # type: ignore[index]
            raise RunError(f"agent {spec.agent!r} plays through {how}, not `run`")
        session = Session.open(spec.scenario, spec.seed, spec.catalog, trace_sink=self.writer.write)
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
            self.writer.journal = self._journal  # removed by the record's finish, before signing
        noted: int | None = None  # the last window whose observation the transcript holds
        if resume:
            noted = self._restore(meta, hidden)
        else:
            meta = self._start_manifest(player, None if fork is None else fork.ref)
            run_dir.mkdir(parents=True, exist_ok=True)  # only now: nothing before inputs passed
            remove_cut_writes(run_dir)  # a start killed while writing its run.json, if any
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
            raise RunError(
                f"{run_dir} is not a run directory: nothing to resume (a run stopped before its "
                "run.json was written recorded nothing: start it again without --resume)"
            )
        try:
            meta = read_manifest(run_dir)
        except ManifestError as exc:
            raise RunError(str(exc)) from exc
        # A record whose metrics are missing was killed while finishing (by a version that
        # marked it completed first): it resumes from its last checkpoint like any other.
        if not meta.resumable and (run_dir / METRICS_FILE).is_file():
            complete_finished(run_dir)  # a kill after run.json: the journal and the signature
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
                if parent_transcript.is_file() and self.writer.transcribe
                else (None, None)
            )
        except CheckpointError as exc:
            raise RunError(f"cannot fork {fork.parent_dir}: {exc}") from None
        atomic_write_bytes(self.run_dir / TRACE_FILE, trace or b"")
        if kept is not None:
            atomic_write_bytes(self.run_dir / TRANSCRIPT_FILE, kept)
        elif seq:
            self.writer.transcribe = False  # a transcript is never started part-way
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
            noted = self.writer.cut(seq, self._player.model_calls_seq, transcribed)
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

    def _open_records(self, noted: int | None) -> None:
        """Open the record's files; a resume with acknowledged calls after its checkpoint
        makes them again first (`_replay_logged`)."""
        self.writer.open(self.session, noted, replay=self._logged is not None)
        if self._logged is not None:
            self._replay_logged(noted)

    def _replay_logged(self, noted: int | None) -> None:
        """Make the acknowledged calls after the checkpoint again (runs/journal.py), each
        checked against its trace line, which stays as it is."""
        assert self._logged is not None and self._answers is not None
        (logged, transcribed), self._logged = self._logged, None
        self._answers.replaying = True
        self.writer.replaying = logged
        origin = self.session.env_origin
        try:
            logged.replay(self.session, transcribed, noted)
        finally:
            self.writer.replaying = None
            self._answers.replaying = False
            self.session.env_origin = origin

    # --- what hosts read ------------------------------------------------------------------------
    @property
    def manifest(self) -> RunManifest:
        """`run.json` as the lifecycle keeps it."""
        return self.writer.manifest

    @manifest.setter
    def manifest(self, meta: RunManifest) -> None:
        self.writer.manifest = meta

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
    def call(
        self,
        tool: str,
        args: dict[str, Any] | str | None = None,
        idempotency_key: str | None = None,
        window: int | None = None,
    ) -> Answer:
        """One environment call of a run played from outside (`AgentSurface.call`'s contract;
        `window`: the window a write was made for, tools/window_bound.py); a call that closes
        the window returns with the lifecycle's after-window work done."""
        return self._step(lambda: self.session.call(tool, args, idempotency_key, window=window))

    def end_window(self) -> Answer:
        """Close the open window on the player's behalf (recorded as forced), then the
        after-window work."""
        return self._step(self.session.force_end_of_step)

    async def play_window(self, act: Callable[[], Awaitable[None]] | None = None) -> None:
        """One window of the in-process player: the agent acts (or `act()`, a harness that
        plays the surface itself), a window it leaves open is closed for it (recorded as
        forced), then the checkpoint when due. The last window's record is finished by the
        host once the agent is closed (`finish`)."""
        window = self.session.window
        if act is not None:
            await act()
        else:
            assert self.agent is not None
            await self.agent.act_async(self.surface)
        if not self._closed_since(window):
            self.session.force_end_of_step()
        if not self.session.over:
            self._checkpoint_when_due()

    def _step(self, call: Callable[[], dict[str, Any]]) -> Answer:
        """The one path of a host's call: run it, and if it closed the window do the
        after-window work (finish when the run is over, else checkpoint when due)."""
        window, was_over = self.session.window, self.session.over
        result = call()
        closed = not was_over and self._closed_since(window)
        if closed:
            if self.session.over:
                self.finish()
            else:
                self._checkpoint_when_due()
        return Answer(result, closed, closed)

    def _closed_since(self, window: int) -> bool:
        return self.session.over or self.session.window != window

    def _checkpoint_when_due(self) -> None:
        elapsed = time.monotonic() - self._last_checkpoint
        if self.checkpoints.due(self.session.window, elapsed):
            self.checkpoint()

    def flush(self) -> None:
        """Hand the record files written so far to the operating system (no disk sync, no
        checkpoint): a reader of the run directory sees every entry up to now."""
        self.writer.flush()

    def acknowledge(self) -> None:
        """A host is about to answer a request from outside its process: make the calls
        recorded so far durable first (the trace, then the journal's line with the driver's
        state; runs/journal.py). The transcript is handed to the OS, not synced: what a power
        loss takes of it, the resume's replay writes again. A run whose driver answers no one
        outside (an in-process agent) syncs at its checkpoints only: this is a no-op."""
        if self._journal is None or not self.writer.is_open:
            return
        self.writer.acknowledge()
        assert self.driver is not None
        self._journal.note(self.session.memory.seq, encode_state(self.driver))
        self._kill.passed("acknowledge")

    def checkpoint(self) -> None:
        """Save the session and the agent (or the driver's state) where they stand, mid-window
        too. Every record file the checkpoint covers is on disk first."""
        if not self.writer.is_open:
            raise RunError(f"{self.run_dir}: the run record is closed; nothing to checkpoint")
        self.writer.sync(self._player)
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

    def write_manifest(self) -> None:
        """Write `run.json` as it stands (after a host changed it, e.g. a registration)."""
        self.manifest.write(self.run_dir)

    # --- the run stops --------------------------------------------------------------------------
    def suspend(self) -> None:
        """The driver went away mid-run (a client left, a server stops): checkpoint where the
        run stands (mid-window is fine), mark the record interrupted (resumable), close. A
        finished or closed record is left as it is."""
        if self.finished or not self.writer.is_open:
            return
        self.checkpoint()
        self.writer.record_outcome(self._player)
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
        self.writer.sync(self._player)
        self.writer.record_outcome(self._player)
        self.manifest.write(self.run_dir)

    def finish(self) -> dict[str, Any]:
        """Checkpoint the drained state, write the tables and `metrics.json`, and only then
        `run.json` saying the run ended: a kill at any step before leaves a record that
        `--resume` completes (runs/kill_points.py names the steps). Idempotent."""
        if self.metrics is not None:
            return self.metrics
        if self.writer.is_open:
            self.checkpoint()
        self.record, self.metrics = self.writer.finish(self.session, self._player)
        return self.metrics

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
        noted = self.writer.cut(self.session.memory.seq, None)
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
        self.writer.close(self.session)
        if self._journal is not None:
            self._journal.close()

"""The life of one run record, from open to finish: `RunLifecycle`, for a store alone and for a
market of several merchants alike (a store is a market of one; `runs/layout.py` says where each
keeps its files).

Every host of a run uses it and keeps only its transport: the CLI runner and the sweep worker
(`runs/runner.py`, an in-process agent), `merchantbench arena` (`runs/arena.py`), the HTTP
server (`serve/host.py`), the MCP run (`serve/mcp_run.py`), the playground (`web/store.py`) and
the Inspect solver (`inspect_eval/solver.py`), the last four with the `Driver` of a run played
from outside (`runs/driver.py`). The lifecycle owns the record, the market session, the agents
or drivers, the manifests and every merchant's record files (`runs/record_writer.py`):

    life = RunLifecycle.open(spec, run_dir)                     # a new run of spec's agent
    life = RunLifecycle.open(spec, run_dir, resume=True)        # ... or its resumption
    life = RunLifecycle.open(spec, run_dir, driver=McpDriver()) # a run played from outside
    life = RunLifecycle.open_market(arena_spec, arena_dir)      # a market of several merchants

    life.surface          # a store's agent surface: what the agent (or a client) calls
    life.call(tool, args) # a front end's call: an `Answer` (result, window_closed, hours_run);
                          # a call that ran the hours comes back with the after-window work
                          # done (finished if the run is over, else checkpointed when due)
    life.call(tool, args, merchant=m)  # ... one merchant's, in a market
    life.end_window()     # the front end closes the window for every merchant still in it
    await life.play_window()  # one window of the in-process agents
    life.checkpoint()     # checkpoint now (a pause)
    life.flush()          # hand the records written so far to the OS (no sync, no checkpoint)
    life.suspend()        # the driver went away: checkpoint, mark interrupted, close
    life.fail(exc)        # the run broke off: record why (resumable), close
    life.finish()         # the run is over: tables, metrics.json, run.json; every metrics

Checkpoints (`CheckpointPolicy`) are taken by elapsed wall time, not by window count: an LLM
window takes seconds, so such a run checkpoints about every window, and a baseline year (730
windows in about a second) a few times. `suspend` always checkpoints; `finish` checkpoints the
drained state before writing the tables, so a kill while finishing resumes at once. The record's
bytes never depend on when checkpoints were taken: a resume cuts every record file back to what
its checkpoint covers and replays the rest identically. Before a checkpoint, the files it covers
are flushed and synced to disk.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from merchantbench.agents.base import BaseAgent, Player
from merchantbench.record.checkpoint import (
    CheckpointError,
    load_checkpoint,
    save_checkpoint,
)
from merchantbench.record.files import read_json
from merchantbench.record.manifest import ForkRef, ManifestError, RunManifest, read_manifest
from merchantbench.record.schema import METRICS_FILE, TRACE_FILE, TRANSCRIPT_FILE
from merchantbench.runs.driver import Driver, encode_state
from merchantbench.runs.journal import Journal, LoggedCalls
from merchantbench.runs.kill_points import KillPoints
from merchantbench.runs.layout import MarketLayout, StoreLayout
from merchantbench.runs.record_writer import MerchantRecord, complete_finished
from merchantbench.runs.spec import RunError, RunSpec
from merchantbench.runs.transcript import answers_held
from merchantbench.session import STORE, MarketError, MarketSession, Session
from merchantbench.surface import AgentSurface
from merchantbench.tools.answer_log import AnswerLog

if TYPE_CHECKING:
    from merchantbench.metrics.record import RunRecord
    from merchantbench.runs.arena import ArenaSpec

__all__ = ["Answer", "CheckpointPolicy", "ForkStart", "RunLifecycle"]

Layout = StoreLayout | MarketLayout


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
    """One run record from open to finish (see the module docstring). Build it with `open`
    (a store alone) or `open_market` (a market of several merchants).

    Attributes:
        layout: Where the record's files are (`runs/layout.py`).
        market: The market session (a store alone: the market of its one merchant).
        records: Each merchant's record writer.
        agents: Each merchant's in-process agent (none for a run played from outside).
        drivers: Each merchant's driver of a run played from outside (none for agents).
        results: Every merchant's metrics once the record is finished, else None.
        read_back: Every merchant's finished record as read back, for a report.
    """

    def __init__(self, layout: Layout, checkpoints: CheckpointPolicy, transcript: bool) -> None:
        self.layout = layout
        self.checkpoints = checkpoints
        self._kill = KillPoints.from_env()  # test-only (runs/kill_points.py)
        self.records = {
            merchant: MerchantRecord(
                layout.record_dir(merchant), self._kill, transcript, in_market=layout.in_market
            )
            for merchant in layout.ids
        }
        self.agents: dict[str, BaseAgent] = {}
        self.drivers: dict[str, Driver[Any]] = {}
        self.results: dict[str, dict[str, Any]] | None = None
        self.read_back: dict[str, RunRecord] = {}
        self._last_checkpoint = time.monotonic()
        # A run played from outside acknowledges each call durably (runs/journal.py).
        self._journal: Journal | None = None
        self._answers: dict[str, AnswerLog] = {}
        self._logged: dict[str, tuple[LoggedCalls, int, int | None]] = {}
        self.market: MarketSession  # set by the layout's open
        self.pins: Any  # set by the layout's open; saved with every checkpoint

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
        """Open a new run of a store alone, or resume the one recorded in `run_dir` from its
        last checkpoint.

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
        layout = StoreLayout(spec, run_dir, allow_code_change)
        life = cls(layout, checkpoints or CheckpointPolicy(), transcript)
        if fork is not None and (resume or driver is not None):
            raise RunError("a fork starts as a new run of an in-process agent")
        if driver is not None:
            life.drivers = {STORE: driver}
        layout.open(life, resume, fork)
        if fork is not None:
            life.checkpoint()  # a killed fork resumes at its fork window, never at window 0
        agent = life.agent
        if life.manifest.fork is not None and life.manifest.fork.fresh_agent and agent:
            agent.take_over(life.surface)
        return life

    @classmethod
    def open_market(
        cls,
        spec: ArenaSpec,
        arena_dir: Path,
        *,
        resume: bool = False,
        checkpoints: CheckpointPolicy | None = None,
        transcript: bool = True,
        drivers: Mapping[str, Driver[Any]] | None = None,
    ) -> RunLifecycle:
        """Open a new market (an arena), or resume the one recorded in `arena_dir` from its
        checkpoint. With `drivers` (one per merchant, named as its entrant's agent) no agent
        is built: the market is played from outside, and its host makes the calls and closes
        the windows.

        Raises:
            RunError: the market cannot start or resume; the message says why in one line.
        """
        layout = MarketLayout(spec, arena_dir)
        life = cls(layout, checkpoints or CheckpointPolicy(), transcript)
        if drivers is not None:
            life.drivers = dict(drivers)
        layout.open(life, resume)
        return life

    @classmethod
    def read_finished(
        cls, spec: RunSpec, run_dir: Path, driver: Driver[Any] | None = None
    ) -> RunLifecycle:
        """A store's finished record read back, for a host that shows it again after a
        restart: the session at the record's checkpoint (`finish` took it on the drained
        state; checked against the state hash `run.json` records) and the metrics of
        `metrics.json`. Nothing more is recorded: a trace entry is refused (`RunError`). What
        a kill after `run.json` said finished cut off is done first (`complete_finished`: the
        journal removed, the record signed without the temporary files of cut writes).

        Raises:
            RunError: the record is not finished, or a file it needs is damaged (one line).
        """
        life = cls(StoreLayout(spec, run_dir, False), CheckpointPolicy(), False)
        if driver is not None:
            life.drivers = {STORE: driver}
        try:
            meta = read_manifest(run_dir)
            checkpoint = load_checkpoint(run_dir)
            metrics = read_json(run_dir / METRICS_FILE)
        except (ManifestError, CheckpointError, OSError, ValueError) as exc:
            raise RunError(f"cannot read the finished record: {exc}") from None
        if meta.resumable or checkpoint is None or not isinstance(metrics, dict):
            raise RunError("cannot read the finished record: it is not finished")
        record = life.records[STORE]
        session = Session.open(spec.scenario, spec.seed, spec.catalog, trace_sink=record.write)
        session.restore(checkpoint["session"])
        if session.state_hash() != meta.state_hash:
            raise RunError("cannot read the finished record: its checkpoint is not its end")
        complete_finished(run_dir)
        life.market, record.manifest, life.results = session.market_session, meta, {STORE: metrics}
        return life

    # --- what the layouts call while opening ------------------------------------------------------
    def start_journal(self, acknowledges: bool) -> None:
        """A run played from outside by drivers that acknowledge each call keeps a journal
        (runs/journal.py) at the layout's top."""
        if not acknowledges:
            return
        self._journal = Journal(self.layout.root)
        self._answers = {m: self.market.session(m).answered for m in self.records}
        if self.layout.journal_in_record:
            self.records[STORE].journal = self._journal  # removed before the record is signed

    def restore_checkpoint(self, hidden: Any) -> bool:
        """Restore the market and the agents (or the drivers' states) from the checkpoint, if
        one was taken (`hidden`: the market a privileged agent sees). Returns whether one was.

        Raises:
            RunError: the checkpoint cannot be read, or is not this run's.
        """
        try:
            checkpoint = load_checkpoint(self.layout.root)
        except CheckpointError as exc:
            raise RunError(f"cannot resume: {exc}") from None
        if checkpoint is None:
            return False
        try:
            self.market.restore(checkpoint["session"])
        except MarketError as exc:
            raise RunError(f"cannot resume: {exc}") from None
        if self.drivers:
            self._restore_drivers(checkpoint.get("driver"))
            return True
        agents = self.layout.unpack(checkpoint["agent"])
        if sorted(agents) != sorted(self.records):
            raise RunError("cannot resume: the checkpoint's agents are not the run's")
        self.agents = agents
        if hidden is not None:
            for agent in agents.values():
                agent.attach_hidden_market(hidden)  # type: ignore[attr-defined]
        return True

    def _restore_drivers(self, saved: Any) -> None:
        for merchant, state in self.layout.unpack_states(saved).items():
            driver = self.drivers.get(merchant)
            if driver is not None:
                driver.restore(state)

    def resume_records(self) -> None:
        """Cut every merchant's record back to what the checkpoint covers, or, for a run
        played from outside, to its last acknowledged call (the calls between are made again
        once the files are open: `open_records`)."""
        acknowledged: dict[str, int] = {}
        try:
            if self._journal is not None:
                acknowledged = self._journaled()
            noted: dict[str, int | None] = {}
            for merchant, record in self.records.items():
                seq = self.market.session(merchant).memory.seq
                keep = max(seq, acknowledged.get(merchant, seq))
                calls = LoggedCalls.between(record.run_dir / TRACE_FILE, seq, keep)
                transcript = record.run_dir / TRANSCRIPT_FILE
                held = answers_held(transcript) if transcript.is_file() else seq
                transcribed = max(seq, min(keep, held))
                model_calls = self.player(merchant).model_calls_seq
                noted[merchant] = record.cut(keep, model_calls, transcribed)
                record.manifest.reopen()
                if calls.entries:
                    self._logged[merchant] = (calls, transcribed, noted[merchant])
        except (OSError, ValueError, CheckpointError) as exc:
            raise RunError(f"cannot resume: {exc}") from None
        self.open_records(noted)

    def _journaled(self) -> dict[str, int]:
        """Each merchant's last acknowledged trace entry, and the drivers' and the answer logs'
        journaled state taken back (runs/journal.py)."""
        assert self._journal is not None
        acknowledged, drivers, answers = self._journal.load()
        if drivers is not None:  # the journal holds the state decoded: as the checkpoint has it
            self._restore_drivers(json.dumps(drivers))
        saved = self.layout.unpack(answers)
        for merchant, log in self._answers.items():
            log.take(AnswerLog.from_json(saved.get(merchant)))
        return self.layout.unpack_seqs(acknowledged)

    def open_records(self, noted: Mapping[str, int | None]) -> None:
        """Open every merchant's record files (`noted`: the last window whose observation its
        transcript holds); a resume with acknowledged calls after its checkpoint makes them
        again first (`_replay_logged`)."""
        for merchant, record in self.records.items():
            session = self.market.session(merchant)
            record.open(session, noted.get(merchant), replay=merchant in self._logged)
        if self._logged:
            self._replay_logged()

    def _replay_logged(self) -> None:
        """Make the acknowledged calls after the checkpoint again, merchant by merchant in the
        order they were acknowledged (the journal's points), each checked against its trace
        line, which stays as it is."""
        assert self._journal is not None
        logged, self._logged = self._logged, {}
        origins = {m: self.market.session(m).env_origin for m in logged}
        for merchant, (calls, transcribed, noted) in logged.items():
            self.records[merchant].replaying = calls
            self._answers[merchant].replaying = True
            calls.start(self.market.session(merchant), transcribed, noted)
        try:
            for point in [*self._journal.points, None]:
                reached = {} if point is None else self.layout.unpack(point)
                for merchant, (calls, _, _) in logged.items():
                    calls.advance(reached.get(merchant))
            for calls, _, _ in logged.values():
                calls.finish()
        finally:
            for merchant, origin in origins.items():
                self.records[merchant].replaying = None
                self._answers[merchant].replaying = False
                self.market.session(merchant).env_origin = origin

    # --- what hosts read ------------------------------------------------------------------------
    @property
    def _only(self) -> str:
        """The merchant of a store (or of a market of one)."""
        if len(self.records) != 1:
            raise RunError("this market has several merchants: name one")
        return next(iter(self.records))

    @property
    def session(self) -> Session:
        """The store's session (a market of one: its merchant's)."""
        return self.market.session(self._only)

    @property
    def surface(self) -> AgentSurface:
        """The store's agent surface: all an agent (or a front end's client) may use."""
        return self.session.surface

    @property
    def agent(self) -> BaseAgent | None:
        """The store's in-process agent, or None for a run played from outside."""
        return self.agents.get(self._only)

    @property
    def driver(self) -> Driver[Any] | None:
        """The store's driver of a run played from outside, or None."""
        return self.drivers.get(self._only)

    @property
    def run_dir(self) -> Path:
        """The store's run directory (a market's: its merchant's record)."""
        return self.records[self._only].run_dir

    @property
    def manifest(self) -> RunManifest:
        """The store's `run.json` as the lifecycle keeps it."""
        return self.records[self._only].manifest

    @property
    def metrics(self) -> dict[str, Any] | None:
        """The store's metrics once the record is finished, else None."""
        return None if self.results is None else self.results[self._only]

    @property
    def record(self) -> RunRecord | None:
        """The store's finished record as read back (for its report), else None."""
        return self.read_back.get(self._only)

    @property
    def over(self) -> bool:
        """The run's last window has closed (the record may not be finished yet)."""
        return self.market.over

    @property
    def finished(self) -> bool:
        """The record is finished (`results` set)."""
        return self.results is not None

    def player(self, merchant: str) -> Player[Any]:
        """The merchant's agent, or its driver in a run played from outside."""
        return self.drivers[merchant] if self.drivers else self.agents[merchant]

    # --- the run goes on ------------------------------------------------------------------------
    def call(
        self,
        tool: str,
        args: dict[str, Any] | str | None = None,
        idempotency_key: str | None = None,
        window: int | None = None,
        *,
        merchant: str | None = None,
    ) -> Answer:
        """One environment call of a run played from outside, by `merchant` (default: the
        store's), as `AgentSurface.call` makes it (`window`: the window a write was made for,
        tools/window_bound.py). The call that runs the hours comes back with the after-window
        work done."""
        session = self.market.session(merchant or self._only)
        return self._step(session, lambda: session.call(tool, args, idempotency_key, window=window))

    def turn(self, merchant: str, play: Callable[[Session], None]) -> Answer:
        """A host-side turn of one merchant (`play(session)`: the conformance check's rival),
        then the after-window work if the turn ran the hours."""
        session = self.market.session(merchant)

        def played() -> dict[str, Any]:
            play(session)
            return {"ok": True}

        return self._step(session, played)

    def end_window(self) -> Answer:
        """Close the window for every merchant still in it (recorded as forced), then the
        after-window work. `result` is the last forced close's answer."""
        closes: list[dict[str, Any]] = []

        def close_all() -> dict[str, Any]:
            for merchant in self.market.trading():
                closes.append(self.market.session(merchant).force_end_of_step())
            return closes[-1] if closes else {"ok": True}

        answer = self._step(None, close_all)
        return Answer(answer.result, answer.hours_run or bool(closes), answer.hours_run)

    async def play_window(self, act: Callable[[], Awaitable[None]] | None = None) -> None:
        """One window of the in-process agents: every merchant still trading acts on the
        window's opening state, concurrently (or `act()`, a harness that plays a store's
        surface itself); those that did not close it have it closed for them (recorded as
        forced, in merchant order); then the checkpoint when due. The last window's record is
        finished by the host once the agents are closed (`finish`)."""
        market = self.market
        window = market.window
        if act is not None:
            await act()
        else:
            sessions = [market.session(m) for m in market.trading()]
            await asyncio.gather(
                *(self.agents[s.merchant_id].act_async(s.surface) for s in sessions)
            )
        if not self._closed_since(window):
            market.close_window()
        if not market.over:
            self._checkpoint_when_due()

    async def play(self, on_window: Callable[[MarketSession], None] | None = None) -> None:
        """Play the in-process agents to the end and finish the record; the agents are closed
        whatever happens, and a run that breaks off records why (`fail`)."""
        try:
            while not self.market.over:
                await self.play_window()
                if on_window is not None:
                    on_window(self.market)
        except BaseException as exc:
            self.fail(exc)
            raise
        finally:
            for agent in self.agents.values():
                await agent.aclose()
        self.finish()

    def _step(self, session: Session | None, call: Callable[[], dict[str, Any]]) -> Answer:
        """The one path of a host's call: run it, and if it ran the hours do the after-window
        work (finish when the run is over, else checkpoint when due)."""
        market = self.market
        window, was_over = market.window, market.over
        was_open = session is not None and not (session.over or session.waiting)
        result = call()
        hours_run = not was_over and self._closed_since(window)
        if hours_run:
            if market.over:
                self.finish()
            else:
                self._checkpoint_when_due()
        mine = session is not None and (session.over or session.waiting)
        return Answer(result, hours_run or (was_open and mine), hours_run)

    def _closed_since(self, window: int) -> bool:
        return self.market.over or self.market.window != window

    def _checkpoint_when_due(self) -> None:
        elapsed = time.monotonic() - self._last_checkpoint
        if self.checkpoints.due(self.market.window, elapsed):
            self.checkpoint()

    def flush(self) -> None:
        """Hand the record files written so far to the operating system (no disk sync, no
        checkpoint): a reader of the run directory sees every entry up to now."""
        for record in self.records.values():
            record.flush()

    def acknowledge(self) -> None:
        """A host is about to answer a request from outside its process: make every merchant's
        calls recorded so far durable first (each trace, then the journal's line saying how
        far each got, with the drivers' state; runs/journal.py). The transcripts are handed to
        the OS, not synced: what a power loss takes of them, the resume's replay writes again.
        A run whose players answer no one outside (in-process agents) syncs at its checkpoints
        only: this is a no-op."""
        if self._journal is None or self.finished:
            return
        if not all(record.is_open for record in self.records.values()):
            return
        for record in self.records.values():
            record.acknowledge()
        self._journal.note(self.layout.pack(self._seqs()), self._driver_states())
        self._kill.passed("acknowledge")

    def _seqs(self) -> dict[str, int]:
        return {m: self.market.session(m).memory.seq for m in self.records}

    def _driver_states(self) -> str | None:
        if not self.drivers:
            return None
        return self.layout.pack_states({m: encode_state(d) for m, d in self.drivers.items()})

    def checkpoint(self) -> None:
        """Save the market and the agents (or the drivers' states) where they stand, mid-window
        too. Every record file the checkpoint covers is on disk first."""
        for merchant, record in self.records.items():
            if not record.is_open:
                raise RunError(f"{record.run_dir}: the run record is closed; nothing to checkpoint")
            record.sync(self.player(merchant))
        states = self._driver_states()
        if self._journal is not None:  # first: a kill before the checkpoint replays from it
            answers = {m: log.to_json() for m, log in self._answers.items()}
            self._journal.rebase(self.layout.pack(self._seqs()), states, self.layout.pack(answers))
        save_checkpoint(
            self.layout.root,
            self.market.snapshot(),
            None if self.drivers else self.layout.pack(self.agents),
            self.layout.pins_json(self),
            driver_state=states,
        )
        if self._journal is not None:
            self._journal.compact()
        self._last_checkpoint = time.monotonic()
        self._kill.passed("checkpoint")
        self.layout.checkpointed(self)

    def write_manifest(self) -> None:
        """Write the store's `run.json` as it stands (after a host changed it, e.g. a
        registration)."""
        self.manifest.write(self.run_dir)

    # --- the run stops --------------------------------------------------------------------------
    def suspend(self) -> None:
        """The drivers went away mid-run (a client left, a server stops): checkpoint where the
        run stands (mid-window is fine), mark the record interrupted (resumable), close. A
        finished or closed record is left as it is."""
        if self.finished or not all(r.is_open for r in self.records.values()):
            return
        self.checkpoint()
        for merchant, record in self.records.items():
            record.record_outcome(self.player(merchant))
            record.manifest.interrupt()
            record.manifest.write(record.run_dir)
        self.close()
        self.layout.stopped(self, None)

    def fail(self, exc: BaseException) -> None:
        """The run broke off: what was recorded reaches the disk, every `run.json` says why
        (the run stays resumable). A new store that recorded nothing at all (its settings were
        refused as it started) leaves no directory behind, so the same command can be run
        again."""
        self.close()
        if self.layout.discard_empty(self):
            return
        for merchant, record in self.records.items():
            record.manifest.fail(exc)
            record.sync(self.player(merchant))
            record.record_outcome(self.player(merchant))
            record.manifest.write(record.run_dir)
        self.layout.stopped(self, exc)

    def finish(self) -> dict[str, dict[str, Any]]:
        """Checkpoint the drained state, write every merchant's tables and `metrics.json`, and
        only then its `run.json` saying the run ended (then a market's arena.json): a kill at
        any step before leaves a record that `--resume` completes (runs/kill_points.py names
        the steps). Returns every merchant's metrics. Idempotent."""
        if self.results is not None:
            return self.results
        if all(record.is_open for record in self.records.values()):
            self.checkpoint()
        results = {}
        for merchant, record in self.records.items():
            session = self.market.session(merchant)
            self.read_back[merchant], results[merchant] = record.finish(
                session, self.player(merchant)
            )
        self.layout.finished(self)
        if self._journal is not None and not self.layout.journal_in_record:
            self._journal.remove()  # finished: nothing is left to replay
        self.results = results
        return results

    def store_metrics(self) -> dict[str, Any]:
        """The store's record finished (`finish`), and its metrics."""
        return self.finish()[self._only]

    def write_report(self) -> Path:
        """The finished store's report (`report.md` and its figures) in the run directory,
        from the record and metrics `finish` just read and computed: nothing is read or
        computed a second time (`merchantbench run --report`)."""
        from merchantbench.report.markdown import write_run_report

        self.finish()
        assert self.record is not None and self.metrics is not None
        return write_run_report(self.record, self.metrics, self.run_dir)

    def rewind(self, blob: bytes) -> None:
        """Restore the market to `blob` (a `snapshot()` taken host side: the conformance
        check's), cut every merchant's trace and transcript back to it and make a finished
        record live again."""
        self.close()
        self.market.restore(blob)
        noted = {}
        for merchant, record in self.records.items():
            session = self.market.session(merchant)
            noted[merchant] = record.cut(session.memory.seq, None)
            record.transcribe = (record.run_dir / TRANSCRIPT_FILE).is_file()
        self.open_records(noted)
        if self._journal is not None:  # the rewound market is the base (the check's host side)
            for log in self._answers.values():
                log.window, log.calls = -1, {}
            answers = {m: log.to_json() for m, log in self._answers.items()}
            states = self._driver_states()
            self._journal.rebase(self.layout.pack(self._seqs()), states, self.layout.pack(answers))
            self._journal.compact()
        self.results = None
        self.read_back = {}
        for record in self.records.values():
            record.manifest.reopen()
            record.manifest.write(record.run_dir)
        self.layout.reopened(self)

    def close(self) -> None:
        """Close every trace and transcript (idempotent); later trace entries are refused
        with `RunError`."""
        for merchant, record in self.records.items():
            record.close(self.market.session(merchant))
        if self._journal is not None:
            self._journal.close()

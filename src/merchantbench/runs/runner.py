"""Drive one agent through one session for a whole run, writing a self-describing run record,
checkpointing every few windows and resuming after a kill."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import merchantbench
from merchantbench.agents.base import BaseAgent
from merchantbench.agents.load import agent_slug
from merchantbench.agents.registry import agent_entry, make_agent
from merchantbench.catalog.cache import get_market, get_search_index
from merchantbench.record.checkpoint import (
    CheckpointError,
    cut_trace,
    load_checkpoint,
    read_checkpoint_pins,
    save_checkpoint,
)
from merchantbench.record.files import write_cut
from merchantbench.record.manifest import (
    AgentRef,
    FinalAccounts,
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
    RUN_FILE,
    TRACE_FILE,
    TRANSCRIPT_FILE,
)
from merchantbench.record.sealed import SealedSeed
from merchantbench.record.tables import final_accounts, write_tables
from merchantbench.runs.kill_points import KillPoints
from merchantbench.runs.transcript import (
    TranscribedSession,
    TranscriptFile,
    cut_transcript,
)
from merchantbench.scenario import Scenario
from merchantbench.seeds import seed_label
from merchantbench.session import Session
from merchantbench.tools.agent_input import scrub

ProgressHook = Callable[[Session], None]


class RunError(Exception):
    """A run that cannot start or resume; the message says why in one line."""


@dataclass(frozen=True)
class RunSpec:
    agent: str
    scenario: Scenario
    seed: int = field(repr=False)  # a sealed seed must never reach a log line
    agent_settings: dict[str, Any] = field(default_factory=dict)
    catalog: Path | None = None  # a real catalog directory instead of the synthetic market
    sealed: SealedSeed | None = None  # a sealed run: `seed` is `sealed.seed`, never recorded

    @classmethod
    def sealed_run(cls, agent: str, scenario: Scenario, **options: Any) -> RunSpec:
        """The spec of a new sealed run: a fresh 128-bit seed and salt from the OS."""
        sealed = SealedSeed.draw()
        return cls(agent, scenario, sealed.seed, sealed=sealed, **options)

    @property
    def seed_pin(self) -> str:
        """What the record pins of the seed (`RunManifest.seed_pin`): the seed, or for a sealed
        run its commitment."""
        if self.sealed is not None:
            return f"sealed:{self.sealed.commitment.sha256}"
        return str(self.seed)


def _commitment(spec: RunSpec) -> str | None:
    """The seed commitment a sealed run pins (never its seed); None for a public seed."""
    return None if spec.sealed is None else spec.sealed.commitment.sha256


def default_run_dir(spec: RunSpec, root: Path = Path("runs")) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    label = "sealed" if spec.sealed is not None else seed_label(spec.seed)
    base = root / f"{agent_slug(spec.agent)}-{spec.scenario.name}-{label}-{stamp}"
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path


def _git_commit() -> str | None:
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


def _start_manifest(spec: RunSpec, agent: BaseAgent, session: Session) -> RunManifest:
    market = MarketRef(
        source="synthetic" if spec.catalog is None else "catalog",
        catalog=None if spec.catalog is None else str(spec.catalog),
        n_products=session.market.n_products,
    )
    return RunManifest.start(
        spec.scenario,
        None if spec.sealed is not None else spec.seed,
        market,
        AgentRef(name=spec.agent, settings=agent.settings(), privileged=agent.privileged),
        session.registry.schema_sha256(),
        _git_commit(),
        seed_commitment=None if spec.sealed is None else spec.sealed.commitment,
    )


class RunWriter:
    """Owns a run directory while the run goes on.

    Args:
        spec: What to run.
        run_dir: The run directory.
        checkpoint_every: Windows between checkpoints.
        allow_code_change: Let `--resume` continue with code other than the code that wrote
            the run (recorded in `run.json` as `code_changes`); refused otherwise.
        transcript: Write `transcript.jsonl` (observations and answers) for a new run. On
            resume the record decides: a transcript it has is continued, one it lacks is not
            started part-way.
    """

    def __init__(
        self,
        spec: RunSpec,
        run_dir: Path,
        checkpoint_every: int = 10,
        allow_code_change: bool = False,
        transcript: bool = True,
    ) -> None:
        self.spec = spec
        self.run_dir = run_dir
        self.checkpoint_every = checkpoint_every
        self.allow_code_change = allow_code_change
        self.transcribe = transcript
        self._trace: TextIO | None = None
        self._transcript: TranscriptFile | None = None
        self._kill = KillPoints.from_env()  # test-only (runs/kill_points.py)
        self.manifest: RunManifest  # set by open_session
        self._session: TranscribedSession  # set by open_session
        self.pins: RunPins  # set by open_session; saved with every checkpoint

    def _sink(self, entry: dict[str, Any]) -> None:
        if self._trace is None:
            # The record is finished, suspended or closed: no entry may reach a closed trace.
            raise RunError(f"{self.run_dir}: the run record is closed; no more trace entries")
        # Strict JSON: the surface checked every agent string and number (no NaN, no surrogate).
        self._trace.write(json.dumps(entry, separators=(",", ":"), allow_nan=False) + "\n")
        self._kill.passed("trace")

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
            spec.scenario, spec.seed, spec.agent, spec.catalog, meta, _commitment(spec)
        )
        if reason is not None:
            raise RunError(f"cannot resume: {reason}")
        return meta

    def open_session(
        self, resume: bool, agent: BaseAgent | None = None
    ) -> tuple[Session, BaseAgent, RunManifest]:
        """Open (or resume) the run's session, agent and record.

        Args:
            resume: Continue the run recorded in the directory from its last checkpoint.
            agent: A pre-built agent (a front end's stand-in for an agent outside the
                process); by default the spec's agent is built. On resume the checkpointed
                agent replaces it.
        """
        spec, run_dir = self.spec, self.run_dir
        if run_dir.exists() and not run_dir.is_dir():
            raise RunError(f"{run_dir} is a file, not a run directory; choose another --out")
        if resume:
            meta = self._recorded_run()
        elif run_dir.exists() and any(run_dir.iterdir()):
            raise RunError(f"{run_dir} exists; use --resume to continue it or choose another --out")
        market = get_market(spec.scenario, spec.seed, catalog=spec.catalog)
        index = get_search_index(spec.scenario, spec.seed, market, spec.catalog)
        session = TranscribedSession(spec.scenario, market, spec.seed, index, self._sink)
        # A privileged agent (the oracle) is handed the hidden market here, in the open.
        entry = agent_entry(spec.agent)
        hidden = market if entry.privileged else None
        if agent is None:
            if entry.front_end is not None:
                raise RunError(f"agent {spec.agent!r} plays through {entry.front_end}")
            agent = make_agent(spec.agent, spec.agent_settings, hidden_market=hidden)
        configured = {k: v for k, v in agent.settings().items() if k not in agent.runtime_settings}
        self.pins = pins_of_run(
            spec.scenario, spec.seed, spec.agent, configured, spec.catalog,
            session.registry.schema_sha256(), _commitment(spec),
        )  # fmt: skip
        noted: int | None = None  # the last window whose observation the transcript holds
        if resume:
            agent, noted = self._restore(meta, session, agent, hidden)
        else:
            meta = _start_manifest(spec, agent, session)
            run_dir.mkdir(parents=True, exist_ok=True)  # only now: nothing before inputs passed
            if spec.sealed is not None:  # the secret first: a record never lacks its seed
                spec.sealed.write(run_dir)
            meta.write(run_dir)
        self._session = session
        self._open_records(session, noted)
        self.manifest = meta
        return session, agent, meta

    def _open_records(self, session: TranscribedSession, noted: int | None) -> None:
        """Open the trace and the transcript for appending; the transcript notes the open
        window's observation unless it holds it already."""
        self._trace = open(self.run_dir / TRACE_FILE, "a")  # noqa: SIM115 (closed in close)
        if self.transcribe:
            self._transcript = TranscriptFile(self.run_dir / TRANSCRIPT_FILE)
            session.transcript = self._transcript
            if noted != session.window:
                session.note_window()

    def _cut_records(self, session: Session, agent: BaseAgent | None) -> int | None:
        """Cut the trace, the model-call log and the transcript back to what `session` (and
        `agent`) hold; every file is checked before any is changed. Returns the last window
        whose observation the transcript keeps; a record without a transcript that is
        already under way goes on without one.

        Raises:
            CheckpointError: a record is damaged within what the session covers.
        """
        path, seq = self.run_dir / TRANSCRIPT_FILE, session.memory.seq
        kept, noted = cut_transcript(path, seq) if path.is_file() else (None, None)
        cuts = [(self.run_dir / TRACE_FILE, cut_trace(self.run_dir / TRACE_FILE, seq))]
        if agent is not None:  # LLM agents log their model calls; keep the checkpointed ones
            calls = self.run_dir / MODEL_CALLS_FILE
            cuts.append((calls, cut_trace(calls, agent.model_calls_seq)))
        for record, data in [*cuts, (path, kept)]:
            if data is not None:
                write_cut(record, data)
        if kept is not None:
            self.transcribe = True
        elif seq:
            self.transcribe = False
        return noted

    def _restore(
        self, meta: RunManifest, session: Session, agent: BaseAgent, hidden: Any
    ) -> tuple[BaseAgent, int | None]:
        """Continue the recorded run: check every pin (record/pins.py) against `run.json` and the
        checkpoint, restore the checkpoint, and cut the records back to what it covers. Returns
        the agent and the last window the transcript has the observation of."""
        run_dir = self.run_dir
        try:
            found, saved = read_checkpoint_pins(run_dir)
            continued = check_resume(
                self.pins,
                pins_of_record(meta, agent.runtime_settings),
                pins_of_checkpoint(saved) if found else None,
                self.allow_code_change,
            )
            checkpoint = load_checkpoint(run_dir)
        except (CheckpointError, PinMismatch) as exc:
            raise RunError(f"cannot resume: {exc}") from None
        if checkpoint is not None:
            session.restore(checkpoint["session"])
            restored: BaseAgent = checkpoint["agent"]
            agent = restored
            if hidden is not None:
                restored.attach_hidden_market(hidden)  # type: ignore[attr-defined]
        try:
            noted = self._cut_records(session, agent)
        except CheckpointError as exc:
            raise RunError(f"cannot resume: {exc}") from None
        if continued is not None:
            meta.record_code_change(continued, self.pins.code, session.memory.windows_closed)
            meta.write(run_dir)
        return agent, noted

    def flush_agent_log(self, agent: BaseAgent) -> None:
        """Append the model calls an LLM agent made since the last flush to model_calls.jsonl.
        Flushed before each checkpoint, so a checkpointed agent never holds unwritten calls."""
        records = agent.drain_model_calls()
        if records:
            with open(self.run_dir / MODEL_CALLS_FILE, "a") as log:
                log.writelines(
                    json.dumps(scrub(r), separators=(",", ":"), allow_nan=False) + "\n"
                    for r in records
                )

    def checkpoint(self, session: Session, agent: BaseAgent) -> None:
        assert self._trace is not None
        self._trace.flush()
        if self._transcript is not None:
            self._transcript.flush()
        self.flush_agent_log(agent)
        save_checkpoint(self.run_dir, session.snapshot(), agent, self.pins.model_dump(mode="json"))
        self._kill.passed("checkpoint")
        self.manifest.progress(session.memory.windows_closed)
        self.manifest.write(self.run_dir)

    def suspend(self, session: Session, agent: BaseAgent, meta: RunManifest) -> None:
        """The agent went away mid-run (a front end's client left, a server stops): checkpoint
        where the run stands (mid-window is fine), mark the record interrupted (resumable)
        and close the trace."""
        self.checkpoint(session, agent)
        _record_agent_outcome(agent, meta)
        meta.interrupt()
        meta.write(self.run_dir)
        self.close()

    def rewind(self, session: Session, meta: RunManifest) -> None:
        """The session was restored to an earlier snapshot (a host-side operation, e.g. the
        conformance check's): cut the trace and the transcript back to it and make a finished
        record live again."""
        if session is not self._session:
            raise RunError(f"{self.run_dir}: rewind is for the session this writer opened")
        self.close()
        self._open_records(self._session, self._cut_records(session, None))
        meta.reopen()
        meta.write(self.run_dir)

    def close(self) -> None:
        """Close the trace and the transcript (idempotent); later trace entries are refused
        with `RunError`."""
        if self._trace is not None:
            self._trace.close()
            self._trace = None
        if self._transcript is not None:
            self._transcript.close()
            self._transcript = None

    def finish(self, session: Session, agent: BaseAgent, meta: RunManifest) -> dict[str, Any]:
        """Write the tables and `metrics.json`, and only then `run.json` saying the run ended:
        a kill at any step before leaves a record that `--resume` completes (runs/kill_points.py
        names the steps)."""
        from merchantbench.metrics import load_run_record, metrics_of, write_metrics

        self.close()
        self.flush_agent_log(agent)
        _record_agent_outcome(agent, meta)
        self._kill.passed("finish")
        engine = session.engine
        write_tables(engine, self.run_dir)
        self._kill.passed("tables")
        meta.finish(
            ended="closed" if engine.state.closed else "completed",
            windows=session.memory.windows_closed,
            closed=engine.state.closed,
            final_accounts=FinalAccounts(**final_accounts(engine)),
            state_hash=session.state_hash(),
        )
        # The metrics read the finished manifest from memory: on disk it is not finished yet.
        metrics = metrics_of(dataclasses.replace(load_run_record(self.run_dir), run=meta))
        write_metrics(metrics, self.run_dir)
        self._kill.passed("metrics")
        meta.write(self.run_dir)
        return metrics


def _record_agent_outcome(agent: BaseAgent, meta: RunManifest) -> None:
    """What an LLM agent reports: its usage totals and why it stopped early, if it did."""
    outcome = agent.outcome()
    meta.record_agent(outcome.usage, outcome.stop_reason)


def run_agent(
    spec: RunSpec,
    run_dir: Path,
    resume: bool = False,
    on_window: ProgressHook | None = None,
    checkpoint_every: int = 10,
    allow_code_change: bool = False,
    transcript: bool = True,
) -> dict[str, Any]:
    """Run (or resume) a whole run and return its metrics (blocking)."""
    return asyncio.run(
        run_agent_async(
            spec, run_dir, resume, on_window, checkpoint_every, allow_code_change, transcript
        )
    )


async def run_agent_async(
    spec: RunSpec,
    run_dir: Path,
    resume: bool = False,
    on_window: ProgressHook | None = None,
    checkpoint_every: int = 10,
    allow_code_change: bool = False,
    transcript: bool = True,
) -> dict[str, Any]:
    """Run (or resume) a whole run and return its metrics. Agents are awaited window by window
    (`act_async`), so many LLM runs can share one event loop. `allow_code_change` and
    `transcript`: see `RunWriter`."""
    writer = RunWriter(spec, run_dir, checkpoint_every, allow_code_change, transcript)
    session, agent, meta = writer.open_session(resume)
    try:
        while not session.over:
            window = session.window
            await agent.act_async(session.surface)
            if not session.over and session.window == window:
                session.force_end_of_step()
            if on_window is not None:
                on_window(session)
            if session.window % checkpoint_every == 0 and not session.over:
                writer.checkpoint(session, agent)
    except BaseException as exc:
        writer.close()  # what was traced before the failure reaches the disk
        meta.fail(exc)
        writer.flush_agent_log(agent)
        _record_agent_outcome(agent, meta)
        meta.write(run_dir)
        raise
    finally:
        await agent.aclose()
    return writer.finish(session, agent, meta)

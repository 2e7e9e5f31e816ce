"""An arena: several in-process agents, one merchant each, in one market (docs/design.md §11), with
a record that resumes to the same bytes after a kill.

    ARENA/arena.json                  the market: scenario, seed, β, merchants and their agents,
                                      progress, how it ended, the market's state hash
    ARENA/checkpoint/state.pkl        the whole market (every merchant's store and session
                                      memory) and every agent, pinned to arena.json
    ARENA/merchants/<id>/             each merchant's own run record, as `merchantbench run`
                                      writes it (run.json naming the market as its front end,
                                      trace, transcript, model calls, tables, metrics.json)

`ArenaLifecycle.open(spec, arena_dir, resume=…)` opens a new arena or continues a recorded one;
`play()` / `play_async()` run its windows: in each, every merchant still trading acts on the
window's opening state (LLM agents concurrently: they wait on their models), a merchant that
did not close its window has it closed for it (recorded as forced), and the hours run once all
have closed. Checkpoints are taken between windows (by wall time, `CheckpointPolicy`); a resume
cuts every merchant's trace, transcript and model-call log back to what the checkpoint covers
and plays the rest identically. `finish()` writes each merchant's record and the market's.

A market of one merchant writes, in `merchants/<id>/`, exactly the trace, transcript, tables and
metrics that `merchantbench run` writes for that agent (the equivalence test holds it to that).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import merchantbench
from merchantbench.agents.base import BaseAgent, Player
from merchantbench.agents.registry import agent_entry, make_agent
from merchantbench.record.arena import (
    ARENA_FILE,
    MERCHANTS_DIR,
    ArenaError,
    ArenaManifest,
    MerchantEntry,
    read_arena,
)
from merchantbench.record.checkpoint import (
    CheckpointError,
    load_checkpoint,
    read_checkpoint_pins,
    save_checkpoint,
)
from merchantbench.record.manifest import AgentRef, MarketRef, RunManifest
from merchantbench.record.schema import RUN_FILE, TRACE_FILE, TRANSCRIPT_FILE
from merchantbench.record.sealed import SealedError, SealedSeed, read_sealed
from merchantbench.runs.driver import Driver, encode_state
from merchantbench.runs.journal import Journal, LoggedCalls
from merchantbench.runs.kill_points import KillPoints
from merchantbench.runs.lifecycle import Answer, CheckpointPolicy
from merchantbench.runs.record_writer import MerchantRecord, git_commit
from merchantbench.runs.spec import RunError
from merchantbench.runs.transcript import answers_held
from merchantbench.scenario import Scenario
from merchantbench.session import MarketError, MarketSession, Session
from merchantbench.sim.marketplace import MERCHANT_ID
from merchantbench.tools.answer_log import AnswerLog

__all__ = [
    "ARENA_FILE",
    "MERCHANTS_DIR",
    "ArenaLifecycle",
    "ArenaManifest",
    "ArenaSpec",
    "Entrant",
    "merchant_ids",
    "merchant_name",
    "read_arena",
    "market_secret",
    "run_arena",
    "sealed_of",
]

ARENA_FRONT_END = "arena"
ArenaProgress = Callable[[MarketSession], None]


@dataclass(frozen=True)
class Entrant:
    """One merchant of an arena: its id and the agent (with settings) that runs it."""

    merchant: str
    agent: str
    settings: dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclass(frozen=True)
class ArenaSpec:
    """What an arena runs: a scenario, a seed and its merchants (ids unique)."""

    scenario: Scenario
    seed: int
    entrants: tuple[Entrant, ...]
    catalog: Path | None = None
    sealed: SealedSeed | None = None  # a sealed market (docs/design.md §10): `seed` is its secret

    @classmethod
    def of_agents(
        cls,
        agents: Sequence[str],
        scenario: Scenario,
        seed: int,
        settings: Sequence[dict[str, Any]] | None = None,
        **options: Any,
    ) -> ArenaSpec:
        """Merchants named after their agents (`merchant_ids`), with these settings."""
        given = settings if settings is not None else [{} for _ in agents]
        entrants = tuple(
            Entrant(merchant, agent, dict(config))
            for merchant, agent, config in zip(merchant_ids(agents), agents, given, strict=True)
        )
        return cls(scenario, seed, entrants, **options)

    def pins(self, schema_sha256: str) -> dict[str, Any]:
        """What a resume must find unchanged (the checkpoint carries them too)."""
        pins: dict[str, Any] = {
            "scenario_hash": self.scenario.content_hash,
            "seed": None if self.sealed is not None else self.seed,
            "catalog": None if self.catalog is None else str(self.catalog),
            "merchants": [[e.merchant, e.agent, e.settings] for e in self.entrants],
            "tool_schema_sha256": schema_sha256,
            "package_version": merchantbench.__version__,
        }
        if self.sealed is not None:  # a public arena's pins are as they always were
            pins["seed_commitment"] = self.sealed.commitment.sha256
        return pins

    def with_secret(self, secret: SealedSeed | None) -> ArenaSpec:
        """This arena on `secret` (a sealed market: its seed is the secret's), or as it is."""
        if secret is None:
            return self
        return dataclasses.replace(self, seed=secret.seed, sealed=secret)


def market_secret(arena_dir: Path, resume: bool, sealed: bool) -> SealedSeed | None:
    """The secret of a market about to be played: a resumed market's is read back from its
    record (`sealed_of`: never drawn again), a new sealed market draws its own, a new public
    one has none.

    Raises:
        RunError: a resumed market's secret cannot be read.
    """
    if resume:
        return sealed_of(arena_dir)
    return SealedSeed.draw() if sealed else None


def sealed_of(arena_dir: Path) -> SealedSeed | None:
    """The secret seed of a recorded sealed market (None for a public one), read from its
    first merchant's record and checked against that record's commitment.

    Raises:
        RunError: the arena or its secret cannot be read.
    """
    try:
        manifest = read_arena(arena_dir)
    except ArenaError as exc:
        raise RunError(str(exc)) from None
    if manifest.seed_commitment is None or not manifest.merchants:
        return None
    first = manifest.merchant_dir(arena_dir, manifest.merchants[0].id)
    try:
        return read_sealed(first)
    except SealedError as exc:
        raise RunError(f"cannot read the sealed seed of {arena_dir}: {exc}") from None


def merchant_ids(labels: Sequence[str]) -> list[str]:
    """A merchant id for each label (an agent as given on the command line): `merchant_name`
    of it, and `-2`, `-3` … for the second and later merchants of the same name."""
    seen: dict[str, int] = {}
    ids = []
    for label in labels:
        base = merchant_name(label)
        seen[base] = seen.get(base, 0) + 1
        ids.append(base if seen[base] == 1 else f"{base}-{seen[base]}")
    return ids


def merchant_name(agent: str) -> str:
    """A merchant id from an agent name: lower case, other characters as '-', at most 32."""
    name = "".join(c if c.isalnum() or c in "-_" else "-" for c in agent.lower()).strip("-_")
    name = (name or "merchant")[:28]
    return name if MERCHANT_ID.fullmatch(name) else "merchant"


def _now() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat(timespec="seconds")


class ArenaLifecycle:
    """One arena record from open to finish (see the module docstring)."""

    def __init__(self, spec: ArenaSpec, arena_dir: Path, checkpoints: CheckpointPolicy) -> None:
        self.spec = spec
        self.arena_dir = arena_dir
        self.checkpoints = checkpoints
        self._kill = KillPoints.from_env()
        self.records = {
            e.merchant: MerchantRecord(
                arena_dir / MERCHANTS_DIR / e.merchant, self._kill, in_market=True
            )
            for e in spec.entrants
        }
        self.agents: dict[str, BaseAgent] = {}
        # A market played from outside (the HTTP server): one driver per merchant, no agents.
        self.drivers: dict[str, Driver[Any]] = {}
        self.metrics: dict[str, dict[str, Any]] | None = None
        self._last_checkpoint = time.monotonic()
        # A market played from outside acknowledges each call durably (runs/journal.py).
        self._journal: Journal | None = None
        self._answers: dict[str, AnswerLog] = {}
        self.market: MarketSession  # set by open
        self.manifest: ArenaManifest  # set by open

    @classmethod
    def open(
        cls,
        spec: ArenaSpec,
        arena_dir: Path,
        *,
        resume: bool = False,
        checkpoints: CheckpointPolicy | None = None,
        transcript: bool = True,
        drivers: Mapping[str, Driver[Any]] | None = None,
    ) -> ArenaLifecycle:
        """Open a new arena, or resume the one recorded in `arena_dir` from its checkpoint.
        With `drivers` (one per merchant, named as its entrant's agent) no agent is built: the
        market is played from outside, and its host makes the calls and closes the windows.

        Raises:
            RunError: the arena cannot start or resume; the message says why in one line.
        """
        life = cls(spec, arena_dir, checkpoints or CheckpointPolicy())
        if drivers is not None:
            life.drivers = dict(drivers)
        life._open(resume, transcript)
        return life

    def _open(self, resume: bool, transcript: bool) -> None:
        spec, arena_dir = self.spec, self.arena_dir
        if arena_dir.exists() and not arena_dir.is_dir():
            raise RunError(f"{arena_dir} is a file, not an arena directory; choose another --out")
        if not spec.entrants:
            raise RunError("an arena needs at least one --agent")
        ids = [e.merchant for e in spec.entrants]
        if len(set(ids)) != len(ids):
            raise RunError("two merchants of the arena have the same id")
        recorded = None
        if resume:
            try:
                recorded = read_arena(arena_dir)
            except ArenaError as exc:
                raise RunError(str(exc)) from None
            if recorded.ended == "completed":
                raise RunError(f"{arena_dir} already finished; nothing to resume")
        elif arena_dir.exists() and any(arena_dir.iterdir()):
            raise RunError(
                f"{arena_dir} exists; use --resume to continue it or choose another --out"
            )
        for entrant in spec.entrants:
            driver = self.drivers.get(entrant.merchant)
            if self.drivers and (driver is None or driver.name != entrant.agent):
                raise RunError(f"merchant {entrant.merchant!r} has no {entrant.agent} driver")
            if not self.drivers and agent_entry(entrant.agent).privileged:
                raise RunError(f"agent {entrant.agent!r} sees hidden state: not in an arena")
        sinks = {merchant: record.write for merchant, record in self.records.items()}
        try:
            self.market = MarketSession.open(
                spec.scenario, spec.seed, ids, spec.catalog, trace_sinks=sinks
            )
        except MarketError as exc:
            raise RunError(str(exc)) from None
        if self.drivers and all(d.acknowledges for d in self.drivers.values()):
            self._journal = Journal(arena_dir)
            self._answers = {merchant: self.market.session(merchant).answered for merchant in ids}
        first = self.market.sessions[ids[0]] if ids else None
        assert first is not None
        schema = first.registry.schema_sha256()
        pins = spec.pins(schema)
        if recorded is not None:
            if recorded.pins != json.loads(json.dumps(pins)):
                raise RunError(f"cannot resume: {arena_dir} records another arena or code")
            self.manifest = recorded
            self._restore(pins)
            return
        if not self.drivers:
            self.agents = {e.merchant: make_agent(e.agent, e.settings) for e in spec.entrants}
        self.manifest = ArenaManifest(
            scenario=spec.scenario.name,
            scenario_hash=spec.scenario.content_hash,
            scenario_config=spec.scenario.model_dump(mode="json"),
            seed=None if spec.sealed is not None else spec.seed,
            seed_commitment=None if spec.sealed is None else spec.sealed.commitment,
            seller_substitution=spec.scenario.market.seller_substitution,
            catalog=None if spec.catalog is None else str(spec.catalog),
            merchants=[
                MerchantEntry(
                    id=e.merchant, agent=e.agent, settings=self.player(e.merchant).settings()
                )
                for e in spec.entrants
            ],
            tool_schema_sha256=schema,
            package_version=merchantbench.__version__,
            git_commit=git_commit(),
            started=_now(),
            pins=json.loads(json.dumps(pins)),
        )
        arena_dir.mkdir(parents=True, exist_ok=True)
        if spec.sealed is not None:  # each merchant's record can be revealed on its own; the
            for record in self.records.values():  # secret is kept before any commitment
                record.run_dir.mkdir(parents=True, exist_ok=True)
                spec.sealed.write(record.run_dir)
        self.manifest.write(arena_dir)
        for entrant in spec.entrants:
            record = self.records[entrant.merchant]
            record.run_dir.mkdir(parents=True, exist_ok=True)
            record.manifest = self._merchant_manifest(entrant, schema)
            record.manifest.write(record.run_dir)
            record.transcribe = transcript
            record.open(self.market.session(entrant.merchant), None)

    def player(self, merchant: str) -> Player[Any]:
        """The merchant's agent, or its driver in a market played from outside."""
        return self.drivers[merchant] if self.drivers else self.agents[merchant]

    def _merchant_manifest(self, entrant: Entrant, schema: str) -> RunManifest:
        spec, agent = self.spec, self.player(entrant.merchant)
        market = MarketRef(
            source="synthetic" if spec.catalog is None else "catalog",
            catalog=None if spec.catalog is None else str(spec.catalog),
            n_products=self.market.market.n_products,
        )
        meta = RunManifest.start(
            spec.scenario,
            None if spec.sealed is not None else spec.seed,
            market,
            AgentRef(name=entrant.agent, settings=agent.settings(), privileged=False),
            schema,
            self.manifest.git_commit,
            seed_commitment=None if spec.sealed is None else spec.sealed.commitment,
            driver=self.drivers[entrant.merchant].name if self.drivers else None,
        )
        meta.host(
            ARENA_FRONT_END,
            {
                "arena": self.arena_dir.name,
                "merchant": entrant.merchant,
                "merchants": [e.merchant for e in spec.entrants],
                "seller_substitution": spec.scenario.market.seller_substitution,
            },
        )
        return meta

    def _restore(self, pins: dict[str, Any]) -> None:
        """Continue from the checkpoint (or from the start if none was taken): restore the
        market and the agents and cut every merchant's records back to them."""
        try:
            found, saved_pins = read_checkpoint_pins(self.arena_dir)
            if found and saved_pins != json.loads(json.dumps(pins)):
                raise RunError("cannot resume: the checkpoint belongs to another arena")
            checkpoint = load_checkpoint(self.arena_dir)
        except CheckpointError as exc:
            raise RunError(f"cannot resume: {exc}") from None
        if checkpoint is not None:
            try:
                self.market.restore(checkpoint["session"])
            except MarketError as exc:
                raise RunError(f"cannot resume: {exc}") from None
            if self.drivers:
                self._restore_drivers(checkpoint.get("driver"))
            else:
                agents = checkpoint["agent"]
                if not isinstance(agents, dict) or sorted(agents) != sorted(self.records):
                    raise RunError("cannot resume: the checkpoint's agents are not the arena's")
                self.agents = agents
        elif not self.drivers:
            self.agents = {e.merchant: make_agent(e.agent, e.settings) for e in self.spec.entrants}
        acknowledged = self._journaled() if self._journal is not None else {}
        logged: dict[str, tuple[LoggedCalls, int, int | None]] = {}
        for merchant, record in self.records.items():
            session = self.market.session(merchant)
            seq = session.memory.seq
            keep = max(seq, acknowledged.get(merchant, seq))
            transcript = record.run_dir / TRANSCRIPT_FILE
            try:
                record.manifest = RunManifest.model_validate_json(
                    (record.run_dir / RUN_FILE).read_text()
                )
                calls = LoggedCalls.between(record.run_dir / TRACE_FILE, seq, keep)
                held = answers_held(transcript) if transcript.is_file() else seq
                transcribed = max(seq, min(keep, held))
                model_calls = self.player(merchant).model_calls_seq
                noted = record.cut(keep, model_calls, transcribed)
            except (OSError, ValueError, CheckpointError) as exc:
                raise RunError(f"cannot resume: {record.run_dir}: {exc}") from None
            record.manifest.reopen()
            record.transcribe = transcript.is_file()
            record.open(session, noted, replay=bool(calls.entries))
            if calls.entries:
                logged[merchant] = (calls, transcribed, noted)
        if logged:
            self._replay_logged(logged)
        self.manifest.ended = self.manifest.error = None

    def _journaled(self) -> dict[str, int]:
        """Each merchant's last acknowledged trace entry, and the drivers' and the answer logs'
        journaled state taken back (runs/journal.py)."""
        assert self._journal is not None
        acknowledged, drivers, answers = self._journal.load()
        if drivers is not None:
            self._restore_drivers(json.dumps(drivers))
        saved = answers if isinstance(answers, dict) else {}
        for merchant, log in self._answers.items():
            log.take(AnswerLog.from_json(saved.get(merchant)))
        return acknowledged if isinstance(acknowledged, dict) else {}

    def _replay_logged(self, logged: dict[str, tuple[LoggedCalls, int, int | None]]) -> None:
        """Make the acknowledged calls after the checkpoint again, merchant by merchant in the
        order they were acknowledged (the journal's points), each checked against its line."""
        assert self._journal is not None
        for merchant, (calls, transcribed, noted) in logged.items():
            self.records[merchant].replaying = calls
            self._answers[merchant].replaying = True
            calls.start(self.market.session(merchant), transcribed, noted)
        try:
            for point in [*self._journal.points, None]:
                for merchant, (calls, _, _) in logged.items():
                    calls.advance(None if point is None else point.get(merchant))
            for calls, _, _ in logged.values():
                calls.finish()
        finally:
            for merchant in logged:
                self.records[merchant].replaying = None
                self._answers[merchant].replaying = False

    def _restore_drivers(self, saved: Any) -> None:
        """Each driver's state as the checkpoint saved it (JSON text of merchant → state)."""
        try:
            states = json.loads(saved) if isinstance(saved, str) else {}
        except ValueError:
            raise RunError("cannot resume: the checkpoint's driver states are damaged") from None
        if not isinstance(states, dict):
            raise RunError("cannot resume: the checkpoint's driver states are damaged")
        for merchant, driver in self.drivers.items():
            state = states.get(merchant)
            if state is not None:
                driver.restore(json.loads(state))

    # --- the arena goes on ------------------------------------------------------------------------
    @property
    def over(self) -> bool:
        return self.market.over

    async def play_async(self, on_window: ArenaProgress | None = None) -> dict[str, dict[str, Any]]:
        """Play every window to the end and finish; returns each merchant's metrics."""
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
        return self.finish()

    def play(self, on_window: ArenaProgress | None = None) -> dict[str, dict[str, Any]]:
        return asyncio.run(self.play_async(on_window))

    async def play_window(self) -> None:
        """One window of the in-process agents: every merchant still trading acts on the
        opening state, concurrently; those that did not close it have it closed for them (in
        merchant order); then the checkpoint when due. The last window's record is finished
        once the agents are closed (`finish`)."""
        market = self.market
        window = market.window
        trading = market.trading()
        await asyncio.gather(
            *(self.agents[m].act_async(market.session(m).surface) for m in trading)
        )
        if not self._closed_since(window):
            market.close_window()
        if not market.over:
            self._checkpoint_when_due()

    def call(
        self,
        merchant: str,
        tool: str,
        args: dict[str, Any] | str | None = None,
        idempotency_key: str | None = None,
        window: int | None = None,
    ) -> Answer:
        """One environment call of a merchant of a market played from outside (`window`: the
        window a write was made for, tools/window_bound.py); the call that closes the market's
        window (the last merchant's close) returns with the after-window work done (finished
        when the market is over, else checkpointed when due)."""
        session = self.market.session(merchant)
        call = lambda: session.call(tool, args, idempotency_key, window=window)  # noqa: E731
        return self._step(session, call)

    def turn(self, merchant: str, play: Callable[[Session], None]) -> Answer:
        """A host-side turn of one merchant (`play(session)`: the conformance check's rival),
        then the after-window work if the turn closed the market's window."""
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

        return self._step(None, close_all)

    def _step(self, session: Session | None, call: Callable[[], dict[str, Any]]) -> Answer:
        """The one path of a host's call (see `RunLifecycle._step`)."""
        market = self.market
        window, was_over = market.window, market.over
        was_open = session is None or not (session.over or session.waiting)
        result = call()
        hours_run = not was_over and self._closed_since(window)
        if hours_run:
            if market.over:
                self.finish()
            else:
                self._checkpoint_when_due()
        mine = session is None or session.over or session.waiting
        return Answer(result, hours_run or (was_open and mine), hours_run)

    def _closed_since(self, window: int) -> bool:
        return self.market.over or self.market.window != window

    def _checkpoint_when_due(self) -> None:
        elapsed = time.monotonic() - self._last_checkpoint
        if self.checkpoints.due(self.market.window, elapsed):
            self.checkpoint()

    def acknowledge(self) -> None:
        """A host is about to answer a request from outside its process: every merchant's
        calls so far are made durable first, then the journal says how far each got, with the
        drivers' state (runs/journal.py). A no-op for an arena of in-process agents."""
        if self._journal is None or self.finished:
            return
        for record in self.records.values():
            record.acknowledge()
        self._journal.note(self._seqs(), self._driver_states())

    def _seqs(self) -> dict[str, int]:
        return {m: self.market.session(m).memory.seq for m in self.records}

    def _driver_states(self) -> str | None:
        if not self.drivers:
            return None
        encoded = {m: encode_state(d) for m, d in self.drivers.items()}
        return json.dumps(encoded, sort_keys=True)  # JSON, never a pickled object

    def checkpoint(self) -> None:
        """Save the market and the agents; every record file it covers is on disk first."""
        for merchant, record in self.records.items():
            record.sync(self.player(merchant))
        states = self._driver_states()
        if self._journal is not None:  # first: a kill before the checkpoint replays from it
            answers = {m: log.to_json() for m, log in self._answers.items()}
            self._journal.rebase(self._seqs(), states, answers)
        save_checkpoint(
            self.arena_dir,
            self.market.snapshot(),
            None if self.drivers else self.agents,
            self.manifest.pins,
            states,
        )
        if self._journal is not None:
            self._journal.compact()
        self._last_checkpoint = time.monotonic()
        self._kill.passed("checkpoint")
        self.manifest.windows = self.market.window
        self.manifest.write(self.arena_dir)

    def rewind(self, blob: bytes) -> None:
        """Restore the market to `blob` (a `market.snapshot()` taken host side: the conformance
        check's), cut every merchant's trace and transcript back to it, and make a finished
        record live again."""
        for merchant, record in self.records.items():
            record.close(self.market.session(merchant))
        self.market.restore(blob)
        for merchant, record in self.records.items():
            session = self.market.session(merchant)
            noted = record.cut(session.memory.seq, None)
            record.transcribe = (record.run_dir / TRANSCRIPT_FILE).is_file()
            record.open(session, noted)
            record.manifest.reopen()
            record.manifest.write(record.run_dir)
        if self._journal is not None:  # the rewound market is the base (the check's host side)
            for log in self._answers.values():
                log.window, log.calls = -1, {}
            answers = {m: log.to_json() for m, log in self._answers.items()}
            self._journal.rebase(self._seqs(), self._driver_states(), answers)
            self._journal.compact()
        self.metrics = None
        self.manifest.ended = self.manifest.finished = self.manifest.state_hash = None
        self.manifest.write(self.arena_dir)

    @property
    def finished(self) -> bool:
        return self.metrics is not None

    def suspend(self) -> None:
        """The host went away mid-market (a server stops): checkpoint where the market stands
        (mid-window is fine), mark arena.json interrupted (resumable) and close the records."""
        if self.finished:
            return
        self.checkpoint()
        for merchant, record in self.records.items():
            record.close(self.market.session(merchant))
        self.manifest.ended = "interrupted"
        self.manifest.write(self.arena_dir)

    def fail(self, exc: BaseException) -> None:
        """The arena broke off: records reach the disk, arena.json says why (resumable)."""
        for merchant, record in self.records.items():
            record.sync(self.player(merchant))
            record.close(self.market.session(merchant))
        stopped = isinstance(exc, KeyboardInterrupt | asyncio.CancelledError)
        self.manifest.ended = "interrupted" if stopped else "error"
        self.manifest.error = f"{type(exc).__name__}: {exc}"
        self.manifest.write(self.arena_dir)

    def finish(self) -> dict[str, dict[str, Any]]:
        """Checkpoint the drained market, then each merchant's tables, metrics and run.json,
        then arena.json. Idempotent; a kill at any step resumes to the same bytes."""
        if self.metrics is not None:
            return self.metrics
        self.checkpoint()
        metrics = {
            merchant: record.finish(self.market.session(merchant), self.player(merchant))[1]
            for merchant, record in self.records.items()
        }
        self.manifest.ended = "completed"
        self.manifest.finished = _now()
        self.manifest.windows = self.spec.scenario.clock.windows
        self.manifest.state_hash = self.market.state_hash()
        self.manifest.error = None
        self.manifest.write(self.arena_dir)
        if self._journal is not None:
            self._journal.remove()  # finished: nothing is left to replay
        self.metrics = metrics
        return metrics


def run_arena(
    spec: ArenaSpec,
    arena_dir: Path,
    resume: bool = False,
    on_window: ArenaProgress | None = None,
    checkpoints: CheckpointPolicy | None = None,
    transcript: bool = True,
) -> dict[str, dict[str, Any]]:
    """Run (or resume) a whole arena and return each merchant's metrics (blocking)."""
    life = ArenaLifecycle.open(
        spec, arena_dir, resume=resume, checkpoints=checkpoints, transcript=transcript
    )
    return life.play(on_window)

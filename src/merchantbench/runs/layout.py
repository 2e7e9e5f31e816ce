"""Where a run's record lives, and what a resume must find unchanged: the one thing a store alone
and a market of several merchants do differently. The lifecycle (`runs/lifecycle.py`) is one;
it keeps a `StoreLayout` or a `MarketLayout`:

    RUN/                              a store alone (`StoreLayout`): the run directory is its
      run.json, trace.jsonl, …        one merchant's record and holds the checkpoint and the
      checkpoint/state.pkl            journal; run.json is the run's manifest
    ARENA/                            a market (`MarketLayout`): arena.json (the market: scenario,
      arena.json                      seed, merchants and their agents, progress, how it ended),
      checkpoint/state.pkl            the checkpoint (the whole market, every agent) and the
      merchants/<id>/run.json, …      journal at the top; each merchant's record below, as a
                                      store's (run.json naming the market as its front end)

A layout starts a new record (`start`) or reads back the recorded one for a resume
(`resumed`), says where each merchant's record is, and packs what the checkpoint and the journal
keep per merchant: a store's as it always was (one agent, one trace position), a market's keyed
by merchant.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import merchantbench
from merchantbench.agents.base import BaseAgent
from merchantbench.agents.registry import agent_entry, make_agent
from merchantbench.record.arena import (
    MERCHANTS_DIR,
    ArenaError,
    ArenaManifest,
    MerchantEntry,
    read_arena,
)
from merchantbench.record.checkpoint import CheckpointError, cut_trace, read_checkpoint_pins
from merchantbench.record.files import atomic_write_bytes, is_cut_write, remove_cut_writes
from merchantbench.record.manifest import (
    AgentRef,
    ForkRef,
    ManifestError,
    MarketRef,
    RunManifest,
    read_manifest,
    stopped_from_outside,
)
from merchantbench.record.pins import (
    PinMismatch,
    check_resume,
    pins_of_checkpoint,
    pins_of_record,
    pins_of_run,
    request_difference,
)
from merchantbench.record.schema import METRICS_FILE, RUN_FILE, TRACE_FILE, TRANSCRIPT_FILE
from merchantbench.runs.driver import PLAYED_BY
from merchantbench.runs.record_writer import complete_finished, git_commit
from merchantbench.runs.spec import RunError, RunSpec
from merchantbench.runs.transcript import cut_transcript
from merchantbench.session import STORE, MarketError, MarketSession, Session

if TYPE_CHECKING:
    from merchantbench.runs.arena import ArenaSpec, Entrant
    from merchantbench.runs.lifecycle import ForkStart, RunLifecycle

__all__ = ["ARENA_FRONT_END", "MarketLayout", "StoreLayout", "market_ref"]

ARENA_FRONT_END = "arena"


def market_ref(catalog: Path | None, n_products: int) -> MarketRef:
    """What a merchant's run.json says of the market it traded in."""
    return MarketRef(
        source="synthetic" if catalog is None else "catalog",
        catalog=None if catalog is None else str(catalog),
        n_products=n_products,
    )


def _now() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat(timespec="seconds")


class StoreLayout:
    """A store alone: one merchant (`STORE`), whose record is the run directory.

    Attributes:
        spec: What runs.
        root: The run directory (record, checkpoint and journal).
        in_market: False: no other merchant opens this one's windows.
    """

    in_market = False
    journal_in_record = True  # the record's finish removes it, before signing

    def __init__(self, spec: RunSpec, run_dir: Path, allow_code_change: bool) -> None:
        self.spec = spec
        self.root = run_dir
        self.ids = [STORE]
        self.allow_code_change = allow_code_change
        self.created = False  # this run made the directory (`discard_empty`)

    def record_dir(self, merchant: str) -> Path:
        return self.root

    # --- what the checkpoint and the journal keep per merchant -----------------------------------
    def pack(self, values: dict[str, Any]) -> Any:
        return values[STORE]

    def unpack(self, saved: Any) -> dict[str, Any]:
        return {STORE: saved}

    def unpack_seqs(self, saved: Any) -> dict[str, int]:
        if not isinstance(saved, int):
            raise CheckpointError("the journal is not a single run's journal")
        return {STORE: saved}

    def pack_states(self, states: dict[str, str | None]) -> str | None:
        return states[STORE]

    def unpack_states(self, saved: Any) -> dict[str, Any]:
        return {} if saved is None else {STORE: json.loads(saved)}

    def pins_json(self, life: RunLifecycle) -> dict[str, Any]:
        return life.pins.model_dump(mode="json")  # type: ignore[no-any-return]

    # --- open ----------------------------------------------------------------------------------
    def open(self, life: RunLifecycle, resume: bool, fork: ForkStart | None) -> None:
        """Build the session and the player and start the record, or take the recorded one
        back (its checkpoint restored, its files cut to it)."""
        spec, run_dir = self.spec, self.root
        if run_dir.exists() and not run_dir.is_dir():
            raise RunError(f"{run_dir} is a file, not a run directory; choose another --out")
        meta = None
        if resume:
            meta = self._recorded_run()
            remove_cut_writes(run_dir)
        elif run_dir.exists() and not all(is_cut_write(p) for p in run_dir.iterdir()):
            raise RunError(f"{run_dir} exists; use --resume to continue it or choose another --out")
        driver = life.drivers.get(STORE)
        if driver is not None and driver.name != spec.agent:
            raise RunError(f"the run names {spec.agent!r} but is driven by {driver.name!r}")
        if driver is None and spec.agent in PLAYED_BY:
            how = PLAYED_BY[spec.agent]  # type: ignore[index]
            raise RunError(f"agent {spec.agent!r} plays through {how}, not `run`")
        record = life.records[STORE]
        session = Session.open(spec.scenario, spec.seed, spec.catalog, trace_sink=record.write)
        life.market = session.market_session
        hidden = None
        if driver is not None:
            configured = driver.settings()
        else:
            # A privileged agent (the oracle) is handed the hidden market here, in the open.
            hidden = session.market if agent_entry(spec.agent).privileged else None
            rebuilt = None if fork is None else fork.agent
            agent = rebuilt or make_agent(spec.agent, spec.agent_settings, hidden_market=hidden)
            life.agents[STORE] = agent
            configured = {
                k: v for k, v in agent.settings().items() if k not in agent.runtime_settings
            }
        life.pins = pins_of_run(
            spec.scenario, spec.seed, spec.agent, configured, spec.catalog,
            session.registry.schema_sha256(), spec.commitment,
        )  # fmt: skip
        life.start_journal(driver is not None and driver.acknowledges)
        if meta is not None:
            record.manifest = meta
            self._resume(life, meta, hidden)
            return
        record.manifest = self._start_manifest(life, None if fork is None else fork.ref)
        run_dir.mkdir(parents=True, exist_ok=True)  # only now: nothing before inputs passed
        remove_cut_writes(run_dir)  # a start killed while writing its run.json, if any
        self.created = True
        if spec.sealed is not None:  # the secret first: a record never lacks its seed
            spec.sealed.write(run_dir)
        record.manifest.write(run_dir)
        noted = None if fork is None else self._start_fork(life, fork)
        life.open_records({STORE: noted})

    def _recorded_run(self) -> RunManifest:
        """`run.json` of the run to resume, refused if it is finished or asks for another
        scenario, seed, agent or catalog (before any market is built for it)."""
        run_dir = self.root
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

    def _start_manifest(self, life: RunLifecycle, fork: ForkRef | None) -> RunManifest:
        spec, player = self.spec, life.player(STORE)
        privileged = isinstance(player, BaseAgent) and player.privileged
        driver = life.drivers.get(STORE)
        return RunManifest.start(
            spec.scenario,
            None if spec.sealed is not None else spec.seed,
            market_ref(spec.catalog, life.market.market.n_products),
            AgentRef(name=spec.agent, settings=player.settings(), privileged=privileged),
            life.session.registry.schema_sha256(),
            git_commit(),
            seed_commitment=None if spec.sealed is None else spec.sealed.commitment,
            driver=None if driver is None else driver.name,
            fork=fork,
        )

    def _start_fork(self, life: RunLifecycle, fork: ForkStart) -> int | None:
        """Restore the fork's session and begin its record with the parent's up to there.
        Returns the last window whose observation the transcript holds."""
        session, record = life.session, life.records[STORE]
        session.restore(fork.session)
        seq = session.memory.seq
        parent_transcript = fork.parent_dir / TRANSCRIPT_FILE
        try:
            trace = cut_trace(fork.parent_dir / TRACE_FILE, seq)
            kept, noted = (
                cut_transcript(parent_transcript, seq)
                if parent_transcript.is_file() and record.transcribe
                else (None, None)
            )
        except CheckpointError as exc:
            raise RunError(f"cannot fork {fork.parent_dir}: {exc}") from None
        atomic_write_bytes(self.root / TRACE_FILE, trace or b"")
        if kept is not None:
            atomic_write_bytes(self.root / TRANSCRIPT_FILE, kept)
        elif seq:
            record.transcribe = False  # a transcript is never started part-way
        return noted

    def _resume(self, life: RunLifecycle, meta: RunManifest, hidden: Any) -> None:
        """Check every pin (record/pins.py) against `run.json` and the checkpoint, restore the
        checkpoint, and take the record back to it (`RunLifecycle.resume_records`)."""
        agent = life.agents.get(STORE)
        runtime = frozenset() if agent is None else agent.runtime_settings
        try:
            found, saved = read_checkpoint_pins(self.root)
            continued = check_resume(
                life.pins,
                pins_of_record(meta, runtime),
                pins_of_checkpoint(saved) if found else None,
                self.allow_code_change,
            )
        except (CheckpointError, PinMismatch) as exc:
            raise RunError(f"cannot resume: {exc}") from None
        life.restore_checkpoint(hidden)
        life.resume_records()
        if continued is not None:
            meta.record_code_change(continued, life.pins.code, life.session.memory.windows_closed)
            meta.write(self.root)

    # --- the record's own progress ---------------------------------------------------------------
    def checkpointed(self, life: RunLifecycle) -> None:
        life.manifest.progress(life.session.memory.windows_closed)
        life.manifest.write(self.root)

    def stopped(self, life: RunLifecycle, exc: BaseException | None) -> None:
        """A store's run.json is its manifest: the record said how it stopped already."""

    def finished(self, life: RunLifecycle) -> None:
        """The record's finish wrote run.json and removed the journal."""

    def reopened(self, life: RunLifecycle) -> None:
        """A rewound record's run.json was reopened with it."""

    def discard_empty(self, life: RunLifecycle) -> bool:
        """A new run that recorded nothing at all (its settings were refused as it started)
        leaves no directory behind, so the same command can be run again."""
        import shutil

        player = life.player(STORE)
        if self.created and life.session.memory.seq == 0 and not player.model_calls_seq:
            shutil.rmtree(self.root, ignore_errors=True)
            return True
        return False


class MarketLayout:
    """A market of merchants (docs/design.md §11): arena.json, the checkpoint and the journal at
    the top, each merchant's record in `merchants/<id>/`.

    Attributes:
        spec: The arena's spec.
        root: The arena directory.
        manifest: arena.json as the layout keeps it (set by `open`).
    """

    in_market = True
    journal_in_record = False  # the market's, at its top: removed once arena.json says finished

    def __init__(self, spec: ArenaSpec, arena_dir: Path) -> None:
        self.spec = spec
        self.root = arena_dir
        self.ids = [e.merchant for e in spec.entrants]
        self.manifest: ArenaManifest  # set by `open`

    def record_dir(self, merchant: str) -> Path:
        return self.root / MERCHANTS_DIR / merchant

    def pack(self, values: dict[str, Any]) -> Any:
        return values

    def unpack(self, saved: Any) -> dict[str, Any]:
        return saved if isinstance(saved, dict) else {}

    def unpack_seqs(self, saved: Any) -> dict[str, int]:
        return saved if isinstance(saved, dict) else {}

    def pack_states(self, states: dict[str, str | None]) -> str | None:
        return json.dumps(states, sort_keys=True)  # JSON, never a pickled object

    def unpack_states(self, saved: Any) -> dict[str, Any]:
        try:
            states = json.loads(saved) if isinstance(saved, str) else {}
        except ValueError:
            raise RunError("cannot resume: the checkpoint's driver states are damaged") from None
        if not isinstance(states, dict):
            raise RunError("cannot resume: the checkpoint's driver states are damaged")
        return {m: json.loads(s) for m, s in states.items() if s is not None}

    def pins_json(self, life: RunLifecycle) -> dict[str, Any]:
        return self.manifest.pins

    # --- open ----------------------------------------------------------------------------------
    def open(self, life: RunLifecycle, resume: bool) -> None:
        spec, arena_dir = self.spec, self.root
        if arena_dir.exists() and not arena_dir.is_dir():
            raise RunError(f"{arena_dir} is a file, not an arena directory; choose another --out")
        if not spec.entrants:
            raise RunError("an arena needs at least one --agent")
        if len(set(self.ids)) != len(self.ids):
            raise RunError("two merchants of the arena have the same id")
        recorded = None
        if resume:
            try:
                recorded = read_arena(arena_dir)
            except ArenaError as exc:
                raise RunError(str(exc)) from None
            if recorded.ended == "completed":
                raise RunError(f"{arena_dir} already finished; nothing to resume")
            for folder in [arena_dir, *(self.record_dir(m) for m in self.ids)]:
                remove_cut_writes(folder)  # what writes a kill cut short left
        elif arena_dir.exists() and any(arena_dir.iterdir()):
            raise RunError(
                f"{arena_dir} exists; use --resume to continue it or choose another --out"
            )
        drivers = life.drivers
        for entrant in spec.entrants:
            driver = drivers.get(entrant.merchant)
            if drivers and (driver is None or driver.name != entrant.agent):
                raise RunError(f"merchant {entrant.merchant!r} has no {entrant.agent} driver")
            if not drivers and agent_entry(entrant.agent).privileged:
                raise RunError(f"agent {entrant.agent!r} sees hidden state: not in an arena")
        sinks = {merchant: record.write for merchant, record in life.records.items()}
        try:
            life.market = MarketSession.open(
                spec.scenario, spec.seed, self.ids, spec.catalog, trace_sinks=sinks
            )
        except MarketError as exc:
            raise RunError(str(exc)) from None
        life.start_journal(bool(drivers) and all(d.acknowledges for d in drivers.values()))
        schema = life.market.session(self.ids[0]).registry.schema_sha256()
        life.pins = json.loads(json.dumps(spec.pins(schema)))
        if recorded is not None:
            self._resume(life, recorded)
            return
        if not drivers:
            life.agents = {e.merchant: make_agent(e.agent, e.settings) for e in spec.entrants}
        self.manifest = self._start_manifest(life, schema)
        arena_dir.mkdir(parents=True, exist_ok=True)
        if spec.sealed is not None:  # each merchant's record can be revealed on its own; the
            for record in life.records.values():  # secret is kept before any commitment
                record.run_dir.mkdir(parents=True, exist_ok=True)
                spec.sealed.write(record.run_dir)
        self.manifest.write(arena_dir)
        for entrant in spec.entrants:
            record = life.records[entrant.merchant]
            record.run_dir.mkdir(parents=True, exist_ok=True)
            record.manifest = self._merchant_manifest(life, entrant, schema)
            record.manifest.write(record.run_dir)
        life.open_records({})

    def _start_manifest(self, life: RunLifecycle, schema: str) -> ArenaManifest:
        spec = self.spec
        return ArenaManifest(
            scenario=spec.scenario.name,
            scenario_hash=spec.scenario.content_hash,
            scenario_config=spec.scenario.model_dump(mode="json"),
            seed=None if spec.sealed is not None else spec.seed,
            seed_commitment=None if spec.sealed is None else spec.sealed.commitment,
            seller_substitution=spec.scenario.market.seller_substitution,
            catalog=None if spec.catalog is None else str(spec.catalog),
            merchants=[
                MerchantEntry(
                    id=e.merchant, agent=e.agent, settings=life.player(e.merchant).settings()
                )
                for e in spec.entrants
            ],
            tool_schema_sha256=schema,
            package_version=merchantbench.__version__,
            git_commit=git_commit(),
            started=_now(),
            pins=life.pins,
        )

    def _merchant_manifest(self, life: RunLifecycle, entrant: Entrant, schema: str) -> RunManifest:
        spec, agent = self.spec, life.player(entrant.merchant)
        driver = life.drivers.get(entrant.merchant)
        meta = RunManifest.start(
            spec.scenario,
            None if spec.sealed is not None else spec.seed,
            market_ref(spec.catalog, life.market.market.n_products),
            AgentRef(name=entrant.agent, settings=agent.settings(), privileged=False),
            schema,
            self.manifest.git_commit,
            seed_commitment=None if spec.sealed is None else spec.sealed.commitment,
            driver=None if driver is None else driver.name,
        )
        meta.host(
            ARENA_FRONT_END,
            {
                "arena": self.root.name,
                "merchant": entrant.merchant,
                "merchants": self.ids,
                "seller_substitution": spec.scenario.market.seller_substitution,
            },
        )
        return meta

    def _resume(self, life: RunLifecycle, recorded: ArenaManifest) -> None:
        """Continue from the checkpoint (or from the start if none was taken)."""
        if recorded.pins != life.pins:
            raise RunError(f"cannot resume: {self.root} records another arena or code")
        self.manifest = recorded
        try:
            found, saved_pins = read_checkpoint_pins(self.root)
        except CheckpointError as exc:
            raise RunError(f"cannot resume: {exc}") from None
        if found and saved_pins != life.pins:
            raise RunError("cannot resume: the checkpoint belongs to another arena")
        for record in life.records.values():
            try:
                record.manifest = RunManifest.model_validate_json(
                    (record.run_dir / RUN_FILE).read_text()
                )
            except (OSError, ValueError) as exc:
                raise RunError(f"cannot resume: {record.run_dir}: {exc}") from None
        if not life.restore_checkpoint(None) and not life.drivers:
            life.agents = {e.merchant: make_agent(e.agent, e.settings) for e in self.spec.entrants}
        life.resume_records()
        self.manifest.ended = self.manifest.error = None

    # --- the market's own progress ---------------------------------------------------------------
    def checkpointed(self, life: RunLifecycle) -> None:
        self.manifest.windows = life.market.window
        self.manifest.write(self.root)

    def stopped(self, life: RunLifecycle, exc: BaseException | None) -> None:
        """arena.json says the market stopped: interrupted (suspended, or stopped from outside)
        or error (resumable either way)."""
        if exc is None or stopped_from_outside(exc):
            self.manifest.ended = "interrupted"
        else:
            self.manifest.ended = "error"
        if exc is not None:
            self.manifest.error = f"{type(exc).__name__}: {exc}"
        self.manifest.write(self.root)

    def finished(self, life: RunLifecycle) -> None:
        """arena.json says completed, with the market's state hash; then the journal goes."""
        self.manifest.ended = "completed"
        self.manifest.finished = _now()
        self.manifest.windows = self.spec.scenario.clock.windows
        self.manifest.state_hash = life.market.state_hash()
        self.manifest.error = None
        self.manifest.write(self.root)

    def reopened(self, life: RunLifecycle) -> None:
        self.manifest.ended = self.manifest.finished = self.manifest.state_hash = None
        self.manifest.write(self.root)

    def discard_empty(self, life: RunLifecycle) -> bool:
        return False

"""A session: one merchant's side of a market, on the host. The only door to the engine.

A store alone is a market of one merchant: `Session.open(scenario, seed, catalog)` (or
`Session(scenario, market, seed, …)`) is that merchant's session, and `MarketSession.open(
scenario, seed, merchants)` a market of several (docs/design.md §11, docs/arena.md) with one
`Session` per merchant. Both are the same class; what differs is only how many merchants close the
window.

Agents never hold the session: they get its `surface` (merchantbench.surface.AgentSurface),
which exposes the agent-facing half of the contract below. The host (runner, front-end servers)
keeps the session itself: engine, market, trace, snapshots.

Contract:

- A session opens at window 0. `brief()` is the system brief; `observation()` the current
  window's observation; `status()` its public numbers (merchantbench.tools.status).
- `call(tool, args)` runs one environment tool and returns its JSON-able result. Bad input never
  raises: it comes back as `{"ok": false, "error": {...}}` and changes nothing.
- `end_of_step` (a tool like any other) closes the window for this merchant. Windows are
  simultaneous: the merchant then waits (`waiting`; any call answers `window_closed` and
  changes nothing) until every merchant still trading has closed it; the last close simulates
  the window's hours for all and opens the next window for all (a store alone never waits).
  What one merchant does in a window shows to the others only from the next window (the board
  of offers is posted as a window opens), so the order in which merchants act changes nothing.
  Once the store is drained, or closed (its deposit ran out), `over` is true. Past the
  per-window call cap, tools answer `limit` and only `end_of_step` is accepted. A harness that
  gives up on a window calls `force_end_of_step()`, which the trace records as forced.
- Every call goes into `trace` (window, hour, tool, arguments, ok or error code, origin).
  Environment calls carry the session's `env_origin`: `env` by default, `human` when a person
  plays (the web playground sets it before the first call).
  Framework tools of an agent (memory, plans, code) are recorded with `record_framework_call`
  and do not count as environment calls.
- `snapshot()` / `restore()` cover the whole market (the stock is shared) and every
  merchant's session memory; for a store alone, its engine and its memory.
- A `recorder` (the run record's transcript, merchantbench.runs.transcript) is told of every
  recorded call with the answer its caller got, and of every window that opens.

Every front end (Python agents, HTTP, MCP, Gymnasium, PettingZoo, the web playground) is a
thin adapter over this class and hands its agent `surface` alone.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from merchantbench.catalog.cache import get_market, get_search_index
from merchantbench.catalog.market import CatalogView, Market
from merchantbench.catalog.search import SearchIndex
from merchantbench.catalog.view import ViewCursor
from merchantbench.record.trace import TraceEntry
from merchantbench.refusals import Refusal
from merchantbench.scenario import Scenario
from merchantbench.sim.engine import Engine
from merchantbench.sim.marketplace import MarketError, Marketplace, merchant_of
from merchantbench.sim.suppliers import StockMirror, stock_overrides
from merchantbench.surface import AgentSurface
from merchantbench.tools.agent_input import (
    MAX_NAME_CHARS,
    AgentInput,
    HostileInput,
    check_call,
    safe_text,
)
from merchantbench.tools.answer_log import AnswerLog
from merchantbench.tools.errors import failure
from merchantbench.tools.observation import build_observation, system_brief
from merchantbench.tools.schema import IDEMPOTENCY_KEY
from merchantbench.tools.status import StoreStatus, store_status
from merchantbench.tools.toolset import END_OF_STEP, build_registry
from merchantbench.tools.window_bound import window_bound

__all__ = ["STORE", "MarketError", "MarketSession", "Session", "SessionMemory", "SessionRecorder"]

TraceSink = Callable[[dict[str, Any]], None]
STORE = "store"  # the merchant id of a store alone


class SessionRecorder(Protocol):
    """What a run record keeps besides the trace: each call's answer and each window's opening."""

    def answered(self, entry: dict[str, Any], answer: dict[str, Any] | None) -> None:
        """A call was recorded as `entry` (its trace entry); `answer` is what its caller got
        (None for a framework tool's call, whose answer stays in the harness)."""

    def window_opened(self, session: Session) -> None:
        """A window opened (or the run drained: `session.over`)."""


@dataclass
class SessionMemory:
    """What the session keeps besides the engine; all of it is snapshotted."""

    memory_doc: str = ""
    idempotency_store: dict[str, Any] = field(default_factory=dict)
    window_calls: int = 0
    previous_window_t: int = -1
    seq: int = 0  # trace entries emitted so far
    windows_closed: int = 0


class Session:
    """One merchant's session (see the module docstring)."""

    def __init__(
        self,
        scenario: Scenario,
        market: Market,
        seed: int,
        search_index: SearchIndex | None = None,
        trace_sink: TraceSink | None = None,
        *,
        host: MarketSession | None = None,
        merchant: str = STORE,
    ) -> None:
        """`trace_sink` receives each trace entry; without one they collect in `trace`. Without
        `host` the session is a store alone (the one merchant of its own market)."""
        self.scenario = scenario
        self.market = market
        self.seed = seed
        self.merchant_id = merchant
        self.search_index = search_index or SearchIndex.build(market)
        self.market_session = host if host is not None else MarketSession.alone(self)
        self.engine: Engine = self.market_session.store(merchant)
        self.registry = build_registry(scenario)
        self.memory = SessionMemory()
        self.trace: list[dict[str, Any]] = []
        self._sink = trace_sink or self.trace.append
        self._view: CatalogView | None = None
        self._views = ViewCursor(market)  # the run's hours move forward: views build on the last
        # A store alone mirrors its own orders' draws on the stock; in a market every
        # merchant's purchases are in it, read from the market's stock.
        self._stock = StockMirror(market) if host is None else None
        self._end_requested = False
        self._waiting = False
        self._surface: AgentSurface | None = None
        # Who makes the environment calls, as the trace records it (metrics count both).
        self.env_origin: str = "env"
        self.recorder: SessionRecorder | None = None
        self.answered = AnswerLog()  # exactly once for keyed retries (tools/answer_log.py)

    @classmethod
    def open(
        cls,
        scenario: Scenario,
        seed: int,
        catalog: Path | None = None,
        *,
        market_seed: int | None = None,
        trace_sink: TraceSink | None = None,
    ) -> Session:
        """A session of `seed` on the cached market (and search index) of `scenario` and
        `market_seed` (default: `seed`), synthetic or of a real `catalog` directory."""
        market_seed = seed if market_seed is None else market_seed
        market = get_market(scenario, market_seed, catalog=catalog)
        index = get_search_index(scenario, market_seed, market, catalog)
        return cls(scenario, market, seed, index, trace_sink)

    # --- what tools read ------------------------------------------------------------------------
    @property
    def memory_doc(self) -> str:
        return self.memory.memory_doc

    @memory_doc.setter
    def memory_doc(self, text: str) -> None:
        self.memory.memory_doc = text

    @property
    def idempotency_store(self) -> dict[str, Any]:
        return self.memory.idempotency_store

    @property
    def previous_window_t(self) -> int:
        return self.memory.previous_window_t

    @property
    def window_calls(self) -> int:
        return self.memory.window_calls

    def catalog_view(self) -> CatalogView:
        """The catalog at the current hour, with this store's purchases in the stock."""
        t = self.engine.t
        if self._view is None or self._view.hour != t:
            # Drop the old view first: the cursor then moves its state on without a copy.
            self._view = None
            # The engine keeps (level, hour of last purchase); the view wants units now.
            state = self.engine.state
            if self._stock is not None:
                units = self._stock.overrides(state.stock, state.orders, t)
            else:
                units = stock_overrides(self.market, state.stock, t)
            self._view = self._views.view_at(t, units)
        return self._view

    def request_end_of_step(self) -> None:
        self._end_requested = True

    # --- what agents use (through `surface`) ------------------------------------------------------
    @property
    def surface(self) -> AgentSurface:
        """The narrow object an agent is given: brief, observation, tools, call, clock."""
        if self._surface is None:
            self._surface = AgentSurface(self)
        return self._surface

    @property
    def over(self) -> bool:
        """No more windows for this merchant: its store is drained, or, in a market of several,
        closed (its orders go on draining with the market's hours; a store alone is drained as
        the window it closed in ends, and its tools answer `store_closed` until then)."""
        state = self.engine.state
        return state.drained or (state.closed and self.market_session.marketplace is not None)

    @property
    def window(self) -> int:
        return self.engine.window

    def brief(self) -> str:
        return system_brief(self)

    def observation(self) -> str:
        return build_observation(self)

    def status(self) -> StoreStatus:
        return store_status(self)

    def tool_schemas(self) -> list[dict[str, Any]]:
        return self.registry.schema_list()

    def call(
        self,
        tool: str,
        args: dict[str, Any] | str | None = None,
        idempotency_key: str | None = None,
        *,
        forced: bool = False,
        window: int | None = None,
    ) -> dict[str, Any]:
        """Run one environment tool for the agent; never raises for bad input.

        Hostile input (invalid text, oversize or deep nesting, non-finite numbers, non-JSON
        values) is refused here, before any tool sees it (merchantbench.tools.agent_input).
        `window`: the window a write was made for; a write for an ended window is refused
        unrecorded (tools/window_bound.py). A keyed call the `answered` log knows is answered
        from it, unrecorded.
        """
        if window is not None:
            refused = window_bound(self.registry, tool, window, self.engine.window)
            if refused is not None:
                return refused
        try:
            checked = check_call(tool, args, idempotency_key)
        except HostileInput as refusal:
            return self.refuse(tool, args, refusal.result, forced=forced)
        key = _key_of(checked)
        called_in = self.engine.window
        known = self._known(checked, called_in)
        if known is not None:
            return known
        if self.over:
            result = failure(Refusal.RUN_OVER, "the run has ended; no more calls")
        elif self.waiting:
            result = failure(
                Refusal.WINDOW_CLOSED,
                "you closed this window; the next opens when every merchant has closed it",
            )
        elif self._over_cap(checked.tool):
            cap = self.scenario.clock.calls_per_window
            result = failure(Refusal.LIMIT, f"{cap} calls used in this window: call end_of_step")
        else:
            if not self.registry.ends_window(checked.tool):
                self.memory.window_calls += 1
            result = self.registry.call(
                self, checked.tool, checked.args, idempotency_key=checked.idempotency_key
            )
        self._record(tool, checked, args, result, origin=self.env_origin, forced=forced)
        if isinstance(key, str):
            self.answered.keep(called_in, key, checked.tool, checked.args, result)
        if self._end_requested:
            self._end_requested = False
            self._close_window()
            if self.recorder is not None and not self.waiting:
                self.recorder.window_opened(self)
        return result

    def close_again(
        self, tool: Any, args: Any, idempotency_key: Any = None
    ) -> dict[str, Any] | None:
        """The answer of the keyed `end_of_step` that closed the open window (once the run is
        over: its last window), when this call is its retry; None for any other call. Records
        nothing. For a front end that passes no call to `call` while its merchant waits for the
        others, or after the run's end, but answers the retry of a close whose answer a client
        lost."""
        if tool != END_OF_STEP:
            return None
        try:
            checked = check_call(tool, args, idempotency_key)
        except HostileInput:
            return None
        again = self._known(checked, self.answered.window if self.over else self.engine.window)
        return again if again is not None and again.get("ok") else None

    def _known(self, checked: AgentInput, window: int) -> dict[str, Any] | None:
        key = _key_of(checked)
        if not isinstance(key, str):
            return None
        return self.answered.lookup(window, key, checked.tool, checked.args)

    def refuse(
        self, tool: Any, args: Any, result: dict[str, Any], *, forced: bool = False
    ) -> dict[str, Any]:
        """Record a call refused before any tool saw it (hostile input, `result` its refusal):
        it counts as a call of the window and changes nothing else. `call` refuses hostile input
        through it; a replay (merchantbench.replay) records such a refusal again from the trace,
        which keeps only `safe_text` of the input."""
        if not self.over:
            self.memory.window_calls += 1  # a refused call is a call
        self._record(tool, None, args, result, origin=self.env_origin, forced=forced)
        return result

    def force_end_of_step(self) -> dict[str, Any]:
        """Close the window on the agent's behalf (it stopped, failed or ran out of calls)."""
        return self.call(END_OF_STEP, {}, forced=True)

    def record_framework_call(self, tool: str, args: Any, ok: bool, error: str | None) -> None:
        result = {"ok": ok, "error": {"code": error}} if not ok else {"ok": True}
        try:
            checked: AgentInput | None = check_call(tool, args, None)
        except HostileInput:
            checked = None
        self._record(tool, checked, args, result, origin="framework", forced=False)

    @property
    def waiting(self) -> bool:
        """The window is closed for this merchant but not yet simulated (it waits for the other
        merchants of its market); a store alone never waits."""
        return self._waiting

    def _over_cap(self, tool: str) -> bool:
        return not self.registry.ends_window(tool) and self.memory.window_calls >= (
            self.scenario.clock.calls_per_window
        )

    def _record(
        self,
        tool: Any,
        checked: AgentInput | None,
        raw_args: Any,
        result: dict[str, Any],
        origin: str,
        forced: bool,
    ) -> None:
        """One trace entry; what it keeps of refused input is always strict JSON."""
        if checked is not None:
            name, args = checked.tool, checked.args
        else:
            name, args = safe_text(tool, MAX_NAME_CHARS), {"_raw": safe_text(raw_args)}
        ok = bool(result.get("ok"))
        self.memory.seq += 1
        entry = TraceEntry(
            seq=self.memory.seq,
            window=self.engine.window,
            t=self.engine.t,
            tool=name,
            args=args,
            ok=ok,
            error=None if ok else (result.get("error") or {}).get("code"),
            origin=origin,
            forced=forced,
            # A key sent beside the arguments (an HTTP header): a replay needs it to answer a
            # retried write as the run did. A key sent among the arguments is in `args`.
            idempotency_key=None if checked is None else checked.idempotency_key,
        ).json_dict()
        self._sink(entry)
        if self.recorder is not None:
            # A framework call's answer stays in the harness: the recorder gets None.
            self.recorder.answered(entry, None if origin == "framework" else result)

    def _close_window(self) -> None:
        # An idempotency key of end_of_step is scoped to its window: once the window is closed,
        # the same key closes the next window rather than replaying "closed".
        store = self.memory.idempotency_store
        for key in [k for k, record in store.items() if record["tool"] == END_OF_STEP]:
            del store[key]
        self.memory.previous_window_t = self.engine.t
        self.memory.window_calls = 0
        self.memory.windows_closed += 1
        self._advance()

    def _advance(self) -> None:
        """The window is closed for this merchant: the market simulates its hours once every
        merchant has closed it."""
        self._waiting = True
        self.market_session._closed_by(self)

    def _window_opened(self, caller: bool) -> None:
        """The market opened the next window (or drained); the caller's own transcript is
        written by its `call`."""
        self._waiting = False
        self._view = None
        if not caller and self.recorder is not None:
            self.recorder.window_opened(self)

    # --- persistence ------------------------------------------------------------------------------
    def snapshot(self) -> bytes:
        """The market this session belongs to (for a store alone: engine and session memory).
        The trace is not included: `memory.seq` says how many entries had been emitted, so a
        resumed run drops any written after the snapshot."""
        return self.market_session.snapshot()

    def restore(self, blob: bytes) -> None:
        self.market_session.restore(blob)

    def _restored(
        self, memory: SessionMemory, waiting: bool, answered: AnswerLog | None = None
    ) -> None:
        self.memory = memory
        self._waiting = waiting
        self.answered.take(answered if answered is not None else AnswerLog())
        self._view = None
        self._end_requested = False

    def state_hash(self) -> str:
        """This merchant's store (a market's hash: `MarketSession.state_hash`)."""
        return self.engine.state_hash()


class MarketSession:
    """A market: its stores, the clock they share, and one `Session` per merchant.

    A store alone is a market of one whose engine advances itself (`sim.engine`); a market of
    several merchants advances them together (`sim.marketplace`; for one seller it is the same
    bit for bit). `snapshot()` of a store alone is its engine and its session memory, as it
    always was; of several, the marketplace and every merchant's memory."""

    def __init__(
        self,
        scenario: Scenario,
        market: Market,
        seed: int,
        merchants: Iterable[str],
        search_index: SearchIndex | None = None,
        trace_sinks: Mapping[str, TraceSink] | None = None,
    ) -> None:
        self.scenario = scenario
        self.market = market
        self.seed = seed
        self.marketplace: Marketplace | None = Marketplace(scenario, market, seed, merchants)
        self._alone: Engine | None = None
        self.search_index = search_index or SearchIndex.build(market)
        sinks = trace_sinks or {}
        self.sessions: dict[str, Session] = {}
        for merchant in self.marketplace.ids:
            self.sessions[merchant] = Session(
                scenario, market, seed, self.search_index, sinks.get(merchant),
                host=self, merchant=merchant,
            )  # fmt: skip

    @classmethod
    def alone(cls, session: Session) -> MarketSession:
        """The market of a store alone: `session` is its one merchant."""
        market = cls.__new__(cls)
        market.scenario, market.market, market.seed = session.scenario, session.market, session.seed
        market.marketplace = None
        market._alone = Engine(session.scenario, session.market, session.seed)
        market.search_index = session.search_index
        market.sessions = {session.merchant_id: session}
        return market

    @classmethod
    def open(
        cls,
        scenario: Scenario,
        seed: int,
        merchants: Iterable[str],
        catalog: Path | None = None,
        *,
        trace_sinks: Mapping[str, TraceSink] | None = None,
    ) -> MarketSession:
        """A market of `merchants` on the cached market (and search index) of `scenario` and
        `seed`, synthetic or of a real `catalog` directory."""
        market = get_market(scenario, seed, catalog=catalog)
        index = get_search_index(scenario, seed, market, catalog)
        return cls(scenario, market, seed, merchants, index, trace_sinks)

    def store(self, merchant: str) -> Engine:
        if self._alone is not None:
            return self._alone
        assert self.marketplace is not None
        return self.marketplace.merchant(merchant)

    @property
    def ids(self) -> list[str]:
        return list(self.sessions)

    def session(self, merchant: str) -> Session:
        return merchant_of(self.sessions, merchant)

    @property
    def over(self) -> bool:
        if self._alone is not None:
            return self._alone.state.drained
        assert self.marketplace is not None
        return self.marketplace.drained

    @property
    def window(self) -> int:
        return self._clock.window

    @property
    def _clock(self) -> Engine | Marketplace:
        """What runs the market's hours: the store alone's engine, or the marketplace."""
        clock = self._alone or self.marketplace
        assert clock is not None
        return clock

    def trading(self) -> list[str]:
        """Merchants with the window open to them (not closed for them, store not closed)."""
        return [m for m, s in self.sessions.items() if not s.over and not s.waiting]

    def close_window(self) -> None:
        """Close the window for every merchant still in it (`force_end_of_step`, recorded as
        forced): the hours then run."""
        for merchant in self.trading():
            self.sessions[merchant].force_end_of_step()

    def _closed_by(self, caller: Session) -> None:
        if self.trading():
            return
        clock = self._clock
        clock.advance()
        if clock.done:
            clock.finish()
        for session in self.sessions.values():
            session._window_opened(caller=session is caller)

    # --- persistence ------------------------------------------------------------------------------
    def snapshot(self) -> bytes:
        """The stores and every merchant's session memory (traces are not included: each
        memory's `seq` says how many entries its trace had)."""
        if self._alone is not None:
            [session] = self.sessions.values()
            saved: dict[str, Any] = {"engine": self._alone.snapshot(), "memory": session.memory}
            if session.answered.calls:  # the open window's keyed answers (none: older format)
                saved["answered"] = session.answered.to_json()
        else:
            assert self.marketplace is not None
            sessions = {m: (s.memory, s.waiting) for m, s in self.sessions.items()}
            saved = {"market": self.marketplace.snapshot(), "sessions": sessions}
        return pickle.dumps(saved, protocol=pickle.HIGHEST_PROTOCOL)

    def restore(self, blob: bytes) -> None:
        saved = pickle.loads(blob)
        if self._alone is not None:
            [session] = self.sessions.values()
            self._alone.restore(saved["engine"])
            answered = AnswerLog.from_json(saved.get("answered"))
            session._restored(saved["memory"], False, answered)
            return
        assert self.marketplace is not None
        sessions = saved.get("sessions") if isinstance(saved, dict) else None
        if not isinstance(sessions, dict) or sorted(sessions) != self.ids:
            raise MarketError("not a snapshot of this market's merchants")
        if not all(isinstance(m, SessionMemory) for m, _ in sessions.values()):
            raise MarketError("not a market snapshot")
        self.marketplace.restore(saved["market"])
        for merchant, session in self.sessions.items():
            memory, waiting = sessions[merchant]
            session._restored(memory, bool(waiting))

    def state_hash(self) -> str:
        return self._clock.state_hash()


def _key_of(checked: AgentInput) -> Any:
    """A call's idempotency key: given beside the arguments or inside them."""
    return checked.idempotency_key or checked.args.get(IDEMPOTENCY_KEY)

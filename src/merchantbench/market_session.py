"""The host side of a market with several merchants (docs/design.md §11): one session per merchant.

`MarketSession.open(scenario, seed, merchants)` builds the market (`sim.marketplace`) on the
cached catalog and search index, and a `MerchantSession` for every merchant id: a `Session`
in every respect an agent can see (brief, observation, status, tools, trace, transcript, its
own memory document, idempotency keys and call budget), whose engine is the merchant's store
in the shared market. Each merchant's agent gets its session's `surface`, and nothing else.

Windows are simultaneous. A merchant's `end_of_step` closes the window for it alone: its
session then waits (`waiting`; any call answers `window_closed` and changes nothing) until every
merchant still trading has closed the window, or its host closed it for it
(`force_end_of_step`). The last close simulates the window's hours for all and opens the next
window for all; each transcript notes its own observation then. What one merchant does in a
window shows to the others only from the next window (the board of offers is posted as a
window opens), so the order in which merchants act, or are waited for, changes nothing.

A closed merchant (its deposit ran out) is `over`: no more windows; its orders go on draining
with the market's hours. The market is `over` once every merchant is drained.

`snapshot()` / `restore()` cover the whole market at once (the stock is shared) and every
merchant's session memory; `state_hash()` is the market's (in a market of one, its store's).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from merchantbench.catalog.cache import get_market, get_search_index
from merchantbench.catalog.market import CatalogView, Market
from merchantbench.catalog.search import SearchIndex
from merchantbench.scenario import Scenario
from merchantbench.session import Session, SessionMemory
from merchantbench.sim.marketplace import MarketError, Marketplace
from merchantbench.sim.suppliers import stock_overrides

__all__ = ["MarketError", "MarketSession", "MerchantSession"]

TraceSink = Callable[[dict[str, Any]], None]


class MerchantSession(Session):
    """One merchant's session in a market (see the module docstring)."""

    def __init__(
        self, host: MarketSession, merchant: str, trace_sink: TraceSink | None = None
    ) -> None:
        super().__init__(
            host.scenario,
            host.market,
            host.seed,
            host.search_index,
            trace_sink,
            engine=host.marketplace.merchant(merchant),
        )
        self.merchant_id = merchant
        self._host = host
        self._waiting = False

    @property
    def waiting(self) -> bool:
        return self._waiting

    @property
    def over(self) -> bool:
        """No more windows for this merchant: the market is over, or its store closed."""
        state = self.engine.state
        return state.drained or state.closed

    def catalog_view(self) -> CatalogView:
        """The catalog at the current hour, with every merchant's purchases in the stock (the
        stock is the market's, so the single store's mirror of its own orders does not do)."""
        t = self.engine.t
        if self._view is None or self._view.hour != t:
            self._view = None
            units = stock_overrides(self.market, self.engine.state.stock, t)
            self._view = self._views.view_at(t, units)
        return self._view

    def _advance(self) -> None:
        self._waiting = True
        self._host._closed_by(self)

    def _window_opened(self, caller: bool) -> None:
        """The market opened the next window (or drained); the caller's own transcript is
        written by its `call`, as a store alone's is."""
        self._waiting = False
        self._view = None
        if not caller and self.recorder is not None:
            self.recorder.window_opened(self)

    def snapshot(self) -> bytes:
        raise MarketError("a merchant's session is snapshotted with its market")

    def restore(self, blob: bytes) -> None:
        raise MarketError("a merchant's session is restored with its market")


class MarketSession:
    """The host side of a market: the marketplace and one session per merchant."""

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
        self.marketplace = Marketplace(scenario, market, seed, merchants)
        self.search_index = search_index or SearchIndex.build(market)
        sinks = trace_sinks or {}
        self.sessions: dict[str, MerchantSession] = {
            merchant: MerchantSession(self, merchant, sinks.get(merchant))
            for merchant in self.marketplace.ids
        }

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

    @property
    def ids(self) -> list[str]:
        return list(self.sessions)

    def session(self, merchant: str) -> MerchantSession:
        found = self.sessions.get(merchant)
        if found is None:
            raise MarketError(f"no merchant {merchant!r} in this market")
        return found

    @property
    def over(self) -> bool:
        return self.marketplace.drained

    @property
    def window(self) -> int:
        return self.marketplace.window

    def trading(self) -> list[str]:
        """Merchants with the window open to them (not closed for them, store not closed)."""
        return [m for m, s in self.sessions.items() if not s.over and not s.waiting]

    def close_window(self) -> None:
        """Close the window for every merchant still in it (`force_end_of_step`, recorded as
        forced): the hours then run."""
        for merchant in self.trading():
            self.sessions[merchant].force_end_of_step()

    def _closed_by(self, caller: MerchantSession) -> None:
        if self.trading():
            return
        marketplace = self.marketplace
        marketplace.advance()
        if marketplace.done:
            marketplace.finish()
        for session in self.sessions.values():
            session._window_opened(caller=session is caller)

    # --- persistence ------------------------------------------------------------------------------
    def snapshot(self) -> bytes:
        """The market and every merchant's session memory (traces are not included: each
        memory's `seq` says how many entries its trace had)."""
        sessions = {m: (s.memory, s.waiting) for m, s in self.sessions.items()}
        return pickle.dumps(
            {"market": self.marketplace.snapshot(), "sessions": sessions},
            protocol=pickle.HIGHEST_PROTOCOL,
        )

    def restore(self, blob: bytes) -> None:
        saved = pickle.loads(blob)
        sessions = saved.get("sessions") if isinstance(saved, dict) else None
        if not isinstance(sessions, dict) or sorted(sessions) != self.ids:
            raise MarketError("not a snapshot of this market's merchants")
        self.marketplace.restore(saved["market"])
        for merchant, session in self.sessions.items():
            memory, waiting = sessions[merchant]
            if not isinstance(memory, SessionMemory):
                raise MarketError("not a market snapshot")
            session.memory = memory
            session._waiting = bool(waiting)
            session._view = None
            session._end_requested = False

    def state_hash(self) -> str:
        return self.marketplace.state_hash()

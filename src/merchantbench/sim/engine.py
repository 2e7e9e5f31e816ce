"""The simulation engine: one store on one market, advanced window by window.

The contract (docs/design.md §1):

- `Engine(scenario, market, seed)` opens the first window at t = 0. While a window is open the
  store may act: `list_products`, `delist_products`, `set_price`. Actions take effect from the
  current hour. Nothing is simulated while a window is open.
- `advance()` closes the window and simulates its hours t … t+H−1, each in this order:
  (1) supplier events due (looked up, never stored), (2) arrivals for every active listing and
  their procurement, (3) order transitions due, in (order id, step) order, (4) at hour 23 the
  end-of-day work: publish tomorrow's rating, (5) hourly samples. Then the next window opens.
- `done` is true once the horizon is reached or the store is closed; `finish()` then drains:
  no demand, every open order runs to its terminal state. The score is taken after draining.
- `snapshot()` / `restore()` reproduce the state exactly; `state_hash()` fingerprints it.

`state` starts a store from a state kept from earlier (the classic RL env's opening day),
as `restore` would, without the new store's state made first and thrown away.

A store alone may be given its market's supplier book and demand terms (`suppliers`, `demand`:
immutable facts, shared by the stores of one market in the classic RL env; a `demand` of the
same rules whose exposure table reaches at least `horizon` hours).

A store that is one merchant of a market with several (docs/design.md §11, `sim.marketplace`) is an
engine built with the market's `SharedParts` (supplier book, demand, supplier stock, what the
other sellers offer): its actions and tools are a single store's, and the market advances it.

The engine never reads a clock, never prints and never closes a window on its own.
"""

from __future__ import annotations

import heapq
import pickle
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter

import numpy as np

from merchantbench.catalog.market import Market
from merchantbench.scenario import Scenario
from merchantbench.sim.actions import ActionRejected, StoreActions
from merchantbench.sim.demand import StoreWindow, WindowDemand, window_arrivals
from merchantbench.sim.ledger import Ledger
from merchantbench.sim.lifecycle import Lifecycle
from merchantbench.sim.rating import RatingState
from merchantbench.sim.rivals import RivalView
from merchantbench.sim.state import Samples, StoreState
from merchantbench.sim.suppliers import SupplierBook

__all__ = ["ActionRejected", "Engine", "SharedParts", "advance_stores"]

# What an hourly sample records (`Engine._sample_values`).
_Sampled = tuple[int, int, int, int, float, int, int]
_FEW_CHANGES = 4  # up to this many changes held back are written slice by slice
_STRIDE = 8  # a change held back: its hour and the 7 sampled values, flat
_PRICE, _LISTED_T = attrgetter("price"), attrgetter("listed_t")  # of a listing


@dataclass(frozen=True, eq=False)
class SharedParts:
    """What the merchants of one market share (docs/design.md §11): the supplier book, the demand
    terms, the supplier stock (one dict, changed by every merchant's procurement) and the
    view of what the other sellers offer (`rivals`, one per merchant; None in a market of one,
    whose merchant sees exactly what a store alone sees)."""

    suppliers: SupplierBook
    demand: WindowDemand
    stock: dict[int, tuple[int, int]]
    rivals: RivalView | None


class Engine(StoreActions, Lifecycle):
    def __init__(
        self,
        scenario: Scenario,
        market: Market,
        seed: int,
        *,
        shared: SharedParts | None = None,
        suppliers: SupplierBook | None = None,
        demand: WindowDemand | None = None,
        state: StoreState | None = None,
    ) -> None:
        self.scenario = scenario
        self.market = market
        self.seed = seed
        self.window_hours = scenario.clock.hours_per_window
        self.horizon = scenario.clock.hours
        # The other sellers of the market, as a buyer sees them; None for a store alone.
        self.rivals: RivalView | None = None
        self.in_market = shared is not None  # a market's merchant: the market advances it
        if shared is None:
            # The market's supplier facts and demand terms: immutable, so stores on the same
            # market may share them (`suppliers`, `demand`; the classic RL env does).
            self.suppliers = SupplierBook(market) if suppliers is None else suppliers
            # A listing is at most `horizon` hours old while there is demand (listed at t ≥ 0).
            self.demand = (
                WindowDemand(market, scenario.demand, self.window_hours, self.horizon)
                if demand is None
                else demand
            )
            _check_parts(self, market, scenario)
            stock: dict[int, tuple[int, int]] = {}
        else:
            self.suppliers, self.demand, stock = shared.suppliers, shared.demand, shared.stock
            self.rivals = shared.rivals
        # The hourly samples not written yet: the changes, in hour order, each an hour from
        # which the sampled quantities (`_sample_values` order) have values, until the next
        # one or the clock, as one flat list (hour, 7 values, hour, …: no object a change,
        # for the garbage collector to follow); and the last values (None: all written).
        self._unsampled: tuple[list[int | float], _Sampled] | None = None
        # The listings as a window reads them (`_window`): products ascending, their prices
        # and listing hours; None once a listing comes or goes (a reprice replaces its price).
        self._listed: tuple[list[int], list[int], list[int]] | None = None
        self._spans = {}  # per product, the supplier's last span looked up (facts: never stale)
        self._columns: tuple[Samples, list[np.ndarray]] | None = None  # `_sample_columns`
        if state is not None:  # a store's state kept from earlier (`restore` without a pickle)
            self._state = state
            return
        money = scenario.money
        self._state = StoreState(
            t=0,
            ledger=Ledger(money.initial_balance_fen, money.initial_deposit_fen),
            rating=RatingState.initial(scenario.rating),
            samples=Samples.empty(self.horizon, scenario.clock.days),
            stock=stock,
        )
        self._state.samples.daily_rating[0] = self._state.rating.published
        self._state.samples.daily_stars[0] = self._state.rating.stars

    # --- state ---------------------------------------------------------------------------------
    @property
    def state(self) -> StoreState:
        """The store's state, its hourly samples written up to the clock."""
        if self._unsampled is not None:
            self._write_samples()
        return self._state

    @state.setter
    def state(self, state: StoreState) -> None:
        self._write_samples()  # (the state given up has its samples, as a reader would see)
        self._state, self._unsampled, self._listed = state, None, None

    @property
    def live(self) -> StoreState:
        """The store's state as `state` gives it, but for the hourly samples of the hours
        since a reader of `state` last met it, which are not written yet (held back as the
        hours at which the sampled quantities changed, `_unsampled`): for readers of anything
        but `samples`, between windows (the classic RL env)."""
        return self._state

    def _write_samples(self) -> None:
        """Write the hourly samples not written yet (`_unsampled`: up to the clock)."""
        if self._unsampled is None:
            return
        changes, self._unsampled = self._unsampled[0], None
        _write_changes(self._sample_columns(), changes, self._state.t)

    # --- clock ---------------------------------------------------------------------------------
    @property
    def t(self) -> int:
        return self._state.t

    @property
    def day(self) -> int:
        return min(self._state.t, self.horizon - 1) // 24

    @property
    def window(self) -> int:
        return self._state.t // self.window_hours

    @property
    def done(self) -> bool:
        state = self._state
        return state.t >= self.horizon or state.closed

    # --- time ----------------------------------------------------------------------------------
    def advance(self) -> None:
        """Close the open window and simulate its hours; the next window opens after."""
        advance_stores((self,))

    def _window(self) -> StoreWindow:
        """The open window's listings as the arrivals read them (none once closed)."""
        if self.done:
            raise RuntimeError("the run is over: call finish()")
        if self.in_market:
            raise RuntimeError("a merchant of a market: the market advances its hours")
        state = self._state
        listed = self._listed
        if listed is None:
            listings = state.listings
            products = [] if state.closed or not listings else sorted(listings)
            items = list(map(listings.__getitem__, products))
            listed = self._listed = (
                products,
                list(map(_PRICE, items)),
                list(map(_LISTED_T, items)),
            )
        return StoreWindow(self.demand, self.seed, state.t, *listed, state.rating.multiplier)

    def _play_window(self, products: list[int], cells: list[tuple[int, int]]) -> None:
        """Simulate the open window's hours given its arrivals (`window_arrivals`' cells).

        The sampled quantities are held back as the hours at which they change
        (`_unsampled`) and written when anyone reads `state` (`_write_samples`), so a window
        writes no sample: an hour's work (or the actions before the window) that changes one
        adds (hour, the state as it stands)."""
        state = self._state
        t0 = t = state.t
        end = t0 + self.window_hours
        values = self._sample_values()
        if self._unsampled is None:
            changes: list[int | float] = [t0, *values]
        else:
            (changes, last), self._unsampled = self._unsampled, None  # (not written meanwhile)
            if values != last:  # the actions before the window changed a quantity
                changes.append(t0)
                changes += values
        pending = state.pending
        day_end = t0 + 23 - t0 % 24  # the next hour 23
        if cells or day_end < end or (pending and pending[0][0] < end):
            arrivals: dict[int, list[tuple[int, int]]] = {}  # hour → (listing, count)
            hours = self.window_hours
            for cell, count in cells:
                j, k = divmod(cell, hours)
                arrivals.setdefault(t0 + k, []).append((j, count))
            busy = sorted(arrivals, reverse=True)  # the hours with arrivals, the next one last
            while True:
                # The next hour in which something happens: arrivals, a transition due, the
                # day's end; the hours between are quiet (their samples: the state as it
                # stands).
                t_next = day_end
                if busy and busy[-1] < t_next:
                    t_next = busy[-1]
                if pending and pending[0][0] < t_next:
                    t_next = max(t, pending[0][0])
                t = t_next
                if t >= end:
                    break
                if busy and busy[-1] == t:
                    busy.pop()
                    for j, count in arrivals[t]:
                        if state.closed:
                            break
                        self._arrivals(products[j], t, count)
                if pending and pending[0][0] <= t:
                    self._transitions_due(t)
                if t == day_end:
                    self._end_of_day(t)
                    day_end += 24
                now = self._sample_values()
                if now != values:  # the hours before this one had the state before
                    values = now
                    changes.append(t)
                    changes += now
                t += 1
        state.t = end
        self._unsampled = (changes, values)

    def finish(self) -> None:
        """Drain: simulate what is left of the horizon without demand, then run every open order
        to its end. Idempotent."""
        if self._state.drained:
            return
        self._write_samples()
        while self._state.t < self.horizon:
            t = self._state.t
            self._transitions_due(t)
            if t % 24 == 23:
                self._end_of_day(t)
            self._sample(t, t + 1)
            self._state.t += 1
        while self._state.pending:
            self._transitions_due(self._state.pending[0][0])
        self._state.drained = True

    def run_idle(self) -> None:
        """Advance to the end with no actions, then drain (for tests and benchmarks)."""
        while not self.done:
            self.advance()
        self.finish()

    def _transitions_due(self, t: int) -> None:
        pending = self._state.pending
        while pending and pending[0][0] <= t:
            hour, order_id, step = heapq.heappop(pending)
            self._step(hour, order_id, step)

    def _end_of_day(self, t: int) -> None:
        rating = self._state.rating
        rating.publish(self.scenario.rating)
        day = t // 24 + 1
        samples = self._state.samples
        if day < len(samples.daily_rating):
            samples.daily_rating[day] = rating.published
            samples.daily_stars[day] = rating.stars

    def _sample_values(self) -> _Sampled:
        """What an hourly sample records: the state as it stands."""
        state = self._state
        a, rating = state.ledger.accounts, state.rating
        return (
            a.balance,
            a.deposit,
            a.in_transit,
            a.receivable,
            rating.published,
            rating.stars,
            len(state.listings),
        )

    def _sample_columns(self) -> list[np.ndarray]:
        """The hourly sample arrays, in `_sample_values` order (kept per samples object: the
        arrays of a `Samples` are never replaced, only written)."""
        s = self._state.samples
        kept = self._columns
        if kept is None or kept[0] is not s:
            kept = self._columns = (s, [
                s.balance, s.deposit, s.in_transit, s.receivable, s.rating, s.stars,
                s.active_listings,
            ])  # fmt: skip
        return kept[1]

    def _sample(self, start: int, end: int) -> None:
        """The hourly samples of hours start … end − 1: the state as it stands."""
        for column, value in zip(self._sample_columns(), self._sample_values(), strict=True):
            column[start:end] = value

    # --- persistence ---------------------------------------------------------------------------
    def snapshot(self) -> bytes:
        return pickle.dumps(self.state, protocol=pickle.HIGHEST_PROTOCOL)

    def restore(self, blob: bytes) -> None:
        state = pickle.loads(blob)
        if not isinstance(state, StoreState):
            raise TypeError("not an engine snapshot")
        self.state = state

    def state_hash(self) -> str:
        return self.state.digest()


def _write_changes(columns: list[np.ndarray], changes: list[int | float], end: int) -> None:
    """Write the hourly samples of `changes` (`Engine._unsampled`'s flat list) up to hour
    `end`: a few changes slice by slice, each quantity from where its value changed; many as
    each quantity's values repeated over their hours, one slice (the same values, converted
    to the column's type as a slice assignment converts them)."""
    hours = changes[::_STRIDE]
    if len(hours) <= _FEW_CHANGES:
        for f, column in enumerate(columns, start=1):
            values = changes[f::_STRIDE]
            since, value = hours[0], values[0]
            for hour, now in zip(hours, values, strict=True):
                if now != value:
                    column[since:hour] = value
                    since, value = hour, now
            column[since:end] = value
        return
    lengths = np.diff([*hours, end])
    for f, column in enumerate(columns, start=1):
        column[hours[0] : end] = np.array(changes[f::_STRIDE], dtype=column.dtype).repeat(lengths)


def _check_parts(engine: Engine, market: Market, scenario: Scenario) -> None:
    """Refuse supplier facts or demand terms given for another market, other rules or a shorter
    horizon than the store's."""
    demand, rows = engine.demand, len(engine.demand._exposure_rows)
    if (
        engine.suppliers.market is not market
        or demand.market is not market
        or (demand.config is not scenario.demand and demand.config != scenario.demand)
        or demand.hours != engine.window_hours
        or rows < engine.horizon - engine.window_hours + 2  # ages 0 … horizon − hours
    ):
        raise ValueError("the supplier book or demand terms are not this store's market's")


def advance_stores(engines: Sequence[Engine]) -> None:
    """Advance each store one window: close its open window and simulate its hours. The
    arrivals of all of them are computed together (`demand.window_arrivals`: one set of array
    operations per market), then each store's hours run in turn. `Engine.advance` is this with
    one store, so a store stepped in a batch runs the same code as one stepped alone (the same
    state, tests/sim/test_advance_stores.py)."""
    windows = [engine._window() for engine in engines]
    for engine, window, cells in zip(engines, windows, window_arrivals(windows), strict=True):
        engine._play_window(window.products, cells)

"""Stores advanced together (`engine.advance_stores`: the arrivals of all computed in one set of
array operations per market) end in the same state, window by window, as each advanced alone."""

from __future__ import annotations

import numpy as np
import pytest

from merchantbench.catalog.cache import get_market
from merchantbench.scenario import load_scenario
from merchantbench.sim.demand import WindowDemand
from merchantbench.sim.engine import ActionRejected, Engine, advance_stores
from merchantbench.sim.suppliers import YearBook


def _stores(seeds: list[int], scenario_name: str = "smoke") -> list[Engine]:
    scenario = load_scenario(scenario_name)
    return [Engine(scenario, get_market(scenario, seed), seed) for seed in seeds]


def _act(engine: Engine, rng: np.random.Generator) -> None:
    """A random change of listings: list, reprice or delist a few of the first products."""
    for product in rng.choice(40, size=4, replace=False).tolist():
        price = int(rng.integers(300, 6000))
        try:
            if product in engine.state.listings:
                if rng.random() < 0.3:
                    engine.delist_products([product])
                else:
                    engine.set_price(product, price)
            else:
                engine.list_products([(product, price)])
        except ActionRejected:
            pass


def _lockstep(batch: list[Engine], alone: list[Engine], windows: int) -> None:
    """Up to `windows` windows: the same random actions on each pair, the batch's live stores
    advanced together and their twins one by one; every pair ends each window in one state."""
    rngs = [np.random.default_rng(i) for i in range(len(batch))]
    twins = [np.random.default_rng(i) for i in range(len(batch))]
    for _ in range(windows):
        live = [i for i, engine in enumerate(batch) if not engine.done]
        if not live:
            break
        for i in live:
            _act(batch[i], rngs[i])
            _act(alone[i], twins[i])
        advance_stores([batch[i] for i in live])
        for i in live:
            alone[i].advance()
            assert batch[i].state_hash() == alone[i].state_hash(), f"store {i} at {batch[i].t}"


@pytest.mark.parametrize("scenario_name", ["smoke"])
def test_stores_advanced_together_match_each_alone(scenario_name: str) -> None:
    # Two markets (seeds 1 and 2), two stores on seed 1 started apart: groups of one and two.
    seeds = [1, 2, 1, 1]
    batch, alone = _stores(seeds, scenario_name), _stores(seeds, scenario_name)
    for engine in (batch[3], alone[3]):  # a store opening later: other hours, other ages
        for _ in range(5):
            engine.advance()
    _lockstep(batch, alone, 40)
    orders = sum(len(engine.state.orders) for engine in batch)
    assert orders > 20  # arrivals happened, in more than one store
    assert sum(1 for engine in batch if engine.state.orders) >= 3


def test_advance_stores_refuses_a_finished_store() -> None:
    (engine,) = _stores([1])
    engine.run_idle()
    with pytest.raises(RuntimeError, match="the run is over"):
        advance_stores([engine])


def test_stores_sharing_their_markets_parts_match_stores_alone() -> None:
    """Engines given their market's parts (`suppliers=YearBook`, `demand` tabulated over the
    whole year: the classic RL env's engines, on two markets and horizons of 40 and 70 days,
    advanced together) end every window as plain engines advanced one by one."""
    base = load_scenario("smoke")
    scenarios = [
        base.model_copy(update={"clock": base.clock.model_copy(update={"days": days})})
        for days in (40, 70)
    ]
    seeds = [1, 2, 1, 2]
    markets = {seed: get_market(base, seed) for seed in (1, 2)}
    parts = {
        seed: (
            YearBook(market),
            WindowDemand(market, base.demand, base.clock.hours_per_window, market.days * 24),
        )
        for seed, market in markets.items()
    }
    shared, alone = [], []
    for i, seed in enumerate(seeds):
        scenario = scenarios[i % 2]
        book, demand = parts[seed]
        shared.append(Engine(scenario, markets[seed], seed, suppliers=book, demand=demand))
        alone.append(Engine(scenario, markets[seed], seed))
    _lockstep(shared, alone, 60)
    assert sum(len(engine.state.orders) for engine in shared) > 20


def test_parts_of_another_market_or_a_shorter_horizon_are_refused() -> None:
    scenario = load_scenario("smoke")
    one, two = get_market(scenario, 1), get_market(scenario, 2)
    hours = scenario.clock.hours_per_window
    short = WindowDemand(one, scenario.demand, hours, 24 * 10)
    for parts in (
        {"suppliers": YearBook(two)},
        {"demand": WindowDemand(two, scenario.demand, hours, scenario.clock.hours)},
        {"demand": short},
    ):
        with pytest.raises(ValueError, match="not this store's market's"):
            Engine(scenario, one, 1, **parts)  # type: ignore[arg-type]
    exact = WindowDemand(one, scenario.demand, hours, scenario.clock.hours)
    Engine(scenario, one, 1, suppliers=YearBook(one), demand=exact).run_idle()

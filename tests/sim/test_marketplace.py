"""Markets with several merchants (docs/design.md §11): a market of one is the single store bit for
bit, order of merchants changes nothing, demand is shared (β large) or independent (β = 1), the
supplier stock is shared and won by the draws, and what one merchant does in a window shows to
another only from the next window."""

from __future__ import annotations

import numpy as np
import pytest
from sim_support import make_market, tiny_scenario

from merchantbench.scenario import MarketConfig, Scenario
from merchantbench.sim.engine import Engine
from merchantbench.sim.marketplace import MarketError, Marketplace, seller_shares


def with_beta(scenario: Scenario, beta: float) -> Scenario:
    market = scenario.market.model_copy(update={"seller_substitution": beta})
    return scenario.model_copy(update={"market": market})


def steady(scenario: Scenario, beta: float) -> Scenario:
    """β, and stars that do not move demand: a seller with more orders earns a better rating
    and with it more buyers, which is the game, but not what these tests measure."""
    rating = scenario.rating.model_copy(update={"star_multipliers": (1.0,) * 5})
    return with_beta(scenario, beta).model_copy(update={"rating": rating})


def _actions(engine: Engine, window: int) -> None:
    """A fixed script: list every product at staggered prices, reprice one, delist one."""
    if window == 0:
        engine.list_products([(p, 1500 + 100 * p) for p in range(engine.market.n_products)])
    elif window == 6:
        engine.set_price(1, 1300)
    elif window == 10:
        engine.delist_products([2])
    elif window == 14:
        engine.list_products([(2, 1600)])


def _play_store(scenario, market, seed) -> Engine:
    engine = Engine(scenario, market, seed)
    while not engine.done:
        _actions(engine, engine.window)
        engine.advance()
    engine.finish()
    return engine


def test_a_market_of_one_is_the_single_store_bit_for_bit(scenario):
    market = make_market(n=4, demand=30.0, stock_capacity=40, stock_refill=1,
                         risks={"cancel": 0.05, "return": 0.05, "bad_review": 0.1})  # fmt: skip
    alone = _play_store(scenario, market, 7)
    place = Marketplace(scenario, market, 7, ["solo"])
    solo = place.merchant("solo")
    while not place.done:
        _actions(solo, place.window)
        place.advance()
    place.finish()
    assert len(alone.state.orders) > 100
    assert place.state_hash() == alone.state_hash() == solo.state_hash()


def _two_merchants(scenario, market, ids, seed=3, order=("a", "b")):
    place = Marketplace(scenario, market, seed, ids)
    while not place.done:
        for merchant in order:  # who acts first in a window must not matter
            engine = place.merchant(merchant)
            if place.window == 0:
                price = 1400 if merchant == "a" else 1550
                engine.list_products([(p, price) for p in range(market.n_products)])
            elif place.window == 8 and merchant == "b":
                engine.set_price(0, 1350)
        place.advance()
    place.finish()
    return place


def test_the_order_of_merchants_changes_nothing(scenario):
    scenario = with_beta(scenario, 4.0)
    market = make_market(n=3, demand=20.0, stock_capacity=30, stock_refill=1)
    first = _two_merchants(scenario, market, ["a", "b"], order=("a", "b"))
    second = _two_merchants(scenario, market, ["b", "a"], order=("b", "a"))
    assert first.state_hash() == second.state_hash()
    for merchant in ("a", "b"):
        assert first.merchant(merchant).state_hash() == second.merchant(merchant).state_hash()
    both = [len(first.merchant(m).state.orders) for m in ("a", "b")]
    assert min(both) > 0  # both sold: the test compares real competition
    # Snapshot and restore reproduce the market exactly (the stock stays shared).
    blob = first.snapshot()
    other = Marketplace(scenario, market, 3, ["a", "b"])
    other.restore(blob)
    assert other.state_hash() == first.state_hash()
    assert other.merchant("a").state.stock is other.merchant("b").state.stock


def test_merchant_ids_are_checked(scenario):
    market = make_market(n=2)
    for ids in ([], ["a", "a"], ["A"], ["../x"], [""]):
        with pytest.raises(MarketError):
            Marketplace(scenario, market, 1, ids)


def _arrivals(scenario, market, merchants: int, seed: int, prices=None) -> list[int]:
    """Orders (every arrival, procured or not) of each of `merchants` equal sellers of
    product 0, listed at hour 0."""
    ids = [f"m{k}" for k in range(merchants)]
    place = Marketplace(scenario, market, seed, ids)
    for k, merchant in enumerate(ids):
        price = 1500 if prices is None else prices[k]
        place.merchant(merchant).list_products([(0, price)])
    while not place.done:
        place.advance()
    return [len(place.merchant(m).state.orders) for m in ids]


SEEDS = range(1, 31)


def test_beta_large_shares_a_products_buyers_among_its_sellers(scenario):
    """With β large and M equal sellers, the product's expected orders do not grow with M
    (Λ = M^(1/β) · λ), and each seller gets about 1/M of them."""
    market = make_market(n=1, demand=12.0, stock_capacity=10_000, stock_refill=100)
    shared = steady(scenario, 50.0)
    one = sum(sum(_arrivals(shared, market, 1, s)) for s in SEEDS)
    four = [_arrivals(shared, market, 4, s) for s in SEEDS]
    total_four = sum(map(sum, four))
    assert one > 1000
    assert 0.97 <= total_four / one <= 1.06  # M^(1/β) = 4^(1/50) ≈ 1.028
    per_merchant = np.sum(four, axis=0) / total_four
    assert np.all(np.abs(per_merchant - 0.25) < 0.04)
    # With β = 1 the same four sellers each have their own single-store demand: 4 × as many.
    independent = sum(sum(_arrivals(steady(scenario, 1.0), market, 4, s)) for s in SEEDS)
    assert 3.8 <= independent / one <= 4.2


def test_beta_one_gives_each_merchant_its_single_store_intensity(scenario):
    """β = 1: a merchant's orders, beside a cheaper rival, are distributed as its single-store
    orders (the artifact's independent demand): equal means over seeds, within sampling error."""
    market = make_market(n=1, demand=6.0, stock_capacity=10_000, stock_refill=100)
    scenario = steady(scenario, 1.0)
    in_market = np.array([_arrivals(scenario, market, 2, s, prices=[1300, 1700])[1] for s in SEEDS])
    alone = np.array([_arrivals(scenario, market, 1, s + 1000, prices=[1700])[0] for s in SEEDS])
    assert alone.mean() > 20
    spread = np.sqrt(in_market.var(ddof=1) / len(SEEDS) + alone.var(ddof=1) / len(SEEDS))
    assert abs(in_market.mean() - alone.mean()) < 3.5 * spread


def test_beta_large_gives_the_better_offer_most_buyers(scenario):
    market = make_market(n=1, demand=12.0, stock_capacity=10_000, stock_refill=100)
    shared = steady(scenario, 4.0)
    cheap, dear = np.sum([_arrivals(shared, market, 2, s, prices=[1400, 1600]) for s in SEEDS], 0)
    # Shares ∝ (p^−ε)^β: (1600/1400)^(3·4) ≈ 5.0 times as many orders for the cheaper seller.
    assert 4.0 < cheap / dear < 6.2


def test_seller_shares_are_exact_for_one_seller_and_safe_for_big_beta():
    lam = np.array([[0.0, 0.5, 2.0]])
    total, share = seller_shares(lam, 30.0)
    assert np.allclose(total, [0.0, 0.5, 2.0]) and np.all(share == 1.0)
    lam = np.array([[1e-3, 5.0], [2e-3, 5.0]])
    total, share = seller_shares(lam, 50.0)
    assert np.all(np.isfinite(total)) and np.allclose(share.sum(axis=0), 1.0)
    assert np.isclose(total[1], 5.0 * 2 ** (1 / 50))


def test_shared_stock_goes_by_the_draws_not_by_merchant_order(scenario):
    """Two equal merchants on a product with little stock: every unit is sold once, the
    stockouts fall on both, and who gets the units varies with the seed, not the id."""
    market = make_market(n=1, demand=48.0, stock_capacity=6, stock_refill=0)
    shared = with_beta(scenario, 4.0)
    won = []
    for seed in range(1, 41):
        place = Marketplace(shared, market, seed, ["a", "b"])
        for merchant in ("a", "b"):
            place.merchant(merchant).list_products([(0, 1500)])
        while not place.done:
            place.advance()
        orders = {m: place.merchant(m).state.orders for m in ("a", "b")}
        procured = {m: sum(o.cost > 0 for o in orders[m]) for m in orders}
        assert sum(procured.values()) == 6  # the stock is one: six units in all
        won.append(procured["a"])
        stockouts = sum(o.cost == 0 for o in orders["a"] + orders["b"])
        assert stockouts > 0
    share_a = sum(won) / (6 * len(won))
    assert 0.35 < share_a < 0.65
    assert len(set(won)) > 2


def test_what_a_merchant_sees_of_another_is_the_windows_opening_board(scenario):
    market = make_market(n=2)
    place = Marketplace(with_beta(scenario, 4.0), market, 1, ["a", "b"])
    a, b = place.merchant("a"), place.merchant("b")
    assert a.rivals is not None and b.rivals is not None
    a.list_products([(0, 1450)])
    assert b.rivals.of(0) == []  # listed in this window: shown from the next
    place.advance()
    (offer,) = b.rivals.of(0)
    assert (offer.price_fen, offer.stars) == (1450, 4)
    assert a.rivals.of(0) == []  # never one's own
    a.set_price(0, 1390)
    assert b.rivals.of(0)[0].price_fen == 1450
    place.advance()
    assert b.rivals.of(0)[0].price_fen == 1390
    assert Marketplace(scenario, market, 1, ["solo"]).merchant("solo").rivals is None


def test_the_market_advances_its_merchants_not_they_themselves(scenario):
    place = Marketplace(scenario, make_market(n=1), 1, ["a", "b"])
    with pytest.raises(RuntimeError):
        place.merchant("a").advance()


def test_beta_is_left_out_of_a_scenario_that_does_not_set_it(scenario):
    assert "seller_substitution" not in scenario.model_dump()["market"]
    competing = with_beta(scenario, 3.0)
    assert competing.model_dump()["market"]["seller_substitution"] == 3.0
    assert competing.content_hash != scenario.content_hash
    assert MarketConfig().generator_inputs == MarketConfig(seller_substitution=3.0).generator_inputs


def test_tiny_scenario_helper_keeps_beta_one():
    assert tiny_scenario().market.seller_substitution == 1.0

"""The synthetic market generator (docs/design.md §3): `generate_market(scenario, seed) -> Market`.

A pure function of (scenario, seed), vectorised in numpy. Bulk randomness comes from Philox
generators keyed by (seed, part), one part per concern (`catalog.parts`), so a change in one part
(say titles) never shifts another (say demand). Supplier events use the counter-based streams of
`catalog.events`.

The generative story, in order, one module per stage:

1. `catalog.population`: suppliers own heavy-tailed numbers of products and have a main
   category, a main product type and a hidden quality; products inherit most of their
   supplier's quality. Traps are chosen mostly among low-quality products.
2. `catalog.offers`: hidden order-outcome risks, the public ratings and trust signals
   (`catalog.trust_signals`) and the ship hours all follow quality, with noise. Prices: a
   log-normal reference price with category and type levels; a margin from a per-category
   sub-range; elasticity 1/m, so the reference price is the profit-maximising price. Traps have
   a low cost against their reference price and high return and bad-review risk.
3. `catalog.trajectories`: each product type's demand shape over the year; each product's
   launch and fade-out.
4. `catalog.events`: supplier events, from their stationary state at the start of the history.
5. `catalog.market_demand`: demand = base × type trajectory × calendar × weekday × product life
   × daily noise (an AR(1) log-normal), traps selling strongly; realised market sales are
   Poisson draws of the market's demand while the supplier lists the product
   (`market_sales_cum`).
6. Here: titles, public ids and names, then the market. For a seed of the sealed range every
   stream is keyed by a keyed hash of the seed, and public ids are keyed hashes themselves
   (`merchantbench.seeds`, docs/design.md §10).

Every constant of these modules is a modelling choice recorded in docs/catalog.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.random import Generator

from merchantbench.catalog import calendar, offers, vocab
from merchantbench.catalog.events import delisted_hours_by_day, from_hour_zero, supplier_history
from merchantbench.catalog.market import Market
from merchantbench.catalog.market_demand import Progress, demand_and_sales, demand_plan
from merchantbench.catalog.population import (
    Products,
    Suppliers,
    choose_traps,
    draw_products,
    draw_suppliers,
    type_table,
)
from merchantbench.random_streams import Part, part_rng
from merchantbench.scenario import MarketConfig, Scenario
from merchantbench.seeds import is_sealed_range, keyed_values

__all__ = ["Progress", "generate_market"]


OFFER_ID_BASE, OFFER_ID_SPAN = 600_000_000_000, 300_000_000_000  # 12-digit offer ids
MEMBER_ID_BASE, MEMBER_ID_SPAN = 2_200_000_000_000, 100_000_000_000  # "b2b-" + 13 digits


def _public_ids(seed: int, n: int, n_suppliers: int) -> tuple[np.ndarray, np.ndarray, Generator]:
    """12-digit offer ids and "b2b-…" member ids, unique and unrelated to index order, and the
    stream the supplier names are drawn from.

    A sealed-range seed's ids are keyed hashes of (seed, position) (`seeds.keyed_values`), so
    they say nothing about the seed, and its names have the "ids" stream (keyed by a keyed hash)
    to themselves. A public seed's ids are, as they always were, the first draws of its "ids"
    stream, the names the next ones: anyone can rebuild a public market anyway.
    """
    rng = part_rng(seed, Part.IDS)
    if is_sealed_range(seed):
        offer = np.array(keyed_values(seed, "offer-id", n, OFFER_ID_SPAN), dtype=np.int64)
        member = np.array(keyed_values(seed, "member-id", n_suppliers, MEMBER_ID_SPAN))
    else:
        offer = rng.choice(OFFER_ID_SPAN, size=n, replace=False)
        member = rng.choice(MEMBER_ID_SPAN, size=n_suppliers, replace=False)
    offer_ids = (OFFER_ID_BASE + offer).astype("<U12")
    member_ids = np.char.add("b2b-", (MEMBER_ID_BASE + member.astype(np.int64)).astype("<U13"))
    return offer_ids, member_ids, rng


def _texts(
    seed: int,
    m: MarketConfig,
    prod: Products,
    sup: Suppliers,
    types: list[vocab.ProductType],
    type_cat: np.ndarray,
) -> dict[str, np.ndarray]:
    """Titles, type names, public ids and supplier names."""
    type_names = [t.name for t in types]
    vocabs = [vocab.category_vocab(c) for c in m.categories]
    title_rng = part_rng(seed, Part.TITLE_WORDS)
    titles = vocab.compose_titles(title_rng, vocabs, prod.type_id, type_cat, type_names)
    product_ids, supplier_ids, name_rng = _public_ids(seed, m.n_products, m.n_suppliers)
    return {
        "titles": titles,
        "type_names": np.array(type_names, dtype=str),
        "product_ids": product_ids,
        "supplier_ids": supplier_ids,
        "supplier_names": vocab.compose_supplier_names(name_rng, sup.main_category, m.categories),
    }


def generate_market(scenario: Scenario, seed: int, progress: Progress | None = None) -> Market:
    """Generate the synthetic market of a scenario: a pure function of (scenario, seed).

    Args:
        scenario: the scenario (its `market`, `suppliers`, `orders` and `clock` parts are used).
        seed: the market seed.
        progress: called as progress(stage, fraction done) while building.

    Returns:
        The market, with `calendar.HISTORY_DAYS` rows of history before day 0.
    """
    report = progress or (lambda stage, done: None)
    m = scenario.market
    report("suppliers", 0.0)
    sup = draw_suppliers(part_rng(seed, Part.SUPPLIERS), m)
    supplier_signals = offers.supplier_signals(part_rng(seed, Part.SUPPLIER_SIGNALS), sup)
    report("products", 0.05)
    prod = draw_products(part_rng(seed, Part.PRODUCTS), m, sup)
    is_trap = choose_traps(part_rng(seed, Part.TRAPS), m, prod.quality)
    prices = offers.prices(part_rng(seed, Part.PRICES), m, prod, is_trap)
    risks = offers.risks(part_rng(seed, Part.RISKS), prod.quality, is_trap)
    signals = offers.product_signals(part_rng(seed, Part.PRODUCT_SIGNALS), scenario, prod, is_trap)
    report("titles", 0.1)
    types, type_cat = type_table(part_rng(seed, Part.TITLES), m)
    texts = _texts(seed, m, prod, sup, types, type_cat)
    report("events", 0.15)
    history = supplier_history(seed, scenario.suppliers, m.n_products, m.days * 24)
    delisted = delisted_hours_by_day(history["delisting"], m.n_products, m.days)
    plan = demand_plan(scenario, seed, prod, is_trap, types, type_cat, prices["p_ref_fen"])
    demand, sales_cum = demand_and_sales(plan, m, seed, delisted, report)
    events = {
        channel: from_hour_zero(channel_events) for channel, channel_events in history.items()
    }
    columns: dict[str, Any] = {**prices, **risks, **signals, **supplier_signals, **texts}
    market = Market(
        n_products=m.n_products,
        n_suppliers=m.n_suppliers,
        days=scenario.market.days,
        history_days=calendar.HISTORY_DAYS,
        categories=tuple(m.categories),
        category=prod.category.astype(np.int16),
        supplier=prod.supplier.astype(np.int32),
        launch_day=plan.launch,
        market_sales_cum=sales_cum,
        demand=demand,
        type_id=prod.type_id.astype(np.int32),
        is_trap=is_trap,
        events=events,
        supplier_product_count=sup.size.astype(np.int32),
        hourly_weights=calendar.hourly_weights(m.categories),
        ship_extra_hours=calendar.ship_extra_hours(
            scenario.clock.start_date,
            scenario.market.days,
            scenario.suppliers.spring_festival_extra_ship_hours,
        ),
        **columns,
    )
    report("done", 1.0)
    return market

"""The expert operator: it acts through the session's tools alone, reacts to supplier events and
order outcomes as documented, and its learning parts recover what they estimate."""

from __future__ import annotations

import math
import pickle
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from merchantbench.agents.baselines.expert import (
    DemandCurve,
    ElasticityTrial,
    ExpertAgent,
    Holding,
    RiskBook,
)
from merchantbench.agents.registry import AgentConfigError, make_agent
from merchantbench.session import Session

sys.path.insert(0, str(Path(__file__).parents[1] / "tools"))
from store_market import new_session  # noqa: E402


class ToolsOnly:
    """A session as an agent may use it: the tools (`call`), the brief, the observation, the
    window and whether the run is over. Any other attribute fails the test."""

    ALLOWED = frozenset({"call", "brief", "observation", "window", "over"})

    def __init__(self, session: Any) -> None:
        object.__setattr__(self, "_session", session)

    def __getattribute__(self, name: str) -> Any:
        if name not in ToolsOnly.ALLOWED:
            raise AssertionError(f"the agent reached session.{name}, not a tool")
        return getattr(object.__getattribute__(self, "_session"), name)


def _run_expert(agent: ExpertAgent, session: Session, until_hour: int) -> None:
    proxy = ToolsOnly(session.surface)
    while not session.over and session.engine.t < until_hour:
        window = session.window
        agent.act(proxy)  # type: ignore[arg-type]
        assert session.window == window + 1 or session.over  # it closed its own window


@pytest.fixture(scope="module")
def fortnight() -> tuple[ExpertAgent, Session]:
    """The expert run for the whole 14 days of the hand-made store market (tests/tools)."""
    agent, session = make_agent("expert"), new_session()
    assert isinstance(agent, ExpertAgent)
    _run_expert(agent, session, until_hour=10_000)
    return agent, session


def _calls(session: Session, tool: str) -> list[dict[str, Any]]:
    return [e for e in session.trace if e["tool"] == tool and e["ok"]]


def test_the_expert_acts_through_the_session_tools_only(fortnight):
    agent, session = fortnight
    assert session.over and session.memory.windows_closed == 28
    assert not any(e["forced"] for e in session.trace)
    listed = {i["product_id"] for e in _calls(session, "list_product") for i in e["args"]["items"]}
    assert {"P1002", "P1003", "P1004"} <= listed  # the trusted, selling products
    assert "P1000" not in listed  # product rating 4.1: below the expert's trust bar
    restored = pickle.loads(pickle.dumps(agent))  # checkpoints pickle the agent
    assert restored.holdings.keys() == agent.holdings.keys()


def test_a_supplier_delisting_is_met_by_delisting_and_a_same_keyword_search(fortnight):
    _, session = fortnight
    # P1002's supplier delisted it at hour 40; the next window opens at hour 48.
    delisted = [e for e in _calls(session, "delist_product") if "P1002" in e["args"]["product_ids"]]
    assert delisted[0]["t"] == 48
    searched = [e for e in _calls(session, "search_products") if e["t"] == 48]
    assert any(e["args"]["query"].lower() == "storage box" for e in searched)


def _prices(session: Session, product_id: str) -> list[tuple[int, float]]:
    found = [
        (e["t"], e["args"]["sale_price"])
        for e in _calls(session, "adjust_price")
        if e["args"]["product_id"] == product_id
    ]
    for e in _calls(session, "list_product"):
        found += [
            (e["t"], i["sale_price"]) for i in e["args"]["items"] if i["product_id"] == product_id
        ]
    return sorted(found)


def test_late_shipping_raises_the_price_and_a_supplier_price_rise_is_passed_on():
    agent, session = make_agent("expert", {"fixed_markup": 1.5}), new_session()
    _run_expert(agent, session, until_hour=130)
    # P1003 (cost 4.30) ships 60 h late from hour 20: at the window of hour 24, ×1.6.
    assert _prices(session, "P1003")[:2] == [(0, 6.45), (24, 10.32)]
    # P1004's supplier price rises ×1.10 (14.10 → 15.51) at hour 115: repriced at hour 120.
    assert _prices(session, "P1004") == [(0, 21.15), (120, 23.27)]


def test_listings_whose_orders_go_wrong_are_replaced_and_their_shops_avoided(fortnight):
    agent, session = fortnight
    # Every product of this market refunds or is badly reviewed on about 30 % of orders.
    assert agent.banned and agent.bad_suppliers
    for product_id in agent.banned:
        ban_hour = min(
            e["t"]
            for e in _calls(session, "delist_product")
            if product_id in e["args"]["product_ids"]
        )
        relisted = [t for t, _ in _prices(session, product_id) if t > ban_hour]
        assert not relisted


def test_the_price_experiment_recovers_the_elasticity():
    trial = ElasticityTrial()
    ratio = trial.arm_factor(1) / trial.arm_factor(0)
    low, high = 20_000, round(20_000 / ratio**2.5)  # orders at the two prices when ε = 2.5
    trial.record("toys", 0, low)
    trial.record("toys", 1, high)
    markups = trial.markups(correction=1.0)
    assert markups["toys"] == pytest.approx(2.5 / 1.5, rel=0.02)
    assert ElasticityTrial().markups(1.0)[""] == pytest.approx(1.5)  # the prior, ε = 3


def test_the_demand_curve_recovers_the_stores_share_of_market_sales():
    rng = np.random.default_rng(5)
    curve, truth = DemandCurve(), DemandCurve(scale=0.04, saturation=12.0)
    listings = []
    for k in range(300):
        sales_30d = int(30 * math.exp(rng.uniform(0, 6)))
        held = Holding(f"P{k}", "mug", "home_goods", "S1", 10.0, sales_30d, 4.5, 0, 0)
        held.exposure_days = 20.0
        held.orders = int(rng.poisson(truth.rate(sales_30d) * held.exposure_days))
        listings.append(held)
    curve.fit(listings)
    assert curve.saturation == pytest.approx(12.0, rel=0.5)
    for sales in (30, 300, 3000, 30_000):
        assert curve.rate(sales) == pytest.approx(truth.rate(sales), rel=0.25)


def test_the_risk_book_flags_products_by_their_own_outcomes():
    risks = RiskBook()
    risks.trust_of.update({"bad": 4.6, "good": 4.6, "new": 4.6})
    fields = ("settled", "bad_review", "return_refund", "returnless_refund", "cancelled")
    risks.observe([
        {"product_id": "bad", **dict(zip(fields, (6, 2, 2, 0, 0), strict=True))},
        {"product_id": "good", **dict(zip(fields, (40, 1, 0, 0, 1), strict=True))},
    ])  # fmt: skip
    assert risks.too_risky("bad") and not risks.too_risky("good") and not risks.too_risky("new")
    assert risks.risk_of("new") == pytest.approx(risks.risk_of_trust(4.6))
    assert risks.risk_of("good") < risks.risk_of_trust(4.6) < risks.risk_of("bad")


def test_ablation_settings_reach_the_agent():
    agent = make_agent("expert", {"fixed_markup": 2.0, "max_cost": 20.0})
    assert agent.settings()["fixed_markup"] == 2.0 and agent.settings()["max_cost"] == 20.0
    with pytest.raises(AgentConfigError, match="no_such_setting: unknown setting"):
        make_agent("expert", {"no_such_setting": 1})

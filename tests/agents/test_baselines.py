"""The built-in baselines: idle changes nothing, random never breaks the ledger, and the
rule-based operator reacts to supplier events as the paper describes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from merchantbench.agents.baselines.rule_based import RuleBasedAgent
from merchantbench.agents.registry import make_agent

sys.path.insert(0, str(Path(__file__).parents[1] / "tools"))
from store_market import OPENING_LISTINGS, new_session, ok  # noqa: E402


def _calls(session, tool):
    return [e for e in session.trace if e["tool"] == tool and e["ok"]]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_agent_never_crashes_or_breaks_the_ledger(seed):
    session = new_session()
    agent = make_agent("random", {"seed": seed, "actions_per_window": 6})
    while not session.over:
        agent.act(session.surface)
        ledger = session.engine.state.ledger
        ledger.check_identity()
        assert ledger.accounts.balance >= 0
    assert session.memory.windows_closed == 28
    assert any(e["tool"] == "list_product" and e["ok"] for e in session.trace)


def test_idle_only_ends_windows():
    session = new_session()
    agent = make_agent("idle")
    while not session.over:
        agent.act(session.surface)
    assert {e["tool"] for e in session.trace} == {"end_of_step"}
    assert session.engine.state.ledger.accounts.net_assets == 300_000


def test_rule_based_reacts_to_supplier_events():
    session = new_session()
    ok(session.call("list_product", {"items": OPENING_LISTINGS}))
    agent = RuleBasedAgent()
    while session.engine.t < 60:
        agent.act(session.surface)
    delisted = {
        pid: e["t"] for e in _calls(session, "delist_product") for pid in e["args"]["product_ids"]
    }
    # P1003's supplier delayed shipping to 90 h from hour 20: past the 48-hour promise.
    assert delisted["P1003"] == 24
    # P1002's supplier delisted it at hour 40.
    assert delisted["P1002"] == 48
    # P1001's price rose ×1.25 (8.40 → 10.50) at hour 30: the price is reset to 2× cost.
    repriced = [(e["t"], e["args"]) for e in _calls(session, "adjust_price")]
    assert (36, {"product_id": "P1001", "sale_price": 21.0}) in repriced


def test_rule_based_delists_everything_when_cash_runs_low():
    session = new_session()
    ok(session.call("list_product", {"items": OPENING_LISTINGS}))
    session.engine.state.ledger.accounts.balance = 40_000  # 400 RMB, below the 500 floor
    RuleBasedAgent().act(session.surface)
    assert not session.engine.state.listings

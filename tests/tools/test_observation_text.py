"""The system brief states the scenario's own rules; the observation states where the store
stands and what changed since the last window. Both are deterministic text."""

from __future__ import annotations

from store_market import busy_session, new_session, ok

from merchantbench.scenario import load_scenario
from merchantbench.tools.observation import system_brief


def test_brief_states_the_paper_rules() -> None:
    brief = new_session().brief()
    for fact in [
        "balance of 2,000.00 and a security deposit of 1,000.00",
        "return and refund 8.00, bad review 5.00, stockout 5.00, insufficient balance 5.00, "
        "late shipment 3.00, cancellation 0.00, returnless refund 0.00",
        "If the deposit reaches 0 the store is closed for good",
        "At most 50 active listings",
        "between 0.01 and 100 × the product's current procurement price",
        "decision windows every 12 hours (00:00, 12:00), 2 a day, 28 in all",
        "At most 100 tool calls per window besides end_of_step",
        "starting score of 4 (weight 20)", "half after 30 days",
        "settled 4.5 (1); settled after being late 3 (1); return and refund 2 (1); "
        "returnless refund 1.5 (2); bad review 1 (2); stockout 1 (3)",
        "below 2.50: 1 star (orders ×0.10)", "otherwise 5 stars (orders ×1.20)",
        "not shipped 48 h after it was placed is late", "0-7 days after delivery",
        "Categories: home_goods, office, toys.", '"Day N HH:00"', "up to 256 KiB",
        "change a product's procurement price", "delist a product", "delay shipments",
    ]:  # fmt: skip
        assert fact in brief, fact
    assert brief.endswith(
        "Goal: maximise your net assets at the end of the run (Day 14, 2025-06-14)."
    )
    assert "hazard" not in brief and "0.001" not in brief and "%" not in brief


def test_brief_follows_the_scenario() -> None:
    session = new_session(
        "orders.fines.late_fen=400", "tools.max_active_listings=30", "money.platform_fees=true",
        "clock.calls_per_window=40",
    )  # fmt: skip
    brief = system_brief(session)
    assert "late shipment 4.00" in brief and "At most 30 active listings" in brief
    assert "commission of 5%-10%" in brief and "At most 40 tool calls" in brief
    paper = load_scenario("paper")
    assert paper.clock.windows == 730  # the paper brief's horizon, checked through its scenario
    session.scenario = paper
    assert "Day 365 (2026-05-31)" in system_brief(session) and "730 in all" in system_brief(session)


def test_first_observation() -> None:
    text = new_session().observation()
    assert text.splitlines() == [
        "Day 1 00:00, Sunday 2025-06-01: window 1 of 28.",
        "Cash (RMB): balance 2,000.00, deposit 1,000.00, in transit 0.00, receivable 0.00.",
        "Net assets: 3,000.00 RMB.",
        "Store rating: 4.00 (4 stars, orders ×1.00). Listings: 0 of 50 slots used.",
        "Order updates: none yet (first window).",
        "New supply-chain anomalies on your listings: none.",
        "Goal: maximise your net assets at the end of the run (Day 14, 2025-06-14). "
        "Close this window with end_of_step when you are done.",
    ]


def test_observation_reports_changes_since_the_last_window() -> None:
    session = busy_session()
    lines = session.observation().splitlines()
    a = session.engine.state.ledger.accounts
    assert lines[0] == "Day 6 00:00, Friday 2025-06-06: window 11 of 28."
    assert lines[2].startswith(f"Net assets: {a.net_assets / 100:,.2f} RMB (")
    counts = ok(session.call("query_order_updates"))["counts"]
    summary = ", ".join(f"{n} {name}" for name, n in counts.items())
    assert lines[4] == f"Order updates since Day 5 12:00: {summary}."
    examples = [line for line in lines if line.startswith("  - Day")]
    assert 0 < len(examples) <= 5 and all("order" in line for line in examples)
    assert (
        "  - P1004: price_changed since Day 5 19:00; procurement price now 15.51 (usually 14.10)"
        in lines
    )
    assert "  - P1000: delay_over since Day 5 14:00; back to normal" in lines
    assert lines[-1].startswith("Goal: maximise your net assets")
    assert session.observation() == busy_session().observation()

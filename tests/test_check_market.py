"""`merchantbench check --adapter market`: a merchant of a two-merchant market passes every
check of the single store's contract, and the leak scan catches another merchant's private
note when a (planted) faulty front end shows it."""

from __future__ import annotations

from typing import Any

from merchantbench.check import run_check
from merchantbench.check.checks import OTHER_MERCHANT_MARK
from merchantbench.check.market_adapter import RIVAL, MarketAdapter, MarketRun
from merchantbench.scenario import load_scenario


def test_a_merchant_of_a_market_passes_every_check():
    report = run_check("smoke", adapter="market")
    assert report.ok, report.failures
    assert {c.name for c in report.checks} >= {"determinism", "snapshot", "ledger", "hidden"}


class _LeakyRun(MarketRun):
    """A faulty front end: the memory tool answers with the rival's document."""

    def call(self, tool: str, args: dict[str, Any] | None, key: str | None) -> dict[str, Any]:
        result = super().call(tool, args, key)
        if tool == "read_memory_doc" and result.get("ok"):
            result = {**result, "content": self.market.session(RIVAL).memory_doc}
        return result


class _LeakyAdapter(MarketAdapter):
    name = "leaky-market"

    def open(self, scenario, seed):  # type: ignore[no-untyped-def]
        run = super().open(scenario, seed)
        run.__class__ = _LeakyRun
        return run


def test_the_leak_scan_catches_another_merchants_private_note():
    report = run_check(load_scenario("smoke", overrides=["clock.days=4"]), adapter=_LeakyAdapter())
    hidden = next(c for c in report.checks if c.name == "hidden")
    assert not hidden.ok and "another merchant's private note" in hidden.detail
    assert OTHER_MERCHANT_MARK not in hidden.detail

"""`merchantbench check --adapter http-market` and `mcp-market`: a merchant of a served market
(`merchantbench serve`), playing over HTTP or MCP with its own token beside a rival that writes
a private note every window, passes every check and agrees with the in-process market; and the
leak scan catches the rival's note when a (planted) faulty server sends it over the wire."""

from __future__ import annotations

from typing import Any

import pytest

from merchantbench.check import run_check
from merchantbench.check.checks import OTHER_MERCHANT_MARK
from merchantbench.check.market_adapter import RIVAL
from merchantbench.scenario import load_scenario
from merchantbench.serve.host import Host

SHORT = ["clock.days=5"]


@pytest.mark.parametrize("adapter", ["http-market", "mcp-market"])
def test_a_served_merchant_passes_every_check_and_agrees_with_the_market(adapter):
    report = run_check(load_scenario("smoke", overrides=SHORT), adapter=adapter, against="market")
    assert report.ok, report.failures
    names = {c.name for c in report.checks}
    assert names >= {"determinism", "snapshot", "ledger", "hidden", "agreement"}


@pytest.mark.parametrize("adapter", ["http-market", "mcp-market"])
def test_the_leak_scan_catches_the_rivals_note_sent_over_the_wire(adapter, monkeypatch):
    served = Host.call_tool

    async def leaky(self: Host, agent_id: str, tool: str, args: Any, key: Any, *window: Any) -> Any:
        result = await served(self, agent_id, tool, args, key, *window)
        if tool == "read_memory_doc" and result.get("ok"):
            rival = self.channels[RIVAL].session.memory_doc
            result = {**result, "content": rival}
        return result

    monkeypatch.setattr(Host, "call_tool", leaky)
    report = run_check(load_scenario("smoke", overrides=SHORT), adapter=adapter)
    hidden = next(c for c in report.checks if c.name == "hidden")
    assert not hidden.ok and "another merchant's private note" in hidden.detail
    assert OTHER_MERCHANT_MARK not in hidden.detail
